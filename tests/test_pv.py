"""The procès-verbal (outputs.md v1.2, issue 26): `--format pdf --sign`, then
`verify`; PDF/A-3 declared, findings.json attached, identity and page
numbers on every page, a review's justification in it; a tampered PV
refused in the user's language; the same bytes twice (unsigned); its text
against the gold files (tests/gold-pv, `make gold`)."""

from __future__ import annotations

import datetime
import io
import os
import json
import re
import shutil
from pathlib import Path

import pytest
from pypdf import PdfReader

from auditor.cli import main
from auditor.reviews import record_review
from outputs import PV_GOLD, PV_SAMPLE, fixed_clock, pv_gold_text, pv_text

pytestmark = pytest.mark.slow   # each PV is typeset by Typst (about a second)

ROOT = Path(__file__).resolve().parent.parent
SAMPLE = PV_SAMPLE
PASSWORD = "secret-de-test"
JUSTIFICATION = "vérifié avec le chef de table <b>#set</b> $x$ *"   # carnet-like text with markup characters


def make_p12(path: Path) -> Path:
    """A throwaway self-signed signing certificate, as a PKCS#12 file locked with PASSWORD."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Inspectrice de test")])
    start = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(start)
            .not_valid_after(start + datetime.timedelta(days=3650))
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .sign(key, hashes.SHA256()))
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"test", key, cert, None, serialization.BestAvailableEncryption(PASSWORD.encode())))
    return path


@pytest.fixture(scope="module")
def signed(tmp_path_factory):
    """A carnet audited with a review recorded, `--format json,pdf --sign test.p12`: its output folder."""
    base = tmp_path_factory.mktemp("pv")
    p12 = make_p12(base / "test.p12")
    first = base / "first"
    with fixed_clock():
        assert main(["audit", str(SAMPLE), "--out", str(first), "--format", "json", "--quiet"]) == 1
    finding = json.loads((first / SAMPLE.name / "findings.json").read_text(encoding="utf-8"))["findings"][0]
    reviews = base / "reviews.jsonl"
    record_review(reviews, finding["fingerprint"], "confirme", JUSTIFICATION, "J. Dupont", finding=finding)
    out = base / "out"
    with pytest.MonkeyPatch.context() as mp, fixed_clock():
        mp.setenv("ECARTE_AUDIT_SIGN_PASSWORD", PASSWORD)
        code = main(["audit", str(SAMPLE), "--out", str(out), "--format", "json,pdf,xlsx", "--quiet",
                     "--reviews", str(reviews), "--sign", str(p12), "--inspector", "Jeanne Dupont",
                     "--grade", "Inspectrice principale", "--place", "Forges-les-Eaux"])
    assert code == 1   # the sample has errors
    return out / SAMPLE.name


def test_verify_says_the_signed_pv_holds(signed, capsys):
    assert main(["verify", str(signed / "proces-verbal.pdf"), str(SAMPLE)]) == 0
    said = capsys.readouterr().out
    assert "valid but not trusted" in said          # the throwaway certificate is self-signed
    assert "Inspectrice de test" in said
    assert "attached findings.json: intact" in said
    assert "same SHA-256" in said
    assert "Everything checked holds." in said


def test_attachment_is_findings_json(signed):
    reader = PdfReader(signed / "proces-verbal.pdf")
    assert reader.attachments["findings.json"] == [(signed / "findings.json").read_bytes()]


def test_pdfa3_declared_in_xmp(signed):
    xmp = PdfReader(signed / "proces-verbal.pdf").xmp_metadata.stream.get_data().decode("utf-8")
    assert re.search(r'pdfaid:part(="|>)3', xmp)
    assert re.search(r'pdfaid:conformance(="|>)B', xmp)


def test_identity_and_page_numbers_on_every_page(signed):
    pages = PdfReader(signed / "proces-verbal.pdf").pages
    assert len(pages) >= 2
    for n, page in enumerate(pages, start=1):
        text = page.extract_text()
        assert "Casino de Forges-les-Eaux — table 6" in text
        assert f"page {n} / {len(pages)}" in text


def test_review_and_visit_in_the_pv(signed):
    text = pv_text((signed / "proces-verbal.pdf").read_bytes())
    flat = " ".join(text.split())
    assert "Revue : confirmé" in flat
    assert JUSTIFICATION in flat             # set as text: markup characters and all
    assert "Jeanne Dupont" in flat and "Inspectrice principale" in flat
    assert "Fait à Forges-les-Eaux, le 01/01/2026." in flat


def test_review_in_the_workbook_findings_sheet(signed):
    from openpyxl import load_workbook

    ws = load_workbook(signed / "annotated.xlsx")["Constats"]
    rows = list(ws.iter_rows(values_only=True))
    assert rows[0][-4:] == ("Revue", "Justification", "Revue par", "Revue le")
    assert ("confirmé", JUSTIFICATION, "J. Dupont") in [r[-4:-1] for r in rows[1:]]


def _tampered(signed: Path, tmp_path: Path) -> Path:
    """The signed PV with one byte of its signed content changed (its keywords, so it still parses)."""
    data = bytearray((signed / "proces-verbal.pdf").read_bytes())
    at = data.index(b"findings-sha256:") + len(b"findings-sha256:")
    data[at] = ord("1") if data[at] != ord("1") else ord("2")
    target = tmp_path / "tampered.pdf"
    target.write_bytes(bytes(data))
    return target


@pytest.mark.parametrize(("lang", "words"), [("fr", ("NON VALIDE", "Vérification échouée")),
                                             ("en", ("NOT VALID", "Verification failed"))])
def test_tampered_pv_refused_in_the_users_language(signed, tmp_path, capsys, lang, words):
    assert main(["--lang", lang, "verify", str(_tampered(signed, tmp_path))]) == 1
    said = capsys.readouterr().out
    for w in words:
        assert w in said


def test_other_source_refused(signed, capsys):
    other = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
    assert main(["verify", str(signed / "proces-verbal.pdf"), str(other)]) == 1
    assert "DIFFERENT" in capsys.readouterr().out


def test_unsigned_pv_is_said_unsigned_and_not_a_pdf_is_not_a_traceback(tmp_path, capsys):
    with fixed_clock():
        main(["audit", str(SAMPLE), "--out", str(tmp_path), "--format", "pdf", "--quiet"])
    assert main(["verify", str(tmp_path / SAMPLE.name / "proces-verbal.pdf")]) == 1
    assert "not signed" in capsys.readouterr().out
    junk = tmp_path / "junk.pdf"
    junk.write_bytes(b"not a pdf")
    assert main(["verify", str(junk)]) == 1
    captured = capsys.readouterr()
    assert "not a readable PDF" in captured.out and "Traceback" not in captured.err
    assert main(["verify", str(tmp_path / "missing.pdf")]) == 2


def test_wrong_password_is_a_usage_error(tmp_path, monkeypatch, capsys):
    p12 = make_p12(tmp_path / "test.p12")
    monkeypatch.setenv("ECARTE_AUDIT_SIGN_PASSWORD", "wrong")
    assert main(["audit", str(SAMPLE), "--out", str(tmp_path / "out"), "--format", "pdf", "--sign", str(p12)]) == 2
    assert "wrong password" in capsys.readouterr().err
    assert not (tmp_path / "out" / SAMPLE.name).exists()   # refused before any carnet is audited


def test_same_inputs_same_bytes_unsigned(tmp_path):
    outs = []
    for name in ("a", "b"):
        with fixed_clock():
            main(["audit", str(SAMPLE), "--out", str(tmp_path / name), "--format", "pdf", "--quiet"])
        outs.append((tmp_path / name / SAMPLE.name / "proces-verbal.pdf").read_bytes())
    assert outs[0] == outs[1]


@pytest.mark.parametrize("lang", ["fr", "en"])
def test_pv_text_matches_gold(tmp_path, lang):
    assert pv_gold_text(lang, tmp_path) == (PV_GOLD / f"{lang}.txt").read_text(encoding="utf-8"), \
        "the procès-verbal's text changed: `make gold` and read the diff"


def test_the_pv_says_every_message_whole_and_a_seance_place_without_a_coup(tmp_path):
    """The web report clips a message at 200 characters (its size bound); the
    record says it whole: a finding across carnets names the other carnet's
    path and ends with the number at stake (the archive sample's EC83-04
    lost its "n° 400156"). A séance's place (EC64-11) has no coup, and says none."""
    import unicodedata

    from auditor.report.report_view import clip

    archive = ROOT / "sample_carnets" / "archives" / "etretat-table4-lacune"
    with fixed_clock():
        main(["audit", str(archive), "--out", str(tmp_path), "--format", "json,pdf", "--quiet"])
    checked = 0
    for folder in sorted(p for p in tmp_path.iterdir() if (p / "proces-verbal.pdf").exists()):
        text = unicodedata.normalize("NFC", "".join(p.extract_text() for p in PdfReader(folder / "proces-verbal.pdf").pages))
        assert not re.search(r"coup\s*,", text)
        text = "".join(text.split())   # lines wrap anywhere in a long path: compared without any white space
        for f in json.loads((folder / "findings.json").read_text(encoding="utf-8"))["findings"]:
            if len(f["message"]) > 200:
                assert clip(f["message"]) != f["message"]
                assert "".join(f["message"].split()) in text, f["message"]
                checked += 1
    assert checked, "no message long enough to be clipped: the test proves nothing"


