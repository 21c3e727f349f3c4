"""Errors that end a command with exit status 2 (usage), shown as one line."""


class UsageError(Exception):
    """A mistake in how the tool was called: exit status 2 with this message, no traceback."""

    pass
