"""The log framing every record set shares: ``offset:int64, size:int32, ..., magic:int8``.

:func:`iter_entries` walks a buffer of concatenated batches (a fetch
response, a produce payload, a ``.log`` segment) exactly as Kafka's
``ByteBufferLogInputStream`` does, without decoding or copying anything.
"""
from __future__ import annotations

from typing import Any, Iterator, NamedTuple, Optional

from kcodec._native.records import LAYOUT, EntryWalker

__all__ = [
    "LOG_OVERHEAD",
    "HEADER_SIZE_UP_TO_MAGIC",
    "RECORD_BATCH_OVERHEAD",
    "MIN_RECORD_OVERHEAD",
    "Entry",
    "java_int",
    "java_long",
    "byte_view",
    "iter_entries",
    "valid_bytes",
    "MAGIC_OFFSET",
]

# From the C headers (csrc/kc_walk.h, kc_batch.h), so that both sides read one layout.
LOG_OVERHEAD: int = LAYOUT["KC_BATCH_LOG_OVERHEAD"]  #: Records.LOG_OVERHEAD: offset + size (12)
HEADER_SIZE_UP_TO_MAGIC: int = LAYOUT["KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC"]  #: Records.HEADER_SIZE_UP_TO_MAGIC (17)
MAGIC_OFFSET: int = LAYOUT["KC_ENTRY_MAGIC"]  #: Records.MAGIC_OFFSET (16)
RECORD_BATCH_OVERHEAD: int = LAYOUT["KC_BATCH_OVERHEAD"]  #: DefaultRecordBatch.RECORD_BATCH_OVERHEAD (61)
#: LegacyRecord.RECORD_OVERHEAD_V0 (14): the smallest legal size field
MIN_RECORD_OVERHEAD: int = LAYOUT["KC_ENTRY_MIN_SIZE"]


def java_long(value: int) -> int:
    """``value`` as a Java ``long`` holds it: Kafka computes offsets with long
    arithmetic, which wraps past the int64 range instead of growing."""
    return ((value + (1 << 63)) & ((1 << 64) - 1)) - (1 << 63)


def java_int(value: int) -> int:
    """``value`` as a Java ``int`` holds it (sequence numbers wrap this way)."""
    return ((value + (1 << 31)) & 0xFFFFFFFF) - (1 << 31)


def byte_view(buf: Any) -> memoryview:
    """``buf`` (anything with the buffer protocol) as a flat view of unsigned bytes, the form the
    native readers take; a view already in that form is returned as it is.  A buffer that is not
    C-contiguous (a strided or transposed array) has no such view: its bytes, in C order, are copied."""
    mv = buf if isinstance(buf, memoryview) else memoryview(buf)
    if not mv.c_contiguous:
        return memoryview(mv.tobytes())
    if mv.format != "B" or mv.ndim != 1:
        mv = mv.cast("B")
    return mv


class Entry(NamedTuple):
    """One complete entry (a v2 batch or a v0/v1 message) found in a buffer."""

    position: int  #: byte offset of the entry in the buffer
    size: int  #: total bytes, ``size field + 12``
    offset: int  #: v2 base offset, or the v0/v1 (wrapper) message offset
    magic: int


def iter_entries(buf: Any, start: int = 0, end: Optional[int] = None, *,
                 strict: bool = False) -> Iterator[Entry]:
    """Yield the complete entries of ``buf[start:end]`` in order.

    Kafka's rules: fewer than 12 bytes left, fewer than 17, or an entry that
    runs past the end stop the iteration silently (a partial trailing batch,
    normal in fetch responses).  ``strict=True`` raises CorruptRecordError
    for such trailing bytes instead.  A size below 14 or a magic outside
    0..2 always raises CorruptRecordError.
    """
    view = byte_view(buf) if not isinstance(buf, (bytes, bytearray)) else buf
    # The walk is native and shared with read_batches, so both follow one set of rules.
    for position, size, offset, magic in EntryWalker(view, start, end, strict):
        yield Entry(position, size, offset, magic)


def valid_bytes(buf: Any, start: int = 0, end: Optional[int] = None) -> int:
    """Bytes covered by complete entries (Kafka's ``MemoryRecords.validBytes``)."""
    return sum(e.size for e in iter_entries(buf, start, end))
