"""The chouette runs told in words for the report: each run in one line
(adjudicated at coup n for X €, sauté at coup m, remise …), from the chouette
state derived once per carnet (`auditor/derived/chouette.py`)."""

from __future__ import annotations

from auditor.arrays import texts
from auditor.carnet import Carnet
from auditor.derived.chouette import chouette_state
from auditor.i18n import labels
from auditor.money import format_cents
from auditor.report.drafts import RunStory


def run_stories(carnet: Carnet, lang: str) -> list[RunStory]:
    """Each chouette run told in one line, so an inspector can follow it:
    adjudicated at coup n for X €, sauté at coup m, remise, … ."""
    if "coups" not in carnet.tables or carnet.unreadable:
        return []
    s = chouette_state(carnet)
    if s.empty:
        return []
    lab = labels(lang)
    out: list[RunStory] = []
    at = s.at
    cols = {"run_start": s.run_start.tolist(), "run_end": s.run_end.tolist(), "seance": s.seance.tolist(),
            "coup": s.coup.tolist(), "joueur_a": texts(carnet, "coups", "joueur_a", at).tolist(),
            "chouette_cents": texts(carnet, "coups", "chouette_cents", at).tolist(),
            "evenement": texts(carnet, "coups", "evenement", at).tolist(),
            "saute": (s.saute & s.saute_known).tolist()}
    names = list(cols)
    parts: list[str] = []
    first: dict = {}
    # Text only: one pass over the chouette coups (a run starts at the first one), nothing recomputed.
    # Column by column, then row by row: plain Python values of the state's arrays, no frame.
    for values in zip(*cols.values()):
        r = dict(zip(names, values))
        coup, amount = _s(r["coup"]), format_cents(r["chouette_cents"], lang) or "?"
        if r["run_start"]:
            parts, first = [], r
        if r["evenement"] == "adjudication":
            key = "chouette_adjudicated" if r["run_start"] else "chouette_readjudicated"
            parts.append(lab[key].format(coup=coup, amount=amount))
        elif r["evenement"] == "remise":
            parts.append(lab["chouette_remise"].format(coup=coup, amount=amount))
        elif r["run_start"]:
            parts.append(lab["chouette_no_adjudication"].format(coup=coup, amount=amount))
        if r["saute"] is True:
            parts.append(lab["chouette_saute"].format(coup=coup))
        if r["run_end"]:
            parts.append(lab["chouette_last"].format(coup=coup, amount=amount))
            span = [_s(first["coup"]), coup]
            out.append(RunStory(seance=_s(first["seance"]), chouetteur=_s(first["joueur_a"]),
                                coups=span[0] if span[0] == span[1] else "–".join(span),
                                story=lab["chouette_separator"].join(parts)))
    return out


def _s(value) -> str:
    return "" if value is None else str(value)
