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


@given(_VALUES, st.integers(min_value=0, max_value=6), st.integers(min_value=0, max_value=8))
def test_the_text_is_the_same_however_often_its_pieces_are_joined(value, join_at, shallow):
    """The pieces joined along the way (a night's summary joins them every
    4,096): at any count, at any depth, the same text."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsontext, "_JOIN_AT", join_at)
        mp.setattr(jsontext, "_SHALLOW", shallow)
        assert jsontext.dumps(value) == json.dumps(value, ensure_ascii=False, indent=2)
        inner = jsontext.Text(jsontext.dumps(value, pad="  "))
        assert jsontext.dumps({"x": inner}) == json.dumps({"x": value}, ensure_ascii=False, indent=2)


def test_a_long_summary_holds_its_pieces_briefly_and_keeps_none():
    """summary.json of 2,000 carnets: while it is written, its small pieces
    never weigh much more than the text (they weighed four times as much,
    all held to the end), and none outlives the call (`write`, which refers
    to itself, kept them until the collector's next pass)."""
    import gc
    import tracemalloc

    entry = {"id": "", "path": "casino/table-3/2026-03-02", "summary": {k: 12 for k in "abcdefghij"},
             "rules": [{"code": f"EC64-{i:02d}", "status": "checked", "findings": i} for i in range(12)]}
    doc = {"schema_version": 1, "carnets": [{**entry, "id": f"c{i:05d}"} for i in range(2000)]}
    text = jsontext.dumps(doc)
    assert text == json.dumps(doc, ensure_ascii=False, indent=2)
    del text
    gc.collect()
    gc.disable()   # what a collector's pass would free is what the test is about
    try:
        tracemalloc.start()
        try:
            before = tracemalloc.get_traced_memory()[0]
            text = jsontext.dumps(doc)
            after, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    finally:
        gc.enable()
    size = len(text) + 100   # an ASCII str: a byte a character
    assert peak - before < 3 * size, (peak - before, size)
    assert after - before < size + 64 * 1024, (after - before, size)
