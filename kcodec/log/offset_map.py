"""The cleaner's offset map: the latest offset of every key in the dirty range.

Kafka's ``SkimpyOffsetMap`` keys a fixed-size table by each key's MD5
digest; kcodec keys a dict by the **exact key bytes**: no hash collisions
and no "map full" partial rounds, at the price of memory proportional to the
distinct keys.  :meth:`OffsetMap.add_segment` is the one pass over a dirty
segment that decides which records the map takes, used by
:func:`build_offset_map` here and per segment by the Spark variant in
:mod:`kcodec.spark.ops`.
"""
from __future__ import annotations

from typing import Dict, List, Sequence, Tuple

from kcodec.log.log_state import LogState
from kcodec.log.segment_list import SegmentInfo, errors_name, open_log
from kcodec.log.transaction_index import CleanedTransactionMetadata

__all__ = ["OffsetMap", "build_offset_map", "dirty_ranges"]


class OffsetMap:
    """Latest offset of every key in the dirty range (exact keys)."""

    def __init__(self) -> None:
        self.map: Dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self.map[key] = offset

    def get(self, key: bytes) -> int:
        return self.map.get(key, -1)

    def update_latest(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    def __len__(self) -> int:
        return len(self.map)

    def add_segment(self, seg: SegmentInfo, meta: CleanedTransactionMetadata, start: int) -> None:
        """``buildOffsetMapForSegment``: put the key of every data record at or after ``start``
        outside aborted transactions (``meta`` follows the transactions through the batches)."""
        from kcodec.records import read_batches
        with open_log(seg.path(), seg.storage) as buf, errors_name(seg):
            for batch in read_batches(buf, validate=False):
                if batch.is_control:
                    meta.on_control_batch(batch)
                elif not meta.on_batch(batch):
                    for rec in batch:
                        if rec.key is not None and rec.offset >= start:
                            self.put(bytes(rec.key), rec.offset)
                if batch.last_offset >= start:
                    self.update_latest(batch.last_offset)


def dirty_ranges(dirty: Sequence[SegmentInfo], end: int) -> List[Tuple[SegmentInfo, int]]:
    """Each dirty segment with the offset its range ends before (the next one's base, ``end`` for the last)."""
    return [(seg, dirty[i + 1].base_offset if i + 1 < len(dirty) else end) for i, seg in enumerate(dirty)]


def build_offset_map(state: LogState, dirty: Sequence[SegmentInfo], start: int, end: int) -> OffsetMap:
    """``buildOffsetMap`` over the dirty segments ``[start, end)``."""
    omap = OffsetMap()
    meta = CleanedTransactionMetadata()
    meta.add(state.aborted_overlapping(start, end))
    for seg, seg_end in dirty_ranges(dirty, end):
        omap.add_segment(seg, meta, start)
        omap.update_latest(seg_end - 1)
    return omap
