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
                  "same": f == g and hash(f) == hash(g), "frozen": frozen, "repr": repr(f)[:40],
                  # the methods' annotations as dataclasses makes them (the field's own, here a string)
                  "annotation": Finding.__init__.__annotations__["code"]}))
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
    assert first["annotation"] == second["annotation"] == "str"
    # A damaged file (a disk, a copy cut short) is compiled afresh and written whole again.
    kept = next((tmp_path / "ecarte-auditor" / "code").glob("dataclasses-*.marshal"))
    kept.write_bytes(kept.read_bytes()[:-100])
    third = _probe(tmp_path)
    assert third["misses"] == first["misses"] and third["same"]
    assert _probe(tmp_path)["misses"] == 0


def test_other_code_goes_to_the_builtin_exec_untouched(tmp_path, monkeypatch):
    import dataclasses
    import typing

    from auditor import user_cache

    assert dataclasses.exec == user_cache.METHODS.exec   # installed by importing the package
    before = dict(user_cache.METHODS._codes())

    @dataclasses.dataclass(frozen=True)
    class Other:   # this test module's class: not the package's
        a: int
        b: str = "x"

    assert Other(1) == Other(1, "x") and repr(Other(2)).endswith("Other(a=2, b='x')")
    assert user_cache.METHODS._codes() == before
    # Compiled as without the cache: the fields' own annotations (this module's are
    # strings), not names of dataclasses' own variables that nothing can resolve.
    assert Other.__init__.__annotations__ == {"a": "int", "b": "str", "return": None}
    assert typing.get_type_hints(Other.__init__)["a"] is int
    # The package's texts are kept (a cache of its own here: nothing written to the user's).
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    user_cache.folder.cache_clear()
    mine = user_cache.CompiledMethods()
    ns: dict = {"__name__": "auditor.somewhere"}
    mine.exec("def f(x: int):\n return x + 1", ns, ns)
    assert ns["f"](41) == 42 and ns["f"].__annotations__ == {"x": int}
    assert mine.misses == 1 and "def f(x: int):\n return x + 1" in mine._codes()
    mine.save()
    again = user_cache.CompiledMethods()
    again.exec("def f(x: int):\n return x + 1", ns, ns)
    assert again.misses == 0 and ns["f"](1) == 2
    user_cache.folder.cache_clear()
