"""Errors that end a command with exit status 2 (usage), shown as one line."""


class UsageError(Exception):
    """A mistake in how the tool was called: exit status 2 with this message, no traceback."""

    pass


class WriteError(UsageError):
    """An output could not be written (disk full, permission lost): the run
    stops there, with one message and exit status 2."""
