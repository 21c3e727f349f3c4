"""Article 65: the chouette — adjudication, saute, remise, pontes on its side."""

from __future__ import annotations

from typing import Iterator

import numpy as np

from auditor.arrays import ints_of
from auditor.carnet import Carnet
from auditor.catalogue import Profile
from auditor.checks._util import coup_of, emit_at, rows_of, seance_of
from auditor.derived.amounts import amount_arrays, verifiable_at
from auditor.derived.chouette import chouette_state
from auditor.frames import ints, is_value, present, py
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
    rows, seance, coup = rows_of(s), seance_of(s), coup_of(s)
    start = s["run_start"].to_numpy() & ~is_value(s["evenement"], "adjudication") & ~s["evenement_unreadable"].to_numpy()
    if start.any():
        events, players = s["evenement"].tolist(), s["joueur_a"].tolist()
        for i in np.flatnonzero(start):
            event = py(events[i]) or ""
            yield Violation(table="coups", row=int(rows[i]), column="evenement", seance=int(seance[i]),
                            coup=int(coup[i]), kind="no_adjudication", expected="adjudication", found=event,
                            params={"joueur": py(players[i]), "evenement": event})
    at = s.index
    for field, kind in (("chouette_cents", "no_chouette"), ("en_dehors_cents", "no_en_dehors")):
        empty = ~present(s[field])
        if empty.any():
            # An unreadable cell is already an EC00-02: only an empty one is missing.
            empty &= ~carnet.unreadable_cells("coups", field).loc[at].to_numpy()
            for i in np.flatnonzero(empty):
                yield Violation(table="coups", row=int(rows[i]), column=field, seance=int(seance[i]),
                                coup=int(coup[i]), kind=kind, found="")


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
    remise = is_value(s["evenement"], "remise")
    if not remise.any():
        return
    prev_saute = s["prev_saute"].array
    not_after = remise & ~prev_saute.to_numpy(dtype=bool, na_value=True)
    yield from emit_at(s, np.flatnonzero(not_after), lambda x: _coup(x, "evenement", "not_after_saute", found="remise",
                                               params={"joueur": x["joueur_a"]}))
    second = remise & (s["remises_before"].to_numpy() > 0)
    yield from emit_at(s, np.flatnonzero(second), lambda x: _coup(x, "evenement", "second_remise", found="remise",
                                            params={"joueur": x["joueur_a"]}))
    (ch, ch_ok), (adj, adj_ok) = ints(s["chouette_cents"]), ints(s["adjudicated"])
    amount = remise & ch_ok & adj_ok & (ch != adj)
    yield from emit_at(s, np.flatnonzero(amount), lambda x: _coup(
        x, "chouette_cents", "amount", expected=Cents(x["adjudicated"]), found=Cents(x["chouette_cents"]),
        params={"chouette_cents": x["chouette_cents"], "adjudicated_cents": x["adjudicated"]}))


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
    after = s["prev_saute"].array.to_numpy(dtype=bool, na_value=False) & ~s["evenement_unreadable"].to_numpy()
    if not after.any():
        return
    # The saute at the previous coup was the segment's second (or a later one, if it went on anyway).
    auction = after & (s["sautes_upto_prev"].to_numpy() >= 2)
    wrong = auction & ~is_value(s["evenement"], "adjudication")
    yield from emit_at(s, np.flatnonzero(wrong), lambda r: _coup(
        r, "evenement", "not_auctioned", expected="adjudication", found=r["evenement"] or "",
        params={"saute_coup": r["prev_coup"], "evenement": r["evenement"] or ""}))
    silent = after & ~present(s["evenement"]) & ~auction
    yield from emit_at(s, np.flatnonzero(silent), lambda r: _coup(r, "evenement", "no_event", expected="remise / adjudication",
                                            found="", params={"saute_coup": r["prev_coup"]}))


@check("EC65-04", needs=("coups.type", *STAKES))
def pontes_on_chouette_side_only_beyond(carnet: Carnet, profile: Profile) -> Iterator[Violation]:
    """Sums are held on the chouette side only when the chouette holds its full amount.

    Why: art. 65 — players may ponter on the chouette side only when the stakes exceed the chouette.
    Non-compliant: chouette 100 €, pontes 100 €, 20 € held on side a (the chouette then holds 80 €).
    Compliant: chouette 100 €, pontes 130 €, 30 € held on side a.
    """
    coups = carnet.df("coups")
    v = amount_arrays(carnet)
    held_a, sur = v["held_a"][0], v["sur_chouette"][0]
    ch, ch_ok = ints_of(carnet, "coups", "chouette_cents")
    at = verifiable_at(carnet, "chouette")
    rows, seance, coup = rows_of(coups), seance_of(coups), coup_of(coups)
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
    coups = carnet.df("coups")
    held_a = amount_arrays(carnet)["held_a"][0]
    out, out_ok = ints_of(carnet, "coups", "en_dehors_cents")
    at = verifiable_at(carnet, "chouette")
    rows, seance, coup = rows_of(coups), seance_of(coups), coup_of(coups)
    for i in at[out_ok[at] & (out[at] != held_a[at])]:
        yield Violation(table="coups", row=int(rows[i]), column="en_dehors_cents", seance=int(seance[i]),
                        coup=int(coup[i]), kind="default", expected=Cents(int(held_a[i])), found=Cents(int(out[i])),
                        params={"held_a_cents": int(held_a[i]), "en_dehors_cents": int(out[i])})
