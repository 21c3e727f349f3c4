"""The procès-verbal (outputs.md v1.2, issue 26): `--format pdf --sign`, then
`verify`; PDF/A-3 declared, findings.json attached, identity and page
numbers on every page, a review's justification in it; a tampered PV
refused in the user's language; the same bytes twice (unsigned); its text
against the gold files (tests/gold-pv, `make gold`)."""

from __future__ import annotations

import datetime
import io
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
