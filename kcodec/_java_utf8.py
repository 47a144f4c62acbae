"""UTF-8 decoding as Java's ``new String(bytes, UTF_8)`` does it, malformed input included.

Kafka clients read header keys with that constructor, so a key that is not
valid UTF-8 reaches Java applications with U+FFFD where Java's decoder puts
them.  Python's ``errors="replace"`` follows the Unicode "maximal subpart"
rule instead, which differs for some sequences (an encoded surrogate
``ED A0 80`` is one U+FFFD in Java and three in Python), so kcodec decodes
invalid keys here.  Valid UTF-8 never comes this way: both decoders agree on
it, and the strict built-in decoder is tried first.
"""
from __future__ import annotations

from typing import List

__all__ = ["decode"]

_REPL = "\ufffd"


def _cont(b: int) -> bool:
    return (b & 0xC0) == 0x80


# The checks of a sequence's second byte, named after the JDK's String.isMalformed3_2 and
# isMalformed4_2: a bad second byte makes Java resume right after the lead byte.
def _malformed3_2(b1: int, b2: int) -> bool:
    return (b1 == 0xE0 and (b2 & 0xE0) == 0x80) or not _cont(b2)  # overlong, or not a continuation


def _malformed4_2(b1: int, b2: int) -> bool:
    return (b1 > 0xF4 or (b1 == 0xF0 and not 0x90 <= b2 <= 0xBF)  # past U+10FFFF, or overlong
            or (b1 == 0xF4 and (b2 & 0xF0) != 0x80) or not _cont(b2))


def decode(data: bytes) -> str:
    """``data`` decoded as JDK 17's ``String(byte[], UTF_8)`` decodes it."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    out: List[str] = []
    put = out.append
    n = len(data)
    i = 0
    while i < n:
        b1 = data[i]
        i += 1
        if b1 < 0x80:
            put(chr(b1))
        elif 0xC2 <= b1 <= 0xDF:  # two bytes
            if i < n and _cont(data[i]):
                put(chr(((b1 & 0x1F) << 6) | (data[i] & 0x3F)))
                i += 1
            else:
                put(_REPL)
        elif 0xE0 <= b1 <= 0xEF:  # three bytes
            if i + 1 < n:
                b2, b3 = data[i], data[i + 1]
                if _malformed3_2(b1, b2):
                    put(_REPL)
                elif not _cont(b3):  # Java resumes after the lead and the good second byte
                    put(_REPL)
                    i += 1
                else:
                    c = ((b1 & 0x0F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
                    put(_REPL if 0xD800 <= c <= 0xDFFF else chr(c))
                    i += 2
                continue
            # The input ends inside the sequence: a good second byte goes into the one replacement.
            put(_REPL)
            if i < n and not _malformed3_2(b1, data[i]):
                break
        elif 0xF0 <= b1 <= 0xF7:  # four bytes
            if i + 2 < n:
                b2, b3, b4 = data[i], data[i + 1], data[i + 2]
                uc = ((b1 & 0x07) << 18) | ((b2 & 0x3F) << 12) | ((b3 & 0x3F) << 6) | (b4 & 0x3F)
                if not (_cont(b2) and _cont(b3) and _cont(b4)) or not 0x10000 <= uc <= 0x10FFFF:
                    put(_REPL)
                    if _malformed4_2(b1, b2):
                        pass  # resume after the lead
                    elif not _cont(b3):
                        i += 1
                    else:
                        i += 2
                else:
                    put(chr(uc))
                    i += 3
                continue
            # The input ends inside the sequence: a good second byte, and a third that is a
            # continuation, go into the one replacement.
            put(_REPL)
            if i < n and not _malformed4_2(b1, data[i]):
                i += 1
                if i < n and _cont(data[i]):
                    break
        else:
            put(_REPL)
    return "".join(out)
