"""`generate --breaches` is honest: the carnet it writes gives exactly the codes
it prints, or it refuses the combination with a clear message and writes
nothing. Random sets of 2–5 codes, a new draw each run."""

from __future__ import annotations

import random
import re

import pytest

from auditor.synth.breaches import INJECTORS
from auditor.catalogue import load_profile
from auditor.cli import main
from auditor.model import Severity
from auditor.audit import audit_path

DRAW = random.Random()


def generate(tmp_path, codes: list[str], seed: int, capsys) -> tuple[int, str, object]:
    out = tmp_path / "carnet"
    rc = main(["generate", str(out), "--seances", "2", "--coups", "8", "--mises", "4", "--chouette",
               "--seed", str(seed), "--breaches", ",".join(codes)])
    return rc, capsys.readouterr().err, out


def check(rc, err, out, codes):
    if rc == 0:
        printed = set(re.search(r"breaches: expect (.*)$", err.strip()).group(1).split(", "))
        assert set(codes) <= printed
        found = {f.code for f in audit_path(out, load_profile()).findings if f.severity >= Severity.WARNING}
        assert found == printed, (codes, printed, found)
    else:
        assert rc == 2, err
        assert "cannot be made" in err and "nothing written" in err, err
        assert not out.exists()


def test_the_combination_that_once_lied(tmp_path, capsys):
    codes = ["EC561-01", "EC64-07", "EC64-09", "EC82-02", "EC66-01"]
    out = tmp_path / "carnet"
    rc = main(["generate", str(out), "--breaches", ",".join(codes), "--seed", "11"])
    err = capsys.readouterr().err
    check(rc, err, out, codes)


@pytest.mark.parametrize("draw", range(5))
def test_random_breach_sets_are_delivered_or_refused(draw, tmp_path, capsys):
    codes = DRAW.sample(sorted(INJECTORS), DRAW.randint(2, 5))
    seed = DRAW.randint(0, 10_000)
    rc, err, out = generate(tmp_path, codes, seed, capsys)
    check(rc, err, out, codes)


@pytest.mark.parametrize("lang, words", [("en", "choose fewer codes"), ("fr", "choisir moins de codes")])
def test_every_code_at_once_is_refused_with_a_clear_message(tmp_path, capsys, lang, words):
    """All the injectors on one small carnet: an earlier breach (an unreadable
    cell) leaves a later injector nothing to work on; the combination is
    refused in the user's language, never a traceback, nothing written."""
    out = tmp_path / "carnet"
    rc = main(["generate", str(out), "--chouette", "--lang", lang, "--breaches", ",".join(sorted(INJECTORS))])
    err = capsys.readouterr().err
    assert rc == 2, err
    assert words in err and "Traceback" not in err, err
    assert not out.exists()
