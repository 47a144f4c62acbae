"""``LegacyRecordBatchBuilder``: writes v0/v1 message sets as Kafka's ``MemoryRecordsBuilder`` does.

The layout is :mod:`kcodec.records.message_header`'s; each message is written by
the native ``append_message``, and a compressed set's wrapper here.
"""
from __future__ import annotations

import struct
import time
from typing import TYPE_CHECKING, Optional, Sequence, Union, cast

from kcodec._native.legacy import append_message
from kcodec._native.native_codec import native_of
from kcodec.compression import CompressionType, TimestampType, get_codec
from kcodec.errors import RecordBuilderError, UnsupportedCodecError
from kcodec.records import message_header
from kcodec.records.framing import LOG_OVERHEAD
from kcodec.records.message_header import (
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_MASK,
    compression_of,
    record_overhead,
    record_size,
)

if TYPE_CHECKING:
    from kcodec.records.pool import BufferPool
    from kcodec.records.record import Record

__all__ = ["LegacyRecordBatchBuilder"]

_INT32 = struct.Struct(">i")


def _now_ms() -> int:
    return int(time.time() * 1000)


_FLOAT = struct.Struct("<f")
_INT32_MAX = 2**31 - 1


def _f32(x: float) -> float:
    # Round to the nearest 32-bit float.  The product of two such floats is
    # exact in a double, so rounding it again gives Java's float product.
    return _FLOAT.unpack(_FLOAT.pack(x))[0]


_F32_ESTIMATION_FACTOR = _f32(1.05)  # MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR


