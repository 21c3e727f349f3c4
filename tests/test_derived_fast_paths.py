"""The derived facts as numpy arrays (`coup_amounts`, `chouette_state`) and the
chouette rules read from them (EC65-01/02/03, the report's run stories) against
the frame-based readings they replaced, kept here as references: on generated
chouette carnets damaged at random (cells emptied, made unreadable or changed,
coup rows repeated, swapped or dropped, stakes dropped, breaches injected), the
arrays give the same frame and the rules the same violations."""

from __future__ import annotations

import random
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from auditor.catalogue import load_profile
from auditor.checks.art65 import chouette_adjudicated, chouette_stops_after_saute, remise_regular
from auditor.derived.amounts import coup_amounts, repeated_coups, stakes
from auditor.derived.chouette import _within, chouette_state, play_order
from auditor.frames import group_sums, ints, is_value, lookup, present, py
from auditor.model import Cents, Violation
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.report.chouette_runs import run_stories
from auditor.synth.breaches import INJECTORS, CannotInject
from auditor.synth.generate import Spec, generate, write_csv_folder

PROFILE = load_profile()
CHOUETTE_CODES = sorted(c for c in INJECTORS if c.startswith(("EC65", "EC66", "EC64")))


# -- the frame-based readings the arrays replaced (as they were) ---------------

def reference_amounts(carnet) -> pd.DataFrame:
    coups = carnet.df("coups")
    n = len(coups)
    chouette = is_value(coups["type"], "chouette")
    total_a, total_a_ok = ints(coups["total_a_cents"])
    out_a, out_a_ok = ints(coups["en_dehors_cents"])
    recorded_a = np.where(chouette, out_a, total_a), np.where(chouette, out_a_ok, total_a_ok)
    recorded_b = ints(coups["total_b_cents"])
    held_a = held_b = np.zeros(n, dtype=np.int64)
    found = unverifiable = np.zeros(n, dtype=bool)
    n_mises = np.zeros(n, dtype=np.int64)
    if "mises" in carnet.tables:
        m = carnet.df("mises")
        st_ = stakes(carnet)
        montant, montant_ok = ints(m["montant_cents"])
        restitue, restitue_ok = ints(m["restitue_cents"])
        side = m["cote"]
        bad = ~montant_ok | ~restitue_ok | ~present(side)
        held = np.where(bad, 0, montant - restitue)
        sel = np.flatnonzero(st_.in_coups)
        on_a, on_b = is_value(side, "a")[sel], is_value(side, "b")[sel]
        held, bad = held[sel], bad[sel]
        ranks, counts, (sum_a, sum_b, n_bad) = group_sums(
            st_.coup_rank[sel], np.where(on_a, held, 0), np.where(on_b, held, 0), bad.astype(np.int64))
        known = np.flatnonzero(st_.coups_rank >= 0)
        at, hit = lookup(ranks, st_.coups_rank[known])
        found = np.zeros(n, dtype=bool)
        found[known] = hit
        where = np.zeros(n, dtype=np.int64)
        where[known] = at
        if len(ranks):
            held_a = np.where(found, sum_a[where], 0)
            held_b = np.where(found, sum_b[where], 0)
            n_mises = np.where(found, counts[where], 0)
            unverifiable = found & (n_bad[where] > 0)
        unverifiable = unverifiable | carnet.could_be("mises", ["seance", "coup"], coups).to_numpy()
    unverifiable = unverifiable | repeated_coups(carnet)
    sur = held_b - held_a
    mass_a = np.where(chouette, sur + held_a, held_a)
    from_stakes = n_mises > 0
    levy_a = np.where(from_stakes, held_a, recorded_a[0])
    levy_a_ok = np.where(from_stakes, found, recorded_a[1])
    levy_b = np.where(from_stakes, held_b, recorded_b[0])
    levy_b_ok = np.where(from_stakes, found, recorded_b[1])
    levy_ok = levy_a_ok & levy_b_ok

    def money(values, valid):
        return pd.arrays.IntegerArray(np.where(valid, values, 0), ~valid)

    columns = {k: coups[k].array for k in ("seance", "coup", "type")}
    columns.update(_row=coups["_row"].to_numpy(), held_a=money(held_a, found), held_b=money(held_b, found),
                   n_mises=n_mises, unverifiable=unverifiable, sur_chouette=money(sur, found),
                   mass_a=money(mass_a, found), mass_b=money(held_b, found),
                   levy_held_a=money(levy_a, levy_a_ok), levy_held_b=money(levy_b, levy_b_ok),
                   levy_sur_chouette=money(levy_b - levy_a, levy_ok))
    return pd.DataFrame(columns, index=coups.index)


