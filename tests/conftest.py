import sys
from pathlib import Path

import auditor  # noqa: F401  (first: it keeps openpyxl off lxml before any test imports openpyxl)

# tests/ holds helper modules (carnet_fixture) imported by the tests.
sys.path.insert(0, str(Path(__file__).parent))

import pytest
from hypothesis import settings

# No timed tests (speed is the benchmarks' business): hypothesis's default
# deadline of 200 ms per example fails a correct test on a busy machine.
settings.register_profile("ecarte-auditor", deadline=None)
settings.load_profile("ecarte-auditor")

# The command line speaks the user's locale (tests/test_cli_i18n.py). The
# other tests read its English messages: they run in an English locale
# whatever the developer's, and a test that wants French says so.
_LOCALE_VARIABLES = ("LANGUAGE", "LC_ALL", "LC_MESSAGES")


@pytest.fixture(autouse=True)
def _english_locale(monkeypatch):
    for name in _LOCALE_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("LANG", "C.UTF-8")
