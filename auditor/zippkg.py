"""Zip packages, in one place: the workbooks the reader checks (.xlsx,
.xlsb, .ods), the archives of CSV folders the local page receives, and the
workbook the annotated writer copies part by part.

- `open_zip`: the one guarded open. The zip directory is checked (member
  count, duplicate names, encryption, declared sizes and ratio) before
  anything is inflated.
- `inflate`: a member inflated chunk by chunk against a budget, counting the
  real bytes against the limits and checking the size and CRC it declares,
  so calamine, which reads the same member, gets exactly what was checked.
- `raw_member`: a member's compressed bytes, which the writer copies as they
  are (`Package`, `restamp`).

Every refusal is a `Refused(kind, params)`, an EC00-01 message variant.
"""

from __future__ import annotations

import io
import re
import struct
import zipfile
import zlib
from datetime import datetime

from auditor.limits import Limits, size_text


class Refused(Exception):
    """The workbook (table=None) or one of its tables cannot be read safely."""

    def __init__(self, kind: str, **params):
        super().__init__(kind)
        self.kind = kind
        self.params = params


class NotPlainZip(ValueError):
    """A package the writer cannot copy member by member: a damaged member,
    encryption, a compression other than stored or deflated, past 4 GB."""


CHUNK = 1024 * 1024


def open_zip(data: bytes, limits: Limits, required: str | None = "xl/workbook.xml", not_kind: str = "not_xlsx",
             *, not_params: dict | None = None, check_name=None,
             archive: str | None = None) -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """Open a zip within the limits, refusing what is not one (EC00-01 of
    kind `not_kind`, with `not_params`) or lacks the member `required`.

    A workbook (`archive` None): its parts are found case-insensitively (as
    calamine finds them), so a name twice is refused, and the declared sizes
    are refused at the member that passes the limit. An uploaded archive
    (`archive`: the name the user knows it by): `check_name(name)` vets every
    member's name first, and the declared total is refused under `archive`
    once every member passed its own checks. Members are keyed by their name
    in lower case (a workbook) or as written (an archive)."""
    try:
        # A file (an upload on disk) is read where it is, never whole.
        zf = zipfile.ZipFile(data if hasattr(data, "seek") else io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error,
            NotImplementedError, UnicodeDecodeError):
        raise Refused(not_kind, **(not_params or {})) from None
    if len(infos) > limits.max_zip_members:
        raise Refused("zip_members", count=len(infos), limit=limits.max_zip_members)
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
        if archive is not None:
            if check_name is not None:
                check_name(info.filename)
            members[info.filename] = info
            if info.flag_bits & 0x1:
                raise Refused("zip_encrypted")
            _check_ratio(info.filename, info.file_size, info.compress_size, limits)   # as it declares itself
            total += info.file_size
            continue
        key = info.filename.lower()   # calamine finds parts case-insensitively
        if key in members:
            raise Refused("zip_duplicate", member=info.filename)
        members[key] = info
        if info.filename.endswith("/"):
            continue
        if info.flag_bits & 0x1:
            raise Refused("zip_encrypted")
        total += info.file_size
        if info.file_size > limits.max_unzipped_bytes or total > limits.max_unzipped_bytes:
            raise Refused("zip_too_large", member=info.filename, size=size_text(max(info.file_size, total)),
                          limit=size_text(limits.max_unzipped_bytes))
        _check_ratio(info.filename, info.file_size, info.compress_size, limits)
    if archive is not None and total > limits.max_unzipped_bytes:
        raise Refused("zip_too_large", member=archive, size=size_text(total),
                      limit=size_text(limits.max_unzipped_bytes))
    if required is not None and required not in members:
        raise Refused(not_kind, **(not_params or {}))
    return zf, members


