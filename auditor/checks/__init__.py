"""The checks, one module per article group. The list below is the manifest:
a test asserts that every module of this folder is in it."""

from auditor.checks import (archive, art63, art64, art65, art66, cross_carnet, ec00_format, tickets_amounts,
                            tickets_books, tickets_series)

MODULES = (ec00_format, art63, art64, art65, art66, tickets_amounts, tickets_series, tickets_books, cross_carnet,
           archive)
