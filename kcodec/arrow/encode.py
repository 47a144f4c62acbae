"""Arrow tables into Kafka batches, straight from the table's Arrow buffers (``MemoryRecordsBuilder``'s work).

:func:`from_arrow_iter` cuts records into batches as a producer's
``batch.size`` does and writes v2 batches in native code; legacy v0/v1
batches (for conversions only) go through the record builder.
"""
from __future__ import annotations

from typing import Any, Iterator, List, Optional, Union

import numpy as np

from kcodec._native.columnar import batch_bytes, compressed_batch, encode_columnar
from kcodec._native.native_codec import native_of
from kcodec.arrow.columns import (
    as_binary,
    as_table,
    binary_spec,
    column,
    header_specs,
    pyarrow_module,
    timestamps_ms,
)
from kcodec.arrow.options import EncodeOptions
from kcodec.compression import CompressionType, TimestampType, get_codec
from kcodec.errors import RecordBuilderError
from kcodec.records.batch_header import TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK

__all__ = ["from_arrow", "from_arrow_iter", "compressed_batches"]


def from_arrow_iter(table: Any, *, compression: Union[CompressionType, int, str] = "none",
                    level: Optional[int] = None, max_batch_bytes: int = 1_048_576, base_offset: int = 0,
                    magic: int = 2, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                    log_append_time: Optional[int] = None, producer_id: int = -1, producer_epoch: int = -1,
                    base_sequence: int = -1, is_transactional: bool = False,
                    partition_leader_epoch: int = -1, estimated_compression_ratio: float = 1.0
                    ) -> Iterator[bytes]:
    """Encode a table's records into Kafka batches, yielding each batch's bytes.

    ``table`` is a ``pyarrow.Table`` or ``RecordBatch``, or any object of the
    Arrow PyCapsule protocol (``__arrow_c_stream__`` or ``__arrow_c_array__``:
    a Polars DataFrame, a DuckDB relation, ...).
    The table needs ``value``; ``key``, ``headers``, ``timestamp`` (timestamp
    type or int64 ms) and ``offset`` are optional (binary, large binary or
    string columns).  Without ``offset`` records get ``base_offset + row``.
    Batches are cut like a producer's ``batch.size`` (``max_batch_bytes``):
    the first record always fits, after it the estimated size must stay
    within the limit; the result equals what :class:`RecordBatchBuilder`
    writes for the same records and write limit.
    """
    yield from _encode(table, EncodeOptions(compression, level, max_batch_bytes, base_offset, magic, timestamp_type,
                                            log_append_time, producer_id, producer_epoch, base_sequence,
                                            is_transactional, partition_leader_epoch, estimated_compression_ratio))


def _encode(table: Any, options: EncodeOptions) -> Union[List[bytes], Iterator[bytes]]:
    # A list when the batches are made in one native call (uncompressed v2), else a generator.
    pa = pyarrow_module()
    table = as_table(table)
    if options.magic != 2:
        return _from_arrow_legacy(table, options)
    codec = get_codec(options.compression)
    lvl = codec.resolve_level(options.level)
    lat = TimestampType(options.timestamp_type) == TimestampType.LOG_APPEND_TIME
    if lat and options.log_append_time is None:
        raise RecordBuilderError("a LOG_APPEND_TIME batch needs log_append_time")
    value = column(table, "value")
    if value is None:
        raise RecordBuilderError("from_arrow needs a 'value' column")
    n = len(value)
    if n == 0:
        return []
    key = column(table, "key")
    hdrs = column(table, "headers")
    hdr_spec = hk_spec = hv_spec = None
    if hdrs is not None and not pa.types.is_null(hdrs.type):
        hdr_spec, hk_spec, hv_spec = header_specs(hdrs)
    offs_col = column(table, "offset")
    offsets = None
    if offs_col is not None and offs_col.null_count == 0:
        offsets = np.ascontiguousarray(offs_col.cast(pa.int64()).to_numpy())
        if n > 1 and not np.all(offsets[1:] > offsets[:-1]):  # np.diff would wrap at the int64 ends
            raise RecordBuilderError("the offset column must increase strictly")
    ts = np.ascontiguousarray(timestamps_ms(column(table, "timestamp"), n), dtype=np.int64)
    if n and ts.min() < -1:  # -1 (no timestamp) is the only negative Kafka accepts
        raise RecordBuilderError(f"Invalid negative timestamp {int(ts[(ts < 0) & (ts != -1)][0])}")
    columns = (n, binary_spec(as_binary(key, "key")) if key is not None else None, binary_spec(as_binary(value)),
               hdr_spec, hk_spec, hv_spec, ts, offsets, options.base_offset, options.max_batch_bytes,
               options.estimated_compression_ratio, codec.id != 0)
    if codec.id == 0:
        # Uncompressed: records are written straight into each batch's final bytes.
        return encode_columnar(*columns, direct=(_attributes(codec, options), options.producer_id,
                                                 options.producer_epoch, options.base_sequence,
                                                 options.partition_leader_epoch,
                                                 options.log_append_time if lat else -1))
    return compressed_batches(encode_columnar(*columns), codec, lvl, options)


