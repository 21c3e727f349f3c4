"""ecarte-auditor: audits écarté carnets spéciaux against the arrêté du 14 mai 2007.

Data flows one way: read → normalise → check → report.
"""

import os

__version__ = "0.1.0"

# openpyxl switches to lxml when it is installed (pyHanko, for the
# procès-verbal's signature, brings it). The annotated workbook grafts
# openpyxl's ElementTree parts into the carnet's own (report/xlsx_parts.py),
# and the outputs must not depend on what else is installed: openpyxl keeps
# to the standard library's ElementTree. Read once, when openpyxl is first
# imported, so it is set here, before any module of ours imports it.
os.environ["OPENPYXL_LXML"] = "False"

# Before any class of ours is made: their dataclass methods compiled once per
# user, not in every process (auditor/user_cache.py).
from auditor.user_cache import keep_dataclass_methods  # noqa: E402

keep_dataclass_methods()
