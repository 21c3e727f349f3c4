"""The only money code: parse text to integer cents, levy rounding, display.

No float ever enters this module's arithmetic: amounts are parsed from text
(the readers turn Excel numbers into text at Excel's 15-digit precision first)
and the levy is computed with integer division.
"""

from __future__ import annotations

import re
import sys
from fractions import Fraction

# numpy, pandas and Arrow are imported by the functions over columns that use
# them: the outputs (format_cents) and the catalogue (Levy) need none of them,
# and a night whose audits all come from the cache never imports them.


# Thousands separators allowed by the format: space, no-break space, and the
# narrow no-break space (202F) that French locales print.
_SEP = " \u00a0\u202f"
_AMOUNT = re.compile(
    rf"^(?P<sign>[+-]?)(?P<int>\d{{1,3}}(?:[{_SEP}]\d{{3}})+|\d+)(?:[.,](?P<frac>\d{{1,2}}))?$",
    re.ASCII,  # digits are 0-9 only, as in the RE2 kernels the series parser uses
)
_EURO = re.compile(rf"[{_SEP}]*€$")
_MAX_INT_DIGITS = 12  # a billion euros is already absurd for one stake


class AmountError(ValueError):
    """The text is not an amount the carnet format allows."""


def parse_cents(text: str) -> int:
    """Parse one amount written as the carnet format allows into cents.

    >>> parse_cents("1 234,50 €")
    123450
    """
    s = _EURO.sub("", str(text).strip()).strip()
    m = _AMOUNT.match(s)
    if not m:
        raise AmountError(f"not an amount with at most 2 decimals: {text!r}")
    digits = re.sub(f"[{_SEP}]", "", m["int"])
    if len(digits.lstrip("0")) > _MAX_INT_DIGITS:
        raise AmountError(f"amount out of range: {text!r}")
    cents = int(digits) * 100 + int((m["frac"] or "0").ljust(2, "0"))
    return -cents if m["sign"] == "-" else cents


def arrow_strings(series: pd.Series) -> pa.Array:
    """A text column as one Arrow string array (no copy when it is Arrow-backed already)."""
    import pandas as pd
    import pyarrow as pa

    arr = pa.array(series.astype(pd.StringDtype("pyarrow")).array)
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    return arr.cast(pa.string())


def string_array(arr) -> pa.StringArray:
    """One Arrow `string` array (chunks combined, large strings narrowed)."""
    import pyarrow as pa

    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    return arr if arr.type == pa.string() else arr.cast(pa.string())


def string_buffers(arr: pa.StringArray) -> tuple[np.ndarray, np.ndarray]:
    """The offsets (n + 1, into the data buffer) and the data bytes of an
    Arrow `string` array, as read-only numpy views (no copy)."""
    import numpy as np

    _, offsets, data = arr.buffers()
    if offsets is None:   # an empty array may have no buffers
        return np.zeros(len(arr) + 1, dtype=np.int32), np.zeros(0, dtype=np.uint8)
    offsets = np.frombuffer(offsets, dtype=np.int32, count=len(arr) + 1, offset=arr.offset * 4)
    data = np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)
    return offsets, data


