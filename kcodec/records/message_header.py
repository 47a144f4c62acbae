"""The v0/v1 message header (Kafka's ``LegacyRecord``): its layout and every in-place change.

``offset int64 | size int32 | crc uint32 | magic int8 | attributes int8 |
[timestamp int64, v1] | key | value``.  The CRC-32 covers everything from the
magic to the end of the message.  Offsets here count from the start of the
entry (the log overhead included); the C code reads the same layout through
``csrc/kc_message.h``.
"""
from __future__ import annotations

import struct
from typing import Any, Optional, Tuple, Union

from kcodec._native.primitives import crc32
from kcodec._native.records import LAYOUT
from kcodec.compression import CompressionType
from kcodec.records.framing import LOG_OVERHEAD

__all__ = ["OFFSET", "SIZE", "CRC", "MAGIC", "ATTRIBUTES", "TIMESTAMP", "HEADER_V0", "HEADER_V1",
           "HEADER_SIZE_V0", "HEADER_SIZE_V1", "RECORD_OVERHEAD_V0", "RECORD_OVERHEAD_V1", "COMPRESSION_MASK",
           "TIMESTAMP_TYPE_MASK", "NO_TIMESTAMP", "compression_of", "record_overhead", "record_size",
           "last_offset_and_max_timestamp", "seal", "set_last_offset", "set_max_timestamp"]

# csrc/kc_message.h counts from the message, after the log overhead: here from the entry.
OFFSET: int = LAYOUT["KC_ENTRY_OFFSET"]  #: 0, as in every entry
SIZE: int = LAYOUT["KC_ENTRY_SIZE"]  #: 8, as in every entry
CRC: int = LOG_OVERHEAD + LAYOUT["KC_MSG_CRC"]  #: 12
MAGIC: int = LOG_OVERHEAD + LAYOUT["KC_MSG_MAGIC"]  #: 16, also where the CRC-32's span starts
ATTRIBUTES: int = LOG_OVERHEAD + LAYOUT["KC_MSG_ATTRIBUTES"]  #: 17
TIMESTAMP: int = LOG_OVERHEAD + LAYOUT["KC_MSG_TIMESTAMP"]  #: 18, v1 only

# LegacyRecord's sizes count from the message, after the log overhead, as Kafka's do.
HEADER_SIZE_V0: int = LAYOUT["KC_MSG_HEADER_SIZE_V0"]  #: 6: crc, magic, attributes
HEADER_SIZE_V1: int = LAYOUT["KC_MSG_HEADER_SIZE_V1"]  #: 14: + timestamp
RECORD_OVERHEAD_V0: int = LAYOUT["KC_MSG_OVERHEAD_V0"]  #: 14: + key and value lengths
RECORD_OVERHEAD_V1: int = LAYOUT["KC_MSG_OVERHEAD_V1"]  #: 22

#: offset, size, crc, magic, attributes[, timestamp]: a whole message header
HEADER_V0 = struct.Struct(">qiIbb")
HEADER_V1 = struct.Struct(">qiIbbq")

COMPRESSION_MASK: int = LAYOUT["KC_MSG_COMPRESSION_MASK"]  #: 0x07
TIMESTAMP_TYPE_MASK: int = LAYOUT["KC_MSG_TIMESTAMP_TYPE"]  #: 0x08, LogAppendTime (v1)

NO_TIMESTAMP = -1

_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_COMPRESSION_TYPES = tuple(CompressionType)


def compression_of(codec_id: int) -> Union[CompressionType, int]:
    """The codec of the attributes' codec bits: a CompressionType, or the id itself for the plugin ids 5-7."""
    return _COMPRESSION_TYPES[codec_id] if codec_id < len(_COMPRESSION_TYPES) else codec_id


def record_overhead(magic: int) -> int:
    """A message's size without its key and value (``LegacyRecord.recordOverhead``): v0's, or v1's for any
    other magic, as Kafka reads them."""
    return RECORD_OVERHEAD_V0 if magic == 0 else RECORD_OVERHEAD_V1


def record_size(magic: int, key: Optional[bytes], value: Optional[bytes]) -> int:
    """Size of one message after the 12-byte log overhead (``LegacyRecord.recordSize``)."""
    return record_overhead(magic) + (0 if key is None else len(key)) + (0 if value is None else len(value))


def last_offset_and_max_timestamp(buf: Any, pos: int, magic: int) -> Tuple[int, int]:
    """(offset, timestamp) of the message (or wrapper) at ``pos``; v0 has no timestamp (-1)."""
    offset = _I64.unpack_from(buf, pos + OFFSET)[0]
    return offset, (_I64.unpack_from(buf, pos + TIMESTAMP)[0] if magic == 1 else NO_TIMESTAMP)


def seal(buf: bytearray, pos: int, size: int) -> None:
    """Store the CRC-32 of the message of ``size`` bytes (log overhead included) at ``pos``."""
    _U32.pack_into(buf, pos + CRC, crc32(memoryview(buf)[pos + MAGIC:pos + size]))


def set_last_offset(buf: bytearray, pos: int, last_offset: int) -> None:
    """``AbstractLegacyRecordBatch.setLastOffset``: the entry (wrapper) offset, outside the CRC."""
    _I64.pack_into(buf, pos + OFFSET, last_offset)


def set_max_timestamp(buf: bytearray, pos: int, size: int, batch: Any, log_append_time: bool, ts: int) -> None:
    """``ByteBufferLegacyRecordBatch.setMaxTimestamp`` for v1: timestamp, attributes, CRC-32; v0 has none."""
    if batch.magic == 0:
        return
    current_lat = bool(buf[pos + ATTRIBUTES] & TIMESTAMP_TYPE_MASK)
    if current_lat == bool(log_append_time) and _I64.unpack_from(buf, pos + TIMESTAMP)[0] == ts:
        return
    attrs = int(batch.compression) & COMPRESSION_MASK
    if log_append_time:
        attrs |= TIMESTAMP_TYPE_MASK
    buf[pos + ATTRIBUTES] = attrs
    _I64.pack_into(buf, pos + TIMESTAMP, ts)
    seal(buf, pos, size)