def reference_state(carnet) -> pd.DataFrame:
    p = play_order(carnet)
    coups = carnet.df("coups")
    is_chouette = is_value(coups["type"], "chouette")[p.at]
    prev_chouette = np.r_[False, is_chouette[:-1]] & ~p.new_seance
    a, a_ok = ints(coups["joueur_a"])
    a, a_ok = a[p.at], a_ok[p.at]
    changed = ~p.new_seance & a_ok & np.r_[False, a_ok[:-1]] & (a != np.r_[0, a[:-1]])
    run_start = (is_chouette & (~prev_chouette | changed))[is_chouette]
    at = p.at[is_chouette]
    n = len(at)
    amounts = reference_amounts(carnet)
    run = np.cumsum(run_start) - 1
    run_end = np.r_[run[1:] != run[:-1], True] if n else np.zeros(0, dtype=bool)
    event = coups["evenement"]
    adjudication = is_value(event, "adjudication")[at]
    segment = np.cumsum(run_start | adjudication) - 1
    chouette, chouette_ok = ints(coups["chouette_cents"])
    chouette, chouette_ok = chouette[at], chouette_ok[at]
    seg_first = np.flatnonzero(np.r_[True, segment[1:] != segment[:-1]]) if n else np.zeros(0, dtype=np.int64)
    of_segment = segment - segment[0] if n else segment
    adjudicated_ok = (adjudication & chouette_ok)[seg_first][of_segment]
    adjudicated = np.where(adjudicated_ok, chouette[seg_first][of_segment], 0)
    held_a = amounts["levy_held_a"].array.take(at)
    sur_chouette = amounts["levy_sur_chouette"].array.take(at)
    sur, sur_ok = sur_chouette.to_numpy(dtype=np.int64, na_value=0), ~sur_chouette.isna()
    winner_known = present(coups["gagnant"])[at]
    unknown = ~winner_known | ~chouette_ok | ~sur_ok | amounts["unverifiable"].to_numpy()[at]
    saute = is_value(coups["gagnant"], "b")[at] & (sur == chouette) & ~unknown
    prev_known = np.r_[False, ~unknown[:-1]] | run_start
    prev_saute = np.r_[False, saute[:-1]] & ~run_start
    coup = p.coup[is_chouette]
    n_saute = saute.astype(np.int64)
    n_remise = is_value(event, "remise")[at].astype(np.int64)
    new_segment = np.r_[True, segment[1:] != segment[:-1]] if n else np.zeros(0, dtype=bool)
    return pd.DataFrame(dict(
        {k: coups[k].array.take(at) for k in coups.columns},
        pos=p.pos[is_chouette], follows=p.follows[is_chouette],
        run_start=run_start, run=run, run_end=run_end, segment=segment,
        adjudicated=pd.arrays.IntegerArray(adjudicated, ~adjudicated_ok),
        held_a=held_a, sur_chouette=sur_chouette,
        saute=pd.arrays.BooleanArray(saute, unknown),
        prev_saute=pd.arrays.BooleanArray(prev_saute, ~prev_known),
        prev_coup=pd.arrays.IntegerArray(np.r_[0, coup[:-1]] if n else coup, run_start.copy()),
        sautes_upto_prev=_within(n_saute, new_segment) - n_saute,
        remises_before=_within(n_remise, new_segment) - n_remise,
        evenement_unreadable=carnet.unreadable_cells("coups", "evenement").to_numpy()[at]), index=coups.index[at])


