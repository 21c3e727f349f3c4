"""Words with no break point (a value typed without a space, a long file
name) wrap inside their cell of the procès-verbal instead of running over
the next column and off the page; the text read back is the same
characters, none added (no zero-width space), none lost."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from auditor.cli import main
from test_pv_glyphs import carnet_with_a_stake_typed

pytestmark = pytest.mark.slow   # a carnet audited and its PV typeset (about 3 s with the imports)

FOUND = "2,00EUR_rembourse_partiellement_par_le_croupier_voir_cahier"   # an amount as a clerk might type it
SHORT_FILE = "export_caisse_table3_mars.csv"                            # 29 characters: wider than the label column
LONG_FILE = "releve_" + "x" * 109 + ".csv"                              # 120 characters
# Wider than the signature's box (half the page), not than the visit's table.
INSPECTOR = "Jeanne_Dupont-Inspectrice_principale_des_jeux_du_ministere_de_l_interieur"
INVISIBLE = re.compile("[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]")


@pytest.fixture(scope="module")
def pv(tmp_path_factory) -> Path:
    base = tmp_path_factory.mktemp("wrap")
    carnet = carnet_with_a_stake_typed(base / "c", FOUND)
    for name in (SHORT_FILE, LONG_FILE):
        (carnet / name).write_text("a;b\n", encoding="utf-8")   # extra files of the folder: listed with their SHA-256
    out = base / "out"
    assert main(["audit", str(carnet), "--out", str(out), "--format", "json,pdf", "--quiet",
                 "--inspector", INSPECTOR]) == 1
    return out / "c" / "proces-verbal.pdf"


def _pages(path: Path) -> list[str]:
    from pypdf import PdfReader

    return [page.extract_text() for page in PdfReader(path).pages]


@pytest.mark.parametrize("word", [FOUND, SHORT_FILE, LONG_FILE])
def test_a_long_word_wraps_and_reads_back_the_same(pv, word):
    text = "\n".join(_pages(pv))
    lines = text.split("\n")
    assert not any(word in line for line in lines), f"{word} is set on one line: it runs out of its cell"
    assert word in text.replace("\n", ""), f"{word} does not read back whole"


def test_no_invisible_character_is_added(pv):
    text = "\n".join(_pages(pv))
    assert INVISIBLE.findall(text) == []
    assert INSPECTOR in text   # whole in the visit's table


@pytest.mark.subprocess
@pytest.mark.skipif(shutil.which("pdftotext") is None, reason="poppler's pdftotext is not installed here")
def test_no_word_runs_past_the_right_margin(pv):
    """Each word's box (poppler's `pdftotext -bbox`) ends inside the page's
    right margin (1.8 cm of an A4 page 595 pt wide)."""
    boxes = subprocess.run(["pdftotext", "-bbox", str(pv), "-"], capture_output=True, text=True, check=True).stdout
    ends = [(float(m[1]), m[2]) for m in re.finditer(r'<word xMin="[\d.]+" yMin="[\d.]+" xMax="([\d.]+)" '
                                                      r'yMax="[\d.]+">([^<]*)</word>', boxes)]
    assert len(ends) > 100
    assert [(x, w) for x, w in ends if x > 595 - 51 + 1] == []
