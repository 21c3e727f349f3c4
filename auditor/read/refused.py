"""Why a workbook, or one of its tables, is refused before calamine sees it."""

from __future__ import annotations


class Refused(Exception):
    """The workbook (table=None) or one of its tables cannot be read safely."""

    def __init__(self, kind: str, **params):
        super().__init__(kind)
        self.kind = kind
        self.params = params
