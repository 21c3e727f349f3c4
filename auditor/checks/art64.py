"""Article 64: the carnet spécial — cover, stamps, numbering, totals, masses."""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from auditor.arrays import column, equals, ints_of, present_of, records_of, values_of
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import breaks_of, emit_at, fillable, ordered, records
from auditor.derived.amounts import amount_arrays, coup_amounts, repeated_coups, stakes, verifiable_at
from auditor.frames import cat, first_each
from auditor.checks._util import keys_of
from auditor.model import Cents, Day, Violation
from auditor.registry import check
from auditor.checks._needs import COUP_KEYS, STAKES



def _repeated(carnet: Carnet) -> pd.DataFrame | None:
    repeated = repeated_coups(carnet)
    if not repeated.any():
        return None
    return carnet.df("coups").loc[repeated, ["seance", "coup"]].drop_duplicates()


def _breaks(carnet: Carnet, keys: list[str], col: str, table: str,
            skip: pd.DataFrame | None = None) -> Iterator[Violation]:
    df = carnet.df(table)
    if skip is not None and len(skip):
        out = df[keys].merge(skip, how="left", on=keys, indicator=True)
        df = df[(out["_merge"] != "both").to_numpy()]
    found = breaks_of(df, keys, col, carnet, table)
    if not found:       # None, or no break: the usual case
        return
    breaks = found.frame(df, keys)
    for r in records(breaks[~fillable(breaks, carnet, table, keys, col)]):
        kind = r["kind"]
        missing = kind in ("gap", "start")
        number = r["first"] if missing else r["found"]
        where = {"seance": r["seance"], "coup": r["coup"] if col == "rang" else number,
                 "rang": number if col == "rang" else None}
        if kind == "gap" and r["first"] == r["last"]:
            kind = "gap_one"
        yield Violation(table=table, row=r["_row"], column=col, **where, kind=kind,
                        expected=str(r["first"]) if missing else None, found=str(r["found"]),
                        params={"first": r["first"], "last": r["last"], "number": r["found"],
                                "count": (r["last"] - r["first"] + 1) if missing else 1})


