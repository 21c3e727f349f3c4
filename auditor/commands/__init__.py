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
    clean-up never run. Only in the console command (`auditor.cli.run`
    sets `console`): a program calling `main` in its own process keeps its
    own SIGTERM. Main thread, POSIX only; a SIGTERM ignored stays ignored."""

    console = False

    def __enter__(self):
        self.installed, self.previous = False, None
        if self.console and hasattr(signal, "SIGTERM") and sys.platform != "win32" \
                and threading.current_thread() is threading.main_thread() \
                and signal.getsignal(signal.SIGTERM) is not signal.SIG_IGN:
            self.previous = signal.signal(signal.SIGTERM, self._stop)
            self.installed = True
        return self

    @staticmethod
    def _stop(sig, frame):
        ENDED_BY.append(sig)
        raise KeyboardInterrupt

    def __exit__(self, *exc):
        if self.installed:   # a handler set outside Python reads as None: the default is what is known of it
            signal.signal(signal.SIGTERM, signal.SIG_DFL if self.previous is None else self.previous)
        return False
