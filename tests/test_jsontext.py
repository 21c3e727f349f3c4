"""auditor.jsontext.dumps writes what json.dumps(value, ensure_ascii=False,
indent=2) writes, over every kind of JSON value the outputs hold and the
edge cases of the standard library (keys that are not strings, int and
float subclasses, NaN and infinities, empty containers, tuples, any text)."""

from __future__ import annotations

import enum
import json
import math

import pytest
from hypothesis import given, strategies as st

from auditor import jsontext


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 3


_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=-2**70, max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(), st.sampled_from([Level.LOW, Level.HIGH, "é\u2028\x00\"\\"]),
    st.sampled_from([0.1, 1e16, 1e-7, -0.0, 123456789.125, math.pi]))
_KEYS = st.one_of(st.text(), st.integers(), st.floats(allow_nan=False), st.booleans(), st.none())
_VALUES = st.recursive(_LEAVES, lambda inner: st.one_of(
    st.lists(inner, max_size=5), st.lists(inner, max_size=3).map(tuple),
    st.dictionaries(st.text(max_size=6), inner, max_size=5), st.dictionaries(_KEYS, inner, max_size=4)),
    max_leaves=40)


@given(_VALUES)
def test_the_text_is_json_dumps_indented(value):
    assert jsontext.dumps(value) == json.dumps(value, ensure_ascii=False, indent=2)


@given(_VALUES, st.integers(min_value=0, max_value=3))
def test_a_value_written_before_at_its_depth_is_the_same_text(value, depth):
    """summary.json's findings across carnets, written once for their two names."""
    whole = value
    for _ in range(depth):
        whole = {"x": whole, "y": [1]}
    inner = jsontext.Text(jsontext.dumps(value, pad="  " * depth))
    placed = inner
    for _ in range(depth):
        placed = {"x": placed, "y": [1]}
    assert jsontext.dumps(placed) == json.dumps(whole, ensure_ascii=False, indent=2)


def test_a_summary_of_real_outputs_is_the_same_text(tmp_path):
    from auditor.batch.plan import Options, plan
    from auditor.run import run
    from auditor.synth.generate import Spec, generate, write_csv_folder

    for i in range(3):
        write_csv_folder(generate(Spec(seances=1, coups=8, mises=3, seed=i, table=1)), tmp_path / "in" / f"c{i}")
    run(plan([tmp_path / "in"]), tmp_path / "out", Options())
    for path in [tmp_path / "out" / "summary.json", *sorted((tmp_path / "out").glob("*/findings.json"))]:
        text = path.read_text(encoding="utf-8")
        assert jsontext.dumps(json.loads(text)) + "\n" == text


@pytest.mark.parametrize("value", [{1j: 1}, [object()], {"a": {1, 2}}])
def test_what_json_refuses_is_refused(value):
    with pytest.raises(TypeError):
        json.dumps(value, ensure_ascii=False, indent=2)
    with pytest.raises(TypeError):
        jsontext.dumps(value)
