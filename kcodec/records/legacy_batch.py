"""``LegacyRecordBatch``: a view of one message format v0/v1 entry (Kafka's ``AbstractLegacyRecordBatch``).

A v0/v1 log entry is one *message*: ``offset:int64, size:int32`` followed by

==========  ======  ======  ==========================================
field       v0 at   v1 at   notes
==========  ======  ======  ==========================================
crc         0       0       uint32 CRC-32 (IEEE) of [magic, end)
magic       4       4       0 or 1
attributes  5       5       bits 0-2 codec, bit 3 LogAppendTime (v1)
timestamp   --      6       int64
keyLength   6       14      int32, negative = null
key
valueLength                 int32, negative = null
value
==========  ======  ======  ==========================================

An uncompressed entry holds exactly one record.  A compressed entry is a
*wrapper*: null key, codec in the attributes, and a value that decompresses
to a sequence of complete inner entries (uncompressed messages).  Kafka's
Java client calls each top-level entry a "batch"; :class:`LegacyRecordBatch`
follows it so v0/v1 data and v2 record batches share one interface.

Offsets inside a v1 wrapper are relative (0..n-1) and the wrapper carries
the absolute offset of the last inner message; v0 inner offsets are
absolute.  Both rules, and Kafka's accommodations for librdkafka (wrapper
offset 0) and for LogAppendTime wrappers, are reproduced exactly
(``AbstractLegacyRecordBatch.DeepRecordsIterator`` in Kafka).  The layout's
offsets and sizes are :mod:`kcodec.records.message_header`'s; the writer is
:class:`kcodec.records.legacy_builder.LegacyRecordBatchBuilder`.
"""
from __future__ import annotations

import struct
from typing import TYPE_CHECKING, Any, FrozenSet, Iterator, List, Optional, Tuple, Union

from kcodec._native.legacy import check_crc, parse_message, scan_inner, value_span
from kcodec._native.native_codec import native_of
from kcodec._native.primitives import crc32
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType, get_codec
from kcodec.errors import CorruptRecordError, InvalidRecordError, KcodecError
from kcodec.records import message_header
from kcodec.records.framing import LOG_OVERHEAD, byte_view, java_long
from kcodec.records.message_header import COMPRESSION_MASK, NO_TIMESTAMP, TIMESTAMP_TYPE_MASK, compression_of
from kcodec.records.record import Record

if TYPE_CHECKING:
    from kcodec.records.pool import BufferPool

#: Anything with the buffer protocol: bytes, bytearray, memoryview, mmap, numpy arrays.
BufferLike = Any

__all__ = ["LegacyRecordBatch", "BufferLike"]

_OFFSET_SIZE = struct.Struct(">qi")
_CRC = struct.Struct(">I")  # the message's first field after the log overhead
_TIMESTAMP = struct.Struct(">q")

_TS_TYPES = (TimestampType.CREATE_TIME, TimestampType.LOG_APPEND_TIME)


def _ensure_crc(data: Any, start: int, end: int, position: int) -> None:
    """Kafka's ``LegacyRecord.ensureValid`` for the message in ``data[start:end]``."""
    bad = check_crc(data, start, end)
    if bad is not None:
        raise CorruptRecordError(
            f"Record is corrupt (stored crc = {bad[0]}, computed crc = {bad[1]})", position=position)


