"""Signing the procès-verbal in PAdES (`audit --sign CERT.p12`), with pyHanko.

The certificate's password never travels on the command line (a shell's
history and the process list would show it): it comes from the environment
variable ECARTE_AUDIT_SIGN_PASSWORD, else it is asked at the terminal. The
certificate is opened once, before any carnet is audited, so a wrong
password stops the run before it starts.

A certificate not valid at the signing moment (expired, not yet valid) is
refused, as a wrong password is: a usage error, before any carnet is audited.

The signature is an incremental update: the PDF/A-3 document and its
attached findings.json stay byte for byte what the audit wrote, and the
signature covers all of it.
"""

from __future__ import annotations

import getpass
import io
import os
import sys
from datetime import datetime, timezone
from pathlib import Path
from typing import Callable

from auditor.errors import UsageError, os_reason

PASSWORD_VARIABLE = "ECARTE_AUDIT_SIGN_PASSWORD"
FIELD_NAME = "Signature1"


def _password(path: Path, lang: str) -> bytes:
    value = os.environ.get(PASSWORD_VARIABLE)
    if value is not None:
        return value.encode("utf-8")
    if not sys.stdin.isatty():
        raise UsageError("audit.sign_no_password", variable=PASSWORD_VARIABLE)
    from auditor.i18n import cli_label

    return getpass.getpass(cli_label("audit.sign_prompt", lang, path=path)).encode("utf-8")


def now() -> datetime:
    """The signing moment: the computer's clock (pyHanko writes it in the signature)."""
    return datetime.now(timezone.utc)


def shown_moment(moment: datetime) -> str:
    """A certificate's date as the messages give it, in UTC."""
    return moment.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")


def _valid_now(path: Path, cert) -> None:
    """Refuse a certificate not valid at the signing moment (expired, or not
    yet valid): pyHanko would sign with it, and the signature would prove
    nothing of the inspector at that date (docs/interpretations.md)."""
    moment = now()
    if moment > cert.not_valid_after_utc:
        raise UsageError("audit.sign_cert_expired", path=path, until=shown_moment(cert.not_valid_after_utc))
    if moment < cert.not_valid_before_utc:
        raise UsageError("audit.sign_cert_not_yet_valid", path=path, since=shown_moment(cert.not_valid_before_utc))


def load_signer(path: Path, lang: str, password: str | None = None) -> Callable[[bytes], bytes]:
    """What signs a procès-verbal with the PKCS#12 certificate at `path`
    (a usage error when it cannot be read or the password is wrong).
    `password`: given by the local page (typed there, held in memory only);
    else the environment variable, else the terminal's prompt."""
    from cryptography.hazmat.primitives.serialization import pkcs12
    from pyhanko.sign import signers

    try:
        data = path.read_bytes()
    except OSError as exc:
        raise UsageError("audit.sign_cannot_read", path=path, reason=os_reason(exc)) from None
    password = password.encode("utf-8") if password is not None else _password(path, lang)
    # Opened with `cryptography` first: it tells a wrong password (ValueError)
    # from a file that holds no key and certificate, where pyHanko says neither.
    try:
        key, cert, _ = pkcs12.load_key_and_certificates(data, password or None)
    except ValueError:
        raise UsageError("audit.sign_bad_password", path=path) from None
    if key is None or cert is None:
        raise UsageError("audit.sign_no_key", path=path)
    _valid_now(path, cert)   # before any carnet is audited; again at each signature
    signer = signers.SimpleSigner.load_pkcs12(pfx_file=str(path), passphrase=password or None)
    if signer is None:
        raise UsageError("audit.sign_no_key", path=path)

    def sign(pdf: bytes) -> bytes:
        from pyhanko.pdf_utils.incremental_writer import IncrementalPdfFileWriter
        from pyhanko.sign.fields import SigSeedSubFilter

        _valid_now(path, cert)
        meta = signers.PdfSignatureMetadata(field_name=FIELD_NAME, subfilter=SigSeedSubFilter.PADES,
                                            md_algorithm="sha256")
        out = io.BytesIO()
        signers.sign_pdf(IncrementalPdfFileWriter(io.BytesIO(pdf)), meta, signer=signer, output=out)
        return out.getvalue()

    return sign
