"""Conversion between message formats: v2 record batches and v0/v1 message sets.

Down-conversion (``to_magic`` 0 or 1) follows Kafka's
``RecordsUtil.downConvert``, the path a broker takes for fetchers too old to
read v2:

- control batches are dropped, and a zstd batch cannot be converted
  (``UnsupportedCodecError``; Kafka's ``UnsupportedCompressionTypeException``);
- a batch whose magic is already ``<= to_magic`` is copied byte for byte;
- other batches are rebuilt with the same codec at its default level and the
  same timestamp type (LogAppendTime keeps the batch's max timestamp as the
  append time).  Headers, producer id/epoch/sequence, the transactional
  flag, the partition leader epoch and the delete horizon have no place in
  v0/v1 and are dropped; v0 drops timestamps.  Compressed v1 output uses
  relative inner offsets with the wrapper offset = last offset;
- for an *uncompressed* source batch, records below ``fetch_offset`` are
  dropped (KAFKA-5360: librdkafka cannot skip them itself), and a batch left
  empty is skipped.

Up-conversion (``to_magic`` 2) turns v0/v1 entries into v2 batches the way
Kafka's broker does on the produce path: v0 records get timestamp -1
(CREATE_TIME), v1 records keep theirs (a LogAppendTime wrapper's time for
every record), headers are empty and there is no producer state.  Unlike
the broker, **offsets are kept as they are**: assigning new offsets is the
job of the log validator, not of a format conversion.  A compressed wrapper
becomes one v2 batch; runs of consecutive uncompressed messages of the same
magic and timestamp type are gathered into v2 batches of up to
:data:`UP_CONVERSION_BATCH_BYTES` of records (the broker writes one batch
per produce request).  v2 batches are copied unchanged.
"""
from __future__ import annotations

from typing import Any, Iterable, List, Optional, Union

from kcodec.compression import CompressionType, TimestampType
from kcodec.errors import RecordBuilderError, UnsupportedCodecError
from kcodec.records.legacy_batch import BufferLike, LegacyRecordBatch
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder

__all__ = ["convert_magic", "UP_CONVERSION_BATCH_BYTES"]

#: Write limit of the v2 batches that gather uncompressed v0/v1 messages
#: during up-conversion: Kafka's default ``max.message.bytes`` (1 MiB + 12).
UP_CONVERSION_BATCH_BYTES = 1048588


def _batches(batches_or_buffer: Any) -> Iterable:
    try:
        memoryview(batches_or_buffer)
    except TypeError:
        return batches_or_buffer
    from kcodec.records import read_batches
    return read_batches(batches_or_buffer)


def convert_magic(batches_or_buffer: Union[BufferLike, Iterable[Any]], to_magic: int, *,
                  compression: Union[CompressionType, int, str, None] = None,
                  level: Optional[int] = None, fetch_offset: Optional[int] = None,
                  log_append_time: Optional[int] = None) -> bytes:
    """Convert batches to message format ``to_magic`` (0, 1 or 2); returns the new record set.

    ``batches_or_buffer`` is a buffer of concatenated batches (read with
    :func:`kcodec.read_batches`, which checks CRCs) or an iterable of batch
    objects.  Batches that need no conversion are copied unchanged; the
    others are rebuilt with ``compression`` (default: the source batch's
    codec) at ``level`` (default: that codec's default level).
    ``fetch_offset`` drops records below it from uncompressed source batches
    when converting down (Kafka's behaviour for old fetchers).  With
    ``log_append_time`` every rebuilt batch is written as LogAppendTime with
    that time, as a broker does for a LogAppendTime topic.
    """
    if to_magic not in (0, 1, 2):
        raise RecordBuilderError(f"to_magic must be 0, 1 or 2, not {to_magic!r}")
    target = None if compression is None else CompressionType.of(compression)
    if target is not None:
        target.validate_level(level)
        if not target.supports_magic(to_magic):
            raise UnsupportedCodecError(
                f"Compression type {target.kafka_name} is not supported for magic {to_magic}")
    out: List[bytes] = []
    pending: List = []  # uncompressed legacy entries waiting to be up-converted together

    def flush() -> None:
        if pending:
            out.extend(_up_convert_uncompressed(pending, target, level, log_append_time))
            pending.clear()

    for batch in _batches(batches_or_buffer):
        if to_magic < 2:
            if batch.is_control:
                continue
            if batch.compression == CompressionType.ZSTD:
                raise UnsupportedCodecError(
                    "Down-conversion of zstandard-compressed batches is not supported",
                    position=batch.position)
        if batch.magic > to_magic:
            flush()
            out.append(_down_convert(batch, to_magic, target, level, fetch_offset, log_append_time))
        elif batch.magic == to_magic or to_magic < 2:
            flush()
            out.append(bytes(batch.raw))
        elif batch.compression == CompressionType.NONE:
            if pending and not _joinable(pending[-1], batch):
                flush()
            pending.append(batch)
        else:
            flush()
            out.append(_up_convert_wrapper(batch, target, level, log_append_time))
    flush()
    return b"".join(out)


