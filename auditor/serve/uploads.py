"""Uploaded files → carnets on disk, in the run's private folder.

An uploaded file's name is only ever *compared*: with the workbook suffixes
the reader knows, with `.csv` and `.zip`, and (for CSV files) with the carnet
format's table names. Every path written is built from our own words:
`carnet-3.xlsx`, `carnet-4/coups.csv`. The name the user gave is kept as the
carnet's label in the report, never as a file name.

A zip holds a CSV folder: its members are checked (count, names, sizes,
compression ratio, CRC) with the reader's limits and inflated chunk by chunk
through `auditor.zippkg` (the reader's own guarded open and `inflate`); an archive that fails any check is a
carnet that cannot be read (EC00-01), and nothing of it is written.

Nothing uploaded is ever held whole in memory: `UploadParser` writes each
uploaded file to its own file in the private folder's spool as the request
streams in (refused the moment it passes the limits), `stage` moves those
files into place (a rename on the same disk), and a zip is read from its
file and each member inflated chunk by chunk into its own file.
"""

from __future__ import annotations

import functools
import hashlib
import io
import os
import re
import shutil
import tempfile
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from auditor.limits import Limits, size_text
from auditor.read import WORKBOOK_SUFFIXES, canonical_name
from auditor.read.raw import ReadProblem
from auditor.serve.labels import page_label
from auditor.zippkg import Refused, inflate, open_zip

CHUNK = 1024 * 1024


# -- the request, streamed to disk --------------------------------------------------------

class UploadTooLarge(Exception):
    """An uploaded file (name given) or the whole upload (no name) past its limit."""

    def __init__(self, name: str, limit: int):
        super().__init__(name)
        self.name, self.limit = name, limit


async def limited(stream: AsyncIterator[bytes], limit: int):
    """The request body's chunks, refused (UploadTooLarge) past `limit` bytes in all."""
    seen = 0
    async for chunk in stream:
        seen += len(chunk)
        if seen > limit:
            raise UploadTooLarge("", limit)
        yield chunk


@functools.cache
def _parser_class():
    from starlette.formparsers import MultiPartParser

    class UploadParser(MultiPartParser):
        """Starlette's multipart parser, with every uploaded file written as
        it comes to a file of its own in the private folder's spool (never
        the system's temporary folder, never whole in memory) and refused as
        soon as it passes the reader's file-size limit, or the body its
        total. What a refused or broken request wrote is removed."""

        def __init__(self, headers, stream, *, spool_dir: Path, max_file_bytes: int, **kwargs):
            super().__init__(headers, stream, **kwargs)
            self.spool_dir = spool_dir
            self.max_file_bytes = max_file_bytes
            self._file_bytes = 0
            self._paths: dict[int, Path] = {}

        def on_headers_finished(self) -> None:
            super().on_headers_finished()
            upload = self._current_part.file
            if upload is not None:
                upload.file.close()
                fd, name = tempfile.mkstemp(prefix="upload-", dir=self.spool_dir)
                on_disk = os.fdopen(fd, "w+b")
                self._files_to_close_on_error[-1] = on_disk
                self._paths[id(upload)] = Path(name)
                upload.file = on_disk
                self._file_bytes = 0

        def on_part_data(self, data: bytes, start: int, end: int) -> None:
            upload = self._current_part.file
            if upload is not None:
                self._file_bytes += end - start
                if self._file_bytes > self.max_file_bytes:
                    raise UploadTooLarge(upload.filename or "", self.max_file_bytes)
            super().on_part_data(data, start, end)

        async def parse(self):
            try:
                return await super().parse()
            except BaseException:
                self.discard()
                raise

        def path_of(self, upload) -> Path:
            """Where an uploaded file of this request was written."""
            return self._paths[id(upload)]

        def discard(self, keep=()) -> None:
            """Remove every file this request wrote, but those in `keep`
            (handed on to `stage`, which consumes them)."""
            for path in self._paths.values():
                if path not in keep:
                    path.unlink(missing_ok=True)

    return UploadParser


def __getattr__(name: str):
    # The parser needs starlette (the `web` extra); the rest of this module does not.
    if name == "UploadParser":
        return _parser_class()
    raise AttributeError(name)


# -- the carnets made of it ----------------------------------------------------------------

# An uploaded file: its content, or (from the page) the file it was written to,
# which `stage` consumes: moved into place, or removed.
Content = bytes | Path


@dataclass
class Staged:
    """One carnet made from uploaded files."""

    shown: str                          # what the user sees (the uploaded name)
    path: Path | None = None            # where it was written (None: refused)
    problem: ReadProblem | None = None  # why it cannot be read (refused archive)
    sha256: str = ""                    # of the refused archive


@dataclass
class Staging:
    """The carnets made from one upload, and the files that were no part of one."""

    carnets: list[Staged] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)   # uploaded names that are no part of a carnet


def base_name(uploaded: str) -> str:
    """The last component of an uploaded name (browsers may send a relative
    path, Windows ones with backslashes); for comparing and showing only."""
    return re.split(r"[\\/]", uploaded or "")[-1]


def folder_of(uploaded: str) -> str:
    """The folder part of an uploaded name (`a/b/coups.csv` → `a/b`), for grouping only."""
    parts = [p for p in re.split(r"[\\/]", uploaded or "") if p]
    return "/".join(parts[:-1])


def suffix(uploaded: str) -> str:
    """The uploaded name's suffix, lower case (`.xlsx`), for comparing only."""
    name = base_name(uploaded)
    return name[name.rfind("."):].lower() if "." in name else ""


