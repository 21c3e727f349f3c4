"""Python's garbage collector while a process starts.

The imports of an audit (numpy, pyarrow, pandas, jinja2, the auditor: some
300,000 objects) leave no garbage, yet the collector's passes meanwhile
traverse what is already imported again and again: about 30 ms of a
one-carnet command's 0.4 s, and 35 ms of CPU of each batch worker's start.
So the console command and each worker pause it while they import
(`pause`), then freeze what the imports made, which lives as long as the
process, and turn it back on before any carnet is audited (`resume`): the
audit itself runs with the collector as always, and its full passes skip the
frozen objects.

Only processes that end with their run pause it. A process that audits again
and again (the local page's, a test run's) never does: what a run left for
the collector would be frozen with the rest and never freed."""

from __future__ import annotations

import gc


class _state:
    paused = False   # pause() turned the collector off, and resume() has not turned it back on


def pause() -> None:
    """The collector off until `resume`, unless something before us already
    turned it off (that one's choice is kept)."""
    if gc.isenabled():
        gc.disable()
        _state.paused = True


def resume() -> None:
    """What the process made so far frozen (gc.freeze), then the collector
    back on. Nothing when `pause` did not turn it off. Without the freeze,
    the first passes after a start with the collector off would traverse
    every object the imports made, and cost more than the pause saved."""
    if not _state.paused:
        return
    _state.paused = False
    gc.freeze()
    gc.enable()
