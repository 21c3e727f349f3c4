"""Article 65: the chouette — adjudication, saute, remise, pontes on its side."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import blind_cells, column, equals, ints_of, present_of, texts
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import keys_of
from auditor.derived.amounts import amount_arrays, verifiable_at
from auditor.derived.chouette import ChouetteState, chouette_state
from auditor.model import Cents, Violation
from auditor.registry import check
from auditor.checks._needs import STAKES, CHOUETTE_STATE


def _coup(r: dict, column: str | None, kind: str, **extra) -> Violation:
    return Violation(table="coups", row=r["_row"], column=column, seance=r["seance"], coup=r["coup"],
                     kind=kind, **extra)


@check("EC65-01", needs=("coups.seance,coup,type,joueur_a",))
def chouette_adjudicated(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """A chouette run starts with its adjudication; every chouette coup records
    the chouette and the sums held outside it.

    Why: art. 65 — the chouette is auctioned like the bank at baccara; art. 64 2° asks for both amounts.
    Non-compliant: a run whose first coup has no `evenement`; a chouette coup with `chouette` empty.
    Compliant: the run opens with `adjudication`; `chouette` and `en_dehors` filled on every coup.
    """
    s = chouette_state(carnet)
    if s.empty:
        return
    at = s.at
    rows = column(carnet, "coups", "_row")[at]
    start = s.run_start & ~equals(carnet, "coups", "evenement", "adjudication")[at] & ~s.evenement_unreadable
    if start.any():
        events, players = texts(carnet, "coups", "evenement", at[start]), texts(carnet, "coups", "joueur_a", at[start])
        for k, i in enumerate(np.flatnonzero(start)):
            event = events[k] or ""
            yield Violation(table="coups", row=int(rows[i]), column="evenement", seance=int(s.seance[i]),
                            coup=int(s.coup[i]), kind="no_adjudication", expected="adjudication", found=event,
                            params={"joueur": players[k], "evenement": event})
    for field, kind in (("chouette_cents", "no_chouette"), ("en_dehors_cents", "no_en_dehors")):
        empty = ~present_of(carnet, "coups", field)[at]
        if empty.any():
            # An unreadable cell is already an EC00-02: only an empty one is missing.
            empty &= ~blind_cells(carnet, "coups", field)[at]
            for i in np.flatnonzero(empty):
                yield Violation(table="coups", row=int(rows[i]), column=field, seance=int(s.seance[i]),
                                coup=int(s.coup[i]), kind=kind, found="")


def _records(carnet: Carnet, s: ChouetteState, idx: np.ndarray) -> Iterator[dict]:
    """The chouette coups `idx` (positions in the state) as dicts of plain
    Python values (None where missing), as `records` gives a frame's rows."""
    if not len(idx):
        return
    at = s.at[idx]
    cols = {"_row": column(carnet, "coups", "_row")[at].tolist(), "seance": s.seance[idx].tolist(),
            "coup": s.coup[idx].tolist(), "joueur_a": texts(carnet, "coups", "joueur_a", at).tolist(),
            "evenement": texts(carnet, "coups", "evenement", at).tolist(),
            "chouette_cents": texts(carnet, "coups", "chouette_cents", at).tolist(),
            "adjudicated": np.where(s.adjudicated_ok[idx], s.adjudicated[idx], None).tolist(),
            "prev_coup": np.where(s.run_start[idx], None, s.prev_coup[idx]).tolist()}
    names = list(cols)
    for values in zip(*cols.values()):
        yield dict(zip(names, values))


