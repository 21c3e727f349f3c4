"""The rules across the carnets of a table through the command line and the
run service (issue 24, "Must show" and point 5):

- class tests: the same archive (each of the four breaches once) as every
  pair of containers (xlsx and CSV), without `carnets_tickets`, its carnets
  given one by one in any order or in another folder tree, a carnet renamed:
  the same findings across carnets (codes, fingerprints, what they say);
- an archive made by `generate --archive`, whole: no finding across carnets;
  one day's carnet removed: EC83-04 with exactly its tickets (their face value
  as the money) and EC64-11 naming its séances, nothing else — the second run
  with `--cache` takes every carnet from the cache (the facts come from it)
  and still finds them.
"""

from __future__ import annotations

import json
import random
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.money import parse_cents
from auditor.synth.archive import BREACHES, ArchiveSpec, carnets_needed, generate_archive, write_archive
from auditor.synth.generate import Spec

pytestmark = pytest.mark.slow

TINY = Spec(seances=2, coups=2, mises=2, ticket_start={10: 400001, 100: 400001, 1000: 400001})
ARCHIVES = Path(__file__).resolve().parent.parent / "sample_carnets" / "archives"


def _audit(paths, out: Path, *extra) -> dict:
    assert main(["audit", *map(str, paths), "--out", str(out), "--format", "json", "--jobs", "1",
                 "--fail-on", "never", *extra]) == 0
    return json.loads((out / "summary.json").read_text(encoding="utf-8"))


def _said(summary: dict) -> list[tuple]:
    """The findings across carnets as what they say, wherever the carnets lie and however named."""
    return sorted((f["code"], f["fingerprint"], f["expected"], f["found"], f["impact_cents"])
                  for f in summary["cross_carnet"])


@pytest.fixture(scope="module")
def breached(tmp_path_factory):
    """One archive with each breach across carnets once, written both ways (`csv/DAY`, `xlsx/DAY.xlsx`)."""
    root = tmp_path_factory.mktemp("classes")
    carnets = generate_archive(ArchiveSpec(carnets_needed(BREACHES), TINY, breaches=BREACHES))
    write_archive(carnets, root / "csv", "csv")
    write_archive(carnets, root / "xlsx", "xlsx")
    bare = [(day, {k: v for k, v in tables.items() if k != "carnets_tickets"}) for day, tables in carnets]
    write_archive(bare, root / "bare", "csv")
    return root, [day.isoformat() for day, _ in carnets]


def _tree(root: Path, days: list[str], pick, name: str) -> Path:
    """A folder of the archive's carnets, each in the container `pick(k)` gives."""
    out = root / name
    for k, day in enumerate(days):
        container = pick(k)
        src = root / container / (f"{day}.xlsx" if container == "xlsx" else day)
        dst = out / src.name
        (shutil.copy if src.is_file() else shutil.copytree)(src, dst)
    return out


def test_same_findings_whatever_the_containers_books_order_tree_and_names(breached, tmp_path):
    root, days = breached
    reference = _audit([root / "csv"], tmp_path / "ref")
    said = _said(reference)
    assert sorted({s[0] for s in said}) == sorted(BREACHES)          # each breach found
    variants = {
        "xlsx": [root / "xlsx"],
        # Consecutive carnets in every pair of containers: csv→xlsx, xlsx→csv, xlsx→xlsx, csv→csv.
        "alternate": [_tree(root, days, lambda k: ("csv", "xlsx")[k % 2], "alt")],
        "pairs": [_tree(root, days, lambda k: ("csv", "csv", "xlsx", "xlsx")[k % 4], "pairs")],
        "no carnets_tickets": [root / "bare"],
    }
    # Given one by one on the command line, shuffled.
    shuffled = sorted((root / "csv").iterdir())
    random.Random(7).shuffle(shuffled)
    variants["shuffled arguments"] = shuffled
    # Another folder tree: months as folders, days renamed, one carnet under an unrelated name.
    tree = tmp_path / "tree"
    for k, day in enumerate(days):
        dst = tree / day[:7] / (f"carnet-{len(days) - k:02d}" if k != 5 else "a-renamed-carnet")
        shutil.copytree(root / "csv" / day, dst)
    variants["folder tree, renamed"] = [tree]
    for name, paths in variants.items():
        got = _audit(paths, tmp_path / name.replace(" ", "-").replace(",", ""))
        assert _said(got) == said, name
        assert [t["rules"] for t in got["tables"]] == [t["rules"] for t in reference["tables"]], name


@pytest.mark.subprocess          # the whole archive's first run has two workers
def test_generated_archive_whole_then_a_day_removed_from_the_cache(tmp_path, capsys):
    n, k = 120, 71
    archive = tmp_path / "archive"
    assert main(["generate", str(archive), "--archive", str(n), "--seances", "2", "--coups", "2", "--mises", "2",
                 "--container", "csv", "--lang", "en"]) == 0
    days = sorted(p.name for p in archive.iterdir())
    assert len(days) == n
    cache = tmp_path / "cache"
    whole = _audit([archive], tmp_path / "whole", "--cache", str(cache), "--jobs", "2")
    assert whole["cross_carnet"] == []
    assert all(r["status"] == "checked" for t in whole["tables"] for r in t["rules"].values())
    # The removed day's tickets and séances, as its carnet lists them.
    removed = archive / days[k]
    runs = defaultdict(list)
    header, *lines = (removed / "tickets.csv").read_text(encoding="utf-8").splitlines()
    for line in lines:
        row = dict(zip(header.split(";"), line.split(";")))
        runs[parse_cents(row["valeur"])].append((int(row["premier"]), int(row["dernier"] or row["premier"])))
    seances = [int(line.split(";")[0]) for line in
               (removed / "seances.csv").read_text(encoding="utf-8").splitlines()[1:]]
    shutil.rmtree(removed)
    capsys.readouterr()
    gap = _audit([archive], tmp_path / "gap", "--cache", str(cache))
    err = capsys.readouterr().err
    assert f"({n - 1} from the cache)" in err or f"({n - 1} depuis le cache)" in err, err
    found = {(f["code"], f["expected"], f["impact_cents"]) for f in gap["cross_carnet"]}
    want = {("EC83-04", f"{min(a for a, _ in rs)}–{max(b for _, b in rs)}", sum(b - a + 1 for a, b in rs) * v)
            for v, rs in runs.items()}
    want.add(("EC64-11", f"{min(seances)}–{max(seances)}", 0))
    assert found == want
    assert len(gap["cross_carnet"]) == len(want)
    nxt = days[k + 1]
    assert all(f["across"][0]["carnet"] == nxt and f["across"][1]["carnet"] == days[k - 1]
               for f in gap["cross_carnet"])


def test_nightly_cache_keeps_the_findings_across_carnets(tmp_path, capsys):
    cache = tmp_path / "cache"
    first = _audit([ARCHIVES], tmp_path / "night1", "--cache", str(cache))
    capsys.readouterr()
    second = _audit([ARCHIVES], tmp_path / "night2", "--cache", str(cache))
    err = capsys.readouterr().err
    assert "(8 from the cache)" in err or "(8 depuis le cache)" in err, err
    assert second["cross_carnet"] == first["cross_carnet"] and len(first["cross_carnet"]) == 3
    assert second["tables"] == first["tables"]
