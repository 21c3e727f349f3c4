"""Synthetic carnets: compliant by construction, deterministic for a seed.

Used for the sample carnets, property tests and benchmarks. Tables are built
as rows of Python values (money in integer cents) and written by `write_xlsx`
or `write_csv_folder` in the dialects clerks produce.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import random
from dataclasses import dataclass, field
from pathlib import Path

from auditor.catalogue import Profile, load_profile

COLUMNS = {
    "carnet": ["casino", "table", "date_debut"],
    "seances": ["seance", "date", "timbre", "jeux", "cagnotte"],
    "fiches": ["seance", "fiche", "date", "tenir_cartes"],
    "coups": ["seance", "coup", "type", "joueur_a", "joueur_b", "total_a", "total_b", "chouette", "en_dehors",
              "evenement", "gagnant", "prelevement", "prelevement_apres"],
    "mises": ["seance", "coup", "rang", "fiche", "cote", "montant", "restitue"],
    "tickets": ["seance", "coup", "phase", "valeur", "premier", "dernier"],
    "carnets_tickets": ["valeur", "premier", "mise_en_service", "paraphe"],
}
MONEY = {"cagnotte", "total_a", "total_b", "chouette", "en_dehors", "prelevement", "prelevement_apres",
         "montant", "restitue", "valeur"}
DATES = {"date_debut", "date", "timbre", "mise_en_service"}
# Stakes as punters hand them over: mostly round amounts, some odd ones.
STAKES = [50, 100, 100, 200, 200, 500, 500, 500, 1000, 1000, 1000, 2000, 2000, 5000, 250, 150, 750, 1230, 30]


@dataclass
class Spec:
    """What carnet to generate: séances, coups, stakes, seed, casino and table, with or without chouette."""

    seances: int = 3
    coups: int = 12                 # per séance
    mises: int = 6                  # average stakes per coup
    seed: int = 1
    casino: str = "Casino de Forges-les-Eaux"
    table: int = 3
    start: dt.date = dt.date(2026, 3, 2)
    first_seance: int = 1
    ticket_start: dict[int, int] = field(default_factory=lambda: {10: 4801, 100: 1201, 1000: 201})
    # Mix chouette runs (adjudication, sautes, remises) among the simple coups; off by default so
    # that the simple-écarté carnets stay byte-identical.
    chouette: bool = False
    # All séances on `start` (a daily carnet, as `synth/archive.py` writes a table's archive); off by
    # default: one séance a day, so that the existing carnets stay byte-identical.
    same_day: bool = False


class TicketStock:
    """Consecutive numbers per value, across the whole carnet."""

    def __init__(self, starts: dict[int, int]):
        self.next = dict(starts)
        self.first = dict(starts)
        self.first_used: dict[int, dt.date] = {}

    def take(self, value: int, count: int, day: dt.date) -> tuple[int, int]:
        """Detach `count` tickets of `value` on `day`: their first and last numbers."""
        start = self.next[value]
        self.next[value] = start + count
        self.first_used.setdefault(value, day)
        return start, start + count - 1


def split_levy(cents: int, values: list[int]) -> list[tuple[int, int]]:
    """Greedy (value, count) decomposition: optimal for 0.10/1/10/100 €."""
    out = []
    for v in sorted(values, reverse=True):
        n, cents = divmod(cents, v)
        if n:
            out.append((v, n))
    assert cents == 0, "levy not representable"
    return out


def _return_excess(stakes: list[dict], heavy: str, excess: int) -> None:
    """Art. 64: the excess goes back to the last bettors of the heavier side."""
    for s in reversed(stakes):
        if excess == 0:
            break
        if s["cote"] == heavy:
            back = min(excess, s["montant"])
            s["restitue"] = back
            excess -= back


def _equalise(stakes: list[dict]) -> int:
    """Return the excess of the heavier side to its last bettors; the mass."""
    held = {"a": sum(s["montant"] for s in stakes if s["cote"] == "a"),
            "b": sum(s["montant"] for s in stakes if s["cote"] == "b")}
    heavy = "a" if held["a"] > held["b"] else "b"
    excess = abs(held["a"] - held["b"])
    _return_excess(stakes, heavy, excess)
    return min(held.values())


def generate(spec: Spec, profile: Profile | None = None) -> dict[str, list[dict]]:
    """The tables of a compliant carnet: cover, then one séance after another
    (simple coups only, or with chouette runs when `spec.chouette`), then the
    ticket books the séances drew on."""
    profile = profile or load_profile()
    seance = _chouette_seance if spec.chouette else _simple_seance
    rng = random.Random(spec.seed)
    t: dict[str, list[dict]] = {name: [] for name in COLUMNS}
    t["carnet"].append({"casino": spec.casino, "table": spec.table, "date_debut": spec.start})
    stock = TicketStock(spec.ticket_start)
    deck = 4411
    for k in range(spec.seances):
        s_no = spec.first_seance + k
        day = spec.start if spec.same_day else spec.start + dt.timedelta(days=k)
        jeux = f"R{deck} B{deck + 1} V{deck + 2}"
        deck += 3
        cagnotte = seance(t, spec, profile, rng, stock, s_no, day)
        t["seances"].append({"seance": s_no, "date": day, "timbre": day, "jeux": jeux, "cagnotte": cagnotte})
    _register_books(t, stock, profile.book_size)
    return t


def _simple_seance(t, spec: Spec, profile: Profile, rng: random.Random, stock: TicketStock,
                   s_no: int, day: dt.date) -> int:
    """One séance of simple coups; returns its cagnotte."""
    # Fiches: card holders inscribed 1..coups+2, then pontes.
    holders = spec.coups + 2
    n_fiches = holders + max(4, spec.mises)
    for f in range(1, n_fiches + 1):
        t["fiches"].append({"seance": s_no, "fiche": f, "date": day,
                            "tenir_cartes": f if f <= holders else None})
    queue = list(range(3, holders + 1))
    a_player, b_player = 1, 2
    cagnotte = 0
    values_used = [v for v in profile.ticket_values_cents if v <= 1000][:3]
    for c_no in range(1, spec.coups + 1):
        winner, due = _simple_coup(
            t, spec, rng, profile.levy, s_no, c_no, a_player, b_player, n_fiches,
            draw_fiche=lambda: rng.randint(holders + 1, n_fiches) if rng.random() < 0.8
            else rng.randint(1, holders))
        for value, count in split_levy(due, values_used):
            first, last = stock.take(value, count, day)
            t["tickets"].append({"seance": s_no, "coup": c_no, "phase": "avant", "valeur": value,
                                 "premier": first, "dernier": last})
        cagnotte += due
        # The loser leaves; the next inscribed holder takes his place.
        nxt = queue.pop(0)
        if winner == "a":
            b_player = nxt
        else:
            a_player = nxt
    return cagnotte


# -- chouette ----------------------------------------------------------------
# Amounts a chouette is auctioned for: of the order of the pontes' stakes, so that
# it often sautes (the pontes win all of it) and the remise / auction paths show.
CHOUETTES = [2000, 3000, 5000, 5000, 8000, 10000, 20000]


@dataclass
class _Run:
    """A chouette run being generated: one chouetteur, his current adjudication."""

    chouetteur: int
    amount: int                     # the chouette at the next coup
    adjudicated: int
    sautes: int = 0                 # of the current adjudication
    remise_used: bool = False
    after_saute: bool = False


def _equalise_chouette(stakes: list[dict], chouette: int) -> tuple[int, int]:
    """Art. 64/65 with a chouette on side a: return the excess to the last bettors
    of the heavier side (the chouette itself is never returned). (held_a, held_b)."""
    a = sum(s["montant"] for s in stakes if s["cote"] == "a")
    b = sum(s["montant"] for s in stakes if s["cote"] == "b")
    if chouette + a > b:
        heavy, excess = "a", min(chouette + a - b, a)
    else:
        heavy, excess = "b", b - chouette - a
    _return_excess(stakes, heavy, excess)
    held = {side: sum(s["montant"] - s["restitue"] for s in stakes if s["cote"] == side) for side in "ab"}
    return held["a"], held["b"]


def _detach(t, stock, s_no, c_no, phase, due, values, day) -> None:
    for value, count in split_levy(due, values):
        first, last = stock.take(value, count, day)
        t["tickets"].append({"seance": s_no, "coup": c_no, "phase": phase, "valeur": value,
                             "premier": first, "dernier": last})


def _chouette_seance(t, spec: Spec, profile: Profile, rng: random.Random, stock: TicketStock,
                     s_no: int, day: dt.date) -> int:
    """One séance mixing simple coups and chouette runs; returns its cagnotte.

    Card holders: `called` players inscribed 1, 2, 3 … come in that order, one
    loser replaced at a time; each chouette run has its own chouetteur, also
    inscribed (ranks after the called ones) but never called. A loser always
    leaves, except a chouetteur whose run goes on.
    """
    levy = profile.levy
    values = [v for v in profile.ticket_values_cents if v <= 1000][:3]
    called, n_chouetteurs = 2 * spec.coups + 2, spec.coups
    n_fiches = called + n_chouetteurs + max(4, spec.mises)
    for f in range(1, n_fiches + 1):
        t["fiches"].append({"seance": s_no, "fiche": f, "date": day,
                            "tenir_cartes": f if f <= called + n_chouetteurs else None})
    queue = iter(range(1, called + 1))
    chouetteurs = iter(range(called + 1, called + n_chouetteurs + 1))
    a_player: int | None = None      # None: the place is free, the call fills it
    b_player: int | None = None
    run: _Run | None = None
    cagnotte = 0
    for c_no in range(1, spec.coups + 1):
        event = None
        if run is not None:
            if run.after_saute:
                # Art. 65: one remise per adjudication; after the second saute, a new auction.
                options = ["adjudication", "end"] + (["remise"] if run.sautes == 1 and not run.remise_used else [])
                choice = rng.choice(options)
            else:
                choice = "go" if rng.random() < 0.75 else "end"
            if choice == "end":
                run, a_player = None, None   # the chouetteur leaves the table
            elif choice == "remise":
                event, run.amount, run.remise_used = "remise", run.adjudicated, True
            elif choice == "adjudication":   # auctioned again, won by the same chouetteur
                event = "adjudication"
                run.amount = run.adjudicated = rng.choice(CHOUETTES)
                run.sautes, run.remise_used = 0, False
        if run is None and rng.random() < 0.35:
            amount = rng.choice(CHOUETTES)
            run, event, a_player = _Run(next(chouetteurs), amount, amount), "adjudication", None
        if b_player is None:
            b_player = next(queue)
        if run is None:
            if a_player is None:
                a_player = next(queue)
            winner, due = _simple_coup(t, spec, rng, levy, s_no, c_no, a_player, b_player, n_fiches)
            _detach(t, stock, s_no, c_no, "avant", due, values, day)
            cagnotte += due
            if winner == "a":
                b_player = None
            else:
                a_player = None
            continue
        winner, due, due_after = _chouette_coup(t, spec, rng, levy, s_no, c_no, run, event, b_player, n_fiches)
        _detach(t, stock, s_no, c_no, "avant", due, values, day)
        _detach(t, stock, s_no, c_no, "apres", due_after, values, day)
        cagnotte += due + due_after
        if winner == "a":
            b_player = None                  # the player facing the chouetteur lost: he leaves
    return cagnotte


def _simple_coup(t, spec: Spec, rng: random.Random, levy, s_no, c_no, a_player, b_player, n_fiches,
                 draw_fiche=None):
    """One simple coup: stakes, equalised masses, the winner and the levy due.
    `draw_fiche` picks a stake's fiche (default: any fiche of the séance)."""
    draw_fiche = draw_fiche or (lambda: rng.randint(1, n_fiches))
    n = max(2, int(rng.gauss(spec.mises, spec.mises / 3)))
    stakes = []
    for r in range(1, n + 1):
        side = "a" if r == 1 else ("b" if r == 2 else rng.choice("ab"))
        stakes.append({"seance": s_no, "coup": c_no, "rang": r, "fiche": draw_fiche(), "cote": side,
                       "montant": rng.choice(STAKES), "restitue": 0})
    mass = _equalise(stakes)
    winner = rng.choice("ab")
    due = levy(mass)
    t["mises"].extend(stakes)
    t["coups"].append({"seance": s_no, "coup": c_no, "type": "simple", "joueur_a": a_player,
                       "joueur_b": b_player, "total_a": mass, "total_b": mass, "chouette": None,
                       "en_dehors": None, "evenement": None, "gagnant": winner,
                       "prelevement": due, "prelevement_apres": 0})
    return winner, due