@check("EC64-01", needs=(COUP_KEYS,))
def coup_numbering_uninterrupted(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Coup numbers of a séance run 1, 2, 3 … in row order.

    Why: art. 64 1° — an uninterrupted series per séance; a gap hides coups, stakes and levy.
    Non-compliant: séance 2 jumps from coup 13 to coup 15.
    Compliant: séance 2 numbers its coups 1 … 40 without gap or repeat.
    """
    return _breaks(carnet, ["seance"], "coup", "coups")


@check("EC64-02", needs=("mises.seance,coup,rang", COUP_KEYS))
def stake_ranks_uninterrupted(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The `rang` of a coup's stakes runs 1 … k in row order.

    Why: art. 64 — stakes are written as they are received; the order decides who gets the excess back.
    Non-compliant: ranks 1, 2, 4 in one coup.
    Compliant: ranks 1, 2, 3.
    """
    # The stakes of a repeated coup number belong to two coups: their ranks cannot be told apart.
    return _breaks(carnet, ["seance", "coup"], "rang", "mises", skip=_repeated(carnet))


@check("EC64-03", needs=("coups.type,total_a,total_b", *STAKES))
def totals_match_stakes(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Each recorded side total equals the sum held on that side (with the chouette's part, in chouette).

    Why: art. 64 2° — the totals are the base of the levy; a wrong total is a wrong levy.
    Non-compliant: total_a 50,00 € when side a's stakes hold 45,00 €.
    Compliant: total_a 45,00 € for stakes holding 45,00 €; in chouette, total_a = what the chouette holds + en dehors.
    """
    coups = carnet.df("coups")
    v = amount_arrays(carnet)
    held_a, sur = v["held_a"][0], v["sur_chouette"][0]
    rows, seance, coup = keys_of(carnet, "coups")
    for kind in ("simple", "chouette"):
        at = verifiable_at(carnet, kind)
        for side in ("a", "b"):
            # The masses of spec § Derived amounts: held(side) in simple, sur_chouette + held(a) for chouette side a.
            total, mass = f"total_{side}_cents", v[f"mass_{side}"][0]
            t, t_ok = ints_of(carnet, "coups", total)
            for i in at[t_ok[at] & (t[at] != mass[at])]:
                yield Violation(
                    table="coups", row=int(rows[i]), column=total, seance=int(seance[i]), coup=int(coup[i]),
                    kind=kind, expected=Cents(int(mass[i])), found=Cents(int(t[i])),
                    params={"side": side, "total_cents": int(t[i]), "held_cents": int(mass[i]),
                            "held_a_cents": int(held_a[i]), "sur_chouette_cents": int(sur[i])})


@check("EC64-04", needs=("coups.type", *STAKES))
def masses_equal(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The two masses are equal once the excess is returned; a chouette holds between 0 and its amount.

    Why: art. 64 — the employee equalises the masses by returning the excess (art. 65: also at the chouette).
    Non-compliant: side a holds 120,00 €, side b 100,00 €; pontes holding 120 € against a chouette of 100 €.
    Compliant: both sides hold 100,00 €; pontes holding 80 € against a chouette of 100 €.
    """
    coups = carnet.df("coups")
    v = amount_arrays(carnet)
    a, b, sur = v["held_a"][0], v["held_b"][0], v["sur_chouette"][0]
    rows, seance, coup = keys_of(carnet, "coups")
    at = verifiable_at(carnet, "simple")
    for i in at[a[at] != b[at]]:
        ha, hb = int(a[i]), int(b[i])
        yield Violation(table="coups", row=int(rows[i]), column=None, seance=int(seance[i]), coup=int(coup[i]),
                        kind="simple", expected=Cents(min(ha, hb)), found=Cents(max(ha, hb)),
                        params={"held_a_cents": ha, "held_b_cents": hb, "excess_cents": abs(ha - hb)})
    at = verifiable_at(carnet, "chouette")
    for i in at[sur[at] < 0]:
        yield Violation(table="coups", row=int(rows[i]), column=None, seance=int(seance[i]), coup=int(coup[i]),
                        kind="chouette_negative", expected=Cents(0), found=Cents(int(sur[i])),
                        params={"held_a_cents": int(a[i]), "held_b_cents": int(b[i]),
                                "sur_chouette_cents": int(sur[i]), "excess_cents": -int(sur[i])})
    ch, ch_ok = ints_of(carnet, "coups", "chouette_cents")
    for i in at[ch_ok[at] & (sur[at] > ch[at])]:
        yield Violation(table="coups", row=int(rows[i]), column=None, seance=int(seance[i]), coup=int(coup[i]),
                        kind="chouette_over", expected=Cents(int(ch[i])), found=Cents(int(sur[i])),
                        params={"held_a_cents": int(a[i]), "held_b_cents": int(b[i]),
                                "sur_chouette_cents": int(sur[i]), "chouette_cents": int(ch[i]),
                                "excess_cents": int(sur[i]) - int(ch[i])})


@check("EC64-05", needs=("mises.rang", *STAKES))
def excess_returned_to_last(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The excess goes back to the last inscribed bettors of the heavier side only.

    Why: art. 64 — the excess is returned to the last bettors of the heavier side.
    Non-compliant: rang 2 returned 5 € while rang 3, same side, keeps all of its stake.
    Compliant: only the last stakes of the heavier side are returned, the last ones fully first.
    """
    m = carnet.df("mises")
    st = stakes(carnet)
    montant, montant_ok = ints_of(carnet, "mises", "montant_cents")
    restitue, restitue_ok = ints_of(carnet, "mises", "restitue_cents")
    readable = st.seance_ok & st.coup_ok & st.rang_ok & present_of(carnet, "mises", "cote") & montant_ok & restitue_ok
    # The stakes of a coup whose amounts cannot be verified are left out.
    unverifiable = coup_amounts(carnet).unverifiable & (st.coups_rank >= 0)
    bad = np.zeros(len(st.coups_rank) + 1, dtype=bool)
    bad[st.coups_rank[unverifiable]] = True
    keep = readable
    if unverifiable.any():
        keep = keep & ~(st.in_coups & bad[np.where(st.in_coups, st.coup_rank, -1)])
    keep = np.flatnonzero(keep)
    m_at = keep
    # Every stake kept, in rank order already: the usual case, where no array is copied.
    whole = len(keep) == len(m)
    codes = st.coup_code if whole else st.coup_code[keep]
    rang = st.rang if whole else st.rang[keep]
    side = equals(carnet, "mises", "cote", "b")
    side = side if whole else side[keep]
    montant, restitue = (montant, restitue) if whole else (montant[keep], restitue[keep])
    pos = np.arange(len(keep))
    returned = restitue > 0
    # Rank order: (séance, coup, rang, row); usually the table's own order, then no sort.
    in_order = ordered(codes, rang)
    by_rank = pos if in_order else np.lexsort((pos, rang, codes))

    def ranked(x: np.ndarray) -> np.ndarray:
        return x if in_order else x[by_rank]

    cr = ranked(codes)
    new_coup = cat(True, cr[1:] != cr[:-1]) if len(cr) else np.zeros(0, bool)
    starts = np.flatnonzero(new_coup)
    on_b = ranked(side)
    back = ranked(returned)

    # Was anything returned before this stake, on its side of its coup? Its (coup, side)'s
    # first return comes earlier in rank order. The (coup, side) of each stake as one int32,
    # made in place: a million stakes make no int64 temporary.
    index = np.int32 if 2 * len(cr) + 2 < 2**31 else np.int64
    group = np.cumsum(new_coup, dtype=index)
    group <<= 1
    group += on_b
    returns = np.flatnonzero(back)
    first_back = np.full(2 * len(starts) + 2, len(cr), dtype=index)
    np.minimum.at(first_back, group[returns], returns.astype(index))
    late = (first_back[group] < pos) & ranked(restitue < montant)
    # The first late stake of each (coup, side), listed in rank order.
    late = np.flatnonzero(late)     # few: the first of each (coup, side) taken among them alone
    late = by_rank[late[first_each(group[late])]]
    yield from emit_at(m, m_at[late], lambda r: Violation(
        table="mises", row=r["_row"], column="restitue_cents", seance=r["seance"], coup=r["coup"],
        rang=r["rang"], kind="not_last", expected=Cents(r["montant_cents"]), found=Cents(r["restitue_cents"]),
        params={"side": r["cote"]}))
    # A coup with returns on both sides: its first return (in rank order).
    ret = returns if in_order else by_rank[returns]
    if len(ret):
        rc, rs = codes[ret], side[ret].astype(np.int64)
        coup_start = cat(True, rc[1:] != rc[:-1])
        both = np.bitwise_or.reduceat(1 << rs, np.flatnonzero(coup_start)) == 3   # bit 0: a, bit 1: b
        first = ret[np.flatnonzero(coup_start)[both]]
        yield from emit_at(m, m_at[first], lambda r: Violation(
            table="mises", row=r["_row"], column="restitue_cents", seance=r["seance"], coup=r["coup"],
            rang=r["rang"], kind="both_sides", found=Cents(r["restitue_cents"])))


@check("EC64-06", needs=("carnet.table,date_debut",), needs_if_present=("seances.date",))
def cover_complete(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The cover gives the table number and the start date; no séance precedes it.

    Why: art. 64 — the cover shows the table and the day the carnet was started.
    Non-compliant: no table number; or a first séance dated before `date_debut`.
    Compliant: table 3, started 2026-01-04, first séance 2026-01-04.
    """
    if len(carnet.df("carnet")) != 1:
        return
    row = next(records_of(carnet, "carnet"))
    for field, kind in (("table", "no_table"), ("date_debut", "no_date")):
        # An unreadable cell is its EC00-02, not a missing table number or date.
        if row[field] is None and not carnet.unreadable_cells("carnet", field).iat[0]:
            yield Violation(table="carnet", row=row["_row"], column=field, kind=kind)
    if row["date_debut"] is None or "seances" not in carnet.tables:
        return
    s = carnet.df("seances")
    days = values_of(carnet, "seances", "date")
    early = np.flatnonzero(present_of(carnet, "seances", "date") & (days < np.datetime64(row["date_debut"])))
    if len(early):
        # The earliest: by date, then séance (an unreadable one last), then row.
        number, ok = ints_of(carnet, "seances", "seance")
        first = np.lexsort((column(carnet, "seances", "_row")[early], number[early], ~ok[early], days[early]))[:1]
        early = early[first]
    yield from emit_at(s, early, lambda r: Violation(
        table="seances", row=r["_row"], column="date", seance=r["seance"], kind="before_start",
        expected=Day.of(row["date_debut"]), found=Day.of(r["date"]),
        params={"date": Day.of(r["date"]), "date_debut": Day.of(row["date_debut"])}))


@check("EC64-07", needs=("seances.date,timbre",))
def seance_stamped(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Each séance bears the date stamp, showing the séance's date.

    Why: art. 64 — the date stamp is applied before each séance's operations.
    Non-compliant: `timbre` empty, or 2026-03-02 for a séance of 2026-03-01.
    Compliant: `timbre` equal to `date`.
    """
    s = carnet.df("seances")
    stamp, day = present_of(carnet, "seances", "timbre"), present_of(carnet, "seances", "date")
    missing = ~stamp
    if missing.any():
        missing &= ~carnet.unreadable_cells("seances", "timbre").to_numpy()
    yield from emit_at(s, np.flatnonzero(missing), lambda r: Violation(
        table="seances", row=r["_row"], column="timbre", seance=r["seance"], kind="missing",
        expected=Day.of(r["date"]), found=""))
    wrong = stamp & day & (values_of(carnet, "seances", "timbre") != values_of(carnet, "seances", "date"))
    yield from emit_at(s, np.flatnonzero(wrong), lambda r: Violation(
        table="seances", row=r["_row"], column="timbre", seance=r["seance"], kind="mismatch",
        expected=Day.of(r["date"]), found=Day.of(r["timbre"]),
        params={"date": Day.of(r["date"]), "timbre": Day.of(r["timbre"])}))


@check("EC64-08", needs=("seances.seance,date",))
def seances_chronological(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Séance numbers are unique and a higher number never has an earlier date.

    Why: art. 64 — the carnet follows the séances in order; a back-dated séance is suspect.
    Non-compliant: séance 5 dated 2026-03-01 after séance 4 dated 2026-03-02.
    Compliant: séances 4 and 5 both dated 2026-03-02.
    """
    s = carnet.df("seances")
    number, ok = ints_of(carnet, "seances", "seance")
    at = np.flatnonzero(ok)
    first = np.zeros(len(at), dtype=bool)
    first[first_each(number[at])] = True
    rows = column(carnet, "seances", "_row")
    for i in at[~first]:
        yield Violation(table="seances", row=int(rows[i]), column="seance", seance=int(number[i]), kind="duplicate",
                        found=str(int(number[i])))
    u = at[first & present_of(carnet, "seances", "date")[at]]
    u = u[np.argsort(number[u], kind="stable")]
    if len(u) < 2:
        return
    days = values_of(carnet, "seances", "date")[u]
    latest = np.maximum.accumulate(days)
    for k in np.flatnonzero(days[1:] < latest[:-1]) + 1:
        day, before = s["date"].iloc[u[k]], pd.Timestamp(latest[k - 1])
        yield Violation(table="seances", row=int(rows[u[k]]), column="date", seance=int(number[u[k]]), kind="order",
                        expected=Day.of(before, "≥ "), found=Day.of(day),
                        params={"date": Day.of(day), "latest": Day.of(before)})


@check("EC64-09", needs=(COUP_KEYS, "mises.seance,coup"))
def coup_has_stakes(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Every coup has at least one stake.

    Why: a coup without any stake has nothing to levy; it may hide stakes kept off the carnet.
    Non-compliant: coup 7 recorded with totals but no row in `mises`.
    Compliant: each coup has its stakes in `mises`.
    """
    a = coup_amounts(carnet)
    seance, seance_ok = ints_of(carnet, "coups", "seance")
    coup, coup_ok = ints_of(carnet, "coups", "coup")
    rows = column(carnet, "coups", "_row")
    for i in np.flatnonzero((a.n_mises == 0) & seance_ok & coup_ok & ~a.unverifiable):
        yield Violation(table="coups", row=int(rows[i]), column="coup", seance=int(seance[i]), coup=int(coup[i]),
                        kind="default")
