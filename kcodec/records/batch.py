"""``RecordBatch``: a zero-copy view of one magic v2 record batch (DefaultRecordBatch)."""
from __future__ import annotations

from typing import Any, List

from kcodec._native.records import RecordBatchBase, decode_records, scan_v2_records
from kcodec.errors import KcodecError
from kcodec.records.batch_header import COMPRESSION_MASK, HEADER, TIMESTAMP_TYPE_MASK, increment_sequence
from kcodec.records.control import ControlRecordType, EndTransactionMarker, parse_control_key
from kcodec.records.framing import RECORD_BATCH_OVERHEAD

__all__ = ["RecordBatch", "HEADER", "increment_sequence"]


class RecordBatch(RecordBatchBase):
    """One v2 batch inside a larger buffer; nothing is copied or decoded until asked.

    ``RecordBatch(buf, position=0, size=None, *, max_decompressed_size=...,
    pool=None)``: ``buf`` is any buffer (bytes, bytearray, memoryview, mmap,
    numpy); ``size`` defaults to the batch's own length field.

    Header fields are read-only attributes: ``base_offset``,
    ``partition_leader_epoch``, ``crc`` (stored), ``attributes`` (low byte),
    ``last_offset_delta``, ``base_timestamp``, ``max_timestamp``,
    ``producer_id``, ``producer_epoch``, ``base_sequence``, ``record_count``
    (the header's count), plus the derived ``last_offset``, ``next_offset``,
    ``last_sequence`` (wrapping at 2^31-1), ``compression``,
    ``timestamp_type``, ``is_transactional``, ``is_control``,
    ``delete_horizon_ms`` (None unless the batch has one), ``raw`` and
    ``payload``.  ``position`` and ``size_in_bytes`` locate the batch in
    ``buf``.

    Iterating decodes (and decompresses) the records every time, so a batch
    can be iterated any number of times.  Kafka's reader rules apply: a
    record count of 0 yields nothing without looking at the payload; in a
    LOG_APPEND_TIME batch every record's timestamp is ``max_timestamp``;
    errors are InvalidRecordError/CorruptRecordError with Kafka's messages,
    ``position`` (absolute within ``buf``; the batch's position for errors
    inside decompressed data) and ``batch_offset``.  Codec ids 5-7 raise
    UnsupportedCodecError("Unknown compression type id: N") when the codec
    is needed, unless a plugin registered the id.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return (f"RecordBatch(base_offset={self.base_offset}, last_offset={self.last_offset}, "
                f"count={self.record_count}, compression={self.compression_id}, position={self.position})")

    def records(self) -> List:
        """All records as a list of :class:`~kcodec.records.Record`."""
        count = self._count()
        if count == 0:  # Kafka never looks at the payload of an empty batch
            return []
        data = self.records_data()
        attributes = self.attributes
        compressed = (attributes & COMPRESSION_MASK) != 0
        lat = bool(attributes & TIMESTAMP_TYPE_MASK)
        try:
            out = decode_records(data, count, self.base_offset, self.base_timestamp, self.timestamp_type, lat,
                                 self.max_timestamp, self.base_sequence, self.is_control, compressed)
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

    def check_control_records(self) -> None:
        """Kafka's checks of a control batch's records: each key (ControlRecordType) and each
        COMMIT/ABORT value (EndTransactionMarker); InvalidRecordError naming the batch.  Data
        batches pass without being read."""
        if self.is_control:
            self.records()

    def scan(self) -> Any:
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
