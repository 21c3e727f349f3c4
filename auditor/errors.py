"""Errors that end a command with exit status 2 (usage), shown as one line,
and the messages the command line prints, in the user's language.

A message is a key of the command line's label files
(`templates/i18n/cli.<lang>.toml`, `section.key`) with its parameters:
`UsageError("main.no_such_path", path=p)`. The command line shows it with
`text(lang)`; anywhere else (a log, a test, the local page) it reads as its
English text, since a `Message` is a `str`.
"""

from __future__ import annotations

from pathlib import PurePath

from auditor.names import shown_name


def _render(key: str, lang: str, params: dict) -> str:
    from auditor.i18n import cli_label, cli_labels

    if key not in cli_labels(lang):
        return key   # not a key: shown as given (tests/test_cli_i18n.py forbids it in our code)
    # A parameter that is itself a message (a reason inside a wider error)
    # speaks the same language as the sentence around it.
    # A path or a name (a carnet's, which may not be UTF-8) as any terminal or log file can take it.
    shown = {name: value.text(lang) if isinstance(value, Message)
             else shown_name(str(value)) if isinstance(value, (str, PurePath)) else value
             for name, value in params.items()}
    return cli_label(key, lang, **shown)


class Message(str):
    """A command-line text by key and parameters: its English text as a `str`,
    any language with `text(lang)`."""

    key: str
    params: dict

    def __new__(cls, key: str, **params):
        """The message `key` (`section.key` of cli.<lang>.toml) with its parameters."""
        self = super().__new__(cls, _render(key, "en", params))
        self.key, self.params = key, params
        return self

    def __getnewargs_ex__(self):
        # Rebuilt from key and parameters when a worker process sends it back.
        return (self.key,), self.params

    def text(self, lang: str) -> str:
        """The message in `lang` (fr or en)."""
        return _render(self.key, lang, self.params)


def text_of(value, lang: str) -> str:
    """`value` shown in `lang`: a Message or an error carrying one is translated,
    anything else is shown as it is."""
    if isinstance(value, BaseException):
        value = value.args[0] if len(value.args) == 1 else str(value)
    return value.text(lang) if isinstance(value, Message) else str(value)


class UsageError(Exception):
    """A mistake in how the tool was called: exit status 2 with this message, no
    traceback. Given as a key of cli.<lang>.toml and its parameters
    (`UsageError("main.no_such_path", path=p)`), or as a ready Message."""

    def __init__(self, key: str | Message, **params):
        """The error whose message is `key` with `params` (see Message)."""
        message = key if isinstance(key, Message) and not params else Message(key, **params)
        super().__init__(message)
        self.message = message

    def text(self, lang: str) -> str:
        """The message in `lang`."""
        return self.message.text(lang)

    def __str__(self) -> str:
        return str.__str__(self.message)

    def __reduce__(self):
        # Pickled (from a worker process) as its message, not as a re-run of __init__ with English text.
        return (type(self), (self.message,))


class WriteError(UsageError):
    """An output could not be written (disk full, permission lost): the run
    stops there, with one message and exit status 2."""


# The system's reasons an inspector meets, in words of the label files
# ([os] of cli.<lang>.toml); the C library's own text is English only.
OS_REASONS = ("ENOENT", "EACCES", "EPERM", "ENOSPC", "EDQUOT", "EROFS", "EEXIST", "ENOTDIR", "EISDIR",
              "ENAMETOOLONG", "EADDRINUSE", "EBUSY", "EMFILE")


def os_reason(exc: OSError):
    """Why an operating-system call failed, as a Message in the user's
    language for the usual reasons, else the system's own text."""
    import errno

    name = errno.errorcode.get(exc.errno or 0)
    if name in OS_REASONS:
        return Message(f"os.{name}")
    return exc.strerror or str(exc)
