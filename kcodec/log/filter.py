"""``MemoryRecords.filterTo``: copy the batches of a record set, dropping records a filter rejects.

:func:`filter_batch` is its per-batch rewrite, which the log cleaner runs over each segment's
batches (``Cleaner.cleanInto``):

* every record retained and no delete horizon to stamp: the original batch
  bytes are copied untouched (codec, level, CRC and all);
* some records removed, or a v2 batch holding a tombstone (or a removable
  transaction marker) that has no delete horizon yet: the batch is rebuilt
  with the same magic, the same codec at its *default* level, the same
  timestamp type and producer fields, and -- for v2 -- the same baseOffset
  and lastOffset, so offsets and the producer's last sequence survive;
* nothing retained: the batch disappears, or becomes a 61-byte empty header
  when the filter asks for ``RETAIN_EMPTY`` (producer state).

Output is byte-identical to Java's for uncompressed batches and for codecs
whose kcodec output equals the Java library's.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, List, NamedTuple, Optional

from kcodec.compression import CompressionType, TimestampType
from kcodec.errors import InvalidRecordError
from kcodec.records import batch_header
from kcodec.records.batch_header import NO_TIMESTAMP
from kcodec.records.framing import RECORD_BATCH_OVERHEAD
from kcodec.records.rebuild import rebuild_batch

__all__ = [
    "BatchRetention",
    "BatchRetentionResult",
    "RecordFilter",
    "FilterResult",
    "filter_batch",
]


class BatchRetention(enum.Enum):
    """What happens to a batch whose records are all removed (``RecordFilter.BatchRetention``)."""

    DELETE = "delete"  #: the whole batch goes, records are not even inspected
    RETAIN_EMPTY = "retain_empty"  #: an empty 61-byte header is kept (v2 only)
    DELETE_EMPTY = "delete_empty"  #: records are filtered; the batch goes if none are left


class BatchRetentionResult(NamedTuple):
    retention: BatchRetention
    contains_marker_for_empty_txn: bool = False


class RecordFilter:
    """Decides batch and record retention; subclass and override both methods.

    ``current_time`` and ``delete_retention_ms`` give the delete horizon
    stamped on rebuilt v2 batches that keep tombstones:
    ``current_time + delete_retention_ms``.
    """

    def __init__(self, current_time: int, delete_retention_ms: int) -> None:
        self.current_time = int(current_time)
        self.delete_retention_ms = int(delete_retention_ms)

    def check_batch_retention(self, batch: Any) -> BatchRetentionResult:
        return BatchRetentionResult(BatchRetention.DELETE_EMPTY, False)

    def should_retain_record(self, batch: Any, record: Any) -> bool:
        return True


@dataclass
class FilterResult:
    """The filtered bytes and ``MemoryRecords.FilterResult``'s counters."""

    output: bytearray = field(default_factory=bytearray)
    messages_read: int = 0
    bytes_read: int = 0
    messages_retained: int = 0
    bytes_retained: int = 0
    max_offset: int = -1
    max_timestamp: int = NO_TIMESTAMP
    shallow_offset_of_max_timestamp: int = -1
    batches_rebuilt: int = 0
    batches_emptied: int = 0
    batches_deleted: int = 0

    def _retained(self, max_ts: int, shallow: int, max_offset: int, messages: int, size: int) -> None:
        if max_ts > self.max_timestamp:
            self.max_timestamp = max_ts
            self.shallow_offset_of_max_timestamp = shallow
        self.max_offset = max(self.max_offset, max_offset)
        self.messages_retained += messages
        self.bytes_retained += size


