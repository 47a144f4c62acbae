"""``RecordBatchBuilder``: writes magic v2 batches as Kafka's MemoryRecordsBuilder does."""
from __future__ import annotations

import time
from types import SimpleNamespace
from typing import Iterable, Optional, Sequence, Union

from kcodec._native.records import RecordsWriter, assemble_batch, record_size
from kcodec.compression import CompressionType, TimestampType, get_codec
from kcodec.errors import RecordBuilderError, UnsupportedCodecError
from kcodec.records.batch import (
    CONTROL_MASK,
    DELETE_HORIZON_MASK,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_MASK,
)
from kcodec.records.control import ControlRecordType, EndTransactionMarker, control_key
from kcodec.records.framing import RECORD_BATCH_OVERHEAD

__all__ = ["RecordBatchBuilder", "COMPRESSION_RATE_ESTIMATION_FACTOR"]

#: Kafka over-estimates compressed sizes by 5% when deciding whether a record fits.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05
_INT32_MAX = 2147483647
_NO_TIMESTAMP = -1


def _now_ms() -> int:
    return int(time.time() * 1000)


class RecordBatchBuilder:
    """Build one record batch.

    ``RecordBatchBuilder(magic=0|1, ...)`` returns a
    :class:`~kcodec.records.legacy.LegacyRecordBatchBuilder` instead, for the
    old message formats.

    ``write_limit`` has the meaning of the producer's ``batch.size``: the
    first record always fits; after it, :meth:`has_room_for` says whether a
    record would keep the estimated batch size within the limit.  For
    compressed batches the estimate is ``61 + uncompressed bytes x
    estimated_compression_ratio x 1.05``, Kafka's rule; pass the ratio you
    observed on earlier batches (:attr:`compression_ratio` after
    :meth:`build`) as Kafka's CompressionRatioEstimator does.

    Memory: records are encoded into a growable native buffer owned by the
    builder.  Without a ``pool``, :meth:`build` returns ``bytes`` owned by
    the caller.  With a :class:`~kcodec.records.BufferPool`, it returns a
    :class:`~kcodec.records.PooledBuffer` whose bytes stay valid until its
    ``release()`` (or the end of a ``with`` block); after that any use raises
    BufferReleasedError and the memory serves the next batch.  With a pool
    the working buffer, too, comes from the pool and goes back to it in
    :meth:`build`, so a producer loop allocates nothing in steady state.
    """

    def __new__(cls, magic: int = 2, *args, **kwargs):
        if cls is RecordBatchBuilder and magic in (0, 1):
            return _legacy_builder(magic, **kwargs)
        if magic != 2:
            raise RecordBuilderError(f"unsupported magic {magic}: use 0, 1 or 2")
        return super().__new__(cls)

    def __init__(self, magic: int = 2, compression: Union[CompressionType, int, str] = CompressionType.NONE,
                 level: Optional[int] = None, base_offset: int = 0,
                 timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                 log_append_time: Optional[int] = None, producer_id: int = -1, producer_epoch: int = -1,
                 base_sequence: int = -1, is_transactional: bool = False, is_control: bool = False,
                 partition_leader_epoch: int = -1, delete_horizon_ms: Optional[int] = None,
                 write_limit: Optional[int] = None, pool=None,
                 estimated_compression_ratio: float = 1.0) -> None:
        codec = get_codec(compression)
        self.codec = codec
        self.compression_id = codec.id
        if codec.id <= 4:
            self.level = CompressionType(codec.id).validate_level(level)
        else:
            self.level = codec.resolve_level(level)
        codec.check_magic(2)
        self.timestamp_type = TimestampType(timestamp_type)
        if self.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
            raise RecordBuilderError("magic v2 batches need CREATE_TIME or LOG_APPEND_TIME")
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is None:
            raise RecordBuilderError("a LOG_APPEND_TIME batch needs log_append_time")
        self.log_append_time = log_append_time
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        if delete_horizon_ms is not None and delete_horizon_ms < 0:
            delete_horizon_ms = None
        self.delete_horizon_ms = delete_horizon_ms
        if write_limit is not None and write_limit < 0:
            raise RecordBuilderError(f"write_limit must be non-negative, got {write_limit}")
        self.write_limit = write_limit
        self.pool = pool
        self.estimated_compression_ratio = estimated_compression_ratio
        lat = log_append_time if self.timestamp_type == TimestampType.LOG_APPEND_TIME else None
        if pool is not None:
            self._writer = pool.take_writer(base_offset, delete_horizon_ms, lat, is_control)
        else:
            self._writer = RecordsWriter(4096, base_offset, delete_horizon_ms, lat, is_control)
        # The per-record path runs natively: bind the writer's methods directly so an
        # append costs one C call (the class methods below document the same API).
        self.append = self._writer.append
        self.append_many = self._writer.append_many
        self._last_offset_override: Optional[int] = None
        self._built = False
        self.compression_ratio: Optional[float] = None  #: compressed/uncompressed records, after build()

    # -- state --------------------------------------------------------------
    @property
    def record_count(self) -> int:
        return self._writer.count

    @property
    def uncompressed_size(self) -> int:
        """Bytes of the batch if written uncompressed."""
        return RECORD_BATCH_OVERHEAD + self._writer.size

    @property
    def estimated_size(self) -> int:
        """Kafka's estimatedBytesWritten()."""
        if self.compression_id == 0:
            return RECORD_BATCH_OVERHEAD + self._writer.size
        return RECORD_BATCH_OVERHEAD + int(
            self._writer.size * self.estimated_compression_ratio * COMPRESSION_RATE_ESTIMATION_FACTOR)

    @property
    def next_offset(self) -> int:
        return self._writer.next_offset

    @property
    def last_offset(self) -> Optional[int]:
        return self._writer.last_offset if self._writer.has_records else None

    @property
    def max_timestamp(self) -> int:
        return self._writer.max_timestamp

    def is_full(self) -> bool:
        """Kafka's isFull(): built, or a write limit the batch has reached."""
        return self._built or (self.write_limit is not None and self._writer.count > 0
                               and self.write_limit <= self.estimated_size)

    def has_room_for(self, key: Optional[bytes], value: Optional[bytes], headers: Sequence = (),
                     timestamp: Optional[int] = None) -> bool:
        """Whether appending this record keeps within ``write_limit`` (the first record always fits)."""
        if self.is_full():
            return False
        if self._writer.count == 0 or self.write_limit is None:
            return True
        ts = _now_ms() if timestamp is None else timestamp
        base = self._writer.delta_base
        size = record_size(self.next_offset - self.base_offset, ts - (ts if base is None else base),
                           key, value, headers)
        if self.compression_id != 0:
            size = int(size * self.estimated_compression_ratio * COMPRESSION_RATE_ESTIMATION_FACTOR)
        return self.write_limit >= self.estimated_size + size

    # -- appending ------------------------------------------------------------
    def append(self, key: Optional[bytes], value: Optional[bytes], timestamp: Optional[int] = None,
               headers: Sequence = (), offset: Optional[int] = None) -> int:
        """Append a record; returns its offset.

        ``None`` key/value is null, ``b""`` is empty (both round-trip).
        ``timestamp`` defaults to now (CREATE_TIME) or the log append time;
        ``offset`` defaults to the next offset and may leave gaps but must
        increase.  ``headers`` are ``(str, bytes | None)`` pairs.
        """
        return self._writer.append(key, value, timestamp, headers, offset)

    def _append(self, key, value, timestamp, headers, offset) -> int:
        return self._writer.append_raw(key, value, timestamp, headers, offset)

    def append_many(self, keys: Iterable, values: Iterable, timestamps: Optional[Iterable] = None,
                    headers: Optional[Iterable] = None) -> int:
        """Append records from parallel sequences (lists, numpy object arrays); returns the count."""
        return self._writer.append_many(keys, values, timestamps, headers)

    def append_control(self, control_type: Union[ControlRecordType, EndTransactionMarker, None] = None,
                       value: Optional[bytes] = None, timestamp: Optional[int] = None,
                       offset: Optional[int] = None, *, key: Optional[bytes] = None) -> int:
        """Append a control record to this control batch.

        Either ``control_type`` (the key becomes version 0 + type), an
        :class:`EndTransactionMarker` (which also supplies the value), or a raw
        ``key`` copied from an existing control record (rewriting batches).
        """
        if isinstance(control_type, EndTransactionMarker):
            return self.append_end_txn_marker(control_type.control_type, control_type.coordinator_epoch,
                                              timestamp, offset)
        if not self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches")
        if key is not None:
            return self._append(key, value, timestamp, (), offset)
        if control_type is None:
            raise RecordBuilderError("append_control needs a control_type or a key")
        ctype = ControlRecordType(control_type)
        if ctype == ControlRecordType.UNKNOWN:
            raise RecordBuilderError("Cannot append record with unknown control record type")
        return self._append(control_key(ctype), value, timestamp, (), offset)

    def append_end_txn_marker(self, control_type: ControlRecordType, coordinator_epoch: int,
                              timestamp: Optional[int] = None, offset: Optional[int] = None) -> int:
        """Append a COMMIT or ABORT marker (Java's 78-byte marker batch when alone)."""
        ctype = ControlRecordType(control_type)
        if ctype not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            raise RecordBuilderError(f"{ctype.name} is not an end transaction marker type")
        if self.producer_id == -1:
            raise RecordBuilderError("End transaction marker requires a valid producerId")
        if not self.is_transactional:
            raise RecordBuilderError("End transaction marker depends on batch transactional flag being enabled")
        marker = EndTransactionMarker(ctype, coordinator_epoch)
        return self.append_control(ctype, marker.value(), timestamp, offset)

    def override_last_offset(self, offset: int) -> None:
        """Write ``offset`` as the batch's last offset (Kafka's overrideLastOffset).

        Compaction keeps a batch's original last offset (and so its last
        sequence) even when its last records were removed.
        """
        last = self.last_offset
        if last is not None and offset < last:
            raise RecordBuilderError(f"last offset {offset} is below the last appended offset {last}")
        self._last_offset_override = offset

    # -- building -------------------------------------------------------------
    def build(self):
        """Write header, CRC-32C and (compressed) records; see the class doc for who owns the result.

        Without a pool the result is a new ``bytes``; with one it is a
        :class:`~kcodec.records.PooledBuffer` to ``release()`` after use.
        """
        if self._built:
            raise RecordBuilderError("build() was already called")
        records = self._writer
        if records.count == 0:
            raise RecordBuilderError("cannot build a batch without records (Kafka writes nothing)")
        self._built = True
        records.closed = True
        if self.compression_id == 0:
            payload = records
        else:
            payload = self.codec.compress(records, self.level, magic=2)
        n_payload = len(memoryview(payload))
        self.compression_ratio = n_payload / max(records.size, 1)
        attributes = self.compression_id
        if self.timestamp_type == TimestampType.LOG_APPEND_TIME:
            attributes |= TIMESTAMP_TYPE_MASK
            max_ts = self.log_append_time
        else:
            max_ts = records.max_timestamp
        if self.is_transactional:
            attributes |= TRANSACTIONAL_MASK
        if self.is_control:
            attributes |= CONTROL_MASK
        if self.delete_horizon_ms is not None:
            attributes |= DELETE_HORIZON_MASK
            base_ts = self.delete_horizon_ms
        else:
            base_ts = records.first_timestamp
        if base_ts < 0 and base_ts != _NO_TIMESTAMP:
            raise RecordBuilderError(f"Invalid message timestamp {base_ts}")
        last = records.last_offset if self._last_offset_override is None else self._last_offset_override
        fields = (self.base_offset, self.partition_leader_epoch, attributes, last - self.base_offset, base_ts,
                  max_ts, self.producer_id, self.producer_epoch, self.base_sequence, records.count)
        if self.pool is None:
            out = assemble_batch(payload, *fields)
        else:
            total = RECORD_BATCH_OVERHEAD + n_payload
            buf = self.pool.get(total)
            assemble_batch(payload, *fields, out=buf)
            out = self.pool.wrap(buf, total)
            del payload
            # The records are in the output now: keep the counters, give the memory back.
            self._writer = SimpleNamespace(
                count=records.count, size=records.size, next_offset=records.next_offset,
                last_offset=records.last_offset, has_records=records.has_records,
                max_timestamp=records.max_timestamp, delta_base=records.delta_base)
            self.pool.give_writer(records)
        self.append = self.append_many = self._closed_append
        return out

    def _closed_append(self, *args, **kwargs):
        raise RecordBuilderError("this builder has already built its batch")


def _legacy_builder(magic: int, **kwargs):
    from kcodec.records.legacy import LegacyRecordBatchBuilder

    v2_only = {"producer_id": -1, "producer_epoch": -1, "base_sequence": -1, "is_transactional": False,
               "is_control": False, "partition_leader_epoch": -1, "delete_horizon_ms": None,
               "estimated_compression_ratio": 1.0}
    for name, default in v2_only.items():
        value = kwargs.pop(name, default)
        if value != default and not (name == "delete_horizon_ms" and value is not None and value < 0):
            if name in ("is_transactional",):
                raise RecordBuilderError(f"Transactional records cannot be used with magic version {magic}")
            if name in ("producer_id", "producer_epoch", "base_sequence"):
                raise RecordBuilderError(f"Idempotent records cannot be used with magic version {magic}")
            if name == "is_control":
                raise RecordBuilderError(f"Control records cannot be used with magic version {magic}")
            if name == "delete_horizon_ms":
                raise RecordBuilderError(f"Delete horizon is only supported with magic version 2, not {magic}")
    return LegacyRecordBatchBuilder(magic=magic, **kwargs)