def _check_ratio(name: str, inflated: int, compressed: int, limits: Limits) -> None:
    if inflated > limits.zip_ratio_grace_bytes and inflated > limits.max_zip_ratio * max(compressed, 1):
        raise Refused("zip_ratio", member=name, ratio=inflated // max(compressed, 1), limit=limits.max_zip_ratio)


def raw_member(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """The compressed bytes of a member, located from its local header
    (zipfile reads a member only by inflating it)."""
    start = info.header_offset
    if data[start:start + 4] != b"PK\x03\x04":
        raise Refused("zip_damaged", member=info.filename)
    name_len, extra_len = struct.unpack("<HH", data[start + 26:start + 30])
    begin = start + 30 + name_len + extra_len
    raw = data[begin:begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise Refused("zip_damaged", member=info.filename)
    return raw


def raw_chunks(data, info: zipfile.ZipInfo):
    """A member's compressed bytes, CHUNK by CHUNK: sliced from `data`
    (bytes), or read from it when it is a file (an upload on disk)."""
    if not hasattr(data, "seek"):
        raw = raw_member(data, info)
        yield from (raw[i:i + CHUNK] for i in range(0, len(raw), CHUNK))
        return
    data.seek(info.header_offset)
    head = data.read(30)
    if len(head) != 30 or head[:4] != b"PK\x03\x04":
        raise Refused("zip_damaged", member=info.filename)
    name_len, extra_len = struct.unpack("<HH", head[26:30])
    data.seek(info.header_offset + 30 + name_len + extra_len)
    left = info.compress_size
    while left:
        piece = data.read(min(CHUNK, left))
        if not piece:
            raise Refused("zip_damaged", member=info.filename)
        left -= len(piece)
        yield piece


def inflate(data, info: zipfile.ZipInfo, limits: Limits, budget: list[int]):
    """Yield a member's bytes chunk by chunk, counting what really comes out.

    `data`: the zip's bytes, or the zip as a file (read chunk by chunk).
    `budget` holds the bytes still allowed for the whole workbook. The real
    size must match the declared one (so calamine, which reads the same
    member, gets exactly what was checked) and so must the CRC.
    """
    if info.compress_type == zipfile.ZIP_STORED:
        decomp = None
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        decomp = zlib.decompressobj(-15)
    else:
        raise Refused("zip_method", member=info.filename, method=info.compress_type)
    chunks = raw_chunks(data, info)
    out_size, crc = 0, 0

    def account(piece: bytes) -> None:
        nonlocal out_size, crc
        out_size += len(piece)
        crc = zlib.crc32(piece, crc)
        if out_size > info.file_size:
            raise Refused("zip_mismatch", member=info.filename)
        if out_size > budget[0]:
            raise Refused("zip_too_large", member=info.filename, size=f"> {size_text(out_size)}",
                          limit=size_text(limits.max_unzipped_bytes))
        _check_ratio(info.filename, out_size, info.compress_size, limits)

    try:
        if decomp is None:
            for piece in chunks:
                account(piece)
                yield piece
        else:
            for pending in chunks:
                while not decomp.eof:
                    piece = decomp.decompress(pending, CHUNK)
                    pending = decomp.unconsumed_tail
                    if piece:
                        account(piece)
                        yield piece
                    elif not pending:
                        break   # this chunk's input used up: the next one
                if decomp.eof:
                    break
            if not decomp.eof:
                raise Refused("zip_damaged", member=info.filename)   # input exhausted before the stream's end
    except zlib.error:
        raise Refused("zip_damaged", member=info.filename) from None
    if out_size != info.file_size or (crc & 0xFFFFFFFF) != info.CRC:
        raise Refused("zip_mismatch", member=info.filename)
    budget[0] -= out_size


# -- the writer's package ---------------------------------------------------------

class Package:
    """A workbook's zip members: untouched ones copied compressed as they are,
    replaced or added ones deflated, all stamped with one time."""

    def __init__(self, data: bytes):
        self.data = data
        zf = zipfile.ZipFile(io.BytesIO(data))
        self.infos = {i.filename: i for i in zf.infolist()}
        self.order = list(self.infos)
        self.zf = zf
        self.new: dict[str, bytes] = {}
        self.dropped: set[str] = set()

    def __contains__(self, name: str) -> bool:
        return name not in self.dropped and (name in self.new or name in self.infos)

    def read(self, name: str) -> bytes:
        """A part of the package, as it now is."""
        if name in self.new:
            return self.new[name]
        return self.zf.read(name)

    def head(self, name: str, size: int = 1 << 16) -> bytes:
        """The first `size` bytes of a member, inflating no more than that."""
        if name in self.new:
            return self.new[name][:size]
        info = self.infos[name]
        raw = self._raw(info)
        if info.compress_type == zipfile.ZIP_STORED:
            return raw[:size]
        return zlib.decompressobj(-15).decompress(raw, size)

    def write(self, name: str, data: bytes) -> None:
        """Replace or add a part."""
        self.dropped.discard(name)
        self.new[name] = data
        if name not in self.infos and name not in self.order:
            self.order.append(name)

    def drop(self, name: str) -> None:
        """Leave a part out of the saved package."""
        self.dropped.add(name)
        self.new.pop(name, None)

    def _raw(self, info: zipfile.ZipInfo) -> bytes:
        try:
            return raw_member(self.data, info)
        except Refused:
            raise NotPlainZip(f"damaged member {info.filename}") from None

    def save(self, date_time: tuple[int, int, int, int, int, int]) -> bytes:
        """The package as zip bytes, every entry stamped `date_time`."""
        out = io.BytesIO()
        central = []
        dos_time = (date_time[3] << 11) | (date_time[4] << 5) | (date_time[5] // 2)
        dos_date = ((date_time[0] - 1980) << 9) | (date_time[1] << 5) | date_time[2]
        for name in self.order:
            if name in self.dropped:
                continue
            if name in self.new:
                plain = self.new[name]
                comp = zlib.compressobj(6, zlib.DEFLATED, -15)
                raw = comp.compress(plain) + comp.flush()
                method, crc, size = zipfile.ZIP_DEFLATED, zlib.crc32(plain), len(plain)
            else:
                info = self.infos[name]
                if info.flag_bits & 0x1 or info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
                    raise NotPlainZip(f"member {name} is encrypted or compressed oddly")
                raw, method, crc, size = self._raw(info), info.compress_type, info.CRC, info.file_size
            encoded = name.encode("utf-8")
            flags = 0x800 if not name.isascii() else 0
            if max(len(raw), size, out.tell()) >= 0xFFFFFFFF:
                raise NotPlainZip("workbook too large for a plain zip")
            offset = out.tell()
            out.write(struct.pack("<4sHHHHHIIIHH", b"PK\x03\x04", 20, flags, method, dos_time, dos_date,
                                  crc, len(raw), size, len(encoded), 0))
            out.write(encoded)
            out.write(raw)
            central.append(struct.pack("<4sHHHHHHIIIHHHHHII", b"PK\x01\x02", 20, 20, flags, method, dos_time,
                                       dos_date, crc, len(raw), size, len(encoded), 0, 0, 0, 0,
                                       0o644 << 16, offset) + encoded)
        start = out.tell()
        for entry in central:
            out.write(entry)
        out.write(struct.pack("<4sHHHHIIH", b"PK\x05\x06", 0, 0, len(central), len(central),
                              out.tell() - start, start, 0))
        return out.getvalue()


def restamp(workbook: bytes, moment: datetime) -> bytes:
    """The workbook's zip with every entry and docProps/core.xml stamped
    `moment` (naive UTC).

    Members are copied compressed as they are and only core.xml is rewritten,
    so re-stamping a workbook gives the bytes a fresh render at that time
    gives, whatever compressed its other members."""
    iso = moment.strftime("%Y-%m-%dT%H:%M:%SZ").encode()
    # Zip timestamps cannot go below 1980.
    zip_time = (max(moment.year, 1980), moment.month, moment.day, moment.hour, moment.minute, moment.second)
    pkg = Package(workbook)
    if "docProps/core.xml" in pkg:
        pkg.write("docProps/core.xml", re.sub(rb"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z", iso,
                                              pkg.read("docProps/core.xml")))
    return pkg.save(zip_time)