def _timestamps(batch: Any, log_append_time: Optional[int]) -> Any:
    """(timestamp type, LogAppendTime) of a rebuilt batch."""
    if log_append_time is not None:
        return TimestampType.LOG_APPEND_TIME, log_append_time
    if batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return TimestampType.LOG_APPEND_TIME, batch.max_timestamp
    return TimestampType.CREATE_TIME, None


def _down_convert(batch: Any, to_magic: int, target: Any, level: Any, fetch_offset: Any, log_append_time: Any) -> bytes:
    compressed = batch.compression != CompressionType.NONE
    records = [r for r in batch
               if compressed or fetch_offset is None or r.offset >= fetch_offset]
    if not records:
        return b""
    ts_type, lat = _timestamps(batch, log_append_time)
    try:
        builder = LegacyRecordBatchBuilder(
            to_magic, batch.compression if target is None else target,
            level if target is not None else None,
            base_offset=records[0].offset, timestamp_type=ts_type, log_append_time=lat)
    except RecordBuilderError as exc:
        raise exc.with_context(position=batch.position, batch_offset=batch.base_offset) from None
    for r in records:
        builder.append(r.key, r.value, r.timestamp, offset=r.offset)
    return builder.build()


def _v2_builder(batch: Any, base_offset: int, target: Any, level: Any, log_append_time: Any,
                write_limit: Optional[int] = None) -> Any:
    from kcodec.records import RecordBatchBuilder
    ts_type, lat = _timestamps(batch, log_append_time)
    return RecordBatchBuilder(
        magic=2, compression=batch.compression if target is None else target,
        level=level if target is not None else None, base_offset=base_offset,
        timestamp_type=ts_type, log_append_time=lat, write_limit=write_limit)


def _up_convert_wrapper(batch: LegacyRecordBatch, target: Any, level: Any, log_append_time: Any) -> bytes:
    records = batch.records()
    builder = _v2_builder(batch, records[0].offset, target, level, log_append_time)
    for r in records:
        builder.append(r.key, r.value, r.timestamp, offset=r.offset)
    return bytes(builder.build())


def _joinable(prev: LegacyRecordBatch, batch: LegacyRecordBatch) -> bool:
    # One v2 batch has one timestamp type, and a LogAppendTime batch one time.
    return (prev.magic == batch.magic
            and prev.timestamp_type == batch.timestamp_type
            and (batch.timestamp_type != TimestampType.LOG_APPEND_TIME
                 or prev.max_timestamp == batch.max_timestamp)
            and batch.last_offset > prev.last_offset
            and batch.last_offset - prev.last_offset < 2 ** 31 - 1)


def _up_convert_uncompressed(entries: List[LegacyRecordBatch], target: Any, level: Any,
                             log_append_time: Any) -> List[bytes]:
    out: List[bytes] = []
    builder = None
    for entry in entries:
        record = next(iter(entry))
        if builder is not None and not (
                builder.has_room_for(record.key, record.value, (), record.timestamp)
                and record.offset - builder.base_offset < 2 ** 31 - 1):
            out.append(bytes(builder.build()))
            builder = None
        if builder is None:
            builder = _v2_builder(entry, record.offset, target, level, log_append_time,
                                  write_limit=UP_CONVERSION_BATCH_BYTES)
        builder.append(record.key, record.value, record.timestamp, offset=record.offset)
    if builder is not None:
        out.append(bytes(builder.build()))
    return out
