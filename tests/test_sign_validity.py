"""A signing certificate judged at the moment it signs: `audit --sign` refuses
one expired or not yet valid (a usage error, before any carnet is audited);
`verify` says NOT VALID for a PV signed while its certificate was not valid,
and judges one that expired since as it was when it signed."""

from __future__ import annotations

import datetime
import io
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.errors import UsageError

ROOT = Path(__file__).resolve().parent.parent
CARNET = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
PASSWORD = "secret-de-test"
UTC = datetime.timezone.utc
DAY = datetime.timedelta(days=1)


def _key():
    from cryptography.hazmat.primitives.asymmetric import ec

    return ec.generate_private_key(ec.SECP256R1())   # quick to make, unlike RSA


def _authority():
    """A certificate authority: its key and certificate."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes
    from cryptography.x509.oid import NameOID

    key, now = _key(), datetime.datetime.now(UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Autorité de test")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - 3650 * DAY)
            .not_valid_after(now + 3650 * DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=False, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=True,
                                         crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .sign(key, hashes.SHA256()))
    return key, cert


@pytest.fixture(scope="module")
def authority():
    return _authority()


def make_p12(path: Path, authority, since: datetime.datetime, until: datetime.datetime) -> Path:
    """A signing certificate issued by `authority`, valid from `since` to `until`, as a PKCS#12 file."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.serialization import pkcs12
    from cryptography.x509.oid import NameOID

    ca_key, ca = authority
    key = _key()
    cert = (x509.CertificateBuilder().subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Inspectrice")]))
            .issuer_name(ca.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(since).not_valid_after(until)
            .add_extension(x509.KeyUsage(digital_signature=True, content_commitment=True, key_encipherment=False,
                                         data_encipherment=False, key_agreement=False, key_cert_sign=False,
                                         crl_sign=False, encipher_only=False, decipher_only=False), critical=True)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    path.write_bytes(pkcs12.serialize_key_and_certificates(
        b"test", key, cert, [ca], serialization.BestAvailableEncryption(PASSWORD.encode())))
    return path


def _pdf() -> bytes:
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(200, 200)
    out = io.BytesIO()
    writer.write(out)
    return out.getvalue()


def _signature_line(path: Path, monkeypatch, roots=(), later: datetime.timedelta | None = None):
    """What `verify` says of the signature of the PDF at `path`: (holds, English text);
    `roots`: the authorities trusted; `later`: verified that long after now."""
    import auditor.verify as verify

    monkeypatch.setattr(verify, "_trust_roots", lambda: [_asn1(c) for c in roots])
    if later is not None:
        at = datetime.datetime.now(UTC) + later
        monkeypatch.setattr(verify, "now", lambda: at)
    verdict = verify.verify(path)
    (line,) = [(ok, m) for ok, m in verdict.lines if m.key.startswith(("verify.signature", "verify.not_signed"))]
    return line[0], str(line[1])


def _asn1(cert):
    from asn1crypto import x509
    from cryptography.hazmat.primitives import serialization

    return x509.Certificate.load(cert.public_bytes(serialization.Encoding.DER))


@pytest.mark.parametrize(("since", "until", "words"), [
    (-400, -30, "the certificate expired on"),
    (3, 300, "the certificate is valid only from"),
])
def test_audit_refuses_a_certificate_not_valid_now(tmp_path, monkeypatch, capsys, authority, since, until, words):
    now = datetime.datetime.now(UTC)
    p12 = make_p12(tmp_path / "c.p12", authority, now + since * DAY, now + until * DAY)
    monkeypatch.setenv("ECARTE_AUDIT_SIGN_PASSWORD", PASSWORD)
    out = tmp_path / "out"
    assert main(["audit", str(CARNET), "--out", str(out), "--format", "json,pdf", "--sign", str(p12)]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert not (out / CARNET.name).exists()   # refused before any carnet is audited


def test_a_certificate_valid_now_signs(tmp_path, monkeypatch, authority):
    from auditor.sign import load_signer

    now = datetime.datetime.now(UTC)
    p12 = make_p12(tmp_path / "c.p12", authority, now - DAY, now + DAY)
    signed = tmp_path / "signed.pdf"
    signed.write_bytes(load_signer(p12, "en", PASSWORD)(_pdf()))
    assert _signature_line(signed, monkeypatch, roots=[authority[1]]) == (
        True, "signature of Inspectrice: valid, document unchanged since signed, certificate trusted")


def test_a_certificate_that_expires_during_the_run_does_not_sign(tmp_path, monkeypatch, authority):
    import auditor.sign as sign

    now = datetime.datetime.now(UTC)
    signer = sign.load_signer(make_p12(tmp_path / "c.p12", authority, now - DAY, now + DAY), "en", PASSWORD)
    monkeypatch.setattr(sign, "now", lambda: now + 2 * DAY)   # the audit ran past the certificate's end
    with pytest.raises(UsageError, match="the certificate expired on"):
        signer(_pdf())


@pytest.mark.parametrize("trusted", [True, False])
def test_verify_says_not_valid_when_signed_with_an_expired_certificate(tmp_path, monkeypatch, authority, trusted):
    """A PV signed with an expired certificate (by another tool, or this one before it refused them)."""
    import auditor.sign as sign

    now = datetime.datetime.now(UTC)
    p12 = make_p12(tmp_path / "c.p12", authority, now - 400 * DAY, now - 30 * DAY)
    with monkeypatch.context() as m:
        m.setattr(sign, "_valid_now", lambda path, cert: None)
        signed = tmp_path / "signed.pdf"
        signed.write_bytes(sign.load_signer(p12, "en", PASSWORD)(_pdf()))
    ok, said = _signature_line(signed, monkeypatch, roots=[authority[1]] if trusted else [])
    assert not ok
    assert said.startswith("signature of Inspectrice: NOT VALID — its certificate was not valid when the "
                           "procès-verbal was signed (")
    assert "self-signed" not in said
    monkeypatch.setenv("ECARTE_AUDIT_SIGN_PASSWORD", PASSWORD)
    assert main(["verify", str(signed)]) == 1


@pytest.mark.parametrize(("trusted", "trust"), [(True, "certificate trusted"),
                                                (False, "certificate not vouched for by a trusted authority")])
def test_verify_judges_a_certificate_expired_since_as_it_was_when_it_signed(tmp_path, monkeypatch, authority,
                                                                             trusted, trust):
    from auditor.sign import load_signer

    now = datetime.datetime.now(UTC)
    p12 = make_p12(tmp_path / "c.p12", authority, now - DAY, now + DAY)
    signed = tmp_path / "signed.pdf"
    signed.write_bytes(load_signer(p12, "en", PASSWORD)(_pdf()))
    ok, said = _signature_line(signed, monkeypatch, roots=[authority[1]] if trusted else [], later=365 * DAY)
    assert ok
    assert said.startswith("signature of Inspectrice: valid, document unchanged since signed; its certificate, "
                           "valid when it was signed (")
    assert said.endswith(f"has expired since ({_day(now + DAY)}): {trust}") or f"): {trust}:" in said


def _day(moment: datetime.datetime) -> str:
    return moment.strftime("%Y-%m-%d %H:%M UTC")
