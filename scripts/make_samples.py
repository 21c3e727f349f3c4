"""Regenerate sample_carnets/ deterministically (`make samples`).

Compliant carnets come straight from the generator; breach carnets are the
same carnets with surgical edits, each chosen to break one rule and keep the
rest intact (ticket numbers are shifted when a ticket is removed, the séance
cagnotte follows), so that every sample's expected codes are exactly those
listed in sample_carnets/expected.toml.
"""

from __future__ import annotations

import datetime as dt
import random
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from auditor.synth.breaches import inject  # noqa: E402
from auditor.synth.breaches.tables import coup_rows, remove_ticket, renumber_from  # noqa: E402
from auditor.synth.archive import ArchiveSpec, generate_archive, write_archive  # noqa: E402
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx  # noqa: E402

OUT = ROOT / "sample_carnets"


def coup_with(t, predicate):
    """The first coup (with its stakes) that satisfies `predicate`."""
    for c in t["coups"]:
        stakes = coup_rows(t, "mises", c["seance"], c["coup"])
        if predicate(c, stakes):
            return c, stakes
    raise LookupError("no coup fits")


# -- breach sets -----------------------------------------------------------

def numbering_and_stakes(t):
    """EC64-01, EC63-01, EC63-02, EC64-05."""
    renumber_from(t, 2, 9, +1)                                  # séance 2 jumps from coup 8 to 10
    # EC63-01: +0,05 on a returned stake's montant and restitue (held unchanged).
    _, stakes = coup_with(t, lambda c, s: c["seance"] == 1 and c["coup"] > 3 and any(
        m["restitue"] and m["restitue"] < m["montant"] for m in s))
    m = next(m for m in stakes if m["restitue"] and m["restitue"] < m["montant"])
    m["montant"] += 5
    m["restitue"] += 5
    # EC63-02: a fully returned stake (held 0) written as a zero stake.
    _, stakes = coup_with(t, lambda c, s: c["seance"] == 3 and any(
        m["restitue"] == m["montant"] for m in s))
    m = next(m for m in stakes if m["restitue"] == m["montant"])
    m["montant"] = m["restitue"] = 0
    # EC64-05: the excess taken back from an earlier stake instead of the last one.
    def movable(c, s):
        if c["seance"] != 3 or c["coup"] < 5:
            return False
        last = [m for m in s if m["restitue"]]
        if len(last) != 1:
            return False
        side = last[0]["cote"]
        return any(m["cote"] == side and m["rang"] < last[0]["rang"] and m["montant"] > last[0]["restitue"]
                   and not m["restitue"] for m in s)
    _, stakes = coup_with(t, movable)
    last = next(m for m in stakes if m["restitue"])
    early = next(m for m in stakes if m["cote"] == last["cote"] and m["rang"] < last["rang"]
                 and m["montant"] > last["restitue"])
    early["restitue"], last["restitue"] = last["restitue"], 0


def masses_and_totals(t):
    """EC64-03, EC64-04, EC64-09, EC00-03."""
    c, _ = coup_with(t, lambda c, s: c["seance"] == 1 and c["coup"] == 4)
    c["total_a"] += 1000                                        # EC64-03 alone: totals wrong, stakes right
    # EC64-04: the excess of the heavier side, which lost, never returned.
    c, stakes = coup_with(t, lambda c, s: c["seance"] == 2 and c["coup"] > 5 and any(m["restitue"] for m in s)
                          and c["gagnant"] != next(m["cote"] for m in s if m["restitue"]))
    for m in stakes:
        m["restitue"] = 0
    # EC64-09: a coup whose stakes never reached the carnet.
    c, stakes = coup_with(t, lambda c, s: c["seance"] == 3 and c["coup"] == 6)
    for m in stakes:
        t["mises"].remove(m)
    # EC00-03: a stake recorded against a coup that does not exist.
    last = max(r["coup"] for r in t["coups"] if r["seance"] == 3)
    t["mises"].append({"seance": 3, "coup": last + 1, "rang": 1, "fiche": 30, "cote": "a",
                       "montant": 500, "restitue": 0})


