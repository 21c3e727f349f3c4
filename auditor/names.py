"""File names as text every output can write (a UTF-8 file, JSON, HTML, a
workbook, the terminal): the model's, so that the readers, the plan, the
messages and `verify` show a name alike."""

from __future__ import annotations


def shown_name(text: str) -> str:
    """A path or file name as the outputs write it. On POSIX a name is bytes:
    one that is not UTF-8 (a file named on Windows, copied from a share in
    Windows-1252) reaches Python as surrogate escapes, which no output can
    write (a UTF-8 file, JSON, HTML, a workbook). Each such byte is read as
    Windows-1252 reads it (`caf\\xe9` shows as `café`), U+FFFD where that
    code page has no character; any other name is kept as it is."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    out = []
    for c in text:
        if "\udc80" <= c <= "\udcff":
            c = bytes([ord(c) - 0xDC00]).decode("cp1252", "replace")
        elif "\ud800" <= c <= "\udfff":
            c = "\ufffd"
        out.append(c)
    return "".join(out)


def code_point(char: str) -> str:
    """A character written as its code point, `<U+202E>`: what the outputs show
    for one they must not or cannot show as it is (the procès-verbal's fonts
    lack it, a page would reorder text around it)."""
    return f"<U+{ord(char):04X}>"