def test_unreadable_carnet_has_a_pv(tmp_path):
    carnet = ROOT / "sample_carnets" / "infractions" / "classeur-corrompu.xlsx"
    with fixed_clock():
        assert main(["audit", str(carnet), "--out", str(tmp_path), "--format", "pdf", "--quiet"]) == 1
    pages = PdfReader(tmp_path / carnet.name / "proces-verbal.pdf").pages
    for n, page in enumerate(pages, start=1):
        text = page.extract_text()
        assert "classeur-corrompu.xlsx" in text and f"page {n} / {len(pages)}" in text
    assert "Carnet illisible" in pages[0].extract_text()


# -- a CSV folder's files, each with its own SHA-256 (outputs.md v1.2: "each source file's name and SHA-256") --

def _sha(path: Path) -> str:
    import hashlib

    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_pv_names_each_source_file_with_its_own_sha256(signed):
    from auditor.report.pv import source_files_of

    csvs = sorted(SAMPLE.glob("*.csv"))
    assert len(csvs) >= 5
    flat = " ".join(pv_text((signed / "proces-verbal.pdf").read_bytes()).split())
    for p in csvs:
        assert f"Fichier {p.name} {_sha(p)}" in flat
    keywords = str(PdfReader(signed / "proces-verbal.pdf").metadata["/Keywords"])
    assert source_files_of(keywords) == [(p.name, _sha(p)) for p in csvs]


