"""`verify` on a procès-verbal whose attached findings.json is damaged or
crafted (any JSON may be there, with the hash the keywords record): a clear
"not a findings document" line and exit status 1, as for a tampered PV —
never a traceback."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest

from auditor.cli import main
from auditor.verify import verify

ROOT = Path(__file__).resolve().parent.parent
SOURCE = ROOT / "sample_carnets" / "compliant" / "forges-table3.xlsx"
GOOD_SHA = "0" * 64


def _pv(path: Path, attachment: bytes, files: str = "") -> Path:
    """An unsigned PDF with `attachment` as findings.json and its hash in the keywords (as a PV records it)."""
    from pypdf import PdfWriter

    writer = PdfWriter()
    writer.add_blank_page(100, 100)
    writer.add_attachment("findings.json", attachment)
    writer.add_metadata({"/Keywords": f"findings-sha256:{hashlib.sha256(attachment).hexdigest()}{files}"})
    out = io.BytesIO()
    writer.write(out)
    path.write_bytes(out.getvalue())
    return path


MALFORMED = {
    "source a string": {"source": "abc"},
    "source a list": {"source": ["abc", GOOD_SHA]},
    "source null": {"source": None},
    "source a number": {"source": 12},
    "source missing": {"findings": []},
    "source empty": {"source": {}},
    "sha256 missing": {"source": {"path": "carnet.xlsx"}},
    "sha256 a number": {"source": {"path": "carnet.xlsx", "sha256": 12}},
    "sha256 a list": {"source": {"path": "carnet.xlsx", "sha256": [GOOD_SHA]}},
    "sha256 an object": {"source": {"path": "carnet.xlsx", "sha256": {"hex": GOOD_SHA}}},
    "sha256 not hexadecimal": {"source": {"path": "carnet.xlsx", "sha256": "z" * 64}},
    "document a list": [{"source": {"sha256": GOOD_SHA}}],
    "document a string": "findings",
    "document null": None,
    "document a number": 3.5,
}
NOT_JSON = {
    "not JSON": b"{not json",
    "not UTF-8": b'{"source": "\xff"}',
    "nested past the recursion limit": b"[" * 100_000 + b"]" * 100_000,
    "empty": b"",
}


def _cases():
    for name, document in MALFORMED.items():
        yield pytest.param(json.dumps(document).encode(), "", id=name)
    for name, raw in NOT_JSON.items():
        yield pytest.param(raw, "", id=name)
    # A CSV folder's PV names its files in the keywords: checked against the same malformed source.
    yield pytest.param(json.dumps({"source": "abc"}).encode(), f",source-sha256:{GOOD_SHA}:a.csv", id="with files")
    yield pytest.param(json.dumps({"source": {"path": ["x"], "sha256": None}}).encode(),
                       f",source-sha256:{GOOD_SHA}:a.csv", id="with files, path a list")


@pytest.mark.parametrize(("attachment", "files"), list(_cases()))
def test_a_malformed_attachment_is_a_verdict_not_a_traceback(tmp_path, capsys, attachment, files):
    pv = _pv(tmp_path / "pv.pdf", attachment, files)
    verdict = verify(pv, [SOURCE])
    assert not verdict.ok
    said = [(ok, m.key) for ok, m in verdict.lines]
    assert (True, "verify.attachment_intact") in said   # the bytes are those the keywords record
    assert (False, "verify.attachment_malformed") in said
    assert main(["verify", str(pv), str(SOURCE)]) == 1   # as a tampered PV
    out = capsys.readouterr()
    assert "not a findings document of this tool" in out.out and "Traceback" not in out.err


def test_a_well_formed_source_is_still_compared(tmp_path):
    from auditor.batch.cache import fingerprint

    document = {"source": {"path": "forges-table3.xlsx", "sha256": fingerprint(SOURCE)}}
    pv = _pv(tmp_path / "pv.pdf", json.dumps(document).encode())
    assert [m.key for ok, m in verify(pv, [SOURCE]).lines if ok] == ["verify.attachment_intact", "verify.source_same"]
    other = {"source": {"path": "forges-table3.xlsx", "sha256": GOOD_SHA}}
    pv = _pv(tmp_path / "other.pdf", json.dumps(other).encode())
    assert (False, "verify.source_differs") in [(ok, m.key) for ok, m in verify(pv, [SOURCE]).lines]
