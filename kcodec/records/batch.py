"""``RecordBatch``: a zero-copy view of one magic v2 record batch (DefaultRecordBatch)."""
from __future__ import annotations

import struct
from typing import Iterator, List, Optional, Union

from kcodec._native.primitives import crc32c
from kcodec._native.records import RecordIterator, decode_records, scan_v2_records
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType, get_codec
from kcodec.errors import CorruptRecordError, InvalidRecordError, KcodecError, UnsupportedCodecError
from kcodec.records.control import ControlRecordType, EndTransactionMarker, parse_control_key
from kcodec.records.framing import RECORD_BATCH_OVERHEAD

__all__ = ["RecordBatch", "HEADER", "increment_sequence"]

#: baseOffset, batchLength, partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta,
#: baseTimestamp, maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount
HEADER = struct.Struct(">qiibIhiqqqhii")
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_MASK = 0x10
CONTROL_MASK = 0x20
DELETE_HORIZON_MASK = 0x40


def increment_sequence(sequence: int, increment: int) -> int:
    """Kafka's DefaultRecordBatch.incrementSequence: wraps from 2^31-1 to 0."""
    if sequence > 2147483647 - increment:
        return increment - (2147483647 - sequence) - 1
    return sequence + increment


class RecordBatch:
    """One v2 batch inside a larger buffer; nothing is copied or decoded until asked.

    Header fields are properties.  Iterating decodes (and decompresses) the
    records every time, so a batch can be iterated any number of times.
    """

    __slots__ = ("_mv", "position", "size_in_bytes", "_h", "_max_size", "_pool")
    magic = 2

    def __init__(self, buf, position: int = 0, size: Optional[int] = None, *,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE, pool=None) -> None:
        mv = buf if isinstance(buf, memoryview) and buf.format == "B" else memoryview(buf).cast("B")
        if size is None:
            (length,) = struct.unpack_from(">i", mv, position + 8)
            size = length + 12
        self._mv = mv
        self.position = position
        self.size_in_bytes = size
        if size >= RECORD_BATCH_OVERHEAD:
            self._h = HEADER.unpack_from(mv, position)
        else:  # too small for a header: ensure_valid() reports it, fields read as zero
            self._h = HEADER.unpack_from(bytes(mv[position:position + size]).ljust(RECORD_BATCH_OVERHEAD, b"\0"))
        self._max_size = max_decompressed_size
        self._pool = pool

    # -- header fields --------------------------------------------------
    @property
    def base_offset(self) -> int:
        return self._h[0]

    @property
    def partition_leader_epoch(self) -> int:
        return self._h[2]

    @property
    def crc(self) -> int:
        """The stored CRC-32C."""
        return self._h[4]

    @property
    def attributes(self) -> int:
        # Only the low byte is read, as Kafka does ((byte) getShort(21)).
        return self._h[5] & 0xFF

    @property
    def last_offset_delta(self) -> int:
        return self._h[6]

    @property
    def last_offset(self) -> int:
        return self._h[0] + self._h[6]

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1

    @property
    def base_timestamp(self) -> int:
        return self._h[7]

    @property
    def max_timestamp(self) -> int:
        return self._h[8]

    @property
    def producer_id(self) -> int:
        return self._h[9]

    @property
    def producer_epoch(self) -> int:
        return self._h[10]

    @property
    def base_sequence(self) -> int:
        return self._h[11]

    @property
    def last_sequence(self) -> int:
        base = self._h[11]
        return -1 if base == -1 else increment_sequence(base, self._h[6])

    @property
    def has_producer_id(self) -> bool:
        return self._h[9] > -1

    @property
    def record_count(self) -> int:
        return self._h[12]

    @property
    def compression_id(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def compression(self) -> Union[CompressionType, int]:
        """The CompressionType; ids 5-7 are returned as ints when a plugin handles them."""
        cid = self.attributes & COMPRESSION_MASK
        if cid <= 4:
            return CompressionType(cid)
        get_codec(cid)  # raises "unknown compression type id" unless a plugin registered it
        return cid

    @property
    def timestamp_type(self) -> TimestampType:
        return TimestampType.LOG_APPEND_TIME if self.attributes & TIMESTAMP_TYPE_MASK else TimestampType.CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_MASK)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        return bool(self.attributes & DELETE_HORIZON_MASK)

    @property
    def delete_horizon_ms(self) -> Optional[int]:
        return self._h[7] if self.attributes & DELETE_HORIZON_MASK else None

    @property
    def raw(self) -> memoryview:
        """The batch's bytes (a view into the source buffer)."""
        return self._mv[self.position:self.position + self.size_in_bytes]

    @property
    def payload(self) -> memoryview:
        """The records region as stored (compressed or not)."""
        return self._mv[self.position + RECORD_BATCH_OVERHEAD:self.position + self.size_in_bytes]

    def __len__(self) -> int:
        return self.size_in_bytes

    def __repr__(self) -> str:
        return (f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"count={self.record_count}, compression={self.compression_id}, position={self.position})")

    # -- validation -------------------------------------------------------
    def compute_checksum(self) -> int:
        return crc32c(self._mv[self.position + ATTRIBUTES_OFFSET:self.position + self.size_in_bytes])

    def is_valid(self) -> bool:
        return self.size_in_bytes >= RECORD_BATCH_OVERHEAD and self.crc == self.compute_checksum()

    def ensure_valid(self) -> None:
        """Kafka's DefaultRecordBatch.ensureValid: minimum size and CRC-32C."""
        if self.size_in_bytes < RECORD_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {self.size_in_bytes} is smaller than the minimum "
                f"allowed overhead {RECORD_BATCH_OVERHEAD})", position=self.position, batch_offset=self.base_offset)
        computed = self.compute_checksum()
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                position=self.position, batch_offset=self.base_offset)

    # -- records ----------------------------------------------------------
    def records_data(self):
        """The uncompressed records region (a view when stored uncompressed)."""
        payload = self.payload
        cid = self.attributes & COMPRESSION_MASK
        if cid == 0:
            return payload
        try:
            codec = get_codec(cid)
        except UnsupportedCodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)
        try:
            return codec.decompress(payload, magic=2, max_size=self._max_size)
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)

    def _count(self) -> int:
        count = self.record_count
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch",
                                     position=self.position, batch_offset=self.base_offset)
        return count

    def records(self) -> List:
        """All records as a list of :class:`~kcodec.records.Record`."""
        count = self._count()
        if count == 0:  # Kafka never looks at the payload of an empty batch
            return []
        data = self.records_data()
        compressed = (self.attributes & COMPRESSION_MASK) != 0
        h = self._h
        lat = bool(self.attributes & TIMESTAMP_TYPE_MASK)
        try:
            out = decode_records(data, count, h[0], h[7], self.timestamp_type, lat, h[8], h[11],
                                 self.is_control, compressed)
        except KcodecError as exc:
            if compressed:  # positions inside decompressed data do not map onto the buffer
                exc.position = None
                raise exc.with_context(position=self.position, batch_offset=self.base_offset)
            raise exc.with_context(position=self.position + RECORD_BATCH_OVERHEAD, batch_offset=self.base_offset)
        if self.is_control:
            try:
                for rec in out:
                    ctype, _ = parse_control_key(rec.key)
                    epoch = None
                    if ctype in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                        epoch = EndTransactionMarker.decode(ctype, rec.value).coordinator_epoch
                    rec._set_control(ctype, epoch)
            except KcodecError as exc:
                raise exc.with_context(position=self.position, batch_offset=self.base_offset)
        return out

    def __iter__(self) -> Iterator:
        """Decode lazily, one record per step (control batches are decoded up front)."""
        if self.is_control:
            return iter(self.records())
        count = self._count()
        if count == 0:  # Kafka never looks at the payload of an empty batch
            return iter(())
        data = self.records_data()
        compressed = (self.attributes & COMPRESSION_MASK) != 0
        h = self._h
        return RecordIterator(data, count, h[0], h[7], self.timestamp_type,
                              bool(self.attributes & TIMESTAMP_TYPE_MASK), h[8], h[11], False, compressed,
                              self.position if compressed else self.position + RECORD_BATCH_OVERHEAD,
                              h[0], compressed)

    def scan(self):
        """``(RecordIndex, data)``: offsets and lengths of every record field, without Record objects."""
        count = self._count()
        data = self.records_data() if count else b""
        compressed = (self.attributes & COMPRESSION_MASK) != 0
        try:
            return scan_v2_records(data, count, 0, compressed), data
        except KcodecError as exc:
            if compressed:
                exc.position = None
                raise exc.with_context(position=self.position, batch_offset=self.base_offset)
            raise exc.with_context(position=self.position + RECORD_BATCH_OVERHEAD, batch_offset=self.base_offset)
