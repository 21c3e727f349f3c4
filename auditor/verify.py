"""`ecarte-audit verify PV.pdf [SOURCE…]`: does a procès-verbal still say
what the audit wrote?

Three things are checked, each said in the user's language:
- the signature (PAdES, pyHanko): intact, cryptographically valid, covering
  the whole file, made while its certificate was valid (at the signing time
  the signature states: an expired or not yet valid certificate then is NOT
  VALID; one expired since is judged as it was then); a certificate no
  trusted authority vouches for (a self-signed one) is "valid but not
  trusted", which holds, and is said;
- the attached findings.json: its SHA-256 is the one the procès-verbal
  records (in its keywords, printed in its identity table);
- each SOURCE given: its SHA-256, computed as the audit computes it, is the
  one the attached findings.json names. For a CSV folder the procès-verbal
  names each file with its own SHA-256 (in its keywords, printed in its
  identity table): the folder, or any of its files, is then checked file by
  file, and the file that differs, is missing or was added is named.

No network: certificates are not fetched, revocation is not looked up.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from auditor.names import shown_name
from auditor.errors import Message, UsageError, os_reason
from auditor.report.pv import KEYWORD_RE, source_files_of

ATTACHMENT = "findings.json"


@dataclass
class Verdict:
    """Each check in order: whether it holds, and what it says."""

    lines: list[tuple[bool, Message]] = field(default_factory=list)

    def check(self, ok: bool, message: Message) -> None:
        """Record one check."""
        self.lines.append((ok, message))

    @property
    def ok(self) -> bool:
        """Everything checked holds."""
        return all(ok for ok, _ in self.lines)


def verify(pdf_path: Path, sources: list[Path] = ()) -> Verdict:
    """Check the procès-verbal at `pdf_path` and the `sources` against it."""
    try:
        data = pdf_path.read_bytes()
    except OSError as exc:
        raise UsageError("verify.cannot_read", path=pdf_path, reason=os_reason(exc)) from None
    for source in sources:
        if not source.exists():
            raise UsageError("main.no_such_path", path=source)
    # pyHanko logs why a certificate is not trusted (traceback included) and
    # pypdf what it finds damaged; the verdict says it in one line, in the
    # user's language.
    for name in ("pypdf", "pyhanko", "pyhanko_certvalidator"):
        logging.getLogger(name).addHandler(logging.NullHandler())
        logging.getLogger(name).propagate = False
    verdict = Verdict()
    try:
        from pypdf import PdfReader

        reader = PdfReader(io.BytesIO(data))
        keywords = str((reader.metadata or {}).get("/Keywords") or "")
        attached = reader.attachments.get(ATTACHMENT) or []
    except Exception:   # pypdf raises many kinds on a damaged file: any of them means "not a readable PDF"
        verdict.check(False, Message("verify.not_a_pdf", path=pdf_path))
        return verdict
    _signature(data, verdict)
    recorded = KEYWORD_RE.search(keywords)
    document = None
    if len(attached) != 1:
        verdict.check(False, Message("verify.no_attachment", name=ATTACHMENT))
    elif recorded is None:
        verdict.check(False, Message("verify.no_recorded_hash", name=ATTACHMENT))
    else:
        digest = hashlib.sha256(attached[0]).hexdigest()
        if digest == recorded[1]:
            verdict.check(True, Message("verify.attachment_intact", name=ATTACHMENT, sha256=recorded[1]))
        else:
            verdict.check(False, Message("verify.attachment_changed", name=ATTACHMENT, sha256=recorded[1]))
        try:
            document = json.loads(attached[0].decode("utf-8"))
        except (UnicodeDecodeError, ValueError, RecursionError):   # not JSON, or nested past Python's limit
            document = None
    if sources:
        _sources(sources, document, source_files_of(keywords), verdict)
    return verdict


def _signature(data: bytes, verdict: Verdict) -> None:
    from pyhanko.pdf_utils.reader import PdfFileReader
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko.sign.validation.status import SignatureCoverageLevel
    from pyhanko_certvalidator import ValidationContext

    try:
        signatures = PdfFileReader(io.BytesIO(data), strict=False).embedded_signatures
    except Exception:   # a file pyHanko cannot parse has no signature it could check
        signatures = []
    if not signatures:
        verdict.check(False, Message("verify.not_signed"))
        return
    roots = _trust_roots()
    for sig in signatures:
        try:
            status = validate_pdf_signature(sig, ValidationContext(trust_roots=roots, allow_fetching=False,
                                                                   moment=now()))
        except Exception as exc:   # a damaged signature dictionary or CMS blob: not valid, and why
            verdict.check(False, Message("verify.signature_broken", reason=type(exc).__name__))
            continue
        signer = _signer_name(status.signing_cert)
        if not (status.intact and status.valid):
            verdict.check(False, Message("verify.signature_invalid", signer=signer))
        elif status.coverage != SignatureCoverageLevel.ENTIRE_FILE:
            # Signed, then something added after the signature (an incremental update).
            verdict.check(False, Message("verify.signature_not_whole", signer=signer))
        else:
            _certificate_then(sig, status, signer, roots, verdict)


def _certificate_then(sig, status, signer: str, roots: list, verdict: Verdict) -> None:
    """An intact signature, judged by its certificate at the moment it was
    signed (the signing time the signature states; no time-stamp authority
    is asked): not valid then is NOT VALID; valid then and expired since is
    valid, trusted or not as a trusted authority vouched for it then."""
    from pyhanko.sign.validation import validate_pdf_signature
    from pyhanko_certvalidator import ValidationContext

    from auditor.sign import shown_moment

    cert = status.signing_cert
    signed_at = status.signer_reported_dt or now()
    since, until = cert.not_valid_before, cert.not_valid_after
    if not since <= signed_at <= until:
        verdict.check(False, Message("verify.signature_cert_not_valid_then", signer=signer,
                                     signed=shown_moment(signed_at), since=shown_moment(since),
                                     until=shown_moment(until)))
    elif status.trusted:
        verdict.check(True, Message("verify.signature_trusted", signer=signer))
    elif now() > until:
        # Expired since it signed: a trusted authority's certificate is no
        # longer vouched for today; whether it was then is what counts.
        try:
            then = validate_pdf_signature(sig, ValidationContext(trust_roots=roots, allow_fetching=False,
                                                                 moment=signed_at)).trusted
        except Exception:   # as the first validation: what cannot be judged is not vouched for
            then = False
        verdict.check(True, Message("verify.signature_valid_then", signer=signer, signed=shown_moment(signed_at),
                                    until=shown_moment(until),
                                    trust=Message("verify.trusted_then") if then else Message("verify.untrusted_then")))
    else:
        verdict.check(True, Message("verify.signature_untrusted", signer=signer))


def now() -> datetime:
    """The moment of the verification: the computer's clock."""
    return datetime.now(timezone.utc)


