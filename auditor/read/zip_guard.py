"""A workbook's zip, checked before anything inflates it in full.

The zip directory is checked (member count, duplicate names, encryption,
compression method, declared sizes and ratio); a member is inflated here
chunk by chunk, counting the real bytes against the limits and checking the
size and CRC it declares, so calamine, which reads the same member, gets
exactly what was checked. Shared by every zip container (.xlsx, .xlsb, .ods).
"""

from __future__ import annotations

import io
import struct
import zipfile
import zlib

from auditor.limits import Limits, size_text
from auditor.read.refused import Refused

CHUNK = 1024 * 1024


def open_zip(data: bytes, limits: Limits, required: str = "xl/workbook.xml",
             not_kind: str = "not_xlsx") -> tuple[zipfile.ZipFile, dict[str, zipfile.ZipInfo]]:
    """Open a workbook's zip within the limits, refusing what is not one (EC00-01 of kind `not_kind`)."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
        infos = zf.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, OSError, ValueError, EOFError, struct.error,
            NotImplementedError, UnicodeDecodeError):
        raise Refused(not_kind) from None
    if len(infos) > limits.max_zip_members:
        raise Refused("zip_members", count=len(infos), limit=limits.max_zip_members)
    members: dict[str, zipfile.ZipInfo] = {}
    total = 0
    for info in infos:
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
    if required not in members:
        raise Refused(not_kind)
    return zf, members


def _check_ratio(name: str, inflated: int, compressed: int, limits: Limits) -> None:
    if inflated > limits.zip_ratio_grace_bytes and inflated > limits.max_zip_ratio * max(compressed, 1):
        raise Refused("zip_ratio", member=name, ratio=inflated // max(compressed, 1), limit=limits.max_zip_ratio)


def _raw_member(data: bytes, info: zipfile.ZipInfo) -> bytes:
    """The compressed bytes of a member, located from its local header."""
    start = info.header_offset
    if data[start:start + 4] != b"PK\x03\x04":
        raise Refused("zip_damaged", member=info.filename)
    name_len, extra_len = struct.unpack("<HH", data[start + 26:start + 30])
    begin = start + 30 + name_len + extra_len
    raw = data[begin:begin + info.compress_size]
    if len(raw) != info.compress_size:
        raise Refused("zip_damaged", member=info.filename)
    return raw


def inflate(data: bytes, info: zipfile.ZipInfo, limits: Limits, budget: list[int]):
    """Yield a member's bytes chunk by chunk, counting what really comes out.

    `budget` holds the bytes still allowed for the whole workbook. The real
    size must match the declared one (so calamine, which reads the same
    member, gets exactly what was checked) and so must the CRC.
    """
    raw = _raw_member(data, info)
    if info.compress_type == zipfile.ZIP_STORED:
        chunks = (raw[i:i + CHUNK] for i in range(0, len(raw), CHUNK))
        decomp = None
    elif info.compress_type == zipfile.ZIP_DEFLATED:
        decomp = zlib.decompressobj(-15)
        chunks = None
    else:
        raise Refused("zip_method", member=info.filename, method=info.compress_type)
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
            pending = raw
            while not decomp.eof:
                piece = decomp.decompress(pending, CHUNK)
                pending = decomp.unconsumed_tail
                if piece:
                    account(piece)
                    yield piece
                elif not pending:
                    break   # input exhausted before the end of the deflate stream
            if not decomp.eof:
                raise Refused("zip_damaged", member=info.filename)
    except zlib.error:
        raise Refused("zip_damaged", member=info.filename) from None
    if out_size != info.file_size or (crc & 0xFFFFFFFF) != info.CRC:
        raise Refused("zip_mismatch", member=info.filename)
    budget[0] -= out_size
