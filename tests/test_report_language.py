"""English that reads as English, French that reads as French: every output
of carnets that break every rule the generator can break (reports, index,
findings.json messages, the annotated workbook's list and comments), checked
word by word against the other language (tests/language_check.py), keeping
only the glossary's regulation words."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from pathlib import Path

import openpyxl
import pytest

from auditor.synth.breaches import INJECTORS, inject
from auditor.cli import main
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.i18n import labels
from language_check import foreign_words
from report_fixtures import parse_strict, text

# Chouette codes need a chouette carnet; the two that cannot join the others go in a second carnet.
APART = ("EC64-05", "EC82-01")
CASINO = "Casino de Forges-les-Eaux"


class _Text(HTMLParser):
    """The visible text of a page, plus the titles and accessible names it shows."""

    def __init__(self):
        super().__init__()
        self.parts: list[str] = []
        self._skip = 0

    def handle_starttag(self, tag, attrs):
        self._skip += tag in ("script", "style")
        self.parts.extend(v for k, v in attrs if k in ("title", "aria-label", "alt") and v)

    def handle_endtag(self, tag):
        self._skip -= tag in ("script", "style")

    def handle_data(self, data):
        if not self._skip:
            self.parts.append(data)


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    root = tmp_path_factory.mktemp("lang")
    codes = [c for c in INJECTORS if c not in APART]
    t = generate(Spec(seances=3, coups=20, chouette=True, seed=7, casino=CASINO))
    inject(t, codes, seed=7)
    write_xlsx(t, root / "in" / "a.xlsx")
    t = generate(Spec(seances=3, coups=10, seed=7, casino=CASINO, table=2))
    inject(t, list(APART), seed=7)
    write_csv_folder(t, root / "in" / "b")
    outs = {}
    for lang in ("fr", "en"):
        outs[lang] = root / lang
        main(["audit", str(root / "in"), "--out", str(outs[lang]), "--lang", lang, "--quiet", "--jobs", "1",
              "--format", "html,json,xlsx", "--fail-on", "never"])
    return outs


def _texts(out: Path):
    """(where, text) of every piece of prose the tool wrote, the carnet's own data left out."""
    for page in sorted(out.rglob("*.html")):
        p = _Text()
        p.feed(page.read_text(encoding="utf-8"))
        for part in p.parts:
            yield page.relative_to(out).as_posix(), part.replace(CASINO, " ")
    for doc in sorted(out.rglob("findings.json")):
        for f in json.loads(doc.read_text(encoding="utf-8"))["findings"]:
            yield doc.relative_to(out).as_posix(), f["message"]
    for book in sorted(out.rglob("annotated.xlsx")):
        wb = openpyxl.load_workbook(book)
        ws = wb.worksheets[0]                 # the tool's list; the other sheets are the carnet itself
        for row in ws.iter_rows(values_only=True):
            yield book.relative_to(out).as_posix(), " ".join(str(v) for v in row if isinstance(v, str))
        for sheet in wb.worksheets[1:]:
            for row in sheet.iter_rows():
                for cell in row:
                    if cell.comment is not None:
                        yield f"{book.name}:{sheet.title}!{cell.coordinate}", cell.comment.text


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_no_word_of_the_other_language(outputs, lang):
    found = {}
    for where, chunk in _texts(outputs[lang]):
        words = foreign_words(chunk, lang)
        if words:
            found.setdefault(" ".join(words), (where, chunk[:160]))
    assert found == {}


def test_the_checker_catches_a_leak():
    """The check itself can fail: the words the issue found left in English."""
    assert foreign_words("The chouette sauté at coup 3 without remise", "en") == ["sauté", "remise"]
    assert foreign_words("Value oui, 5 de tickets", "en") == ["oui", "de"]
    assert foreign_words("Le carnet est in order", "fr") == ["in", "order"]
    assert foreign_words("séance 3, coup 4, fiche 12, chouette", "en") == []      # the glossary's words


