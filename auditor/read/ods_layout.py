"""OpenDocument written with layout whitespace, made readable by calamine.

calamine's .ods reader expects a table row to hold nothing but cells: the
indentation and line breaks Gnumeric writes between cells (and any program
that pretty-prints its XML) stop it with "Expecting 'table-cell', found
'Text'", and the file is then refused as of no known format. That
whitespace carries no data (ODF 1.2 §19.385: a cell's text is in its
paragraphs), so the guard removes it between the row, cell and paragraph
tags, never inside a paragraph, and calamine is given that content.xml
(format v1.2: any valid OpenDocument spreadsheet is read).
"""

from __future__ import annotations

import io
import re
import zipfile

# Whitespace after a row or cell start tag, after a cell's end (or a closed
# cell) and after a paragraph's end, up to the next tag.
_LAYOUT = re.compile(rb"(<table:(?:covered-)?table-(?:row|cell)(?=[\s/>])[^>]*>|</table:(?:covered-)?table-cell>"
                     rb"|</text:p>)[ \t\r\n]+(?=<)")


def without_layout_whitespace(content: bytes) -> bytes | None:
    """content.xml without its layout whitespace, or None when it has none."""
    if _LAYOUT.search(content) is None:
        return None
    return _LAYOUT.sub(rb"\1", content)


def with_content(data: bytes, content: bytes) -> bytes:
    """The .ods `data` (a zip the guard checked) with `content.xml` replaced."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as src, zipfile.ZipFile(out, "w") as dst:
        for info in src.infolist():
            body = content if info.filename == "content.xml" else src.read(info)
            # `mimetype` stays first and stored, as ODF asks.
            method = zipfile.ZIP_STORED if info.filename == "mimetype" else zipfile.ZIP_DEFLATED
            dst.writestr(zipfile.ZipInfo(info.filename, date_time=info.date_time), body, compress_type=method)
    return out.getvalue()
