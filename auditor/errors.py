"""Errors that end a command with exit status 2 (usage), shown as one line."""


class UsageError(Exception):
    pass


class WriteError(UsageError):
    """An output could not be written (disk full, permission lost): the run
    stops there, with one message and exit status 2."""