def _attributes(codec: Any, options: EncodeOptions) -> int:
    # DefaultRecordBatch.computeAttributes: the codec id, then the timestamp type and transactional bits.
    attributes = codec.id
    if options.timestamp_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if options.is_transactional:
        attributes |= TRANSACTIONAL_MASK
    return attributes


_DEFAULTS = EncodeOptions()


def compressed_batches(encoded: Any, codec: Any, lvl: Optional[int],
                       options: EncodeOptions = _DEFAULTS) -> Iterator[bytes]:
    """The compressed v2 batches of ``encode_columnar``'s records regions (``encoded``), one at a time.

    ``codec`` at level ``lvl`` (its resolved level) compresses each region; ``options`` gives the
    header fields of every batch (its codec and level are not read).  A ``base_sequence`` of 0 or
    more is the first batch's; each later batch's adds the records before it, wrapping as Kafka's
    ``DefaultRecordBatch.incrementSequence`` does.  With ``LOG_APPEND_TIME``, ``log_append_time`` is
    every batch's max timestamp.
    """
    out, rows, pos, first_ts, max_ts, first_off, last_off = encoded
    mv = memoryview(out)
    attributes = _attributes(codec, options)
    base_sequence = options.base_sequence
    log_append_time = (options.log_append_time
                       if options.timestamp_type == TimestampType.LOG_APPEND_TIME else None)
    producer_id, producer_epoch = options.producer_id, options.producer_epoch
    leader_epoch = options.partition_leader_epoch
    # Per batch: one slice, one compression call and one native call that
    # writes header, CRC and payload into the result.
    pos, rows, first_ts, max_ts = pos.tolist(), rows.tolist(), first_ts.tolist(), max_ts.tolist()
    first_off, last_off = first_off.tolist(), last_off.tolist()
    # A codec with native functions (every built-in) writes each frame after room for the header,
    # without the GIL, sparing a copy; a Python-only codec goes through its compress().
    native = native_of(codec)
    native_level = 0 if lvl is None else lvl
    for b in range(len(first_ts)):
        region = mv[pos[b]:pos[b + 1]]
        seq = base_sequence if base_sequence < 0 else (base_sequence + rows[b]) % 2147483648
        header = (first_off[b], last_off[b] - first_off[b], first_ts[b],
                  max_ts[b] if log_append_time is None else log_append_time, rows[b + 1] - rows[b],
                  attributes, producer_id, producer_epoch, seq, leader_epoch)
        if native is not None:
            yield compressed_batch(native, region, native_level, *header)
        else:
            yield batch_bytes(codec.compress(region, lvl, magic=2), *header)


def from_arrow(table: Any, **options: Any) -> List[bytes]:
    """:func:`from_arrow_iter` as a list of batch bytes."""
    batches = _encode(table, EncodeOptions(**options))
    # The native encoder's own list as it is: iterating it again would touch
    # every batch object, long out of cache for large tables.
    return batches if type(batches) is list else list(batches)


def _from_arrow_legacy(table: Any, options: EncodeOptions) -> Iterator[bytes]:
    # Old message formats exist for conversions only; records go through the builder.
    from kcodec.records import batch_builder

    pa = pyarrow_module()
    value = column(table, "value")
    if value is None:
        raise RecordBuilderError("from_arrow needs a 'value' column")
    n = len(value)
    values = as_binary(value).cast(pa.large_binary()).to_pylist()
    key = column(table, "key")
    keys = [None] * n if key is None else as_binary(key, "key").cast(pa.large_binary()).to_pylist()
    stamps = timestamps_ms(column(table, "timestamp"), n).tolist()
    offs = column(table, "offset")
    base_offset = options.base_offset
    offsets = list(range(base_offset, base_offset + n)) if offs is None else offs.cast(pa.int64()).to_pylist()
    builder = None
    for i in range(n):
        ts, off = stamps[i], offsets[i]
        if off is None:
            off = base_offset + i
        if builder is not None and not builder.has_room_for(keys[i], values[i]):
            yield bytes(builder.build())
            builder = None
        if builder is None:
            builder = batch_builder(magic=options.magic, compression=options.compression, level=options.level,
                                    base_offset=off, timestamp_type=options.timestamp_type,
                                    log_append_time=options.log_append_time, write_limit=options.max_batch_bytes)
        builder.append(keys[i], values[i], ts, offset=off)
    if builder is not None:
        yield bytes(builder.build())