class LegacyRecordBatchBuilder:
    """Write a v0/v1 message set exactly as Kafka's ``MemoryRecordsBuilder`` does.

    Uncompressed: one message per record, each with its absolute offset.
    Compressed: one wrapper message whose offset is the last absolute offset,
    key null, value the compressed inner messages (v1: offsets relative to
    ``base_offset``; v0: absolute), timestamp the maximum inner timestamp or
    ``log_append_time``.  With LogAppendTime every message is written with
    ``log_append_time`` and attribute bit 3 set (v1).  LZ4 with magic 0 gets
    the header checksum Kafka wrote before KIP-57 (the codec handles it).

    ``pool`` is accepted for symmetry with the v2 builder; messages are
    written into a private ``bytearray`` and :meth:`build` returns ``bytes``.

    Like Kafka's builder, :meth:`append` does not enforce ``write_limit``;
    callers ask :meth:`has_room_for` first (the first record always fits).
    For compressed sets the size estimate uses ``estimated_compression_ratio``
    (compressed/uncompressed, 1.0 by default), the value Kafka's producer
    learns per topic and codec from earlier batches.
    """

    def __init__(self, magic: int = 1, compression: Union[CompressionType, int, str] = CompressionType.NONE,
                 level: Optional[int] = None, base_offset: int = 0,
                 timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                 log_append_time: Optional[int] = None, write_limit: Optional[int] = None,
                 pool: Optional["BufferPool"] = None, estimated_compression_ratio: float = 1.0) -> None:
        if magic not in (0, 1):
            raise RecordBuilderError(f"LegacyRecordBatchBuilder writes magic 0 or 1, not {magic!r}")
        if isinstance(compression, (CompressionType, str)) or (
                isinstance(compression, int) and 0 <= compression <= 4):
            ctype = CompressionType.of(compression)
            codec_id = int(ctype)
        else:
            codec_id = get_codec(compression).id
            ctype = None
        if codec_id == CompressionType.ZSTD:
            raise UnsupportedCodecError(
                f"Compression type zstd is not supported for magic {magic}: zstd needs magic v2")
        self._codec = get_codec(codec_id)
        # A plugin codec says which magics its framing is defined for.
        self._codec.check_magic(magic)
        self._level = self._codec.resolve_level(level)
        if ctype is not None and level is None:
            self._level = None  # the codec's own default == Kafka's
        timestamp_type = TimestampType(timestamp_type)
        if magic > 0 and timestamp_type == TimestampType.NO_TIMESTAMP_TYPE:
            raise RecordBuilderError("TimestampType must be set for magic >= 0")
        if timestamp_type == TimestampType.LOG_APPEND_TIME and log_append_time is None:
            log_append_time = _now_ms()
        if magic == 1 and codec_id != 0 and base_offset < 0:
            # Inner offsets are relative to base_offset and the wrapper carries
            # the last absolute one; AbstractLegacyRecordBatch's deep iterator
            # refuses a wrapper offset below the last inner offset and takes a
            # wrapper offset of 0 as "inner offsets are absolute", so no
            # negative base can be read back as written.
            raise RecordBuilderError(
                f"a compressed v1 message set cannot start at the negative offset {base_offset}: "
                "Kafka could not read its offsets back")
        self.magic = magic
        self.compression = compression_of(codec_id)
        self.base_offset = base_offset
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.write_limit = write_limit
        if not estimated_compression_ratio > 0:
            raise RecordBuilderError(
                f"estimated_compression_ratio must be positive, not {estimated_compression_ratio!r}")
        self.estimated_compression_ratio = estimated_compression_ratio
        self._ratio = _f32(estimated_compression_ratio)
        self._pool = pool
        self._codec_id = codec_id
        self._lat = timestamp_type == TimestampType.LOG_APPEND_TIME
        self._attributes = TIMESTAMP_TYPE_MASK if (self._lat and magic > 0) else 0
        self._buf = bytearray()
        self._count = 0
        self._last_offset: Optional[int] = None
        self._max_timestamp = NO_TIMESTAMP
        self._built: Optional[bytes] = None
        self._overhead = record_overhead(magic)

    # -- appending -------------------------------------------------------------
    @property
    def record_count(self) -> int:
        return self._count

    @property
    def last_offset(self) -> Optional[int]:
        return self._last_offset

    @property
    def next_offset(self) -> int:
        return self.base_offset if self._last_offset is None else self._last_offset + 1

    @property
    def max_timestamp(self) -> int:
        return self._max_timestamp

    @property
    def uncompressed_size(self) -> int:
        """Bytes of messages appended so far (before compression)."""
        return len(self._buf)

    @property
    def estimated_size(self) -> int:
        """Kafka's ``estimatedBytesWritten``.

        A compressed set counts its wrapper header plus the uncompressed
        messages x ``estimated_compression_ratio`` x 1.05, multiplied in
        32-bit floats as Java's ``float`` does, so batches split where Kafka
        splits them.
        """
        if self._codec_id == 0:
            return len(self._buf)
        scaled = _f32(_f32(_f32(len(self._buf)) * self._ratio) * _F32_ESTIMATION_FACTOR)
        return LOG_OVERHEAD + self._overhead + min(int(scaled), _INT32_MAX)

    def is_full(self) -> bool:
        return self._built is not None or (
            self.write_limit is not None and self._count > 0 and self.write_limit <= self.estimated_size)

    def has_room_for(self, key: Optional[bytes], value: Optional[bytes], headers: Sequence = (),
                     timestamp: Optional[int] = None) -> bool:
        """Whether one more record fits under ``write_limit`` (``MemoryRecordsBuilder.hasRoomFor``)."""
        if self.is_full():
            return False
        if self._count == 0 or self.write_limit is None:
            return True
        size = LOG_OVERHEAD + record_size(self.magic, key, value)
        return self.write_limit >= self.estimated_size + size

    def append(self, key: Optional[bytes], value: Optional[bytes], timestamp: Optional[int] = None,
               headers: Sequence = (), offset: Optional[int] = None) -> int:
        """Append one record; returns its offset.

        ``timestamp`` None means now (v1; v0 stores no timestamp).  ``offset``
        None means the next offset; an explicit one must be larger than the
        previous record's.  Headers cannot be written before magic 2.
        """
        if self._built is not None:
            raise RecordBuilderError("Tried to append a record, but the builder was already built")
        if headers:
            raise RecordBuilderError(f"Magic v{self.magic} does not support record headers")
        if timestamp is None:
            timestamp = _now_ms() if self.magic > 0 else NO_TIMESTAMP
        elif timestamp < 0 and timestamp != NO_TIMESTAMP:
            raise RecordBuilderError(f"Invalid negative timestamp {timestamp}")
        if offset is None:
            offset = self.next_offset
        elif self._last_offset is not None and offset <= self._last_offset:
            raise RecordBuilderError(
                f"Illegal offset {offset} following previous offset {self._last_offset} "
                "(Offsets must increase monotonically).")
        if self._lat:
            timestamp = cast(int, self.log_append_time)  # __init__ sets it for LogAppendTime
        inner_offset = offset - self.base_offset if (self.magic > 0 and self._codec_id != 0) else offset
        try:
            append_message(self._buf, inner_offset, self.magic, self._attributes, timestamp, key, value)
        except OverflowError as e:
            raise RecordBuilderError(f"Record too large for a v{self.magic} message: {e}") from None
        self._count += 1
        self._last_offset = offset
        if timestamp > self._max_timestamp:
            self._max_timestamp = timestamp
        return offset

    def append_record(self, record: "Record") -> int:
        """Append a record object (offset, timestamp, key, value); headers are not carried."""
        return self.append(record.key, record.value, record.timestamp, offset=record.offset)

    # -- output ------------------------------------------------------------------
    def build(self) -> bytes:
        """The message set as ``bytes``; RecordBuilderError without records, as for magic 2.

        The result is owned by the caller; building twice returns the same object.
        """
        if self._built is not None:
            return self._built
        if self._count == 0:
            raise RecordBuilderError("cannot build a batch without records (Kafka writes nothing)")
        if self._codec_id == 0:
            out = bytes(self._buf)
        else:
            out = self._wrap()
        self._built = out
        self._buf = bytearray()
        return out

    def _wrap(self) -> bytes:
        native = native_of(self._codec)
        if native is not None:
            level = self._codec.resolve_level(self._level)
            payload = native.compress(self._buf, 0 if level is None else level, self.magic)
        else:
            payload = self._codec.compress(self._buf, level=self._level, magic=self.magic)
        attributes = self._attributes | self._codec_id
        size = self._overhead + len(payload)
        timestamp = self.log_append_time if self._lat else self._max_timestamp
        if self.magic == 0:
            head = message_header.HEADER_V0.pack(self._last_offset, size, 0, 0, attributes)
        else:
            head = message_header.HEADER_V1.pack(self._last_offset, size, 0, 1, attributes, timestamp)
        out = bytearray(head)
        out += b"\xff\xff\xff\xff"  # null key
        out += _INT32.pack(len(payload))
        out += payload
        message_header.seal(out, 0, len(out))
        return bytes(out)