@check("EC65-02", needs=CHOUETTE_STATE)
def remise_regular(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """A remise comes right after a saute, once per adjudication, for the adjudicated amount.

    Why: art. 65 — the chouetteur may re-stake the chouette once, paying the original levy again.
    Non-compliant: a remise after a coup the chouette did not lose; a second remise; 80 € re-staked for 100 €.
    Compliant: adjudicated for 100 €, sautée at coup 4, remise of 100 € at coup 5.
    """
    s = chouette_state(carnet)
    if s.empty:
        return
    remise = equals(carnet, "coups", "evenement", "remise")[s.at]
    if not remise.any():
        return
    not_after = remise & ~np.where(s.prev_saute_known, s.prev_saute, True)
    for x in _records(carnet, s, np.flatnonzero(not_after)):
        yield _coup(x, "evenement", "not_after_saute", found="remise", params={"joueur": x["joueur_a"]})
    second = remise & (s.remises_before > 0)
    for x in _records(carnet, s, np.flatnonzero(second)):
        yield _coup(x, "evenement", "second_remise", found="remise", params={"joueur": x["joueur_a"]})
    ch_ok = present_of(carnet, "coups", "chouette_cents")[s.at]
    ch = ints_of(carnet, "coups", "chouette_cents")[0][s.at]
    amount = remise & ch_ok & s.adjudicated_ok & (ch != s.adjudicated)
    for x in _records(carnet, s, np.flatnonzero(amount)):
        yield _coup(x, "chouette_cents", "amount", expected=Cents(x["adjudicated"]), found=Cents(x["chouette_cents"]),
                    params={"chouette_cents": x["chouette_cents"], "adjudicated_cents": x["adjudicated"]})


@check("EC65-03", needs=CHOUETTE_STATE)
def chouette_stops_after_saute(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """After a saute the chouette is re-staked or auctioned; after its second saute, auctioned.

    Why: art. 65 — if the chouette sautes a second time it must be put up for auction again.
    Non-compliant: the run goes on with no `evenement` after a saute; a remise after the second saute.
    Compliant: sautée at coup 4, remise at coup 5; sautée again at coup 7, adjudication at coup 8.
    """
    s = chouette_state(carnet)
    if s.empty:
        return
    after = s.prev_saute & s.prev_saute_known & ~s.evenement_unreadable
    if not after.any():
        return
    # The saute at the previous coup was the segment's second (or a later one, if it went on anyway).
    auction = after & (s.sautes_upto_prev >= 2)
    wrong = auction & ~equals(carnet, "coups", "evenement", "adjudication")[s.at]
    for r in _records(carnet, s, np.flatnonzero(wrong)):
        yield _coup(r, "evenement", "not_auctioned", expected="adjudication", found=r["evenement"] or "",
                    params={"saute_coup": r["prev_coup"], "evenement": r["evenement"] or ""})
    silent = after & ~present_of(carnet, "coups", "evenement")[s.at] & ~auction
    for r in _records(carnet, s, np.flatnonzero(silent)):
        yield _coup(r, "evenement", "no_event", expected="remise / adjudication", found="",
                    params={"saute_coup": r["prev_coup"]})


@check("EC65-04", needs=("coups.type", *STAKES))
def pontes_on_chouette_side_only_beyond(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Sums are held on the chouette side only when the chouette holds its full amount.

    Why: art. 65 — players may ponter on the chouette side only when the stakes exceed the chouette.
    Non-compliant: chouette 100 €, pontes 100 €, 20 € held on side a (the chouette then holds 80 €).
    Compliant: chouette 100 €, pontes 130 €, 30 € held on side a.
    """
    v = amount_arrays(carnet)
    held_a, sur = v["held_a"][0], v["sur_chouette"][0]
    ch, ch_ok = ints_of(carnet, "coups", "chouette_cents")
    at = verifiable_at(carnet, "chouette")
    rows, seance, coup = keys_of(carnet, "coups")
    for i in at[ch_ok[at] & (held_a[at] > 0) & (sur[at] < ch[at])]:
        yield Violation(table="coups", row=int(rows[i]), column="en_dehors_cents", seance=int(seance[i]),
                        coup=int(coup[i]), kind="default", expected=Cents(int(ch[i])), found=Cents(int(sur[i])),
                        params={"held_a_cents": int(held_a[i]), "sur_chouette_cents": int(sur[i]),
                                "chouette_cents": int(ch[i])})


@check("EC65-05", needs=("coups.type", *STAKES))
def en_dehors_matches_stakes(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """The recorded `en_dehors` equals the sums held on the chouette side.

    Why: art. 64 2° — the total held outside the chouette is the base of its levy (art. 66).
    Non-compliant: `en_dehors` 0 while side a's stakes hold 20 €.
    Compliant: `en_dehors` 20 € for side a's stakes holding 20 €.
    """
    held_a = amount_arrays(carnet)["held_a"][0]
    out, out_ok = ints_of(carnet, "coups", "en_dehors_cents")
    at = verifiable_at(carnet, "chouette")
    rows, seance, coup = keys_of(carnet, "coups")
    for i in at[out_ok[at] & (out[at] != held_a[at])]:
        yield Violation(table="coups", row=int(rows[i]), column="en_dehors_cents", seance=int(seance[i]),
                        coup=int(coup[i]), kind="default", expected=Cents(int(held_a[i])), found=Cents(int(out[i])),
                        params={"held_a_cents": int(held_a[i]), "en_dehors_cents": int(out[i])})