def levies(t):
    """EC66-01, EC661-01."""
    c, _ = coup_with(t, lambda c, s: c["seance"] == 1 and c["prelevement"] >= 50 and c["prelevement"] % 100)
    c["prelevement"] -= 10                                      # levy short by 0,10 €, tickets follow it
    remove_ticket(t, c["seance"], c["coup"], 10)
    c, _ = coup_with(t, lambda c, s: c["seance"] == 2 and c["coup"] > 10 and c["prelevement"] % 100 >= 20)
    remove_ticket(t, c["seance"], c["coup"], 10)               # one ticket missing for a correct levy


def cover_and_seances(t):
    """EC64-06, EC64-07, EC64-08, EC00-02."""
    t["carnet"][0]["table"] = None                              # cover without the table number
    s2 = next(s for s in t["seances"] if s["seance"] == 2)
    s2["timbre"] = s2["date"] + dt.timedelta(days=1)            # stamp of the wrong day
    s4 = next(s for s in t["seances"] if s["seance"] == 4)
    s3 = next(s for s in t["seances"] if s["seance"] == 3)
    s4["date"] = s4["timbre"] = s3["date"] - dt.timedelta(days=2)   # back-dated séance
    for f in t["fiches"]:
        if f["seance"] == 4:
            f["date"] = s4["date"]
    _, stakes = coup_with(t, lambda c, s: c["seance"] == 1 and c["coup"] == 2)
    stakes[0]["montant"] = "12,555"                             # three decimals: unreadable


def chouette_and_fiches(t):
    """EC63-03, EC63-05, EC63-07, EC65-03 (with the EC66-02 it implies)."""
    s1 = next(s for s in t["seances"] if s["seance"] == 1)
    s2 = next(s for s in t["seances"] if s["seance"] == 2)
    s2["jeux"] = s1["jeux"].split()[0] + " " + " ".join(s2["jeux"].split()[1:])  # a deck used again
    _, stakes = coup_with(t, lambda c, s: c["seance"] == 2 and c["type"] == "simple" and len(s) > 2)
    stakes[-1]["fiche"] = 999                                   # a ponte without a fiche of the séance
    # The player facing the chouetteur loses and stays for the next coup.
    coups = t["coups"]
    for prev, nxt in zip(coups, coups[1:]):
        if (prev["type"] == nxt["type"] == "chouette" and prev["seance"] == nxt["seance"]
                and prev["joueur_a"] == nxt["joueur_a"] and prev["gagnant"] == "a"
                and nxt["joueur_b"] != prev["joueur_b"] and not nxt["evenement"]):
            nxt["joueur_b"] = prev["joueur_b"]
            break
    # After a saute the chouette goes on without its remise being written.
    remise = next(c for c in coups if c["evenement"] == "remise")
    remise["evenement"] = None


def tickets(t):
    """EC83-01, EC82-03, EC561-01, EC561-02: tickets skipped, reused, taken
    outside the registered books, and numbered backwards (auditor/synth/breaches/)."""
    inject(t, ["EC83-01", "EC82-03", "EC561-01", "EC561-02"], seed=0)


def books(k: int) -> dict[int, int]:
    """Each table of a casino draws on its own ticket books (aligned blocks of 200)."""
    return {10: 4801 + 4000 * k, 100: 1201 + 2000 * k, 1000: 201 + 1000 * k}


