"""The sub-commands of `ecarte-audit`, one module per job: `audit` (audit
carnets, show how their columns are read), `generate` (synthetic carnets and
archives, the blank template), `records` (the rules, reviews, the history,
verifying a procès-verbal, the local page). `auditor.cli` builds the parser
and dispatches; what the commands share is here."""

from __future__ import annotations

import signal
import sys
import threading

from auditor.errors import text_of

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2

# The reports, the annotated workbook, the blank template and the local page
# are documents for the official record: French unless --lang says otherwise
# (outputs.md), whatever the locale. Only what the terminal says follows it.
DOCUMENT_LANG = "fr"


def say(message, args) -> None:
    """One line on stderr, `ecarte-audit: ` and the message in the terminal's language."""
    print(f"ecarte-audit: {text_of(message, args.ui)}", file=sys.stderr)


# The signal that stopped the command (SIGTERM), for `auditor.cli.run`: once
# everything is cleaned up, the process ends by it.
ENDED_BY: list[int] = []


class terminate_as_interrupt:
    """Within the block, SIGTERM (`kill`, a service stopped, a scheduler's
    time limit) stops the command as Ctrl-C does: its workers stopped, its
    temporary folders removed (the run's spool: the casino's data), where
    to resume said. Without it, SIGTERM ended the process at once, its
    clean-up never run. Main thread, POSIX only."""

    def __enter__(self):
        self.previous = None
        if hasattr(signal, "SIGTERM") and sys.platform != "win32" \
                and threading.current_thread() is threading.main_thread():
            self.previous = signal.signal(signal.SIGTERM, self._stop)
        return self

    @staticmethod
    def _stop(sig, frame):
        ENDED_BY.append(sig)
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.previous is not None:
            signal.signal(signal.SIGTERM, self.previous)
        return False