def plain_cents(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """Cents of the cells written exactly `D,DD`, `D.DD` or `D` (ASCII digits,
    1 to 12 of them before the separator, no space), in one pass over the
    Arrow buffers; 0 and False for every other cell (null, empty, spaced,
    signed, grouped…), which the full grammar reads.

    The separator is overwritten with a `0` in a copy of the bytes, so one
    cast reads `12,34` as 12034 = head·1000 + tail: cents = v − 900·(v // 1000)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = string_array(arr)
    n = len(arr)
    if n == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=bool)
    offsets, data = string_buffers(arr)
    if data.size == 0:   # every cell empty
        return np.zeros(n, dtype=np.int64), np.zeros(n, dtype=bool)
    lengths = np.diff(offsets)
    ends = offsets[1:]
    decimal = (lengths >= 4) & (lengths <= _MAX_INT_DIGITS + 3)
    at = ends[decimal] - 3
    mark = data[at]
    sep = (mark == 44) | (mark == 46)   # `,` or `.`
    decimal[decimal] = sep
    at = at[sep]
    digits, buffer = data, arr.buffers()[2]
    if len(at):
        digits = data.copy()
        digits[at] = 48
        buffer = pa.py_buffer(digits)
    # The validity bitmap goes with it: a null cell may still hold bytes (pc.if_else(mask, None, arr)
    # keeps the masked cells' text), and must stay null, not be read as an amount.
    text = pa.StringArray.from_buffers(n, arr.buffers()[1], buffer, arr.buffers()[0], offset=arr.offset)
    shape = decimal | ((lengths >= 1) & (lengths <= _MAX_INT_DIGITS))
    v, ok = digits_where(text, offsets, digits, shape, arr.null_count)
    if decimal.all():
        return v - 900 * (v // 1000), ok
    return np.where(decimal, v - 900 * (v // 1000), v * 100), ok


def digits_where(text: pa.StringArray, offsets: np.ndarray, data: np.ndarray, shape: np.ndarray,
                 nulls: int) -> tuple[np.ndarray, np.ndarray]:
    """(int64 value, ok) of each cell of `text` (offsets and data bytes given)
    that is plain ASCII digits of a length `shape` allows (at most 15), 0 and
    False elsewhere. The usual column, every byte a digit, is cast at once."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if not nulls and shape.all() and offsets[-1] > offsets[0]:
        cells = data[offsets[0]:offsets[-1]]
        if cells.min() >= 48 and cells.max() <= 57:
            return pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False, writable=True), np.ones(len(text), bool)
    ok = pc.fill_null(pc.ascii_is_decimal(text), False).to_numpy(zero_copy_only=False) & shape
    if nulls:
        ok &= pc.is_valid(text).to_numpy(zero_copy_only=False)
    return cast_digits(text, ok), ok


def cast_digits(text: pa.Array, ok: np.ndarray) -> np.ndarray:
    """int64 of the cells where `ok` (each plain ASCII digits, at most 15), 0 elsewhere."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    if ok.all():
        return pc.cast(text, pa.int64()).to_numpy(zero_copy_only=False, writable=True)
    v = np.zeros(len(text), dtype=np.int64)
    where = np.flatnonzero(ok)
    if len(where):
        v[where] = pc.cast(text.take(pa.array(where)), pa.int64()).to_numpy()
    return v


def parse_cents_series(text: pd.Series) -> tuple[pd.Series, pd.Series]:
    """Vectorised parse_cents over a text column (Arrow kernels, no Python loop).

    Returns (cents as Int64 with <NA> where empty or bad, bad mask). Empty
    cells are <NA> but not bad: whether they may be empty is the schema's call.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.compute as pc

    arr = pc.utf8_trim_whitespace(arrow_strings(text))
    arr = pc.if_else(pc.equal(arr, ""), None, arr)
    cents, ok = cents_from_text(arr)
    out = pd.Series(cents.to_pandas(types_mapper={pa.int64(): pd.Int64Dtype()}.get), index=text.index)
    bad = pc.and_(pc.is_valid(arr), pc.invert(ok)).to_numpy(zero_copy_only=False)
    return out.astype("Int64"), pd.Series(bad, index=text.index, dtype=bool)


