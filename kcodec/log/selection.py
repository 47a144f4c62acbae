"""Which segments, and which bytes of them, hold the records a reader asks for.

A :class:`RecordRange` is a reader's offset and timestamp bounds.  It finds
the segments and byte ranges that can hold matching records through the
``.index`` and ``.timeindex`` files, so a reader maps only those bytes, and
then filters the converted rows exactly.  :func:`batch_runs` cuts a byte
range into runs of about a given size at batch starts known from the offset
index, so a reader holds one bounded run at a time.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, List, Optional, Tuple

import numpy as np

from kcodec.log.index import NO_TIMESTAMP
from kcodec.log.segment import LogSegment, Partition

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["RecordRange", "batch_runs"]


@dataclass(frozen=True)
class RecordRange:
    """Records with ``start_offset <= offset < end_offset`` and
    ``start_timestamp <= timestamp < end_timestamp`` (milliseconds); None leaves a side open."""

    start_offset: Optional[int] = None
    end_offset: Optional[int] = None
    start_timestamp: Optional[int] = None
    end_timestamp: Optional[int] = None

    def segments(self, partition: Partition) -> List[LogSegment]:
        """The partition's segments that can hold records in range: by their base offsets, and, for
        ``start_timestamp``, by their time indexes (the last segment's end is not indexed, so it stays)."""
        segs = partition.segments
        out = []
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if self.start_offset is not None and nxt is not None and nxt <= self.start_offset:
                continue
            if self.end_offset is not None and seg.base_offset >= self.end_offset:
                continue
            if self.start_timestamp is not None and nxt is not None:
                older = _older_up_to(seg, self.start_timestamp)
                if older is not None and older >= nxt - 1:
                    continue  # its time index proves every record older than start_timestamp
            out.append(seg)
        return out

    def byte_range(self, segment: LogSegment) -> Optional[Tuple[int, int]]:
        """``[start, end)`` of the segment holding every record in range, or None when it holds none.

        Both ends are batch starts (or the file's ends), found through the
        indexes without reading the ``.log``.  The start skips what the
        offset index places before ``start_offset`` and what the time index
        proves older than ``start_timestamp``: its entry ``(T, O)`` says no
        record up to offset ``O`` is later than ``T``.  The end stops before
        the first indexed batch that starts at or after ``end_offset``.
        Timestamps are not ordered in a log, so ``end_timestamp`` only
        filters rows.
        """
        size = segment.size
        if self.end_offset is not None and segment.base_offset >= self.end_offset:
            return None
        start = segment.start_position(self.start_offset)
        if self.start_timestamp is not None:
            older = _older_up_to(segment, self.start_timestamp)
            if older is not None:
                start = max(start, segment.start_position(older + 1))
        end = size
        if self.end_offset is not None:
            index = segment.offset_index
            # The batch after index entry j starts past offset O_j, so past end_offset - 1.
            j = int(np.searchsorted(index.offsets, self.end_offset - 1, side="left"))
            if j + 1 < len(index):
                end = int(index.positions[j + 1])
        return (start, end) if start < end else None

    def filter(self, table: "pyarrow.Table") -> "pyarrow.Table":
        """The rows of a table in Spark's Kafka schema that are in range."""
        import pyarrow as pa
        import pyarrow.compute as pc

        from kcodec.arrow.views import filter_rows

        tests = []
        if self.start_offset is not None:
            tests.append(pc.greater_equal(table["offset"], self.start_offset))
        if self.end_offset is not None:
            tests.append(pc.less(table["offset"], self.end_offset))
        stamp = table.schema.field("timestamp").type
        if self.start_timestamp is not None:
            tests.append(pc.greater_equal(table["timestamp"], pa.scalar(_micros(self.start_timestamp), stamp)))
        if self.end_timestamp is not None:
            tests.append(pc.less(table["timestamp"], pa.scalar(_micros(self.end_timestamp), stamp)))
        if not tests:
            return table
        mask = tests[0]
        for test in tests[1:]:
            mask = pc.and_(mask, test)
        return filter_rows(table, mask)  # view columns too


def _micros(ms: int) -> int:
    """A bound in milliseconds as the column's microseconds, held within int64: a record's own
    microseconds always are, and a multiple of 1000 never equals either end, so the clamped bound
    keeps or drops exactly the rows the unclamped one would."""
    return min(max(ms * 1000, -(1 << 63)), (1 << 63) - 1)


def _older_up_to(segment: LogSegment, timestamp: int) -> Optional[int]:
    """The last offset the segment's time index proves older than ``timestamp``, or None."""
    entry = segment.time_index.lookup(timestamp - 1)
    return None if entry.timestamp == NO_TIMESTAMP else entry.offset


def batch_runs(segment: LogSegment, start: int, end: int, target_bytes: int) -> List[Tuple[int, int]]:
    """``[start, end)`` cut into runs of about ``target_bytes``, each starting at a batch start.

    Cuts come from the offset index; a segment without one has its batch
    headers walked instead (the ``.log`` is then read once more).  A run is
    longer than ``target_bytes`` only where a single indexed span is.
    """
    if end - start <= target_bytes:
        return [(start, end)] if start < end else []
    positions = segment.offset_index.positions
    if len(positions):
        inside = positions[(positions > start) & (positions < end)].tolist()
    else:
        inside = [e.position for e in segment.entries(start, end) if e.position > start]
    cuts = [start]
    for pos in inside:
        if pos - cuts[-1] >= target_bytes:
            cuts.append(int(pos))
    cuts.append(end)
    return list(zip(cuts[:-1], cuts[1:]))
