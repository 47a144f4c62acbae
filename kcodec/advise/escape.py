"""Data-derived text (topic names, codec names from plugins) made safe for each output format."""
from __future__ import annotations

import html
import re

__all__ = ["for_terminal", "for_html", "for_csv", "for_filename", "for_chart"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def for_terminal(text: str) -> str:
    """Control characters (escape sequences, bidi overrides) shown as ``\\xNN`` instead of acted on."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else f"\\u{ord(m.group()):04x}",
                        str(text))


def for_html(text: str) -> str:
    return html.escape(str(text), quote=True)


def for_csv(text: str) -> str:
    """A cell a spreadsheet shows as text, never runs as a formula."""
    s = str(text)
    return "'" + s if s[:1] in ("=", "+", "-", "@", "\t", "\r") else s


def for_filename(text: str) -> str:
    """A file name made of the text's safe characters (Kafka topic names already are)."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", str(text))[:200] or "_"


def for_chart(text: str, limit: int = 50) -> str:
    """Text matplotlib draws as it is: ``$`` would start math mode."""
    return for_terminal(str(text)[:limit]).replace("$", r"\$")
