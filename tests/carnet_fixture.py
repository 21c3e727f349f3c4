"""Tiny carnets for rule tests, written in the source format (`;`, decimal
commas) and completed with minimal valid defaults, then audited through the
real reader, normaliser and engine.

A fixture case gives some tables as CSV text, possibly with only the columns
the rule needs; everything else is filled so that the defaults alone give no
finding (tests/test_fixture_defaults.py proves it).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

from auditor.catalogue import load_profile
from auditor.audit import audit
from auditor.model import AuditResult
from auditor.money import parse_cents
from auditor.normalise import normalise
from auditor.read import read_carnet

TABLES = ("carnet", "seances", "fiches", "coups", "mises", "tickets", "carnets_tickets")
BASE_DAY = 1  # séance n is dated 2026-03-(n) unless the fixture says otherwise


def _rows(text: str) -> tuple[list[str], list[dict]]:
    reader = csv.reader(io.StringIO(text.strip("\n")), delimiter=";")
    records = list(reader)
    header = [h.strip() for h in records[0]]
    return header, [dict(zip(header, r + [""] * (len(header) - len(r)))) for r in records[1:]]


def _money(cents: int) -> str:
    return f"{cents // 100},{cents % 100:02d}"


def _day(seance: str) -> str:
    n = int(seance) if seance.strip().lstrip("-").isdigit() else 1
    return f"2026-03-{min(max(n, 1), 28):02d}"


class Fixture:
    """Builds the tables of one case, then writes them as a CSV folder or a workbook."""

    def __init__(self, case: dict):
        self.case = case
        self.given: dict[str, tuple[list[str], list[dict]]] = {
            t: _rows(case[t]) for t in TABLES if isinstance(case.get(t), str)}
        self.raw = bool(case.get("raw", False))          # no column filling at all
        self.omit = set(case.get("omit", []))            # tables left out entirely
        self.profile = load_profile()

    # -- defaults ------------------------------------------------------------
    def _keys(self) -> list[tuple[str, str]]:
        keys: list[tuple[str, str]] = []
        for t in ("coups", "mises", "tickets"):
            if t in self.given:
                for r in self.given[t][1]:
                    k = (r.get("seance", "1") or "1", r.get("coup", "1") or "1")
                    if k not in keys:
                        keys.append(k)
                if t == "coups":
                    break  # the coups table, when given, is the list of coups
        return keys or [("1", "1")]

    def tables(self) -> dict[str, tuple[list[str], list[dict]]]:
        out: dict[str, tuple[list[str], list[dict]]] = {}
        keys = self._keys()
        coups = self._coups(keys)
        out["carnet"] = self.given.get("carnet") or (["casino", "table", "date_debut"],
                                                     [{"casino": "Casino test", "table": "1",
                                                       "date_debut": "2026-03-01"}])
        out["seances"] = self._seances(keys)
        out["coups"] = coups
        out["mises"] = self._mises(coups)
        out["tickets"] = self._tickets(coups)
        for t in ("fiches", "carnets_tickets"):
            if t in self.given:
                out[t] = self.given[t]
        for t in self.omit:
            out.pop(t, None)
        return out

    def _fill(self, table: str, defaults: list[tuple[str, object]]) -> tuple[list[str], list[dict]]:
        header, rows = self.given[table]
        if self.raw:
            return header, rows
        header = list(header)
        for i, row in enumerate(rows):
            for col, default in defaults:
                if col not in header:
                    row[col] = default(i, row) if callable(default) else default
        header += [c for c, _ in defaults if c not in header]
        return header, rows

    def _seances(self, keys):
        if "seances" in self.given:
            return self._fill("seances", [
                ("date", lambda i, r: _day(r.get("seance", "1"))),
                ("timbre", lambda i, r: r.get("date") or _day(r.get("seance", "1"))),
                ("jeux", lambda i, r: f"R{3 * i + 1} B{3 * i + 2} V{3 * i + 3}")])
        seances = list(dict.fromkeys(s for s, _ in keys))
        return (["seance", "date", "timbre", "jeux"],
                [{"seance": s, "date": _day(s), "timbre": _day(s), "jeux": f"R{3 * i + 1} B{3 * i + 2} V{3 * i + 3}"}
                 for i, s in enumerate(seances)])

    def _levy(self, row) -> str:
        try:
            side = row.get("gagnant", "a") or "a"
            return _money(self.profile.levy(parse_cents(row.get(f"total_{side}", "10,00"))))
        except ValueError:
            return "0,50"

    def _coups(self, keys):
        if "coups" in self.given:
            return self._fill("coups", [
                ("seance", "1"), ("coup", lambda i, r: str(i + 1)), ("type", "simple"),
                # Card holders that satisfy EC63-05 whatever the winner: a new
                # joueur_b every coup, a new joueur_a every simple coup, and one
                # chouetteur (fiche 1) so that consecutive chouette coups form one run.
                ("joueur_a", lambda i, r: "1" if (r.get("type") or "").strip().lower() == "chouette"
                 else str(200 + i)),
                ("joueur_b", lambda i, r: str(100 + i)),
                ("total_a", "10,00"), ("total_b", "10,00"), ("gagnant", "a"),
                ("prelevement", lambda i, r: self._levy(r)), ("prelevement_apres", "0")])
        rows = [{"seance": s, "coup": c, "type": "simple", "joueur_a": "1", "joueur_b": str(100 + i),
                 "total_a": "10,00", "total_b": "10,00", "gagnant": "a", "prelevement": "0,50",
                 "prelevement_apres": "0"} for i, (s, c) in enumerate(keys)]
        return (["seance", "coup", "type", "joueur_a", "joueur_b", "total_a", "total_b", "gagnant",
                 "prelevement", "prelevement_apres"], rows)

    def _mises(self, coups):
        if "mises" in self.given:
            counters: dict[tuple, int] = {}

            def rang(i, r):
                k = (r.get("seance", "1"), r.get("coup", "1"))
                counters[k] = counters.get(k, 0) + 1
                return str(counters[k])

            return self._fill("mises", [("seance", "1"), ("coup", "1"), ("rang", rang),
                                        ("fiche", lambda i, r: str(500 + i)), ("cote", "a"),
                                        ("montant", "10,00"), ("restitue", "0")])
        header, rows = ["seance", "coup", "rang", "fiche", "cote", "montant", "restitue"], []
        for c in coups[1]:
            for rang, side in ((1, "a"), (2, "b")):
                total = c.get(f"total_{side}", "10,00") or "10,00"
                rows.append({"seance": c.get("seance", "1"), "coup": c.get("coup", "1"), "rang": str(rang),
                             "fiche": str(500 + rang), "cote": side, "montant": total, "restitue": "0"})
        return header, rows

    def _tickets(self, coups):
        if "tickets" in self.given:
            return self._fill("tickets", [("phase", "avant")])
        header, rows, nxt = ["seance", "coup", "phase", "valeur", "premier", "dernier"], [], 1
        for c in coups[1]:
            for phase, col in (("avant", "prelevement"), ("apres", "prelevement_apres")):
                try:
                    cents = parse_cents(c.get(col, "0") or "0")
                except ValueError:
                    continue
                if cents > 0 and cents % 10 == 0:
                    n = cents // 10
                    rows.append({"seance": c.get("seance", "1"), "coup": c.get("coup", "1"), "phase": phase,
                                 "valeur": "0,10", "premier": str(nxt), "dernier": str(nxt + n - 1)})
                    nxt += n
        return header, rows

    # -- writing ---------------------------------------------------------------
    def write(self, folder: Path) -> Path:
        container = self.case.get("container", "csv")
        tables = self.tables()
        if container == "xlsx":
            from openpyxl import Workbook

            wb = Workbook()
            wb.remove(wb.active)
            for name, (header, rows) in tables.items():
                ws = wb.create_sheet(name)
                ws.append(header)
                for r in rows:
                    ws.append([r.get(h, "") for h in header])
            path = folder / "carnet.xlsx"
            wb.save(path)
            return path
        path = folder / "carnet"
        path.mkdir(parents=True, exist_ok=True)
        for name, (header, rows) in tables.items():
            buf = io.StringIO()
            w = csv.writer(buf, delimiter=";", lineterminator="\n")
            w.writerow(header)
            for r in rows:
                w.writerow([r.get(h, "") for h in header])
            (path / f"{name}.csv").write_text(buf.getvalue(), encoding="utf-8")
        return path


def audit_case(case: dict, folder: Path, profile_overrides: dict | None = None) -> AuditResult:
    path = Fixture(case).write(folder)
    profile = load_profile(**(profile_overrides or case.get("profile", {})))
    return audit(normalise(read_carnet(path)), profile)
