"""The prolog of a workbook's XML part, read with defusedxml while the part
is inflated: a DOCTYPE or an entity declaration refuses the workbook
(calamine would not expand entities, but such a part has no business in a
workbook)."""

from __future__ import annotations

import zipfile

from defusedxml import DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden
from defusedxml.ElementTree import DefusedXMLParser

from auditor.limits import Limits
from auditor.zippkg import Refused, inflate


class _RootSeen(Exception):
    pass


class _Prolog:
    """A parser target that stops at the root element, keeping its attributes."""

    def __init__(self):
        self.root: tuple[str, dict] | None = None

    def start(self, tag, attrs):
        self.root = (tag, dict(attrs))
        raise _RootSeen

    def end(self, tag):
        pass

    def data(self, text):
        pass

    def close(self):
        return None


class PrologReader:
    """Feeds a part's first bytes to defusedxml until the root element opens:
    any DOCTYPE or entity declaration comes before it, so nothing later can
    declare one."""

    def __init__(self, member: str):
        self.member = member
        self.target = _Prolog()
        self.parser = DefusedXMLParser(target=self.target, forbid_dtd=True, forbid_entities=True,
                                       forbid_external=True)
        self.done = False
        self.seen = b""

    def feed(self, piece: bytes) -> None:
        """Parse the next piece of the XML, until its root element has been seen."""
        if self.done:
            return
        try:
            self.parser.feed(piece)
        except _RootSeen:
            self.done = True
        except (DTDForbidden, EntitiesForbidden, ExternalReferenceForbidden):
            raise Refused("xml_dtd", member=self.member) from None
        except Exception:
            # Malformed XML: calamine reports it, or ignores a part it does not
            # read; a declaration hidden behind the damage is still refused.
            self.done = True
            head = (self.seen + piece)[:65536].lower()
            if b"<!doctype" in head or b"<!entity" in head:
                raise Refused("xml_dtd", member=self.member) from None
        self.seen = (self.seen + piece)[:65536] if len(self.seen) < 65536 else self.seen

    @property
    def root(self) -> tuple[str, dict] | None:
        """The root element's name and attributes, once seen (else None)."""
        return self.target.root


def _local(tag: str) -> str:
    return tag.rsplit("}", 1)[-1]


def read_part(data: bytes, info: zipfile.ZipInfo, limits: Limits, budget: list[int], keep: bool = True):
    """Inflate one XML part with every check; its bytes, or (keep=False) its root element."""
    prolog = PrologReader(info.filename)
    pieces = []
    for piece in inflate(data, info, limits, budget):
        prolog.feed(piece)
        if keep:
            pieces.append(piece)
    return b"".join(pieces) if keep else prolog.root