def _records(df: pd.DataFrame, at) -> list[dict]:
    sub = df.iloc[np.asarray(at, dtype=np.int64)]
    cols = list(sub.columns)
    return [{c: py(v) for c, v in zip(cols, values)} for values in zip(*(sub[c].tolist() for c in cols))]


def _coup(r: dict, column, kind: str, **extra) -> Violation:
    return Violation(table="coups", row=r["_row"], column=column, seance=r["seance"], coup=r["coup"],
                     kind=kind, **extra)


def reference_rules(carnet) -> list[Violation]:
    """EC65-01, EC65-02 and EC65-03 as they read the state's frame."""
    s = reference_state(carnet)
    out: list[Violation] = []
    if s.empty:
        return out
    rows = s["_row"].to_numpy()
    seance, coup = s["seance"].to_numpy(dtype=np.int64, na_value=0), s["coup"].to_numpy(dtype=np.int64, na_value=0)
    start = s["run_start"].to_numpy() & ~is_value(s["evenement"], "adjudication") & ~s["evenement_unreadable"].to_numpy()
    events, players = s["evenement"].tolist(), s["joueur_a"].tolist()
    for i in np.flatnonzero(start):
        event = py(events[i]) or ""
        out.append(Violation(table="coups", row=int(rows[i]), column="evenement", seance=int(seance[i]),
                             coup=int(coup[i]), kind="no_adjudication", expected="adjudication", found=event,
                             params={"joueur": py(players[i]), "evenement": event}))
    for field, kind in (("chouette_cents", "no_chouette"), ("en_dehors_cents", "no_en_dehors")):
        empty = ~present(s[field]) & ~carnet.unreadable_cells("coups", field).loc[s.index].to_numpy()
        for i in np.flatnonzero(empty):
            out.append(Violation(table="coups", row=int(rows[i]), column=field, seance=int(seance[i]),
                                 coup=int(coup[i]), kind=kind, found=""))
    # EC65-02
    remise = is_value(s["evenement"], "remise")
    if remise.any():
        not_after = remise & ~s["prev_saute"].array.to_numpy(dtype=bool, na_value=True)
        out += [_coup(x, "evenement", "not_after_saute", found="remise", params={"joueur": x["joueur_a"]})
                for x in _records(s, np.flatnonzero(not_after))]
        second = remise & (s["remises_before"].to_numpy() > 0)
        out += [_coup(x, "evenement", "second_remise", found="remise", params={"joueur": x["joueur_a"]})
                for x in _records(s, np.flatnonzero(second))]
        (ch, ch_ok), (adj, adj_ok) = ints(s["chouette_cents"]), ints(s["adjudicated"])
        amount = remise & ch_ok & adj_ok & (ch != adj)
        out += [_coup(x, "chouette_cents", "amount", expected=Cents(x["adjudicated"]),
                      found=Cents(x["chouette_cents"]),
                      params={"chouette_cents": x["chouette_cents"], "adjudicated_cents": x["adjudicated"]})
                for x in _records(s, np.flatnonzero(amount))]
    # EC65-03
    after = s["prev_saute"].array.to_numpy(dtype=bool, na_value=False) & ~s["evenement_unreadable"].to_numpy()
    if after.any():
        auction = after & (s["sautes_upto_prev"].to_numpy() >= 2)
        wrong = auction & ~is_value(s["evenement"], "adjudication")
        out += [_coup(r, "evenement", "not_auctioned", expected="adjudication", found=r["evenement"] or "",
                      params={"saute_coup": r["prev_coup"], "evenement": r["evenement"] or ""})
                for r in _records(s, np.flatnonzero(wrong))]
        silent = after & ~present(s["evenement"]) & ~auction
        out += [_coup(r, "evenement", "no_event", expected="remise / adjudication", found="",
                      params={"saute_coup": r["prev_coup"]})
                for r in _records(s, np.flatnonzero(silent))]
    return out


# -- damaged chouette carnets ---------------------------------------------------

