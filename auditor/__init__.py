"""ecarte-auditor: audits écarté carnets spéciaux against the arrêté du 14 mai 2007.

Data flows one way: read → normalise → check → report.
"""

__version__ = "0.1.0"
