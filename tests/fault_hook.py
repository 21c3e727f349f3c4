"""The fault tests' hook: make the audit of one named carnet behave as a huge
or broken one would. The auditor calls `fault(job, retry)` before each audit
when ECARTE_AUDIT_HOOK names it (`fault_hook:fault`), in every process that
audits (this one, local workers, Dask workers): each must find this module,
so `fault_env` puts tests/ on their PYTHONPATH.

The faults, from FAULT_ENV (`action:NAME[:ARG]`, comma-separated; NAME is the
carnet's file or folder name):

    sleep:NAME:S      sleep S seconds          stall:NAME:S   the same, first try only
    kill:NAME         SIGKILL its own process  alloc:NAME:MB  hold MB of memory
    sleep-masked / alloc-masked: the same with the guard's signal blocked
    (an audit stuck in native code)
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from auditor.batch.executors import AUDIT_HOOK_ENV
from auditor.limits import MB

FAULT_ENV = "ECARTE_TEST_FAULT"
HERE = Path(__file__).resolve().parent


def fault_env(spec: str, environ: dict | None = None) -> dict[str, str]:
    """The variables that make processes started with them (and their
    workers) run the faults of `spec`."""
    base = os.environ if environ is None else environ
    path = [str(HERE), str(HERE.parent), *filter(None, base.get("PYTHONPATH", "").split(os.pathsep))]
    return {AUDIT_HOOK_ENV: "fault_hook:fault", FAULT_ENV: spec, "PYTHONPATH": os.pathsep.join(path)}


def fault(job, retry: bool) -> None:
    """Run the faults of FAULT_ENV that name this carnet."""
    spec = os.environ.get(FAULT_ENV)
    if not spec:
        return
    for item in spec.split(","):
        action, _, rest = item.partition(":")
        name, _, arg = rest.partition(":")
        if name != job.path.name:
            continue
        if action.endswith("-masked"):
            action = action[:-len("-masked")]
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGUSR1})
        if action == "sleep" or (action == "stall" and not retry):
            time.sleep(float(arg))
        elif action == "kill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "alloc":
            held = []
            for _ in range(int(arg) // 8):
                held.append(b"\1" * (8 * MB))  # written, so resident