# What a damaged cell may hold instead: empty, unreadable, or another value of its kind.
CELLS = {
    "coups": {"seance": [None, "?", 1, 2], "coup": [None, "x", 1, 3, 40], "type": [None, "chouette", "simple", "??"],
              "joueur_a": [None, "?", 1, 7, 8], "chouette": [None, "abc", 10000, 5000], "en_dehors": [None, "?", 0, 500],
              "evenement": [None, "adjudication", "remise", "??"], "gagnant": [None, "a", "b", "c"],
              "total_a": [None, "?", 0, 1000], "total_b": [None, "?", 10000]},
    "mises": {"seance": [None, "?"], "coup": [None, "?", 2], "cote": [None, "a", "b", "z"],
              "montant": [None, "?", 500, 10000], "restitue": [None, "?", 0, 100]},
}


def damage(tables: dict, rng: random.Random, hits: int) -> None:
    for _ in range(hits):
        what = rng.random()
        coups, mises = tables["coups"], tables["mises"]
        if what < 0.7:
            name = "coups" if what < 0.35 or not mises else "mises"
            rows = tables[name]
            if not rows:
                continue
            column = rng.choice(sorted(CELLS[name]))
            rng.choice(rows)[column] = rng.choice(CELLS[name][column])
        elif what < 0.8 and coups:
            coups.insert(rng.randrange(len(coups) + 1), dict(rng.choice(coups)))      # a repeated coup
        elif what < 0.87 and len(coups) > 1:
            i = rng.randrange(len(coups) - 1)
            coups[i], coups[i + 1] = coups[i + 1], coups[i]
        elif what < 0.93 and coups:
            del coups[rng.randrange(len(coups))]
        elif mises:
            del mises[rng.randrange(len(mises))]


def damaged_carnet(seed: int, seances: int, coups: int, mises: int, hits: int, breach: str | None, folder: Path):
    tables = generate(Spec(seed=seed, seances=seances, coups=coups, mises=mises, chouette=True), PROFILE)
    rng = random.Random(seed)
    if breach is not None:
        try:
            INJECTORS[breach](tables, rng)
        except (CannotInject, TypeError, ValueError, KeyError, IndexError):
            pass
    damage(tables, rng, hits)
    write_csv_folder(tables, folder)
    return normalise(read_carnet(folder))


def check_same(carnet) -> None:
    pd.testing.assert_frame_equal(coup_amounts(carnet).frame(carnet), reference_amounts(carnet))
    pd.testing.assert_frame_equal(chouette_state(carnet).frame(carnet), reference_state(carnet))
    got = [*chouette_adjudicated(carnet, PROFILE), *remise_regular(carnet, PROFILE),
           *chouette_stops_after_saute(carnet, PROFILE)]
    assert got == reference_rules(carnet)
    # Plain Python values in what the findings and the report show, never numpy scalars.
    for v in got:
        assert all(type(x) in (int, str, type(None)) for x in v.params.values())
    for lang in ("fr", "en"):
        stories = run_stories(carnet, lang)
        assert len(stories) == int(chouette_state(carnet).run_start.sum())


CARNETS = dict(seed=st.integers(0, 2**31 - 1), seances=st.integers(1, 2), coups=st.integers(1, 14),
               mises=st.integers(1, 5), hits=st.integers(0, 12),
               breach=st.one_of(st.none(), st.sampled_from(CHOUETTE_CODES)))


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(**CARNETS)
def test_arrays_match_the_frames_on_damaged_carnets(seed, seances, coups, mises, hits, breach):
    with tempfile.TemporaryDirectory() as d:
        check_same(damaged_carnet(seed, seances, coups, mises, hits, breach, Path(d) / "c"))


@pytest.mark.slow
@settings(max_examples=250, deadline=None, suppress_health_check=list(HealthCheck))
@given(**CARNETS)
def test_arrays_match_the_frames_on_many_damaged_carnets(seed, seances, coups, mises, hits, breach):
    with tempfile.TemporaryDirectory() as d:
        check_same(damaged_carnet(seed, seances, coups, mises, hits, breach, Path(d) / "c"))