def test_verify_accepts_the_folder_or_its_files(signed, capsys):
    pv = str(signed / "proces-verbal.pdf")
    csvs = sorted(SAMPLE.glob("*.csv"))
    for sources in ([SAMPLE], csvs, csvs[:2]):
        assert main(["verify", pv, *map(str, sources)]) == 0
        said = capsys.readouterr().out
        for p in csvs if sources == [SAMPLE] else sources:
            assert f"same SHA-256 as the file {p.name}" in said
        assert "Everything checked holds." in said


@pytest.mark.subprocess
@pytest.mark.parametrize(("lang", "words"), [
    ("en", ("DIFFERENT from the one the procès-verbal records for coups.csv", "MISSING from",
            "DIFFERENT from every file the procès-verbal names", "Verification failed: 3 point(s)")),
    ("fr", ("DIFFÉRENT de celui que le procès-verbal indique pour coups.csv", "ABSENT de",
            "DIFFÉRENT de tous les fichiers que nomme le procès-verbal", "Vérification échouée : 3 point(s)"))])
def test_verify_names_the_file_that_differs_is_missing_or_was_added(signed, tmp_path, lang, words):
    # As people do: the folder copied elsewhere, one file edited, one lost, one
    # added; the command itself, on the real clock.
    import os
    import subprocess
    import sys

    folder = tmp_path / "carnet de la table 6"
    shutil.copytree(SAMPLE, folder)
    coups = folder / "coups.csv"
    coups.write_bytes(coups.read_bytes() + b"\n")   # one more line end: the same rows, other bytes
    (folder / "tickets.csv").unlink()
    (folder / "notes.csv").write_text("une note\n", encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if k != "SOURCE_DATE_EPOCH"}
    proc = subprocess.run([sys.executable, "-m", "auditor", "--lang", lang, "verify", str(signed / "proces-verbal.pdf"),
                           str(folder)], capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    said = proc.stdout
    for w in words:
        assert w in said, said
    assert f"{coups}" in said and _sha(coups) in said
    assert "tickets.csv" in said and "notes.csv" in said
    # The unchanged files still hold, each said.
    assert said.count("[OK]") == 1 + 1 + 5   # signature, attachment, the five files left as they were


def test_verify_finds_a_renamed_file_by_its_bytes(signed, tmp_path, capsys):
    copy = tmp_path / "mises (copie).csv"
    shutil.copyfile(SAMPLE / "mises.csv", copy)
    assert main(["verify", str(signed / "proces-verbal.pdf"), str(copy)]) == 0
    assert "same SHA-256 as the file mises.csv" in capsys.readouterr().out


def test_verify_refuses_a_file_list_that_does_not_give_the_findings_hash(tmp_path, capsys):
    # Unsigned, the file list in the keywords could be edited: it must still
    # give the folder's SHA-256 that the attached findings name.
    with fixed_clock():
        main(["audit", str(SAMPLE), "--out", str(tmp_path), "--format", "pdf", "--quiet"])
    data = (tmp_path / SAMPLE.name / "proces-verbal.pdf").read_bytes()
    digest = _sha(SAMPLE / "coups.csv").encode()
    forged = digest[:-1] + (b"0" if digest[-1:] != b"0" else b"1")
    assert data.count(digest) >= 1
    pv = tmp_path / "forged.pdf"
    pv.write_bytes(data.replace(digest, forged))
    assert main(["verify", str(pv), str(SAMPLE)]) == 1
    said = capsys.readouterr().out
    assert "does not give the SHA-256 of the attached findings' source" in said
    assert "DIFFERENT from the one the procès-verbal records for coups.csv" in said


def test_a_one_file_carnet_is_verified_as_before(tmp_path, capsys):
    carnet = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
    with fixed_clock():
        main(["audit", str(carnet), "--out", str(tmp_path), "--format", "pdf", "--quiet"])
    pv = tmp_path / carnet.name / "proces-verbal.pdf"
    assert "source-sha256:" not in str(PdfReader(pv).metadata["/Keywords"])
    main(["verify", str(pv), str(carnet)])
    assert "same SHA-256 as the procès-verbal's source" in capsys.readouterr().out


# -- PDF/A-3 (issue 26): veraPDF where it is installed; else what pypdf can check ----------------------
#
# veraPDF, the reference validator, is a Java program the veraPDF consortium
# distributes itself: it is in none of the registries this machine reaches
# (Debian, PyPI, npm). With it installed (`verapdf` on the PATH, or VERAPDF
# naming it), the first test below runs it, offline. Without it, the checks
# after it read the requirements of ISO 19005-3 that can be read from the file's
# objects (docs/interpretations.md says which, and what they cannot tell).

VERAPDF = os.environ.get("VERAPDF") or shutil.which("verapdf")


@pytest.mark.subprocess
@pytest.mark.skipif(not VERAPDF, reason="veraPDF is not installed here (a Java program of the veraPDF "
                    "consortium, in none of the registries this machine reaches); set VERAPDF=/path/to/verapdf "
                    "to validate the procès-verbal as PDF/A-3b")
@pytest.mark.parametrize("which", ["unsigned", "signed"])
def test_verapdf_validates_the_pv_as_pdfa3b(signed, tmp_path, which):
    import subprocess

    pv = signed / "proces-verbal.pdf"
    if which == "unsigned":
        with fixed_clock():
            main(["audit", str(SAMPLE), "--out", str(tmp_path), "--format", "pdf", "--quiet"])
        pv = tmp_path / SAMPLE.name / "proces-verbal.pdf"
    proc = subprocess.run([VERAPDF, "--flavour", "3b", "--format", "xml", str(pv)], capture_output=True, text=True,
                          timeout=300)
    assert 'isCompliant="true"' in proc.stdout, proc.stdout[-4000:] + proc.stderr[-2000:]


_FORBIDDEN_FILTERS = {"/LZWDecode", "/LZW"}
_FORBIDDEN_ACTIONS = {"/Launch", "/Sound", "/Movie", "/ResetForm", "/ImportData", "/JavaScript", "/Hide",
                      "/SetOCGState", "/Rendition", "/Trans", "/GoTo3DView"}
_RELATIONSHIPS = {"/Source", "/Data", "/Alternative", "/Supplement", "/Unspecified"}


def _objects(reader):
    """Every dictionary and stream reachable from the trailer, once each."""
    from pypdf.generic import ArrayObject, DictionaryObject, IndirectObject

    seen, todo, out = set(), [reader.trailer], []
    while todo:
        obj = todo.pop()
        if isinstance(obj, IndirectObject):
            if (obj.idnum, obj.generation) in seen:
                continue
            seen.add((obj.idnum, obj.generation))
            obj = obj.get_object()
        if isinstance(obj, DictionaryObject):   # streams are dictionaries too
            out.append(obj)
            todo.extend(v for k, v in obj.items() if k not in ("/Parent", "/P"))
        elif isinstance(obj, ArrayObject):
            todo.extend(obj)
    return out


def _fonts(reader):
    """Every font a page, a form XObject or an annotation's appearance uses."""
    fonts, seen = [], set()

    def resources(res):
        if res is None:
            return
        res = res.get_object()
        for font in (res.get("/Font") or {}).values():
            fonts.append(font.get_object())
        for xobject in (res.get("/XObject") or {}).values():
            key = getattr(xobject, "idnum", None)
            if key in seen:
                continue
            seen.add(key)
            xobject = xobject.get_object()
            if xobject.get("/Subtype") == "/Form":
                resources(xobject.get("/Resources"))

    for page in reader.pages:
        resources(page.get("/Resources"))
        for annot in page.get("/Annots") or []:
            for appearance in ((annot.get_object().get("/AP") or {}).get("/N"),):
                if appearance is not None and hasattr(appearance.get_object(), "get"):
                    resources(appearance.get_object().get("/Resources"))
    return fonts


def pdfa3b_problems(data: bytes) -> list[str]:
    """What breaks a requirement of ISO 19005-3 (PDF/A-3b) that the file's objects show, one line each
    (`topic: what`)."""
    from datetime import timezone

    import defusedxml.ElementTree as ET

    problems = []
    # The header, then a comment of four bytes above 127.
    second = data.split(b"\n", 2)[1] if data.count(b"\n") >= 2 else b""
    if not data.startswith(b"%PDF-1.") or not (second[:1] == b"%" and len(second) >= 5
                                                and all(b > 127 for b in second[1:5])):
        problems.append("header: no PDF header or binary comment")
    # Nothing after the last %%EOF but an end of line.
    if data.rstrip(b"\r\n")[-5:] != b"%%EOF":
        problems.append("eof: data after %%EOF")
    reader = PdfReader(io.BytesIO(data))
    trailer, root = reader.trailer, reader.trailer["/Root"].get_object()
    if "/ID" not in trailer:
        problems.append("id: no file identifier (ID) in the trailer")
    if "/Encrypt" in trailer:
        problems.append("encrypt: the file is encrypted")
    for obj in _objects(reader):
        filters = obj.get("/Filter")
        filters = [filters] if isinstance(filters, str) else list(filters or [])
        if _FORBIDDEN_FILTERS & set(map(str, filters)):
            problems.append("lzw: an LZW-compressed stream")
        if "/Length" in obj and ("/F" in obj or "/FFilter" in obj or "/FDecodeParms" in obj):
            problems.append("external: a stream with its data in another file")
        action = obj.get("/S") if obj.get("/Type") in (None, "/Action") else None
        if action in _FORBIDDEN_ACTIONS:
            problems.append(f"action: forbidden action {action}")
    if "/AA" in root or "/JavaScript" in (root.get("/Names") or {}):
        problems.append("action: document actions or JavaScript")
    # A PDF/A output intent with an ICC profile (RGB here: Typst paints in sRGB).
    intents = [i.get_object() for i in root.get("/OutputIntents") or []]
    pdfa = [i for i in intents if i.get("/S") == "/GTS_PDFA1"]
    if not pdfa or "/DestOutputProfile" not in pdfa[0]:
        problems.append("output-intent: no GTS_PDFA1 output intent with a destination profile")
    else:
        profile = pdfa[0]["/DestOutputProfile"].get_object()
        icc = profile.get_data()
        if icc[36:40] != b"acsp" or profile.get("/N") != 3 or icc[16:20] != b"RGB ":
            problems.append("output-intent: its profile is not an RGB ICC profile")
        if len({id(i["/DestOutputProfile"].get_object()) for i in intents if "/DestOutputProfile" in i}) > 1:
            problems.append("output-intent: output intents with different profiles")
    # Every font embedded (Type 3 fonts are their own glyphs); a TrueType CID font maps its glyphs.
    for font in _fonts(reader):
        if font.get("/Subtype") == "/Type3":
            continue
        targets = [d.get_object() for d in font.get("/DescendantFonts") or []] or [font]
        for f in targets:
            descriptor = (f.get("/FontDescriptor") or {})
            descriptor = descriptor.get_object() if hasattr(descriptor, "get_object") else descriptor
            if not any(k in descriptor for k in ("/FontFile", "/FontFile2", "/FontFile3")):
                problems.append(f"font: not embedded: {font.get('/BaseFont')}")
            if f.get("/Subtype") == "/CIDFontType2" and "/CIDToGIDMap" not in f:
                problems.append(f"font: no CIDToGIDMap: {font.get('/BaseFont')}")
    # Annotations printed, never hidden; an appearance (N only) for any with an area.
    for page in reader.pages:
        for annot in page.get("/Annots") or []:
            annot = annot.get_object()
            if annot.get("/Subtype") == "/Popup":
                continue
            flags = int(annot.get("/F", 0))
            if not flags & 4 or flags & (1 | 2 | 32 | 256):
                problems.append(f"annotation: {annot.get('/Subtype')} not printed, or hidden")
            x1, y1, x2, y2 = (float(v) for v in annot.get("/Rect", [0, 0, 0, 0]))
            if annot.get("/Subtype") != "/Link" and (x2 - x1) and (y2 - y1):
                if set((annot.get("/AP") or {}).keys()) != {"/N"}:
                    problems.append(f"annotation: {annot.get('/Subtype')} without its one appearance")
    # XMP metadata, unfiltered, no `bytes` in its header, PDF/A-3 B declared,
    # and the document information dictionary saying the same.
    meta = root.get("/Metadata")
    if meta is None:
        problems.append("xmp: no XMP metadata")
        return problems
    meta = meta.get_object()
    if "/Filter" in meta:
        problems.append("xmp: a filtered metadata stream")
    xmp_bytes = meta.get_data()
    head = xmp_bytes[:xmp_bytes.find(b"?>") + 2]
    if not head.startswith(b"<?xpacket begin=") or b"bytes=" in head:
        problems.append("xmp: packet header missing or with a bytes attribute")
    xmp = ET.fromstring(xmp_bytes)
    ns = {"pdfaid": "http://www.aiim.org/pdfa/ns/id/"}
    part = xmp.find(".//pdfaid:part", ns)
    part = part.text if part is not None else xmp.find(".//*[@pdfaid:part]", ns).get(f"{{{ns['pdfaid']}}}part")
    conformance = xmp.find(".//pdfaid:conformance", ns)
    conformance = (conformance.text if conformance is not None
                   else xmp.find(".//*[@pdfaid:conformance]", ns).get(f"{{{ns['pdfaid']}}}conformance"))
    if (part, conformance) != ("3", "B"):
        problems.append(f"pdfaid: declared PDF/A-{part}{conformance}, not PDF/A-3B")
    info, x = reader.metadata or {}, reader.xmp_metadata

    def utc(moment):
        return moment.astimezone(timezone.utc).replace(tzinfo=None) if moment and moment.tzinfo else moment

    pairs = {"Title": (info.get("/Title"), (x.dc_title or {}).get("x-default")),
             "Author": (info.get("/Author"), ", ".join(x.dc_creator or []) or None),
             "Keywords": (info.get("/Keywords"), x.pdf_keywords),
             "Creator": (info.get("/Creator"), x.xmp_creator_tool),
             "Producer": (info.get("/Producer"), x.pdf_producer),
             "CreationDate": (utc(info.creation_date), utc(x.xmp_create_date)),
             "ModDate": (utc(info.modification_date), utc(x.xmp_modify_date))}
    for name, (in_info, in_xmp) in pairs.items():
        if in_info is not None and in_info != in_xmp:
            problems.append(f"info-xmp: {name} differs between the information dictionary and XMP")
    # Each embedded file with its MIME type, date and relationship, named in an AF array.
    named = (root.get("/Names") or {}).get("/EmbeddedFiles") or {}
    files = (named.get("/Names") or [])[1::2]
    associated = {getattr(a, "idnum", None) for a in root.get("/AF") or []}
    for spec_ref in files:
        spec = spec_ref.get_object()
        stream = ((spec.get("/EF") or {}).get("/F"))
        stream = stream.get_object() if stream is not None else {}
        if not {"/F", "/UF"} <= set(spec.keys()) or spec.get("/AFRelationship") not in _RELATIONSHIPS:
            problems.append("embedded: a file specification without F, UF or AFRelationship")
        if "/Subtype" not in stream or "/ModDate" not in (stream.get("/Params") or {}):
            problems.append("embedded: a file without its MIME type or modification date")
        if getattr(spec_ref, "idnum", None) not in associated:
            problems.append("embedded: a file not associated (catalog AF)")
    return problems


def _unsigned_pv(tmp_path: Path, carnet: Path = SAMPLE) -> bytes:
    with fixed_clock():
        main(["audit", str(carnet), "--out", str(tmp_path), "--format", "pdf", "--quiet", "--fail-on", "never"])
    return (tmp_path / carnet.name / "proces-verbal.pdf").read_bytes()


@pytest.mark.parametrize("carnet", [SAMPLE, ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx",
                                    ROOT / "sample_carnets" / "infractions" / "classeur-corrompu.xlsx"],
                         ids=["findings", "compliant", "unreadable"])
def test_pv_keeps_the_pdfa3b_clauses_its_objects_show(tmp_path, carnet):
    assert pdfa3b_problems(_unsigned_pv(tmp_path, carnet)) == []


def test_signed_pv_keeps_the_pdfa3b_clauses_its_objects_show(signed):
    # pyHanko's incremental update: a signature field (printed, no area) and
    # the dates brought up to the signing time in both the dictionary and XMP.
    assert pdfa3b_problems((signed / "proces-verbal.pdf").read_bytes()) == []


def test_the_pdfa3b_checks_catch_what_they_look_for(tmp_path):
    from pypdf import PdfWriter
    from pypdf.generic import NameObject

    data = _unsigned_pv(tmp_path)
    writer = PdfWriter(clone_from=io.BytesIO(data))
    root = writer._root_object
    del root[NameObject("/OutputIntents")]
    del root[NameObject("/AF")]
    writer.add_metadata({"/Title": "un autre titre"})
    font = next(iter(writer.pages[0]["/Resources"]["/Font"].values())).get_object()
    descendant = font["/DescendantFonts"][0].get_object()
    descriptor = descendant["/FontDescriptor"].get_object()
    for key in ("/FontFile", "/FontFile2", "/FontFile3"):
        if key in descriptor:
            del descriptor[NameObject(key)]
    buf = io.BytesIO()
    writer.write(buf)
    problems = pdfa3b_problems(buf.getvalue())
    for said in ("output-intent: no GTS_PDFA1", "embedded: a file not associated", "font: not embedded",
                 "info-xmp: Title"):
        assert any(p.startswith(said) for p in problems), problems
    # And the declaration itself.
    declared = data.replace(b"<pdfaid:part>3</pdfaid:part>", b"<pdfaid:part>2</pdfaid:part>")
    assert declared != data and any(p.startswith("pdfaid: declared PDF/A-2B") for p in pdfa3b_problems(declared))
