"""Benchmark of the ticket rules on a carnet of 1 000 000 tickets in runs.

A plain script, not a test:

    .venv/bin/python bench/bench_tickets.py [--tickets 1000000] [--repeat 3] [--keep DIR]

It writes a CSV-folder carnet (about 190 000 runs of 0,10 €, 1 € and 10 €
tickets, with its register of books and a counted cagnotte per séance), reads
and normalises it (timed apart), then times only the ticket rules — every
check of `auditor.checks.tickets_*`, the ticket ledger they share (`auditor.tickets`) included —
and prints the best of `--repeat` runs (wall clock and CPU time). The carnet carries a few planted
irregularities so that the finding paths run too.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

from auditor.catalogue import load_profile
from auditor.checks import tickets_amounts, tickets_books, tickets_series
from auditor.derived.amounts import coup_amounts
from auditor.derived.cache import forget
from auditor.normalise import normalise
from auditor.read import read_carnet
from auditor.checks import registered
from auditor.tickets.ledger import ledger

MODULES = {m.__name__ for m in (tickets_amounts, tickets_books, tickets_series)}
COUPS_PER_SEANCE = 400


def money(cents: np.ndarray) -> pd.Series:
    c = pd.Series(cents, dtype="int64")
    return (c // 100).astype(str) + "," + (c % 100).astype(str).str.zfill(2)


def build(folder: Path, n_tickets: int, seed: int = 1) -> dict[str, int]:
    """Write the carnet; return its sizes."""
    rng = np.random.default_rng(seed)
    # Per coup: k10 tickets of 0,10 € (1-9), k100 of 1 € (0-9), now and then one of 10 €.
    n_coups = int(n_tickets / 9) + 100
    k10 = rng.integers(1, 10, n_coups)
    k100 = rng.integers(0, 10, n_coups)
    k1000 = (rng.random(n_coups) < 0.02).astype(np.int64)
    # Stop at the coup that reaches the count, and trim that coup to hit it exactly.
    n_coups = int(np.searchsorted(np.cumsum(k10 + k100 + k1000), n_tickets)) + 1
    k10, k100, k1000 = k10[:n_coups], k100[:n_coups], k1000[:n_coups]
    over = int((k10 + k100 + k1000).sum()) - n_tickets
    for k in (k1000, k100, k10):
        cut = min(over, int(k[-1]))
        k[-1] -= cut
        over -= cut
    seance = np.arange(n_coups) // COUPS_PER_SEANCE + 1
    coup = np.arange(n_coups) % COUPS_PER_SEANCE + 1
    levy = 10 * k10 + 100 * k100 + 1000 * k1000
    runs = []
    for value, k in ((10, k10), (100, k100), (1000, k1000)):
        used = k > 0
        last = np.cumsum(k[used])
        runs.append(pd.DataFrame({"seance": seance[used], "coup": coup[used], "valeur": value,
                                  "premier": last - k[used] + 1, "dernier": last, "order": np.flatnonzero(used)}))
    t = pd.concat(runs).sort_values(["order", "valeur"], kind="stable").reset_index(drop=True)
    # Planted irregularities that keep the count: ten runs shifted up by one number
    # (a hole before each, a repeat with the run after it).
    shifted = rng.choice(len(t), 10, replace=False)
    t.loc[shifted, ["premier", "dernier"]] += 1
    days = pd.Timestamp("2026-01-02") + pd.to_timedelta(np.arange(seance.max()), unit="D")
    face = (t["valeur"] * (t["dernier"] - t["premier"] + 1)).groupby(t["seance"]).sum()
    folder.mkdir(parents=True, exist_ok=True)

    def write(name: str, df: pd.DataFrame) -> None:
        df.to_csv(folder / f"{name}.csv", sep=";", index=False)

    write("carnet", pd.DataFrame({"casino": ["Casino de banc d'essai"], "table": [1], "date_debut": ["2026-01-02"]}))
    write("seances", pd.DataFrame({"seance": face.index, "date": days.strftime("%Y-%m-%d"),
                                   "timbre": days.strftime("%Y-%m-%d"), "cagnotte": money(face.to_numpy())}))
    mass = money(levy * 20)
    write("coups", pd.DataFrame({"seance": seance, "coup": coup, "type": "simple", "joueur_a": 1, "joueur_b": 2,
                                 "total_a": mass, "total_b": mass, "gagnant": "a", "prelevement": money(levy)}))
    write("mises", pd.DataFrame({"seance": np.repeat(seance, 2), "coup": np.repeat(coup, 2),
                                 "rang": np.tile([1, 2], n_coups), "fiche": np.tile([10, 11], n_coups),
                                 "cote": np.tile(["a", "b"], n_coups), "montant": np.repeat(mass.to_numpy(), 2)}))
    write("tickets", pd.DataFrame({"seance": t["seance"], "coup": t["coup"], "phase": "avant",
                                   "valeur": money(t["valeur"].to_numpy()), "premier": t["premier"],
                                   "dernier": t["dernier"]}))
    books = []
    for value, top in t.groupby("valeur")["dernier"].max().items():
        first = np.arange(1, top + 1, 200)
        books.append(pd.DataFrame({"valeur": money(np.full(len(first), value)), "premier": first,
                                   "mise_en_service": "2026-01-02", "paraphe": "oui"}))
    write("carnets_tickets", pd.concat(books))
    return {"coups": n_coups, "runs": len(t), "tickets": int((t["dernier"] - t["premier"] + 1).sum()),
            "books": sum(len(b) for b in books)}


def time_rules(carnet, profile) -> tuple[float, float, dict[str, tuple[float, int]]]:
    """Wall and CPU seconds of all the ticket rules, and per rule (wall, findings)."""
    forget(carnet, ledger)            # the ledger is rebuilt: its cost belongs to the rules
    per: dict[str, tuple[float, int]] = {}
    start, cpu = time.perf_counter(), time.process_time()
    for code, spec in registered().items():
        if spec.module not in MODULES or not all(carnet.has(n) for n in spec.needs):
            continue
        t0 = time.perf_counter()
        n = sum(1 for _ in spec.func(carnet, profile))
        per[code] = (time.perf_counter() - t0, n)
    return time.perf_counter() - start, time.process_time() - cpu, per


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tickets", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--keep", type=Path, help="write the carnet here and keep it")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = args.keep or Path(tmp) / "carnet"
        t0 = time.perf_counter()
        sizes = build(folder, args.tickets)
        t1 = time.perf_counter()
        carnet = normalise(read_carnet(folder))
        profile = load_profile()
        _ = coup_amounts(carnet)         # the stakes' sums are the carnet's, not a ticket rule's
        t2 = time.perf_counter()
        print(f"carnet: {sizes['tickets']:,} tickets in {sizes['runs']:,} runs, {sizes['coups']:,} coups, "
              f"{sizes['books']:,} books (written in {t1 - t0:.1f} s, read and normalised in {t2 - t1:.1f} s)")
        runs = [time_rules(carnet, profile) for _ in range(max(args.repeat, 1))]
        best, cpu, per = min(runs, key=lambda r: r[0])
        for code, (secs, n) in per.items():
            print(f"  {code:9} {secs * 1000:8.1f} ms  {n:5d} finding(s)")
        # CPU time as well: on a busy machine the wall clock also counts other processes.
        print(f"ticket rules: {best * 1000:.0f} ms wall, {cpu * 1000:.0f} ms CPU (best of {len(runs)}: "
              f"{', '.join(f'{r[0] * 1000:.0f}' for r in runs)} ms wall)")


if __name__ == "__main__":
    main()
