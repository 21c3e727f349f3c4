"""The checks, one module per article group. The list below is the manifest:
a test asserts that every module of this folder is in it."""

from auditor.checks import art63, art64, art66, fmt, tickets

MODULES = (fmt, art63, art64, art66, tickets)
