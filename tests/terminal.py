"""What a command typed in a terminal is started with, for the tests that
start one and press its Ctrl-C."""

from __future__ import annotations

import signal


def foreground_signals() -> None:
    """`preexec_fn` of such a command: Ctrl-C is KeyboardInterrupt.

    A test process may ignore SIGINT (an earlier test, a test runner's
    worker), and an ignored SIGINT is inherited across exec: Python then
    never installs its handler, and the command would rightly go on like a
    background job."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