def _chouette_coup(t, spec: Spec, rng: random.Random, levy, s_no, c_no, run: _Run, event, b_player, n_fiches):
    chouette = run.amount
    n = max(1, int(rng.gauss(spec.mises, spec.mises / 3)))
    stakes = [{"seance": s_no, "coup": c_no, "rang": r, "fiche": rng.randint(1, n_fiches), "cote": "b",
               "montant": rng.choice(STAKES), "restitue": 0} for r in range(1, n + 1)]
    # Art. 65: the chouette side takes pontes only when the stakes exceed the chouette.
    if sum(s["montant"] for s in stakes) > chouette and rng.random() < 0.5:
        for _ in range(rng.randint(1, 2)):
            stakes.append({"seance": s_no, "coup": c_no, "rang": len(stakes) + 1, "fiche": rng.randint(1, n_fiches),
                           "cote": "a", "montant": rng.choice(STAKES), "restitue": 0})
    held_a, held_b = _equalise_chouette(stakes, chouette)
    sur = held_b - held_a
    winner = rng.choice("ab")
    due = levy(held_a) + (levy(chouette) if event else 0)
    due_after = levy(sur) if winner == "b" else 0
    t["mises"].extend(stakes)
    t["coups"].append({"seance": s_no, "coup": c_no, "type": "chouette", "joueur_a": run.chouetteur,
                       "joueur_b": b_player, "total_a": sur + held_a, "total_b": held_b, "chouette": chouette,
                       "en_dehors": held_a, "evenement": event, "gagnant": winner,
                       "prelevement": due, "prelevement_apres": due_after})
    # The chouette grows by what the chouetteur wins and shrinks by what he loses.
    run.after_saute = winner == "b" and sur == chouette
    run.amount = chouette + sur if winner == "a" else chouette - sur
    run.sautes += run.after_saute
    return winner, due, due_after


