"""The package's dataclass methods, compiled once per user (auditor/user_cache.py
`keep_dataclass_methods`): a second process compiles none of them, the
classes behave the same, a damaged cache is compiled afresh, and no other
package's code goes through it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

PROBE = """
import dataclasses, json
import auditor.model, auditor.report.report_view, auditor.outputs
from auditor import user_cache
from auditor.model import Finding, Severity
f = Finding("EC64-01", Severity.ERROR, "64", "m", "coups", 3, "coup", "B3", 1, 2, None, "2", "3", 10)
g = dataclasses.replace(f)
try:
    f.code = "x"
    frozen = False
except dataclasses.FrozenInstanceError:
    frozen = True
print(json.dumps({"misses": user_cache.METHODS.misses, "used": len(user_cache.METHODS.used),
                  "same": f == g and hash(f) == hash(g), "frozen": frozen, "repr": repr(f)[:40]}))
"""


def _probe(cache_home) -> dict:
    import json

    env = {**os.environ, "XDG_CACHE_HOME": str(cache_home)}
    p = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    return json.loads(p.stdout)


@pytest.mark.subprocess
def test_a_second_process_compiles_no_method_and_the_classes_behave_the_same(tmp_path):
    first, second = _probe(tmp_path), _probe(tmp_path)
    assert first["misses"] > 20 and first["misses"] == first["used"]
    assert second["misses"] == 0 and second["used"] == first["used"]
    assert {k: v for k, v in first.items() if k not in ("misses",)} == \
        {k: v for k, v in second.items() if k not in ("misses",)}
    assert second["same"] and second["frozen"] and second["repr"].startswith("Finding(code='EC64-01'")
    # A damaged file (a disk, a copy cut short) is compiled afresh and written whole again.
    kept = next((tmp_path / "ecarte-auditor" / "code").glob("dataclasses-*.marshal"))
    kept.write_bytes(kept.read_bytes()[:-100])
    third = _probe(tmp_path)
    assert third["misses"] == first["misses"] and third["same"]
    assert _probe(tmp_path)["misses"] == 0


def test_other_code_goes_to_the_builtin_exec_untouched():
    import dataclasses

    from auditor import user_cache

    assert dataclasses.exec == user_cache.METHODS.exec   # installed by importing the package
    before = dict(user_cache.METHODS._codes())

    @dataclasses.dataclass(frozen=True)
    class Other:   # this test module's class: not the package's
        a: int
        b: str = "x"

    assert Other(1) == Other(1, "x") and repr(Other(2)).endswith("Other(a=2, b='x')")
    assert user_cache.METHODS._codes() == before
    ns: dict = {"__name__": "auditor.somewhere"}
    user_cache.METHODS.exec("def f():\n return 41 + 1", ns, ns)
    assert ns["f"]() == 42 and "def f():\n return 41 + 1" in user_cache.METHODS._codes()
