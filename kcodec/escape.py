"""Text from data made safe for the format it is shown in.

Topic names, keys, header keys and file names come from data, so every
report and message escapes them for its own format: HTML (markup),
terminals (control characters such as ESC sequences), CSV (formulas a
spreadsheet would run), JSON (also safe to embed in an HTML page), file
names and chart text.
"""
from __future__ import annotations

import hashlib
import html
import json
import re
from typing import Any

__all__ = ["html_text", "terminal_text", "csv_cell", "json_text", "file_name", "chart_text"]

# C0 and C1 controls, DEL, and the Unicode format characters that reorder or hide text
# (bidirectional overrides and isolates, zero-width characters, line/paragraph separators).
_TERMINAL_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2066-\u2069\ufeff]")
_CSV_FORMULA = ("=", "+", "-", "@", "\t", "\r")
_FILE_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_FILE_NAME_MAX = 200


def html_text(value: Any) -> str:
    """``value`` as HTML text or attribute content: ``< > & " '`` escaped, and control characters
    (which HTML does not allow) shown as visible escapes as in :func:`terminal_text`."""
    return html.escape(terminal_text(value), quote=True)


def _escape_char(m: "re.Match[str]") -> str:
    c = m.group(0)
    if c == "\t":
        return "\\t"
    if c == "\n":
        return "\\n"
    if c == "\r":
        return "\\r"
    code = ord(c)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def terminal_text(value: Any) -> str:
    """``value`` with every control and text-reordering character written as a visible escape
    (``\\x1b``, ``\\u202e``), so data cannot move the cursor, recolour or hide output."""
    return _TERMINAL_UNSAFE.sub(_escape_char, str(value))


def csv_cell(value: Any) -> Any:
    """A value for :mod:`csv` writers: a string a spreadsheet would read as a formula gets a
    leading ``'``; numbers and None pass unchanged (the csv module does the quoting)."""
    if isinstance(value, str) and value.startswith(_CSV_FORMULA):
        return "'" + value
    return value


def json_text(value: Any, **kwargs: Any) -> str:
    """JSON that stays well-formed and inert anywhere: ASCII only, and ``<``, ``>``, ``&``
    written as ``\\u`` escapes so it can be embedded in HTML."""
    text = json.dumps(value, ensure_ascii=True, **kwargs)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def file_name(value: Any) -> str:
    """A file name for ``value`` made of ``[A-Za-z0-9._-]`` only, one per value.

    A name that already is one (every Kafka topic) is kept; any other gets its
    unsafe characters replaced and a digest of the whole value appended, so two
    names that differ only in unsafe characters never share a file.
    """
    text = str(value)
    if _FILE_UNSAFE.search(text) is None and text not in ("", ".", "..") and len(text) <= _FILE_NAME_MAX:
        return text
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{_FILE_UNSAFE.sub('_', text)[:_FILE_NAME_MAX - 13]}-{digest}"


def chart_text(value: Any, limit: int = 50) -> str:
    """Text matplotlib draws as it is: cut to ``limit`` characters, control characters visible as
    in :func:`terminal_text`, and ``$`` (which would start math mode) escaped."""
    return terminal_text(str(value)[:limit]).replace("$", r"\$")