@pytest.mark.slow
def test_the_damage_reaches_what_the_state_judges():
    """Over fixed seeds the damaged carnets do give unreadable events, unknown
    sautes, repeated coups, remises and rule findings (the test above is not idle)."""
    seen: set[str] = set()
    with tempfile.TemporaryDirectory() as d:
        for seed in range(40):
            carnet = damaged_carnet(seed, 2, 10, 3, 8, CHOUETTE_CODES[seed % len(CHOUETTE_CODES)],
                                    Path(d) / f"c{seed}")
            s, a = chouette_state(carnet), coup_amounts(carnet)
            facts = {"unreadable_event": s.evenement_unreadable.any(), "unknown_saute": (~s.saute_known).any(),
                     "saute": (s.saute & s.saute_known).any(), "unverifiable": a.unverifiable.any(),
                     "no_stakes": (a.n_mises == 0).any(), "remise": (s.remises_before > 0).any(),
                     "stake_without_side": carnet.df("mises")["cote"].isna().any(),
                     "stake_unreadable": any(v.table == "mises" for _, v in carnet.problems),
                     "findings": bool(reference_rules(carnet))}
            seen |= {k for k, v in facts.items() if v}
    assert seen == set(facts)


# -- EC63-07's decks: pandas' text steps on the Arrow text, without a Series per step -------

DECK_TEXT = st.one_of(st.none(), st.text(alphabet=st.sampled_from(
    list("rbvRBV4412 ,;\t\n\r\x0b\x0c\x1c\x1f") + ["\xa0", "\u2003", "\u3000", "ß", "ﬁ", "ǅ", "é", "İ", "ı", "Σ", "ς"]),
    max_size=20))


@pytest.mark.slow
@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(DECK_TEXT, max_size=8), st.randoms())
def test_deck_lists_are_pandas_text_steps(cells, rnd):
    from auditor.checks.art63 import _DECK_SEPARATORS, deck_lists

    at = np.array(sorted(rnd.sample(range(len(cells)), rnd.randint(0, len(cells)))) if cells else [], dtype=np.int64)
    for dtype in (pd.StringDtype("pyarrow", na_value=pd.NA), pd.StringDtype("python", na_value=pd.NA), object):
        jeux = pd.Series(cells, dtype=dtype)
        want = jeux.iloc[at].fillna("").str.upper().str.strip().str.split(_DECK_SEPARATORS, regex=True)
        assert deck_lists(jeux, at) == [[d for d in ids if d] for ids in want.tolist()]


# -- arrays.equals and arrays.texts: small text columns as Python objects ------------------

@pytest.mark.slow
@settings(max_examples=200, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "A", "a ", "", "chouette", "é", "ß"])), max_size=12),
       st.sampled_from(["a", "b", "", "chouette", "é"]), st.booleans(), st.randoms())
def test_equals_and_texts_read_like_the_frame(cells, value, small, rnd):
    import auditor.arrays as arrays
    from auditor.carnet import Carnet, Source, Table

    at = np.array(sorted(rnd.sample(range(len(cells)), rnd.randint(0, len(cells)))) if cells else [], dtype=np.int64)
    for dtype in (pd.StringDtype("pyarrow", na_value=pd.NA), pd.StringDtype("python", na_value=pd.NA), object):
        df = pd.DataFrame({"x": pd.Series(cells, dtype=dtype)})
        carnet = Carnet(Source("c", "", "csv"), tables={"t": Table("t", df, frozenset({"x"}), None, {})})
        saved = arrays.SMALL
        arrays.SMALL = saved if small else -1     # both sides of the threshold
        try:
            assert arrays.equals(carnet, "t", "x", value).tolist() == is_value(df["x"], value).tolist()
            want = df["x"].iloc[at].tolist()
            assert arrays.texts(carnet, "t", "x", at).tolist() == [None if v is pd.NA or v is None else v
                                                                    for v in want]
        finally:
            arrays.SMALL = saved


# -- frames.cat: np.r_ without its parsing -------------------------------------------------

