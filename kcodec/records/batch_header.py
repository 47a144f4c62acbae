"""The v2 record batch header (Kafka's ``DefaultRecordBatch``): its layout and every in-place change.

``baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
recordsCount int32``, then the records.  The CRC-32C covers everything from the
attributes to the end of the batch.  The offsets and bits are ``csrc/kc_batch.h``'s,
through which the C code reads and writes the same layout.
"""
from __future__ import annotations

import struct
from typing import Any, Tuple

from kcodec._native.primitives import crc32c
from kcodec._native.records import LAYOUT
from kcodec.records.framing import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, java_int

__all__ = [
    "HEADER", "BASE_OFFSET", "LENGTH", "PARTITION_LEADER_EPOCH", "MAGIC", "CRC", "ATTRIBUTES",
    "LAST_OFFSET_DELTA", "BASE_TIMESTAMP", "MAX_TIMESTAMP", "PRODUCER_ID", "PRODUCER_EPOCH",
    "BASE_SEQUENCE", "RECORDS_COUNT", "COMPRESSION_MASK", "TIMESTAMP_TYPE_MASK", "TRANSACTIONAL_MASK",
    "CONTROL_MASK", "DELETE_HORIZON_MASK", "NO_TIMESTAMP", "attributes", "last_offset_and_max_timestamp",
    "seal", "set_last_offset_delta", "set_last_offset", "set_partition_leader_epoch", "set_max_timestamp",
    "empty_header", "increment_sequence",
]

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER = struct.Struct(">qiibIhiqqqhii")

# Field offsets and attribute bits from csrc/kc_batch.h, so that both sides read one layout.
BASE_OFFSET: int = LAYOUT["KC_BATCH_BASE_OFFSET"]  #: 0
LENGTH: int = LAYOUT["KC_BATCH_LENGTH"]  #: 8
PARTITION_LEADER_EPOCH: int = LAYOUT["KC_BATCH_PARTITION_LEADER_EPOCH"]  #: 12
MAGIC: int = LAYOUT["KC_BATCH_MAGIC"]  #: 16
CRC: int = LAYOUT["KC_BATCH_CRC"]  #: 17
ATTRIBUTES: int = LAYOUT["KC_BATCH_ATTRIBUTES"]  #: 21, also where the CRC-32C's span starts
LAST_OFFSET_DELTA: int = LAYOUT["KC_BATCH_LAST_OFFSET_DELTA"]  #: 23
BASE_TIMESTAMP: int = LAYOUT["KC_BATCH_BASE_TIMESTAMP"]  #: 27
MAX_TIMESTAMP: int = LAYOUT["KC_BATCH_MAX_TIMESTAMP"]  #: 35
PRODUCER_ID: int = LAYOUT["KC_BATCH_PRODUCER_ID"]  #: 43
PRODUCER_EPOCH: int = LAYOUT["KC_BATCH_PRODUCER_EPOCH"]  #: 51
BASE_SEQUENCE: int = LAYOUT["KC_BATCH_BASE_SEQUENCE"]  #: 53
RECORDS_COUNT: int = LAYOUT["KC_BATCH_RECORDS_COUNT"]  #: 57

COMPRESSION_MASK: int = LAYOUT["KC_BATCH_COMPRESSION_MASK"]  #: 0x07
TIMESTAMP_TYPE_MASK: int = LAYOUT["KC_BATCH_TIMESTAMP_TYPE"]  #: 0x08, LogAppendTime
TRANSACTIONAL_MASK: int = LAYOUT["KC_BATCH_TRANSACTIONAL"]  #: 0x10
CONTROL_MASK: int = LAYOUT["KC_BATCH_CONTROL"]  #: 0x20
DELETE_HORIZON_MASK: int = LAYOUT["KC_BATCH_DELETE_HORIZON"]  #: 0x40, baseTimestamp holds the delete horizon

NO_TIMESTAMP = -1

_I64 = struct.Struct(">q")
_I32 = struct.Struct(">i")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")