def stage(files: list[tuple[str, Content]], folder: Path, tables: frozenset[str], limits: Limits,
          lang: str = "fr") -> Staging:
    """Lay the uploaded (name, content) pairs out as carnets under `folder`;
    a content given as a file is consumed (moved into place, or removed).

    Each workbook is a carnet; the CSV files given together form one carnet
    per folder they came from; each zip is a CSV folder (one carnet per folder
    inside it that holds CSV tables).
    """
    staging = Staging()
    counter = iter(range(1, 1_000_000))
    csv_groups: dict[str, dict[str, Content]] = {}
    try:
        for name, data in files:
            kind = suffix(name)
            if kind in WORKBOOK_SUFFIXES:
                path = folder / f"carnet-{next(counter)}{kind}"
                _put(data, path)
                staging.carnets.append(Staged(base_name(name), path))
            elif kind == ".csv":
                table = canonical_name(base_name(name)[:-4])
                group = csv_groups.setdefault(folder_of(name), {})
                if table in tables and table not in group:
                    group[table] = data
                else:
                    staging.ignored.append(name)
            elif kind == ".zip":
                staging.carnets.extend(_stage_zip(base_name(name), data, folder, counter, tables, limits, staging,
                                                  lang))
            else:
                staging.ignored.append(name)
        for where, group in csv_groups.items():
            if group:
                staging.carnets.append(_write_csv_carnet(where or "CSV", group, folder, counter))
    finally:
        for _, data in files:   # what was not moved into place: ignored, or a zip read
            _discard(data)
    return staging


def _put(data: Content, target: Path) -> None:
    """Content into `target`: bytes written; a file moved (a rename on the
    same disk, else copied chunk by chunk and removed)."""
    if isinstance(data, Path):
        shutil.move(os.fspath(data), os.fspath(target))
    else:
        target.write_bytes(data)


def _discard(data: Content) -> None:
    if isinstance(data, Path):
        data.unlink(missing_ok=True)


def _write_csv_carnet(shown: str, group: dict[str, Content], folder: Path, counter) -> Staged:
    target = folder / f"carnet-{next(counter)}"
    target.mkdir()
    for table, data in sorted(group.items()):
        _put(data, target / f"{table}.csv")
    return Staged(shown, target)


# Parts of a member name that would leave the folder it is unpacked into, or
# name a device: `..`, an absolute path, a drive (`C:`), a NUL.
def unsafe_member(name: str) -> bool:
    """A zip member name that would leave its folder or name a device."""
    if not name or "\0" in name or name.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", name):
        return True
    return any(part == ".." for part in re.split(r"[\\/]", name))


def _check_name(name: str) -> None:
    if unsafe_member(name):
        raise Refused("unreadable", reason="unsafe_name", member=name)


def _stage_zip(shown: str, data: Content, folder: Path, counter, tables: frozenset[str], limits: Limits,
               staging: Staging, lang: str) -> list[Staged]:
    scratch = Path(tempfile.mkdtemp(prefix=".zip-", dir=folder))   # the members, until checked
    try:
        with (open(data, "rb") if isinstance(data, Path) else io.BytesIO(data)) as archive:
            try:
                groups = _read_zip(archive, tables, limits, staging, shown, scratch)
            except Refused as exc:
                params = dict(exc.params)
                if exc.kind == "unreadable":   # our own reasons, in the report's language
                    params = {"reason": page_label(f"reasons.{params['reason']}", lang, **params)}
                return [Staged(shown, problem=ReadProblem("EC00-01", exc.kind, params=params),
                               sha256=_sha256(archive))]
            if not groups:
                return [Staged(shown, problem=ReadProblem("EC00-01", "missing_table", params={"table": "coups"}),
                               sha256=_sha256(archive))]
        return [_write_csv_carnet(f"{shown}/{where}" if where else shown, group, folder, counter)
                for where, group in sorted(groups.items())]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def _sha256(archive) -> str:
    archive.seek(0)
    digest = hashlib.sha256()
    for piece in iter(lambda: archive.read(CHUNK), b""):
        digest.update(piece)
    return digest.hexdigest()


def _read_zip(archive, tables: frozenset[str], limits: Limits, staging: Staging, shown: str,
              scratch: Path) -> dict[str, dict[str, Path]]:
    """The CSV tables of an archive by folder, each inflated into a file of
    `scratch`, every check passed; else Refused."""
    zf, _ = open_zip(archive, limits, required=None, not_kind="unreadable", not_params={"reason": "not_zip"},
                     check_name=_check_name, archive=shown)   # every name is checked before anything is inflated
    budget = [limits.max_unzipped_bytes]
    groups: dict[str, dict[str, Path]] = {}
    for n, info in enumerate(zf.infolist()):
        if info.is_dir():
            continue
        name = PurePosixPath(info.filename.replace("\\", "/"))
        table = canonical_name(name.stem) if name.suffix.lower() == ".csv" else None
        group = groups.setdefault(name.parent.as_posix().strip("."), {})
        if table not in tables or table in group or name.name.startswith(("._", "~$")):
            staging.ignored.append(f"{shown}/{info.filename}")
            continue
        if info.file_size > limits.max_file_bytes:
            raise Refused("file_too_large", file=info.filename, size=size_text(info.file_size),
                          limit=size_text(limits.max_file_bytes))
        target = scratch / f"member-{n}"
        with open(target, "wb") as out:
            for piece in inflate(archive, info, limits, budget):
                out.write(piece)
        group[table] = target
    return {where: g for where, g in groups.items() if g}