def _register_books(t, stock: TicketStock, size: int) -> None:
    for value, first in sorted(stock.first.items()):
        if stock.next[value] == first:
            continue
        book = (first - 1) // size * size + 1
        while book < stock.next[value]:
            t["carnets_tickets"].append({"valeur": value, "premier": book,
                                         "mise_en_service": stock.first_used[value], "paraphe": "oui"})
            book += size


# -- writers ---------------------------------------------------------------

def money_text(cents: int, decimal: str = ",", euro: bool = False) -> str:
    """Cents as a carnet writes them (`12,50`, optionally with ` €`)."""
    sign = "-" if cents < 0 else ""
    e, c = divmod(abs(cents), 100)
    return f"{sign}{e}{decimal}{c:02d}" + (" €" if euro else "")


def source_text(column: str, value, decimal: str = ",", date_style: str = "fr") -> str:
    """A value of `column` as the carnet's text (money, dates in `date_style`)."""
    if value is None:
        return ""
    if column in MONEY and not isinstance(value, str):
        return money_text(int(value), decimal)
    if isinstance(value, dt.date):
        return value.strftime("%d/%m/%Y") if date_style == "fr" else value.isoformat()
    return str(value)


def write_csv_folder(tables: dict[str, list[dict]], folder: Path, *, delimiter: str = ";",
                     decimal: str = ",", encoding: str = "utf-8", date_style: str = "fr",
                     columns: dict[str, list[str]] | None = None) -> Path:
    """Write the tables as a CSV-folder carnet (one file per table)."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in tables.items():
        cols = (columns or COLUMNS).get(name, COLUMNS.get(name))
        buf = io.StringIO()
        w = csv.writer(buf, delimiter=delimiter, lineterminator="\r\n",
                       quoting=csv.QUOTE_MINIMAL)
        w.writerow(cols)
        for row in rows:
            w.writerow([source_text(c, row.get(c), decimal, date_style) for c in cols])
        data = buf.getvalue()
        raw = ("\ufeff" + data).encode("utf-8") if encoding == "utf-8-sig" else data.encode(encoding)
        (folder / f"{name}.csv").write_bytes(raw)
    return folder


def write_xlsx(tables: dict[str, list[dict]], path: Path, *, sheet_names: dict[str, str] | None = None,
               columns: dict[str, list[str]] | None = None) -> Path:
    """Write the tables as a workbook carnet (one sheet per table, money as numbers)."""
    from openpyxl import Workbook

    wb = Workbook()
    wb.remove(wb.active)
    for name, rows in tables.items():
        ws = wb.create_sheet((sheet_names or {}).get(name, name))
        cols = (columns or COLUMNS).get(name, COLUMNS.get(name))
        ws.append(cols)
        for row in rows:
            out = []
            for c in cols:
                v = row.get(c)
                if c in MONEY and isinstance(v, int):
                    # An Excel numeric cell, as a clerk types it; the reader reads it back
                    # at 15 significant digits, so euros/100 round-trips exactly.
                    v = int(v) / 100
                out.append(v)
            ws.append(out)
        for cells in ws.iter_cols(min_row=1, max_row=ws.max_row):
            for cell in cells:
                if isinstance(cell.value, dt.date):
                    cell.number_format = "DD/MM/YYYY"
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(path)
    _fix_zip_times(path)
    return path


def _fix_zip_times(path: Path) -> None:
    """openpyxl stamps the zip entries and docProps with 'now': pin them so a
    regenerated sample is byte-identical."""
    import re
    import zipfile

    src = path.read_bytes()
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src)) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "docProps/core.xml":
                data = re.sub(rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", b"2026-01-01T00:00:00Z", data)
            zi = zipfile.ZipInfo(info.filename, date_time=(2026, 1, 1, 0, 0, 0))
            zi.compress_type = zipfile.ZIP_DEFLATED
            zout.writestr(zi, data)
    path.write_bytes(out.getvalue())
