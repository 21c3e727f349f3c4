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