SAMPLES = [
    # (path, container, spec, breach, writer options)
    ("compliant/forges-table3.xlsx", "xlsx", Spec(ticket_start=books(1), seances=4, coups=25, mises=6, seed=3), None, {}),
    ("compliant/forges-table5", "csv", Spec(ticket_start=books(2), seances=3, coups=30, mises=7, seed=5, table=5),
     None, {"delimiter": ";", "decimal": ",", "encoding": "utf-8-sig", "date_style": "fr"}),
    ("compliant/deauville-table1", "csv",
     Spec(ticket_start=books(3), seances=3, coups=20, mises=5, seed=11, casino="Casino Barrière de Deauville", table=1,
          start=dt.date(2026, 5, 14)),
     None, {"delimiter": ",", "decimal": ".", "encoding": "cp1252", "date_style": "iso"}),
    ("compliant/cabourg-table8-chouette.xlsx", "xlsx",
     Spec(ticket_start=books(4), seances=3, coups=24, mises=6, seed=31, table=8, casino="Casino de Cabourg", chouette=True), None, {}),
    ("infractions/chouette-et-fiches", "csv",
     Spec(ticket_start=books(5), seances=3, coups=24, mises=6, seed=31, table=9, casino="Casino de Cabourg", chouette=True),
     chouette_and_fiches, {"delimiter": ";", "decimal": ",", "encoding": "utf-8", "date_style": "fr"}),
    ("infractions/numerotation-et-mises.xlsx", "xlsx", Spec(ticket_start=books(6), seances=3, coups=18, mises=6, seed=21, table=2),
     numbering_and_stakes, {}),
    ("infractions/masses-et-totaux", "csv", Spec(ticket_start=books(7), seances=3, coups=15, mises=6, seed=22, table=4),
     masses_and_totals, {"delimiter": ";", "decimal": ",", "encoding": "utf-8", "date_style": "fr"}),
    ("infractions/prelevements", "csv", Spec(ticket_start=books(8), seances=2, coups=20, mises=6, seed=23, table=6),
     levies, {"delimiter": ",", "decimal": ".", "encoding": "utf-8", "date_style": "iso"}),
    ("infractions/tickets", "csv",
     Spec(ticket_start=books(10), seances=3, coups=22, mises=6, seed=41, table=11, casino="Casino de Trouville"),
     tickets, {"delimiter": ";", "decimal": ",", "encoding": "utf-8", "date_style": "fr"}),
    ("infractions/couverture-et-seances.xlsx", "xlsx", Spec(ticket_start=books(9), seances=4, coups=10, mises=5, seed=24, table=7),
     cover_and_seances, {}),
]


# A table's archive: successive daily carnets (rules across the carnets of a table).
# One casino, two tables, ticket series far apart (no ticket shared across tables).
ARCHIVES = [
    # Four daily carnets that go on from one to the next: nothing across carnets.
    ("archives/etretat-table2-suite", "csv", 4, 2, None),
    # Five daily carnets, the third one missing: its séances (EC64-11) and its tickets (EC83-04).
    ("archives/etretat-table4-lacune", "xlsx", 5, 4, 2),
]


def archives() -> int:
    """Write the sample archives; the number of carnets written."""
    n = 0
    for rel, container, carnets, table, removed in ARCHIVES:
        start = {10: 100_001 * table, 100: 100_001 * table, 1000: 100_001 * table}
        start = {v: (s - 1) // 200 * 200 + 1 for v, s in start.items()}       # a book's first number
        base = Spec(seances=2, coups=8, mises=4, seed=60 + table, table=table, casino="Casino d'Étretat",
                    start=dt.date(2026, 4, 6), ticket_start=start)
        days = generate_archive(ArchiveSpec(carnets, base))
        if removed is not None:
            del days[removed]
        n += len(write_archive(days, OUT / rel, container))
    return n


def main() -> None:
    for sub in ("compliant", "infractions", "archives"):
        shutil.rmtree(OUT / sub, ignore_errors=True)
    for rel, container, spec, breach, options in SAMPLES:
        tables = generate(spec)
        if breach:
            breach(tables)
        path = OUT / rel
        if container == "xlsx":
            write_xlsx(tables, path)
        else:
            write_csv_folder(tables, path, **options)
    # A file that is not a carnet at all: what a damaged USB stick gives.
    (OUT / "infractions" / "classeur-corrompu.xlsx").write_bytes(random.Random(7).randbytes(2048))
    n = archives()
    print(f"wrote {len(SAMPLES) + 1 + n} sample carnets under {OUT.relative_to(ROOT)}/")


if __name__ == "__main__":
    main()