def cents_from_text(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Cents of each text cell (null where null or not an amount) and whether
    the cell is an amount (False where null).

    Most cells are written the plain way (`12,50`, `12.50`, `12`): those are
    read from the Arrow buffers without a regex (plain_cents); only the
    others go through the full grammar (a superset, so a clean column never
    pays for the regex).
    """
    return plain_then_full(arr, plain_cents, _grammar_cents)


def plain_then_full(arr: pa.Array, plain, full) -> tuple[pa.Array, pa.Array]:
    """Values of each text cell (null where null or refused) and whether it was
    read: `plain(arr)` (numpy values and mask) for every cell, then `full`
    (Arrow values and mask) for the non-null cells the plain reading refused."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    values, ok = plain(arr)
    rest = ~ok
    if arr.null_count:
        rest &= pc.is_valid(arr).to_numpy(zero_copy_only=False)
    if rest.any():
        idx = np.flatnonzero(rest)
        slow, slow_ok = full(pc.take(arr, pa.array(idx)))
        values[idx] = pc.fill_null(slow, 0).to_numpy()
        ok[idx] = slow_ok.to_numpy(zero_copy_only=False)
    return pa.array(values, type=pa.int64(), mask=~ok), pa.array(ok, type=pa.bool_())


def _grammar_cents(arr: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The full grammar of parse_cents (separators, sign, euro sign) with RE2 kernels."""
    import pyarrow as pa
    import pyarrow.compute as pc

    s = pc.replace_substring_regex(pc.utf8_trim_whitespace(arr), _EURO.pattern, "")
    s = pc.utf8_trim_whitespace(s)
    parts = pc.extract_regex(s, _AMOUNT.pattern)
    digits = pc.replace_substring_regex(parts.field("int"), f"[{_SEP}]", "")
    significant = pc.utf8_length(pc.utf8_ltrim(digits, "0"))
    ok = pc.and_kleene(pc.is_valid(parts), pc.less_equal(significant, _MAX_INT_DIGITS))
    ok = pc.fill_null(ok, False)
    digits = pc.if_else(ok, digits, None)
    frac = pc.if_else(ok, pc.utf8_rpad(parts.field("frac"), 2, "0"), None)
    cents = pc.add(pc.multiply(pc.cast(digits, pa.int64()), 100), pc.cast(frac, pa.int64()))
    negative = pc.fill_null(pc.equal(parts.field("sign"), "-"), False)
    return pc.if_else(negative, pc.negate(cents), cents), ok


class Levy:
    """L(x) = 5 % of x rounded to the nearest 0.10 €, ties per the profile.

    With rate p/q and step s cents, the levy in steps is x·p / (q·s); the tie is
    a remainder of exactly half the divisor.
    """

    def __init__(self, rate: str, step_cents: int, tie_rounding: str):
        if tie_rounding not in ("up", "down", "either"):
            raise ValueError(f"tie_rounding must be up, down or either, not {tie_rounding!r}")
        fr = Fraction(rate)
        self.num, self.den = fr.numerator, fr.denominator
        self.step = int(step_cents)
        self.tie = tie_rounding

    def bounds(self, x: int) -> tuple[int, int]:
        """Lowest and highest accepted levy in cents (equal unless a tie and `either`)."""
        n, d = x * self.num, self.den * self.step
        q, r = divmod(n, d)
        if 2 * r < d:
            lo = hi = q
        elif 2 * r > d:
            lo = hi = q + 1
        else:
            lo, hi = {"up": (q + 1, q + 1), "down": (q, q), "either": (q, q + 1)}[self.tie]
        return lo * self.step, hi * self.step

    def __call__(self, x: int) -> int:
        """The expected levy (for `either`, the upper neighbour, as shown to inspectors)."""
        return self.bounds(x)[1]

    def bounds_series(self, x: pd.Series) -> tuple[pd.Series, pd.Series]:
        """bounds() over a column (Int64; <NA> stays <NA>), in numpy int64."""
        import numpy as np
        import pandas as pd

        x = x.astype("Int64")
        mask = x.isna().to_numpy()
        lo, hi = self.bounds_array(x.to_numpy(dtype=np.int64, na_value=0))
        return (pd.Series(pd.arrays.IntegerArray(lo, mask.copy()), index=x.index),
                pd.Series(pd.arrays.IntegerArray(hi, mask.copy()), index=x.index))

    def bounds_array(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """bounds() over an int64 array of cents (every value known), integers only."""
        import numpy as np

        n = x * self.num
        d = self.den * self.step
        q, r = np.divmod(n, d)
        below, tie = 2 * r < d, 2 * r == d
        lo = np.where(below | tie, q, q + 1)
        hi = np.where(below, q, q + 1)
        if self.tie == "up":
            lo = np.where(tie, q + 1, lo)
        elif self.tie == "down":
            hi = np.where(tie, q, hi)
        return lo * self.step, hi * self.step


def accepted(recorded: pd.Series, lo: pd.Series, hi: pd.Series, step: int) -> pd.Series:
    """Recorded levy within [lo, hi] on the step grid (several components may each tie)."""
    return (recorded >= lo) & (recorded <= hi) & ((recorded - lo) % step == 0)


def format_cents(cents: int | None, lang: str = "fr") -> str:
    """How money looks to a person: `1 234,50 €` in French, `€1,234.50` in English."""
    if cents is None or _is_na(cents):
        return ""
    cents = int(cents)
    sign = "-" if cents < 0 else ""
    euros, c = divmod(abs(cents), 100)
    if lang == "en":
        return f"{sign}€{euros:,}.{c:02d}"
    grouped = f"{euros:,}".replace(",", "\u202f")
    return f"{sign}{grouped},{c:02d}\u00a0€"


def _is_na(value) -> bool:
    """Whether `value` is pandas' missing value (without importing pandas for that)."""
    pd = sys.modules.get("pandas")
    return pd is not None and value is pd.NA


def format_plain(cents: int) -> str:
    """Language-neutral amount for machine fields (`12.50`)."""
    cents = int(cents)
    sign = "-" if cents < 0 else ""
    euros, c = divmod(abs(cents), 100)
    return f"{sign}{euros}.{c:02d}"
