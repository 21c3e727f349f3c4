"""The outputs' JSON text (findings.json, summary.json, changes.json):
`json.dumps(value, ensure_ascii=False, indent=2)` byte for byte, made faster.

With `indent`, the standard library leaves its C encoder for a chain of
Python generators (one per nesting level, for every value). A night's
summary.json of 1,000 carnets holds some 2 million values: 0.49 s there
against 0.29 s here. Strings still go through the standard library's C
escaping; everything else is written as `json.dumps` writes it.

The pieces are joined as they pile up, between the values of the outer
containers (a carnet's row of summary.json), not all at the end: a night's
summary of 1,000 carnets is some 300,000 pieces, 15 MB of small strings,
against 3.5 MB of text.
"""

from __future__ import annotations

from json.encoder import INFINITY, encode_basestring

_STEP = "  "
# Pieces joined into one text once this many pile up (between two values of a
# container near the top: `_SHALLOW`, the indentation of its values).
_JOIN_AT = 4096
_SHALLOW = 3 * len(_STEP)


class Text(str):
    """JSON text already written (by `dumps`, at the depth where it goes):
    written as it is. summary.json lists its findings across carnets under
    two names; they are written once."""


def _float(value: float) -> str:
    if value != value:
        return "NaN"
    if value == INFINITY:
        return "Infinity"
    if value == -INFINITY:
        return "-Infinity"
    return float.__repr__(value)


def _key(key) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, float):
        return _float(key)
    if key is True:
        return "true"
    if key is False:
        return "false"
    if key is None:
        return "null"
    if isinstance(key, int):
        return int.__repr__(key)
    raise TypeError(f"keys must be str, int, float, bool or None, not {key.__class__.__name__}")


def dumps(value, pad: str = "") -> str:
    """`json.dumps(value, ensure_ascii=False, indent=2)`, the same text
    (`pad`: as written inside containers, at that indentation)."""
    parts: list[str] = []
    append = parts.append
    texts: list[str] = []   # the pieces joined so far

    def joined() -> None:
        if len(parts) > _JOIN_AT:
            texts.append("".join(parts))
            parts.clear()

    def write(o, pad: str) -> None:
        if isinstance(o, str):
            append(o if o.__class__ is Text else encode_basestring(o))
        elif o is None:
            append("null")
        elif o is True:
            append("true")
        elif o is False:
            append("false")
        elif isinstance(o, int):
            append(int.__repr__(o))
        elif isinstance(o, float):
            append(_float(o))
        elif isinstance(o, dict):
            if not o:
                append("{}")
                return
            inner = pad + _STEP
            sep = "{\n" + inner
            shallow = len(inner) <= _SHALLOW
            for k, v in o.items():
                append(sep + encode_basestring(_key(k)) + ": ")
                sep = ",\n" + inner
                write(v, inner)
                if shallow:
                    joined()
            append("\n" + pad + "}")
        elif isinstance(o, (list, tuple)):
            if not o:
                append("[]")
                return
            inner = pad + _STEP
            sep = "[\n" + inner
            shallow = len(inner) <= _SHALLOW
            for v in o:
                append(sep)
                sep = ",\n" + inner
                write(v, inner)
                if shallow:
                    joined()
            append("\n" + pad + "]")
        else:
            raise TypeError(f"Object of type {o.__class__.__name__} is not JSON serializable")

    write(value, pad)
    texts.append("".join(parts))
    text = texts[0] if len(texts) == 1 else "".join(texts)
    # `write` refers to itself: this call's closure, and the pieces with it,
    # would live until the collector's next pass. They go now.
    parts.clear()
    texts.clear()
    return text
