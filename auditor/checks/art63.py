"""Article 63: stakes, fiches and card holders."""

from __future__ import annotations

import re
from typing import Iterator

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from auditor.arrays import blind as blind_arr, blind_cells, column, equals, ints_of, present_of, series, texts, values_of
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import breaks_of, emit_at, fillable, ordered, records
from auditor.derived.amounts import stakes
from auditor.derived.chouette import play_order
from auditor.derived.fiches import holders, register
from auditor.frames import cat, find, first_each, pair_codes, running_max
from auditor.model import Cents, Day, Violation
from auditor.registry import check
from auditor.checks._needs import COUP_KEYS



@check("EC63-01", needs=("mises.montant,restitue",))
def stakes_multiple_of_step(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """`montant` and `restitue` are multiples of 0.10 €.

    Why: art. 63 — stakes must be multiples of 10 centimes.
    Non-compliant: a stake of 12,55 €.
    Compliant: a stake of 12,50 €, a return of 2,30 €.
    """
    m = carnet.df("mises")
    step = profile.stake_step_cents
    for field in ("montant_cents", "restitue_cents"):
        value, ok = ints_of(carnet, "mises", field)
        hit = np.flatnonzero(ok & (value % step != 0))
        if not len(hit):
            continue
        yield from emit_at(m, hit, lambda r, f=field: Violation(
            table="mises", row=r["_row"], column=f, seance=r["seance"], coup=r["coup"], rang=r["rang"],
            found=Cents(r[f]), kind=f.removesuffix("_cents"), params={"amount_cents": r[f], "step_cents": step}))


@check("EC63-02", needs=("mises.montant,restitue",))
def stakes_at_least_minimum(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """`montant` ≥ 0.10 €; 0 ≤ `restitue` ≤ `montant`.

    Why: art. 63 sets a minimum stake of 10 centimes; a return cannot exceed the stake.
    Non-compliant: a stake of 0,00 €, or 5 € returned on a 4 € stake.
    Compliant: a stake of 0,10 €, with 0 € returned.
    """
    m = carnet.df("mises")
    low = profile.min_stake_cents
    montant, montant_ok = ints_of(carnet, "mises", "montant_cents")
    restitue, restitue_ok = ints_of(carnet, "mises", "restitue_cents")
    cases = (
        ("below_min", "montant_cents", montant_ok & (montant < low), lambda r: Cents(low)),
        ("restitue_negative", "restitue_cents", restitue_ok & (restitue < 0), lambda r: Cents(0)),
        ("restitue_over", "restitue_cents", montant_ok & restitue_ok & (restitue > montant),
         lambda r: Cents(r["montant_cents"])),
    )
    for kind, field, mask, expected in cases:
        if not mask.any():
            continue
        yield from emit_at(m, np.flatnonzero(mask), lambda r, k=kind, f=field, e=expected: Violation(
            table="mises", row=r["_row"], column=f, seance=r["seance"], coup=r["coup"], rang=r["rang"],
            expected=e(r), found=Cents(r[f]), kind=k,
            params={"amount_cents": r[f], "montant_cents": r["montant_cents"], "min_cents": low}))


# -- fiches, card holders, decks -------------------------------------------------

@check("EC63-03", needs=("mises.seance,coup,fiche", COUP_KEYS, "fiches.seance,fiche,date"),
       needs_if_present=("seances.seance,date",))
def stakes_have_fiche(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Every stake shows a fiche registered for its séance, dated the séance's day.

    Why: art. 63 — only players holding a fiche (number, date of the day, séance) may ponter.
    Non-compliant: a stake on fiche 57 when séance 2 registered fiches 1 … 40; a fiche dated the day before.
    Compliant: every stake's fiche is in the séance's register with the séance's date.
    """
    reg = register(carnet)
    st = stakes(carnet)
    fiche, fiche_ok = ints_of(carnet, "mises", "fiche")
    row = column(carnet, "mises", "_row")
    # A stake of a coup absent from `coups` is rejected (EC00-03): it is no one's bet to check.
    sel = np.flatnonzero(st.in_coups & fiche_ok)
    # The first stake of a fiche in the order of play (séance, coup, rang), whatever the row order.
    played = _in_play_order(st, sel, row)
    # Findings are per (séance, fiche): its first stake and how many stakes,
    # the pairs in order of their first stake. Every stake, in play order already
    # (the usual case): the keys are taken as they are, not copied.
    whole = played is sel and len(sel) == len(row)
    sel = played
    first_at, count = _first_of_pairs(*((st.seance_rank, fiche) if whole else (st.seance_rank[sel], fiche[sel])))
    if not len(first_at):
        return
    first = sel[first_at]
    at = reg.find(st.seance[first], fiche[first])
    found = at >= 0
    unregistered = ~found & ~reg.unsure(st.seance[first])
    for k in np.flatnonzero(unregistered):
        i, f = first[k], int(fiche[first[k]])
        yield Violation(table="mises", row=int(row[i]), column="fiche", seance=int(st.seance[i]),
                        coup=int(st.coup[i]), rang=int(st.rang[i]) if st.rang_ok[i] else None, kind="not_registered",
                        found=str(f), params={"fiche": f, "count": int(count[k])})
    if "seances" not in carnet.tables:
        return
    s = carnet.df("seances")
    day_seance, day_ok = ints_of(carnet, "seances", "seance")
    days = values_of(carnet, "seances", "date")
    dated = np.flatnonzero(day_ok & present_of(carnet, "seances", "date"))
    dated = dated[first_each(day_seance[dated])]
    f_at = reg.at[at[found]]
    used = first[found]
    fiches = carnet.df("fiches")
    f_date = values_of(carnet, "fiches", "date")[f_at]
    d = find(day_seance[dated], st.seance[used])
    f_rows = column(carnet, "fiches", "_row")[f_at]
    seance_days = days[dated[np.maximum(d, 0)]] if len(dated) else f_date
    for k in np.flatnonzero((d >= 0) & ~np.isnat(f_date) & (f_date != seance_days)):
        i, f = used[k], int(fiche[used[k]])
        seance_day = s["date"].iloc[dated[d[k]]]
        day = fiches["date"].iloc[f_at[k]]
        yield Violation(table="fiches", row=int(f_rows[k]), column="date", seance=int(st.seance[i]), kind="date",
                        expected=Day.of(seance_day), found=Day.of(day),
                        params={"fiche": f, "date": Day.of(day), "seance_date": Day.of(seance_day),
                                "first_coup": int(st.coup[i])})


def _in_play_order(st, sel: np.ndarray, row: np.ndarray) -> np.ndarray:
    """`sel` (stakes of known coups) sorted by (séance, coup, rang, row): one
    integer key when they fit in one (the coup's rank in the order of play
    first), else four; no sort at all when they come in that order already."""
    if len(sel) < 2:
        return sel
    whole = len(sel) == len(row)     # every stake: no copy of the keys
    coup, rang, r = (st.coup_rank, st.rang, row) if whole else (st.coup_rank[sel], st.rang[sel], row[sel])
    if ordered(coup, rang, r):
        return sel
    r_low, rang_low = int(r.min()), int(rang.min())
    width, ranks = int(r.max()) - r_low + 1, int(rang.max()) - rang_low + 1
    if (int(coup.max()) + 1) * ranks * width < 2**62:
        key = (coup * ranks + (rang - rang_low)) * width + (r - r_low)
        return sel[np.argsort(key, kind="stable")]
    return sel[np.lexsort((r, rang, coup))]


def _first_of_pairs(seance_rank: np.ndarray, fiche: np.ndarray, piece: int = 1 << 16) -> tuple[np.ndarray, np.ndarray]:
    """Per distinct (séance, fiche), in order of first appearance: the position
    of its first row and its number of rows. (`piece`: rows taken at a time.)"""
    n = len(fiche)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
    low = int(fiche.min())
    span = int(fiche.max()) - low + 1
    size = (int(seance_rank.max()) + 1) * span
    if size <= 4 * n + 4096:
        # Fiche numbers are small: one slot per possible pair, no hashing nor sort.
        # By pieces of the rows: the slots never make arrays of the table's length
        # (on a million stakes, three of 8 MB each, and their pages to fault in).
        first = np.full(size, n, dtype=np.int64)
        counts = np.zeros(size, dtype=np.int64)
        for lo in range(0, n, piece):
            slot = fiche[lo:lo + piece] - low
            slot += seance_rank[lo:lo + piece] * span
            np.minimum.at(first, slot, np.arange(lo, lo + len(slot)))
            np.add.at(counts, slot, 1)
        used = np.flatnonzero(counts)
        order = np.argsort(first[used], kind="stable")
        return first[used][order], counts[used][order]
    # factorize numbers the pairs in order of first appearance (hashing, no sort).
    pair, _ = pd.factorize(pair_codes((seance_rank, fiche))[0])
    return np.flatnonzero(pair > np.maximum.accumulate(cat(-1, pair[:-1]))), np.bincount(pair)


@check("EC63-04", needs=("coups.seance,coup,type,joueur_a,joueur_b", "fiches.seance,fiche"))
def card_holders_inscribed(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Both card holders have a fiche of the séance, inscribed to hold the cards.

    Why: art. 63 — only players with a fiche who are inscribed may hold the cards (the chouetteur too).
    Non-compliant: joueur_b 12 without a fiche in the séance's register, or with `tenir_cartes` empty.
    Compliant: joueur_a 3 and joueur_b 4 both registered with ranks 3 and 4.
    """
    reg = register(carnet)
    h = holders(carnet)
    p = play_order(carnet)
    first = first_each(pair_codes((h.seance, h.player))[0])     # each player's first place in a séance
    at = reg.find(h.seance[first], h.player[first])
    registered = at >= 0
    rows = column(carnet, "coups", "_row")[p.at]
    coup = p.coup

    def violation(i: int, kind: str) -> Violation:
        side = "ab"[h.side[i]]
        player = int(h.player[i])
        return Violation(table="coups", row=int(rows[h.play[i]]), column=f"joueur_{side}", seance=int(h.seance[i]),
                         coup=int(coup[h.play[i]]), kind=kind, found=str(player),
                         params={"joueur": player, "side": side})

    for i in first[~registered & ~reg.unsure(h.seance[first])]:
        yield violation(i, "no_fiche")
    if not carnet.has("fiches.tenir_cartes"):
        return  # the clarification: without the column, the rank part is not checked
    f_at = reg.at[at[registered]]
    rank_ok = present_of(carnet, "fiches", "tenir_cartes")[f_at]
    rank_unreadable = blind_cells(carnet, "fiches", "tenir_cartes")[f_at]
    for i in first[registered][~rank_ok & ~rank_unreadable]:
        yield violation(i, "no_rank")


@check("EC63-05", needs=("coups.seance,coup,type,joueur_a,joueur_b,gagnant",))
def loser_leaves(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The loser of a coup does not hold the cards at the next coup of the séance.

    Why: art. 63 — after each partie the loser leaves his place; art. 65 keeps only the chouetteur's opponent to it.
    Non-compliant: joueur_b 7 loses coup 3 and holds the cards again at coup 4.
    Compliant: a chouetteur who loses coup 3 goes on as chouetteur at coup 4.
    """
    p = play_order(carnet)
    a, a_ok = (x[p.at] for x in ints_of(carnet, "coups", "joueur_a"))
    b, b_ok = (x[p.at] for x in ints_of(carnet, "coups", "joueur_b"))
    won_a, won_b = equals(carnet, "coups", "gagnant", "a")[p.at], equals(carnet, "coups", "gagnant", "b")[p.at]
    chouette = equals(carnet, "coups", "type", "chouette")[p.at]

    def before(x: np.ndarray) -> np.ndarray:   # the previous coup's (meaningful where `follows`)
        return cat(x[:1], x[:-1])

    # The loser of the previous coup: joueur_b when side a won, joueur_a when side b won.
    loser = np.where(before(won_a), before(b), before(a))
    loser_ok = (before(won_a) & before(b_ok)) | (before(won_b) & before(a_ok))
    # A chouetteur who lost may hold the cards at the next coup only as chouetteur again.
    chouetteur_again = before(chouette) & before(won_b) & chouette
    # Only the coup numbered right after: across a gap, a repeated or an unreadable number it cannot be told.
    known = loser_ok & p.follows
    at_a = known & a_ok & (a == loser) & ~chouetteur_again
    at_b = known & b_ok & (b == loser)
    rows = column(carnet, "coups", "_row")[p.at]
    for i in np.flatnonzero(at_a | at_b):
        joueur = int(loser[i])
        yield Violation(table="coups", row=int(rows[i]), column="joueur_a" if at_a[i] else "joueur_b",
                        seance=int(p.seance[i]), coup=int(p.coup[i]), kind="default", found=str(joueur),
                        params={"joueur": joueur, "prev_coup": int(p.coup[i - 1])})


@check("EC63-06", needs=("coups.seance,coup,type,joueur_a,joueur_b", "fiches.seance,fiche,tenir_cartes"))
def call_order_followed(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Players taking the cards for the first time in a séance come in order of inscription.

    Why: art. 63 — the call follows the order of inscription; the chouetteur takes the cards by adjudication.
    Non-compliant: the player inscribed 5th takes the cards at coup 3, the one inscribed 4th at coup 6.
    Compliant: ranks 1 and 2 at coup 1 (either side), rank 3 at coup 2, rank 4 at coup 5.
    """
    reg = register(carnet)
    h = holders(carnet)
    p = play_order(carnet)
    # Called positions only; a coup whose type is unreadable leaves its joueur_a unknown.
    called = np.flatnonzero(~h.chouetteur & (h.type_known | (h.side == 1)))
    new = called[first_each(pair_codes((h.seance[called], h.player[called]))[0])]
    at = reg.find(h.seance[new], h.player[new])
    new, at = new[at >= 0], at[at >= 0]
    rank, ranked = ints_of(carnet, "fiches", "tenir_cartes")
    rank, ranked = rank[reg.at[at]], ranked[reg.at[at]]
    new, rank = new[ranked], rank[ranked]
    # Newcomers at the same coup may come in either order: compare with earlier coups only.
    seance, pos = h.seance[new], h.pos[new]
    if not len(new):
        return
    coup_start = cat(True, (seance[1:] != seance[:-1]) | (pos[1:] != pos[:-1]))
    starts = np.flatnonzero(coup_start)
    at_coup = np.maximum.reduceat(rank, starts)
    seance_start = cat(True, seance[starts][1:] != seance[starts][:-1])
    upto = running_max(at_coup, seance_start)
    before = np.repeat(cat(0, upto[:-1]), np.diff(cat(starts, len(new))))
    has_before = np.repeat(~seance_start, np.diff(cat(starts, len(new))))
    late = has_before & (rank < before)
    # After a card holder that cannot be read, who came first is unknown: the hidden
    # player may be the newcomer a later one seems to overtake.
    blind = blind_arr(carnet, "coups", "joueur_a", "joueur_b", "type")[p.at]
    if blind.any():
        b_seance, b_pos = p.seance[blind], p.pos[blind]
        firsts = np.lexsort((b_pos, b_seance))
        b_seance, b_pos = b_seance[firsts], b_pos[firsts]
        keep = cat(True, b_seance[1:] != b_seance[:-1])
        b_seance, b_pos = b_seance[keep], b_pos[keep]
        i = np.minimum(np.searchsorted(b_seance, seance), len(b_seance) - 1)
        late &= ~((b_seance[i] == seance) & (pos >= b_pos[i]))
    rows = column(carnet, "coups", "_row")[p.at]
    for k in np.flatnonzero(late):
        i = new[k]
        player, r, b = int(h.player[i]), int(rank[k]), int(before[k])
        yield Violation(table="coups", row=int(rows[h.play[i]]), column=f"joueur_{'ab'[h.side[i]]}",
                        seance=int(seance[k]), coup=int(p.coup[h.play[i]]), kind="default",
                        expected=f"≥ {b}", found=str(r), params={"joueur": player, "rank": r, "before": b})


_DECK_SEPARATORS = r"[\s,;]+"


@check("EC63-07", needs=("seances.seance,jeux",))
def decks_new_each_seance(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Each séance lists three distinct decks, none used in an earlier séance.

    Why: art. 63 — three decks of different colours, new at each séance.
    Non-compliant: `R4411 B4412` (two decks); deck R4411 listed again at séance 3 after séance 2.
    Compliant: séance 2 `R4411 B4412 V4413`, séance 3 `R4414 B4415 V4416`.
    """
    number, ok = ints_of(carnet, "seances", "seance")
    at = np.flatnonzero(ok)
    decks = deck_lists(series(carnet, "seances", "jeux"), at)
    seances, rows = number[at].tolist(), column(carnet, "seances", "_row")[at].tolist()
    jeux = texts(carnet, "seances", "jeux", at).tolist()
    want = profile.decks_per_seance
    for seance, row, text, ids in zip(seances, rows, jeux, decks):
        listed, distinct = len(ids), len(set(ids))
        if listed != want or distinct != want:
            yield Violation(table="seances", row=row, column="jeux", seance=seance, kind="count",
                            expected=str(want), found=str(distinct),
                            params={"jeux": text or "", "listed": listed, "distinct": distinct, "want": want})
    used, seen = [], set()
    for seance, row, ids in zip(seances, rows, decks):
        for deck in ids:
            if (seance, deck) not in seen:
                seen.add((seance, deck))
                used.append((seance, row, deck))
    earliest: dict = {}
    for seance, _, deck in used:
        earliest[deck] = min(earliest.get(deck, seance), seance)
    for seance, row, deck in used:
        if earliest[deck] < seance:
            yield Violation(table="seances", row=row, column="jeux", seance=seance, kind="reused", found=deck,
                            params={"deck": deck, "earlier": earliest[deck]})


def deck_lists(jeux: pd.Series, at: np.ndarray) -> list[list[str]]:
    """The deck identifiers of the cells `at` of `jeux`, as a clerk reads them
    (case and surrounding blanks do not matter): pandas'
    `fillna("").str.upper().str.strip().str.split(_DECK_SEPARATORS, regex=True)`,
    empty pieces left out. On Arrow text those are Arrow's kernels for the
    case and the blanks and Python's `re` for the split: the same steps here,
    without a Series per step (a cost per séance table, not per séance)."""
    chunked = getattr(jeux.array, "_pa_array", None)
    if chunked is not None and (pa.types.is_string(chunked.type) or pa.types.is_large_string(chunked.type)):
        cells = pc.utf8_trim_whitespace(pc.utf8_upper(pc.fill_null(chunked.take(at), ""))).to_pylist()
        split = re.compile(_DECK_SEPARATORS).split
        return [[d for d in split(cell) if d] for cell in cells]
    pieces = jeux.iloc[at].fillna("").str.upper().str.strip().str.split(_DECK_SEPARATORS, regex=True)
    return [[d for d in ids if d] for ids in pieces.tolist()]


@check("EC63-08", needs=("fiches.seance,fiche",))
def fiche_register_uninterrupted(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The fiches of a séance are numbered 1, 2, 3 … without gap or duplicate.

    Why: art. 63 — each fiche bears a serial number; a hole in the register may hide a player.
    Non-compliant: séance 2 registers fiches 1, 2, 4; or fiche 3 twice.
    Compliant: séance 2 registers fiches 1 … 40, in any row order.
    """
    fiches = carnet.df("fiches")
    found = breaks_of(fiches, ["seance"], "fiche", carnet, "fiches")
    if not found:       # None, or no break: the usual case
        return
    breaks = found.frame(fiches, ["seance"])
    # Row order of the register is free: only duplicates and missing numbers matter.
    breaks = breaks[(breaks["kind"] != "order").to_numpy() & ~fillable(breaks, carnet, "fiches", ["seance"], "fiche")]
    for r in records(breaks):
        missing = r["kind"] in ("gap", "start")
        yield Violation(table="fiches", row=r["_row"], column="fiche", seance=r["seance"], kind=r["kind"],
                        expected=str(r["first"]) if missing else None, found=str(r["found"]),
                        params={"first": r["first"], "last": r["last"], "number": r["found"],
                                "count": (r["last"] - r["first"] + 1) if missing else 1})
