"""``rebuild_batch``: records written again as one batch, by the broker-side operations.

The validator's rebuild path, the cleaner's filter and recompression all go
through it, so that each writes what Kafka's ``MemoryRecordsBuilder`` writes.
"""
from __future__ import annotations

import struct
from typing import Any, Dict, Iterable, Optional, Union

from kcodec.compression import CompressionType, TimestampType
from kcodec.records import batch_header

__all__ = ["rebuild_batch"]

_I32 = struct.Struct(">i")


def rebuild_batch(records: Iterable, *, magic: int, compression: Union[CompressionType, int, str],
                  level: Optional[int], base_offset: int, timestamp_type: TimestampType,
                  log_append_time: Optional[int] = None, producer_id: int = -1, producer_epoch: int = -1,
                  base_sequence: int = -1, is_transactional: bool = False, is_control: bool = False,
                  partition_leader_epoch: int = -1, delete_horizon_ms: Optional[int] = None,
                  offsets: Optional[Iterable[int]] = None, last_offset: Optional[int] = None) -> bytes:
    """Write ``records`` (kcodec ``Record`` objects) as one batch with ``RecordBatchBuilder``.

    ``offsets`` gives each record's offset (default: ``base_offset``,
    ``base_offset + 1``, ...).  ``last_offset`` is Kafka's
    ``overrideLastOffset``: a v2 batch keeps that lastOffsetDelta even when its
    trailing records are gone, so the producer's last sequence survives.
    Control records are re-appended as control records of a control batch.
    """
    ctype = CompressionType.of(compression)
    kwargs: Dict[str, Any] = dict(magic=magic, compression=ctype, level=level, base_offset=base_offset,
                  timestamp_type=timestamp_type, producer_id=producer_id, producer_epoch=producer_epoch,
                  base_sequence=base_sequence, is_transactional=is_transactional, is_control=is_control,
                  partition_leader_epoch=partition_leader_epoch)
    if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is not None:
        kwargs["log_append_time"] = log_append_time
    if delete_horizon_ms is not None and delete_horizon_ms != batch_header.NO_TIMESTAMP:
        kwargs["delete_horizon_ms"] = delete_horizon_ms
    builder: Any  # RecordBatchBuilder; the legacy builder below magic 2, where no batch is a control batch
    if magic < 2:
        from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
        for k in ("producer_id", "producer_epoch", "base_sequence", "is_transactional", "is_control",
                  "partition_leader_epoch", "delete_horizon_ms"):
            kwargs.pop(k, None)
        builder = LegacyRecordBatchBuilder(**kwargs)
    else:
        from kcodec.records.builder import RecordBatchBuilder
        builder = RecordBatchBuilder(**kwargs)
    offs = iter(offsets) if offsets is not None else None
    nxt = base_offset
    for rec in records:
        off = next(offs) if offs is not None else nxt
        nxt = off + 1
        ts = rec.timestamp
        if is_control:
            builder.append_control(key=rec.key, value=rec.value, timestamp=ts, offset=off)
        else:
            builder.append(rec.key, rec.value, timestamp=ts, headers=tuple(rec.headers or ()), offset=off)
    out = builder.build()
    if magic >= 2 and last_offset is not None:
        buf = bytearray(out)
        delta = last_offset - base_offset
        if _I32.unpack_from(buf, batch_header.LAST_OFFSET_DELTA)[0] != delta:
            batch_header.set_last_offset_delta(buf, 0, len(buf), delta)
        return bytes(buf)
    return bytes(out)