class LegacyRecordBatch:
    """One top-level v0/v1 entry: an uncompressed message or a compressed wrapper.

    ``buf`` is any buffer; the batch is a view of ``buf[position:position+size]``
    and copies nothing until records are read.  ``size`` is the whole entry
    including the 12-byte log overhead; when omitted it is read from the
    entry's size field.

    The interface is the one :class:`kcodec.records.RecordBatch` offers, with
    the values Kafka's ``AbstractLegacyRecordBatch`` reports: no producer
    state, no headers, ``base_timestamp`` None, v0 timestamps -1 with
    ``NO_TIMESTAMP_TYPE``.  ``base_offset`` and ``record_count`` of a
    compressed wrapper decompress it (once: the inner entries are cached so
    the batch can be iterated many times).

    ``pool`` is accepted for symmetry with :class:`kcodec.records.RecordBatch`;
    a wrapper's inner set is decompressed once by its codec and kept with the
    batch, so no pooled buffer is borrowed.

    Validation: :meth:`ensure_valid` checks the CRC-32 of the entry itself,
    as Kafka's ``batch.ensureValid()`` does.  ``ensure_valid(deep=True)``
    also checks every inner message of a compressed wrapper, which is what
    Kafka's consumer (``check.crcs``) and broker do record by record.  With
    ``validate=True`` (what :func:`kcodec.read_batches` passes by default)
    those inner checks run whenever the wrapper is decompressed, so reading
    its records raises instead of yielding corrupt ones.  The inner checks
    are the CRC-32 of every inner message and its size: Kafka's reader ends
    the set silently at a message that runs past the end of the decompressed
    value (or fails to allocate it), kcodec raises CorruptRecordError.
    """

    __slots__ = ("_mv", "position", "size_in_bytes", "_max_size", "_pool", "_offset",
                 "_magic", "_attributes", "_timestamp", "_crc", "_inner", "_base", "_data", "_validate")

    def __init__(self, buf: BufferLike, position: int = 0, size: Optional[int] = None, *,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                 pool: Optional["BufferPool"] = None, validate: bool = False) -> None:
        mv = byte_view(buf)
        n = len(mv)
        if position < 0 or n - position < LOG_OVERHEAD:
            raise CorruptRecordError(
                f"A legacy entry needs at least {LOG_OVERHEAD} bytes at position {position}, "
                f"the buffer has {max(0, n - position)}", position=position)
        offset, size_field = _OFFSET_SIZE.unpack_from(mv, position)
        if size is None:
            size = size_field + LOG_OVERHEAD
        if size < LOG_OVERHEAD or size > n - position:
            raise CorruptRecordError(
                f"Legacy entry of {size} bytes does not fit in the {n - position} bytes left",
                position=position)
        self._mv = mv
        self.position = position
        self.size_in_bytes = size
        self._max_size = max_decompressed_size
        self._pool = pool
        self._validate = validate
        self._offset = offset
        # Fields up to the timestamp; a message too short for them is reported
        # by ensure_valid() with Kafka's text, and here read as zero.
        h = message_header
        self._crc = _CRC.unpack_from(mv, position + h.CRC)[0] if size >= h.MAGIC else 0
        magic = mv[position + h.MAGIC] if size > h.MAGIC else 0
        self._magic = magic - 256 if magic > 127 else magic
        self._attributes = mv[position + h.ATTRIBUTES] if size > h.ATTRIBUTES else 0
        if self._magic != 0 and size - LOG_OVERHEAD >= h.HEADER_SIZE_V1:
            self._timestamp = _TIMESTAMP.unpack_from(mv, position + h.TIMESTAMP)[0]
        else:
            self._timestamp = NO_TIMESTAMP
        # Inner framing of a wrapper, (offset, start, end, magic, attributes) per
        # message in the decompressed ``_data``, and what to add to its offsets.
        self._inner: Optional[List[tuple]] = None
        self._base = 0
        self._data = None

    # -- the common batch interface ----------------------------------------
    @property
    def magic(self) -> int:
        return self._magic

    @property
    def attributes(self) -> int:
        """The attribute byte of the (wrapper) message."""
        return self._attributes

    @property
    def offset(self) -> int:
        """The offset field of the (wrapper) message (= :attr:`last_offset`)."""
        return self._offset

    @property
    def compression(self) -> Union[CompressionType, int]:
        """Codec of the entry (an int for plugin ids 5-7)."""
        return compression_of(self._attributes & COMPRESSION_MASK)

    @property
    def compression_id(self) -> int:
        """The codec bits of the attributes (0-7), whether or not a codec is known for them."""
        return self._attributes & COMPRESSION_MASK

    @property
    def is_compressed(self) -> bool:
        return (self._attributes & COMPRESSION_MASK) != 0

    @property
    def timestamp_type(self) -> TimestampType:
        if self._magic == 0:
            return TimestampType.NO_TIMESTAMP_TYPE
        return _TS_TYPES[(self._attributes & TIMESTAMP_TYPE_MASK) >> 3]

    @property
    def max_timestamp(self) -> int:
        """v1: the message timestamp (a wrapper's is the max or the LogAppendTime); v0: -1."""
        return self._timestamp

    @property
    def base_timestamp(self) -> None:
        return None

    @property
    def delete_horizon_ms(self) -> None:
        return None

    @property
    def base_offset(self) -> int:
        """Offset of the first record (decompresses a wrapper)."""
        if not self.is_compressed:
            return self._offset
        return java_long(self._inner_entries()[0][0] + self._base)

    @property
    def last_offset(self) -> int:
        """The entry's offset field: for a wrapper, Kafka's last offset of the set."""
        return self._offset

    @property
    def next_offset(self) -> int:
        return java_long(self._offset + 1)

    producer_id = property(lambda self: -1, doc="Always -1: v0/v1 carry no producer state.")
    producer_epoch = property(lambda self: -1, doc="Always -1.")
    base_sequence = property(lambda self: -1, doc="Always -1.")
    last_sequence = property(lambda self: -1, doc="Always -1.")
    is_transactional = property(lambda self: False, doc="Always False.")
    has_producer_id = property(lambda self: False, doc="Always False.")
    has_delete_horizon = property(lambda self: False, doc="Always False.")
    is_control = property(lambda self: False, doc="Always False.")
    partition_leader_epoch = property(lambda self: -1, doc="Always -1.")

    @property
    def crc(self) -> int:
        """The stored CRC-32 of the (wrapper) message, unsigned."""
        return self._crc

    @property
    def record_count(self) -> int:
        """Number of records: 1, or the number of inner messages (decompresses)."""
        if not self.is_compressed:
            return 1
        return len(self._inner_entries())

    @property
    def inner_magics(self) -> FrozenSet[int]:
        """The magic bytes of the records: a wrapper's inner messages' (decompresses), else the entry's own.
        A wrapper whose inner magic differs from its own is what KAFKA-4298 left in logs."""
        if not self.is_compressed:
            return frozenset((self._magic,))
        return frozenset(e[3] for e in self._inner_entries())

    def message_headers(self) -> List[Tuple[int, int, int]]:
        """(magic, attributes, stored CRC-32) of the message each record comes from, in the records'
        order: a wrapper's inner messages (decompresses), else the entry's own message."""
        if not self.is_compressed:
            return [(self._magic, self._attributes, self._crc)]
        inner = self._inner_entries()
        data: Any = self._data  # set by the read of the inner messages
        return [(magic, attributes, _CRC.unpack_from(data, start)[0]) for _, start, _, magic, attributes in inner]

    @property
    def raw(self) -> memoryview:
        """The entry's bytes, a view into the source buffer."""
        return self._mv[self.position:self.position + self.size_in_bytes]

    def __len__(self) -> int:
        return self.record_count

    def __repr__(self) -> str:
        return (f"LegacyRecordBatch(magic={self._magic}, offset={self._offset}, "
                f"compression={getattr(self.compression, 'kafka_name', self.compression)}, "
                f"position={self.position}, size={self.size_in_bytes})")

    # -- validation ----------------------------------------------------------
    def compute_checksum(self) -> int:
        """CRC-32 of the message from its magic byte to its end (what :attr:`crc` should be)."""
        start = self.position + message_header.MAGIC
        end = self.position + self.size_in_bytes
        return crc32(self._mv[min(start, end):end])

    def is_valid(self, deep: bool = False) -> bool:
        try:
            self.ensure_valid(deep=deep)
        except KcodecError:
            return False
        return True

    def ensure_valid(self, deep: bool = False) -> None:
        """Check the CRC-32 of the entry (Kafka's ``LegacyRecord.ensureValid``).

        With ``deep=True`` a compressed wrapper is also decompressed and every
        inner message's size and CRC is checked, as Kafka's broker does for
        compressed v0/v1 (``LogValidator``) and its consumer does record by
        record.  Errors carry the entry's position and offset.
        """
        start = self.position + LOG_OVERHEAD
        try:
            _ensure_crc(self._mv, start, self.position + self.size_in_bytes, start)
        except KcodecError as e:
            raise e.with_context(batch_offset=self._offset)
        if deep and self.is_compressed:
            self._inner_entries()
            if not self._validate:  # else checked when the set was decompressed
                try:
                    scan_inner(self._data, True)
                except KcodecError as e:
                    raise e.with_context(position=self.position, batch_offset=self._offset) from None

    # -- records ---------------------------------------------------------------
    def __iter__(self) -> Iterator[Record]:
        if not self.is_compressed:
            start = self.position + LOG_OVERHEAD
            try:
                _crc, _magic, _attrs, ts, key, value = parse_message(
                    self._mv, start, self.position + self.size_in_bytes)
            except KcodecError as e:
                raise e.with_context(batch_offset=self._offset)
            yield Record(self._offset, ts, self.timestamp_type, key, value)
            return
        inner = self._inner_entries()
        data = self._data
        base = self._base
        wrapper_ts = self._timestamp
        wrapper_lat = self._magic == 1 and (self._attributes & TIMESTAMP_TYPE_MASK) != 0
        wrapper_type = self.timestamp_type
        no_type = TimestampType.NO_TIMESTAMP_TYPE
        for offset, start, end, magic, attributes in inner:
            if attributes & COMPRESSION_MASK:
                raise InvalidRecordError("Inner messages must not be compressed",
                                         position=self.position, batch_offset=self._offset)
            try:
                _crc, _magic, _attrs, ts, key, value = parse_message(data, start, end)
            except KcodecError as e:
                # A position inside the decompressed set does not map onto the
                # buffer; the wrapper's position does.
                e.position = None
                raise e.with_context(position=self.position, batch_offset=self._offset) from None
            offset = java_long(offset + base)
            if magic == 1:
                # Inner v1 messages take the wrapper's timestamp type, and its
                # timestamp when the wrapper says LogAppendTime.
                yield Record(offset, wrapper_ts if wrapper_lat else ts, wrapper_type, key, value)
            elif magic == 0:
                yield Record(offset, NO_TIMESTAMP, no_type, key, value)
            else:
                yield Record(offset, ts, _TS_TYPES[(attributes & TIMESTAMP_TYPE_MASK) >> 3], key, value)

    def records(self) -> List[Record]:
        return list(self)

    def message_key(self) -> Optional[bytes]:
        """Key of the (wrapper) message itself."""
        try:
            return parse_message(self._mv, self.position + LOG_OVERHEAD, self.position + self.size_in_bytes)[4]
        except KcodecError as e:
            raise e.with_context(batch_offset=self._offset)

    def message_value(self) -> Optional[memoryview]:
        """Value of the (wrapper) message itself, a view: for a wrapper, the compressed set."""
        try:
            pos, length = value_span(self._mv, self.position + LOG_OVERHEAD, self.position + self.size_in_bytes)
        except KcodecError as e:
            raise e.with_context(batch_offset=self._offset)
        return None if length < 0 else self._mv[pos:pos + length]

    def _inner_entries(self) -> List[tuple]:
        if self._inner is None:
            try:
                self._inner = self._read_inner()
            except KcodecError as e:
                # _read_inner reports absolute positions where it knows one;
                # errors about the set as a whole point at the wrapper.
                if e.position is None:
                    e.position = self.position
                raise e.with_context(batch_offset=self._offset) from None
        return self._inner

    def _read_inner(self) -> List[tuple]:
        magic = self._magic
        if magic not in (0, 1):
            raise InvalidRecordError(f"Invalid wrapper magic found in legacy deep record iterator {magic}")
        codec_id = self._attributes & COMPRESSION_MASK
        if codec_id == CompressionType.ZSTD:
            # Kafka's message prints the magic, not the codec.
            raise InvalidRecordError(
                f"Invalid wrapper compressionType found in legacy deep record iterator {magic}")
        start = self.position + LOG_OVERHEAD
        value_pos, length = value_span(self._mv, start, self.position + self.size_in_bytes)
        if length < 0:
            raise InvalidRecordError(
                f"Found invalid compressed record set with null value (magic = {magic})")
        try:
            codec = get_codec(codec_id)
            value = self._mv[value_pos:value_pos + length]
            native = native_of(codec)
            if native is not None:
                data = native.decompress(value, magic, self._max_size)
            else:
                data = codec.decompress(value, magic=magic, max_size=self._max_size)
        except KcodecError as e:
            # Codec positions count from the start of the compressed value.
            if e.position is not None:
                e.position += value_pos
            raise
        if not isinstance(data, (bytes, bytearray)):
            data = byte_view(data)
        entries, _stop = scan_inner(data, self._validate)
        if not entries:
            raise InvalidRecordError("Found invalid compressed record set with no inner records")
        base = 0
        if magic == 1:
            wrapper_offset = self._offset
            # librdkafka writes wrapper offset 0: inner offsets are then used as they are.
            if wrapper_offset != 0:
                last_inner = entries[-1][0]
                if wrapper_offset < last_inner:
                    raise InvalidRecordError(
                        "Found invalid wrapper offset in compressed v1 message set, wrapper offset "
                        f"'{wrapper_offset}' is less than the last inner message offset "
                        f"'{last_inner}' and it is not zero.")
                base = java_long(wrapper_offset - last_inner)
        self._data = data
        self._base = base
        return entries
