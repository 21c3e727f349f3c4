"""Errors that end a command with exit status 2 (usage), shown as one line."""

from __future__ import annotations


class UsageError(Exception):
    """`UsageError("main.no_such_path", path=p)`: a key of the command line's
    label files (`templates/i18n/cli.<lang>.toml`) and its parameters, so the
    message is shown in the user's language."""

    def __init__(self, key: str, **params):
        super().__init__(key)
        self.key = key
        self.params = params

    def text(self, lang: str) -> str:
        from auditor.i18n import cli_label, cli_labels

        if self.key not in cli_labels(lang):
            return self.key  # not a key: shown as given (tests/test_cli_i18n.py forbids it in our code)
        return cli_label(self.key, lang, **self.params)

    def __str__(self) -> str:
        return self.text("en")