ARRAYS = st.sampled_from([np.bool_, np.int8, np.int64]).flatmap(
    lambda t: st.lists(st.integers(0, 1) if t is np.bool_ else st.integers(-100, 100), max_size=5).map(
        lambda v: np.array(v, dtype=t)))
SCALARS = st.one_of(st.booleans(), st.integers(-3, 3))


@settings(max_examples=300, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(st.lists(st.one_of(ARRAYS, SCALARS), min_size=1, max_size=4))
def test_cat_is_np_r(parts):
    from auditor.frames import cat

    want = np.r_[tuple(parts)]
    got = cat(*parts)
    assert got.dtype == want.dtype and got.tolist() == want.tolist()


# -- arrays' columns read from normalise's own arrays (SourceTable.typed) -----------------

def _without_typed(carnet):
    """The same carnet, its columns fetched through a Series each (no typed arrays)."""
    from dataclasses import replace

    from auditor.carnet import Carnet

    return Carnet(carnet.source, tables={n: replace(t, typed=None) for n, t in carnet.tables.items()},
                  problems=list(carnet.problems), unreadable=carnet.unreadable)


def check_columns_as_the_frame(carnet) -> None:
    import auditor.arrays as arrays
    from auditor.checks._util import records

    slow = _without_typed(carnet)
    kept = 0
    for name, t in carnet.tables.items():
        if t.typed is not None:
            assert t.typed[0] is t.df
            for field, arr in t.typed[1].items():   # the very arrays the frame holds
                held = t.df[field].array
                assert held is arr if field != "_row" else np.shares_memory(held.to_numpy(), arr)
                kept += 1
        for field in t.df.columns:
            whole = t.df[field].dtype == "Int64" or field == "_row"
            for fetch in (arrays.column, arrays.present_of) if whole else (arrays.present_of,):
                fast, ref = fetch(carnet, name, field), fetch(slow, name, field)
                assert fast.dtype == ref.dtype and np.array_equal(fast, ref), (name, field, fetch.__name__)
                assert not fast.flags.writeable
            if whole:
                for fast, ref in zip(arrays.ints_of(carnet, name, field), arrays.ints_of(slow, name, field)):
                    assert fast.dtype == ref.dtype and np.array_equal(fast, ref), (name, field)
            at = np.arange(0, len(t.df), 2)
            for rows in (None, at):
                got, want = arrays.texts(carnet, name, field, rows), arrays.texts(slow, name, field, rows)
                assert [type(v) for v in got] == [type(v) for v in want] and got.tolist() == want.tolist()
            if t.df[field].dtype == "string":
                for value in ("a", "chouette", ""):
                    assert arrays.equals(carnet, name, field, value).tolist() == \
                        arrays.equals(slow, name, field, value).tolist()
        assert list(arrays.records_of(carnet, name)) == list(records(t.df))
    assert kept   # the typed arrays were there to be read


@pytest.mark.slow
@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck))
@given(**CARNETS)
def test_columns_from_the_typed_arrays_are_the_frames(seed, seances, coups, mises, hits, breach):
    with tempfile.TemporaryDirectory() as d:
        check_columns_as_the_frame(damaged_carnet(seed, seances, coups, mises, hits, breach, Path(d) / "c"))


def test_a_table_pandera_changed_is_read_from_its_frame(tmp_path):
    """A cell pandera refuses (a stake's rank 0: its range check) is set to
    <NA> in the frame after parsing: that table keeps no typed arrays, and its
    column reads <NA> there, never the parsed value."""
    import auditor.arrays as arrays

    tables = generate(Spec(seed=3, seances=1, coups=3, mises=2), PROFILE)
    tables["mises"][0]["rang"] = 0
    write_csv_folder(tables, tmp_path / "c")
    carnet = normalise(read_carnet(tmp_path / "c"))
    assert carnet.tables["mises"].typed is None
    assert carnet.tables["coups"].typed is not None
    assert arrays.column(carnet, "mises", "rang")[0] == arrays.NA_INT
    assert not arrays.present_of(carnet, "mises", "rang")[0]
    check_columns_as_the_frame(carnet)