@pytest.mark.slow
@pytest.mark.subprocess
def test_english_report_has_the_glossary_and_french_none(outputs):
    en = parse_strict((outputs["en"] / "a.xlsx" / "report.html").read_text(encoding="utf-8"))
    terms = [text(dt) for dt in en.findall(".//section[@id='glossary']//dt")]
    assert terms == [g["term"] for g in labels("en")["glossary"]]
    assert {"séance", "coup", "fiche", "chouette", "cagnotte"} <= set(terms)
    fr = parse_strict((outputs["fr"] / "a.xlsx" / "report.html").read_text(encoding="utf-8"))
    assert fr.find(".//section[@id='glossary']") is None


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("lang", ["en", "fr"])
def test_footer_date_the_readers_way(outputs, lang):
    dom = parse_strict((outputs[lang] / "a.xlsx" / "report.html").read_text(encoding="utf-8"))
    stamp = dom.find(".//footer/time")
    iso = stamp.get("datetime")
    day, time = iso[:10], iso[11:16]
    shown = text(stamp)
    assert shown == (f"{day[8:10]}/{day[5:7]}/{day[:4]} à {time} UTC" if lang == "fr" else f"{day} at {time} UTC")
    assert iso not in shown and not shown.endswith("Z")


@pytest.mark.slow
@pytest.mark.subprocess
def test_ec83_02_shows_remaining_tickets(outputs):
    for lang in ("fr", "en"):
        dom = parse_strict((outputs[lang] / "b" / "report.html").read_text(encoding="utf-8"))
        group = dom.find(".//details[@id='rule-EC83-02']")
        heads = [text(th) for th in group.findall(".//thead/tr")[-1].findall("th")]
        lab = labels(lang)
        assert lab["tk_remaining"] in heads and lab["expected"] not in heads and lab["found"] not in heads
        doc = json.loads((outputs[lang] / "b" / "findings.json").read_text(encoding="utf-8"))
        left = sorted(int(f["expected"]) - int(f["found"]) for f in doc["findings"] if f["code"] == "EC83-02")
        col = heads.index(lab["tk_remaining"])
        assert sorted(int(text(r.findall("td")[col])) for r in group.findall(".//tbody/tr")) == left


def test_reworded_rules():
    from auditor.catalogue import load_catalogue

    cat = load_catalogue()
    for lang in ("fr", "en"):
        assert cat["EC65-05"].explain[lang].startswith("Art. 65")          # headed art. 65, cites it first
        for kind in ("avant", "apres"):
            assert cat["EC661-02"].message(kind, lang).endswith("{fewest} tickets")


def test_no_dangling_table_in_titles(tmp_path):
    """A cover without a table number (EC64-06) leaves no "— Table " behind."""
    t = generate(Spec(seances=1, coups=4, seed=3))
    inject(t, ["EC64-06"], seed=3)
    path = write_xlsx(t, tmp_path / "c.xlsx")
    for lang in ("fr", "en"):
        out = tmp_path / lang
        main(["audit", str(path), "--out", str(out), "--lang", lang, "--quiet", "--fail-on", "never"])
        html = (out / "c.xlsx" / "report.html").read_text(encoding="utf-8")
        dom = parse_strict(html)
        lab = labels(lang)
        for el in (dom.find(".//title"), dom.find(".//h1")):
            assert not text(el).rstrip().endswith(lab["table"]) and not text(el).endswith("—")


def test_a_catalogue_is_pickled_as_its_language():
    """A batch pickles each carnet's report draft, which holds the catalogue:
    the catalogue goes as its language and comes back as the process's own."""
    import pickle

    from auditor.i18n import labels

    for lang in ("fr", "en"):
        lab = labels(lang)
        data = pickle.dumps(lab, protocol=pickle.HIGHEST_PROTOCOL)
        assert len(data) < 100, len(data)   # the whole catalogue is some 26 kB
        back = pickle.loads(data)
        assert back is lab and back["verdict_ok"] == lab["verdict_ok"]