def _rebuild_retained(batch: Any, retained: List[Any], delete_horizon_ms: int) -> bytes:
    """``buildRetainedRecordsInto``."""
    magic = batch.magic
    ctype = CompressionType.of(batch.compression)
    ts_type = batch.timestamp_type
    log_append_time = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else None
    # A v0 batch's NO_TIMESTAMP_TYPE goes to the builder as it is: MemoryRecordsBuilder, like
    # kcodec's legacy builder, needs a timestamp type only from magic 1.
    base = batch.base_offset if magic >= 2 else retained[0].offset
    return rebuild_batch(
        retained, magic=magic, compression=ctype, level=ctype.default_level, base_offset=base,
        timestamp_type=ts_type, log_append_time=log_append_time, producer_id=batch.producer_id,
        producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
        is_transactional=batch.is_transactional, is_control=batch.is_control,
        partition_leader_epoch=batch.partition_leader_epoch,
        delete_horizon_ms=delete_horizon_ms, offsets=[r.offset for r in retained],
        last_offset=batch.last_offset)  # rebuild_batch writes these two from magic 2 only


def filter_batch(batch: Any, record_filter: RecordFilter, result: FilterResult) -> Optional[bytes]:
    """Filter one batch; returns the bytes to keep (the original view, a rebuilt or an empty
    batch) or None.  Counters in ``result`` are updated."""
    retention = record_filter.check_batch_retention(batch)
    if not isinstance(retention, BatchRetentionResult):
        retention = BatchRetentionResult(retention, False)
    result.bytes_read += batch.size_in_bytes
    if retention.retention is BatchRetention.DELETE:
        result.batches_deleted += 1
        return None
    retained: List[Any] = []
    # KAFKA-4298: a legacy wrapper holding records of another magic is rewritten, never copied
    # (Java checks each retained record; if one is dropped the batch is rebuilt anyway).
    write_original = batch.magic >= 2 or batch.inner_magics == {batch.magic}
    tombstones = False
    for rec in batch:
        result.messages_read += 1
        if record_filter.should_retain_record(batch, rec):
            retained.append(rec)
            if rec.value is None:
                tombstones = True
        else:
            write_original = False
    if retained:
        need_horizon = (batch.magic >= 2 and (tombstones or retention.contains_marker_for_empty_txn)
                        and batch.delete_horizon_ms is None)
        if write_original and not need_horizon:
            result._retained(batch.max_timestamp, batch.last_offset, batch.last_offset, len(retained),
                             batch.size_in_bytes)
            return batch.raw
        if need_horizon:
            horizon = record_filter.current_time + record_filter.delete_retention_ms
        else:
            horizon = batch.delete_horizon_ms if batch.delete_horizon_ms is not None else NO_TIMESTAMP
        out = _rebuild_retained(batch, retained, horizon)
        result.batches_rebuilt += 1
        max_ts, shallow = _built_info(batch, retained)
        result._retained(max_ts, shallow, max(r.offset for r in retained), len(retained), len(out))
        return out
    if retention.retention is BatchRetention.RETAIN_EMPTY:
        if batch.magic < 2:
            raise InvalidRecordError("Empty batches are only supported for magic v2 and above",
                                     batch_offset=batch.base_offset)
        result.batches_emptied += 1
        result._retained(batch.max_timestamp, batch.last_offset, batch.last_offset, 0, RECORD_BATCH_OVERHEAD)
        return batch_header.empty_header(batch)
    result.batches_deleted += 1
    return None


def _built_info(batch: Any, retained: Any) -> Any:
    """maxTimestamp and its shallow offset of a rebuilt batch (``MemoryRecordsBuilder.info``).

    A rebuilt batch is v2 or a compressed legacy wrapper (an uncompressed legacy entry holds one
    record, and :func:`filter_batch` copies or drops it), so the shallow offset is the last one;
    :meth:`FilterResult._retained` never takes the offset of a NO_TIMESTAMP.  The records of a
    LogAppendTime batch read as its append time, so their max is the batch's.
    """
    if batch.magic == 0:  # inner v1 messages of a v0 wrapper lose their timestamps
        return NO_TIMESTAMP, retained[-1].offset
    return max(NO_TIMESTAMP, max(r.timestamp for r in retained)), retained[-1].offset