def _trust_roots() -> list:
    """The authorities this computer trusts (the system's store, as Python's
    ssl module loads it): a signature whose certificate chains to one is
    "trusted"; any other is at best "valid but not trusted"."""
    import ssl

    from asn1crypto import x509

    context = ssl.create_default_context()
    return [x509.Certificate.load(der) for der in context.get_ca_certs(binary_form=True)]


def _signer_name(cert) -> str:
    """The certificate's common name, else its whole subject."""
    if cert is None:
        return "?"
    return cert.subject.native.get("common_name") or cert.subject.human_friendly


def _named_source(document: object) -> tuple[dict | None, str]:
    """The source the attached findings name (`{"path": …, "sha256": …}`), or
    None and where the document is not as this tool writes it (a damaged or
    crafted attachment: any JSON at all may be there)."""
    if not isinstance(document, dict):
        return None, ATTACHMENT
    if "source" not in document:
        return None, "source"
    named = document["source"]
    if not isinstance(named, dict):
        return None, "source"
    if not isinstance(named.get("sha256"), str) or not re.fullmatch(r"[0-9a-f]{64}", named["sha256"]):
        return None, "source.sha256"
    path = named.get("path")
    return {"path": path if isinstance(path, str) and path else "?", "sha256": named["sha256"]}, ""


def _sources(sources: list[Path], document: object, files: list[tuple[str, str]], verdict: Verdict) -> None:
    from auditor.batch.cache import fingerprint

    named, where = _named_source(document)
    if named is None:
        verdict.check(False, Message("verify.attachment_malformed", name=ATTACHMENT, where=where))
        return
    expected = named["sha256"]
    if files:
        _source_files(sources, named, files, verdict)
        return
    for source in sources:
        try:
            digest = fingerprint(source)
        except OSError as exc:
            raise UsageError("verify.cannot_read", path=source, reason=os_reason(exc)) from None
        shown = {"path": source, "named": named["path"], "sha256": digest}
        if digest == expected:
            verdict.check(True, Message("verify.source_same", **shown))
        else:
            verdict.check(False, Message("verify.source_differs", **shown))


def _source_files(sources: list[Path], named: dict, files: list[tuple[str, str]], verdict: Verdict) -> None:
    """A CSV folder's sources file by file: each given folder against every
    file the procès-verbal names, each given file against its namesake."""
    from auditor.read.raw import sha256_of_digests

    # The file list travels in the PV's keywords, the folder's SHA-256 in the
    # attached findings: the list must give that SHA-256, else one of them was changed.
    if sha256_of_digests([(name, bytes.fromhex(digest)) for name, digest in files]) != named["sha256"]:
        verdict.check(False, Message("verify.files_disagree"))
    by_name = dict(files)
    for source in sources:
        if source.is_dir():
            try:
                found = sorted((p for p in source.iterdir() if p.is_file() and p.suffix.lower() == ".csv"),
                               key=lambda p: p.name)
            except OSError as exc:
                raise UsageError("verify.cannot_read", path=source, reason=os_reason(exc)) from None
            for p in found:
                _source_file(p, by_name, verdict)
            present = {shown_name(p.name) for p in found}   # as the audit named them
            for name, digest in files:
                if name not in present:
                    verdict.check(False, Message("verify.source_file_missing", name=name, folder=source,
                                                 sha256=digest))
        else:
            _source_file(source, by_name, verdict)


def _source_file(path: Path, by_name: dict[str, str], verdict: Verdict) -> None:
    digest = hashlib.sha256()
    try:
        with path.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):   # in blocks, as the audit hashes it
                digest.update(block)
    except OSError as exc:
        raise UsageError("verify.cannot_read", path=path, reason=os_reason(exc)) from None
    digest_hex = digest.hexdigest()
    name = shown_name(path.name)   # as the audit named it (a name not in UTF-8 read as Windows-1252)
    expected = by_name.get(name)
    if expected is None:
        # Renamed, perhaps: the same bytes as a file the PV names still say which.
        same = next((name for name, d in by_name.items() if d == digest_hex), None)
        if same is not None:
            verdict.check(True, Message("verify.source_file_same", path=path, name=same))
        else:
            verdict.check(False, Message("verify.source_file_unknown", path=path, sha256=digest_hex))
    elif expected == digest_hex:
        verdict.check(True, Message("verify.source_file_same", path=path, name=name))
    else:
        verdict.check(False, Message("verify.source_file_differs", path=path, name=name, sha256=digest_hex,
                                     named=expected))
