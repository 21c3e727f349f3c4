"""Errors that end a command with exit status 2 (usage), shown as one line."""


class UsageError(Exception):
    pass
