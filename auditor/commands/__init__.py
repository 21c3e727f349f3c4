"""The sub-commands of `ecarte-audit`, one module per job: `audit` (audit
carnets, show how their columns are read), `generate` (synthetic carnets and
archives, the blank template), `records` (the rules, reviews, the history,
verifying a procès-verbal, the local page). `auditor.cli` builds the parser
and dispatches; what the commands share is here."""

from __future__ import annotations

import sys

from auditor.errors import text_of

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# The reports, the annotated workbook, the blank template and the local page
# are documents for the official record: French unless --lang says otherwise
# (outputs.md), whatever the locale. Only what the terminal says follows it.
DOCUMENT_LANG = "fr"


def say(message, args) -> None:
    """One line on stderr, `ecarte-audit: ` and the message in the terminal's language."""
    print(f"ecarte-audit: {text_of(message, args.ui)}", file=sys.stderr)