def attributes(compression: int, log_append_time: bool, transactional: bool, control: bool,
               delete_horizon: bool) -> int:
    """``DefaultRecordBatch.computeAttributes``."""
    attrs = int(compression) & COMPRESSION_MASK
    if log_append_time:
        attrs |= TIMESTAMP_TYPE_MASK
    if transactional:
        attrs |= TRANSACTIONAL_MASK
    if control:
        attrs |= CONTROL_MASK
    if delete_horizon:
        attrs |= DELETE_HORIZON_MASK
    return attrs


def last_offset_and_max_timestamp(buf: Any, pos: int, magic: int = 2) -> Tuple[int, int]:
    """(baseOffset + lastOffsetDelta, maxTimestamp) of the batch at ``pos``, read from its header
    (``magic`` is there for the same call as :mod:`~kcodec.records.message_header`'s)."""
    return (_I64.unpack_from(buf, pos + BASE_OFFSET)[0] + _I32.unpack_from(buf, pos + LAST_OFFSET_DELTA)[0],
            _I64.unpack_from(buf, pos + MAX_TIMESTAMP)[0])


def seal(buf: bytearray, pos: int, size: int) -> None:
    """Store the CRC-32C of the batch of ``size`` bytes at ``pos`` (after a change inside its span)."""
    _U32.pack_into(buf, pos + CRC, crc32c(memoryview(buf)[pos + ATTRIBUTES:pos + size]))


def set_last_offset_delta(buf: bytearray, pos: int, size: int, last_offset_delta: int) -> None:
    """``overrideLastOffset``: store lastOffsetDelta in a built batch and recompute its CRC."""
    _I32.pack_into(buf, pos + LAST_OFFSET_DELTA, last_offset_delta)
    seal(buf, pos, size)


def set_last_offset(buf: bytearray, pos: int, last_offset: int) -> None:
    """``DefaultRecordBatch.setLastOffset``: baseOffset = last - lastOffsetDelta (outside the CRC)."""
    delta = _I32.unpack_from(buf, pos + LAST_OFFSET_DELTA)[0]
    _I64.pack_into(buf, pos + BASE_OFFSET, last_offset - delta)


def set_partition_leader_epoch(buf: bytearray, pos: int, epoch: int) -> None:
    """``DefaultRecordBatch.setPartitionLeaderEpoch`` (outside the CRC)."""
    _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH, epoch)


def set_max_timestamp(buf: bytearray, pos: int, size: int, batch: Any, log_append_time: bool, max_ts: int) -> None:
    """``DefaultRecordBatch.setMaxTimestamp``: a no-op when nothing changes, else attributes
    are recomputed from the decoded flags (clearing unknown bits) and the CRC is redone."""
    if bool(batch.attributes & TIMESTAMP_TYPE_MASK) == bool(log_append_time) and batch.max_timestamp == max_ts:
        return
    attrs = attributes(batch.compression, log_append_time, batch.is_transactional, batch.is_control,
                       batch.delete_horizon_ms is not None)
    _I16.pack_into(buf, pos + ATTRIBUTES, attrs)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP, max_ts)
    seal(buf, pos, size)


def empty_header(batch: Any) -> bytes:
    """``DefaultRecordBatch.writeEmptyHeader``: the 61-byte batch the cleaner keeps for producer state.

    Original baseOffset, lastOffsetDelta, producer fields, leader epoch,
    timestamp type, transactional and control bits and maxTimestamp;
    compression NONE, baseTimestamp -1, no delete horizon, zero records.
    """
    attrs = attributes(0, bool(batch.attributes & TIMESTAMP_TYPE_MASK), batch.is_transactional,
                       batch.is_control, False)
    buf = bytearray(RECORD_BATCH_OVERHEAD)
    HEADER.pack_into(
        buf, 0, batch.base_offset, RECORD_BATCH_OVERHEAD - LOG_OVERHEAD, batch.partition_leader_epoch, 2, 0,
        attrs, batch.last_offset - batch.base_offset, NO_TIMESTAMP, batch.max_timestamp,
        batch.producer_id, batch.producer_epoch, batch.base_sequence, 0)
    seal(buf, 0, RECORD_BATCH_OVERHEAD)
    return bytes(buf)


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps from 2^31-1 to 0 (Java int arithmetic)."""
    if sequence > java_int(2147483647 - increment):
        return java_int(increment - java_int(2147483647 - sequence) - 1)
    return java_int(sequence + increment)
