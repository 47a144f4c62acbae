# RecordBatchBase: one v2 batch read in place (header fields, CRC-32C checks,
# decompression, record iteration); writing and reading a bare v2 header.
# Part of kcodec._native.records (included by records.pyx).

# -- v2 batch view -------------------------------------------------------------

cdef object _CREATE_TIME = TimestampType.CREATE_TIME
cdef object _LOG_APPEND_TIME = TimestampType.LOG_APPEND_TIME


cdef class RecordBatchBase:
    """Header fields, checks and record iteration of one v2 batch inside a buffer.

    The buffer is referenced, not copied; every access re-acquires it and
    checks the batch still lies inside, so a buffer that shrank later gives
    CorruptRecordError rather than a stray read.  See
    :class:`kcodec.records.RecordBatch` for the public documentation.
    """

    def __init__(self, buf, Py_ssize_t position=0, size=None, *, max_decompressed_size=None, pool=None):
        cdef Py_buffer view
        cdef Py_ssize_t total
        cdef const uint8_t *p
        PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            if position < 0 or position > view.len:
                raise CorruptRecordError(f"batch position {position} is outside the buffer of {view.len} bytes",
                                         position=position)
            p = <const uint8_t *>view.buf + position
            if size is None:
                if view.len - position < KC_BATCH_LOG_OVERHEAD:
                    raise CorruptRecordError("fewer than 12 bytes left for a batch's offset and size",
                                             position=position)
                total = kc_entry_total(p)
            else:
                total = size
            if total < 0 or total > view.len - position:
                raise CorruptRecordError(
                    f"batch of {total} bytes at {position} runs past the end of the buffer ({view.len} bytes)",
                    position=position)
            self._fill(buf, p, position, total, max_decompressed_size, pool)
        finally:
            PyBuffer_Release(&view)

    cdef void _fill(self, object buf, const uint8_t *p, Py_ssize_t position, Py_ssize_t total,
                    object max_decompressed_size, object pool):
        # The header fields of the batch at p (total bytes, already checked to lie inside buf).
        cdef uint8_t hdr[KC_BATCH_OVERHEAD]
        cdef kc_batch_header_t h
        if total < KC_BATCH_OVERHEAD:
            # too small for a header: ensure_valid() reports it; fields read as zero
            memset(hdr, 0, KC_BATCH_OVERHEAD)
            memcpy(hdr, p, total)
            p = hdr
        self._src = buf
        self.position = position
        self.size_in_bytes = total
        kc_batch_read(p, &h)
        self.base_offset = h.base_offset
        self.batch_length = h.length
        self.partition_leader_epoch = h.partition_leader_epoch
        self._magic = h.magic
        self.crc = h.crc
        # Only the low byte of the attributes is read, as Kafka does ((byte) getShort(21)).
        self.attributes = <uint8_t>h.attributes
        self.last_offset_delta = h.last_offset_delta
        self.base_timestamp = h.base_timestamp
        self.max_timestamp = h.max_timestamp
        self.producer_id = h.producer_id
        self.producer_epoch = h.producer_epoch
        self.base_sequence = h.base_sequence
        self.record_count = h.records_count
        self._max_size = DEFAULT_MAX_DECOMPRESSED_SIZE if max_decompressed_size is None else max_decompressed_size
        self._pool = pool

    cdef int _acquire(self, Py_buffer *view) except -1:
        # The source buffer, checked to still hold the whole batch.
        PyObject_GetBuffer(self._src, view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        if self.position + self.size_in_bytes > view.len:
            PyBuffer_Release(view)
            raise CorruptRecordError("the buffer shrank below the end of this batch",
                                     position=self.position, batch_offset=self.base_offset)
        return 0

    # -- header fields -----------------------------------------------------------
    @property
    def magic(self) -> int:
        return 2

    @property
    def last_offset(self) -> int:
        return kc_add_i64(self.base_offset, self.last_offset_delta)

    @property
    def next_offset(self) -> int:
        return kc_add_i64(kc_add_i64(self.base_offset, self.last_offset_delta), 1)

    @property
    def last_sequence(self) -> int:
        # DefaultRecordBatch.lastSequence: only -1 means "no sequence" here; any other
        # base, negative ones included, is incremented.
        if self.base_sequence == -1:
            return -1
        return _increment_sequence(self.base_sequence, self.last_offset_delta)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id > -1

    @property
    def compression_id(self) -> int:
        return self.attributes & 0x07

    @property
    def compression(self):
        """The CompressionType; ids 5-7 are returned as ints when a plugin handles them."""
        cdef int cid = self.attributes & 0x07
        if cid <= 4:
            return CompressionType(cid)
        get_codec(cid)  # raises "Unknown compression type id: N" unless a plugin registered it
        return cid

    @property
    def timestamp_type(self):
        return _LOG_APPEND_TIME if self.attributes & 0x08 else _CREATE_TIME

    @property
    def is_transactional(self) -> bool:
        return (self.attributes & 0x10) != 0

    @property
    def is_control(self) -> bool:
        return (self.attributes & 0x20) != 0

    @property
    def has_delete_horizon(self) -> bool:
        return (self.attributes & 0x40) != 0

    @property
    def delete_horizon_ms(self):
        return self.base_timestamp if self.attributes & 0x40 else None

    @property
    def raw(self) -> memoryview:
        """The batch's bytes (a view into the source buffer)."""
        return memoryview(self._src).cast("B")[self.position:self.position + self.size_in_bytes]

    @property
    def payload(self) -> memoryview:
        """The records region as stored (compressed or not)."""
        start = self.position + min(<Py_ssize_t>KC_BATCH_OVERHEAD, self.size_in_bytes)
        return memoryview(self._src).cast("B")[start:self.position + self.size_in_bytes]

    def __len__(self) -> int:
        return self.size_in_bytes

    # -- validation ----------------------------------------------------------------
    cdef uint32_t _checksum_at(self, const uint8_t *batch) noexcept:
        # CRC-32C of bytes [21, end) of this batch, which starts at `batch`.
        cdef uint32_t crc
        cdef size_t n = <size_t>self.size_in_bytes
        if n < 65536:
            return kc_batch_checksum(batch, n)
        with nogil:
            crc = kc_batch_checksum(batch, n)
        return crc

    cdef int _ensure_valid_at(self, const uint8_t *batch) except -1:
        # ensure_valid() on this batch's bytes at `batch` (the caller holds the buffer).
        cdef uint32_t computed
        if self.size_in_bytes < KC_BATCH_OVERHEAD:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {self.size_in_bytes} is smaller than the minimum "
                f"allowed overhead {KC_BATCH_OVERHEAD})", position=self.position, batch_offset=self.base_offset)
        computed = self._checksum_at(batch)
        if computed != self.crc:
            raise CorruptRecordError(
                f"Record is corrupt (stored crc = {self.crc}, computed crc = {computed})",
                position=self.position, batch_offset=self.base_offset)
        return 0

    def compute_checksum(self) -> int:
        """CRC-32C of bytes [21, end) of the batch."""
        cdef Py_buffer view
        cdef uint32_t crc
        if self.size_in_bytes <= 21:
            return 0
        self._acquire(&view)
        crc = self._checksum_at(<const uint8_t *>view.buf + self.position)
        PyBuffer_Release(&view)
        return crc

    def is_valid(self) -> bool:
        """Kafka's isValid(): minimum size and CRC-32C."""
        return self.size_in_bytes >= KC_BATCH_OVERHEAD and self.crc == self.compute_checksum()

    def ensure_valid(self) -> None:
        """Kafka's DefaultRecordBatch.ensureValid: minimum size and CRC-32C (CorruptRecordError)."""
        cdef Py_buffer view
        if self.size_in_bytes < KC_BATCH_OVERHEAD:
            self._ensure_valid_at(NULL)  # raises on the size, before the bytes are looked at
        self._acquire(&view)
        try:
            self._ensure_valid_at(<const uint8_t *>view.buf + self.position)
        finally:
            PyBuffer_Release(&view)

    # -- records -------------------------------------------------------------------
    def _count(self) -> int:
        if self.record_count < 0:
            raise InvalidRecordError(f"Found invalid record count {self.record_count} in magic v2 batch",
                                     position=self.position, batch_offset=self.base_offset)
        return self.record_count

    def records_data(self):
        """The uncompressed records region (a view into the source when stored uncompressed)."""
        return self._records_data()

    cdef object _records_data(self):
        cdef int cid = self.attributes & 0x07
        cdef NativeCodec native
        cdef Py_buffer view
        cdef Py_ssize_t start
        if cid == 0:
            return self.payload
        try:
            codec = get_codec(cid)
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)
        # A codec's error names its byte within the payload (or none): the buffer's byte is the payload's start
        # plus that offset, as CRC errors name the buffer's bytes.
        start = self.position + min(<Py_ssize_t>KC_BATCH_OVERHEAD, self.size_in_bytes)
        try:
            native = native_of(codec)
            if native is None:
                return codec.decompress(self.payload, magic=2, max_size=self._max_size)
        except KcodecError as exc:
            raise exc.with_context(position=start, batch_offset=self.base_offset)
        # Straight from the source buffer: no view objects for the payload.
        self._acquire(&view)  # its error names the batch already
        try:
            return native.decompress_at(<const uint8_t *>view.buf + start, self.position + self.size_in_bytes - start,
                                        2, self._max_size, None, self._src, start)
        except KcodecError as exc:
            raise exc.with_context(position=start, batch_offset=self.base_offset)
        finally:
            PyBuffer_Release(&view)

    def _pooled_records(self):
        """:meth:`records_data`, decompressed into a buffer of the batch's pool where it has one
        and its codec native functions: then a PooledBuffer the caller releases."""
        cdef int cid = self.attributes & 0x07
        cdef NativeCodec native
        if cid == 0 or self._pool is None:
            return self.records_data()
        try:
            native = native_of(get_codec(cid))
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)
        if native is None:
            return self.records_data()
        try:
            store, size = native.decompress_buffer(self.payload, 2, self._max_size, self._pool)
        except KcodecError as exc:
            raise exc.with_context(position=self.position + min(<Py_ssize_t>KC_BATCH_OVERHEAD, self.size_in_bytes),
                                   batch_offset=self.base_offset)
        return PooledBuffer(store, size, self._pool)

    def __iter__(self):
        """Decode lazily, one record per step; every call starts again from the first record."""
        cdef bint compressed = (self.attributes & 0x07) != 0
        if self.attributes & 0x20:  # control batches are decoded up front, with their markers
            return iter(self.records())
        if self._count() == 0:  # Kafka never looks at the payload of an empty batch
            return iter(())
        lat = (self.attributes & 0x08) != 0
        tstype = _LOG_APPEND_TIME if lat else _CREATE_TIME
        if compressed:
            return RecordIterator(self._records_data(), self.record_count, self.base_offset, self.base_timestamp,
                                  tstype, lat, self.max_timestamp, self.base_sequence, False, True,
                                  self.position, self.base_offset, True)
        return RecordIterator(self._src, self.record_count, self.base_offset, self.base_timestamp, tstype, lat,
                              self.max_timestamp, self.base_sequence, False, False,
                              self.position + KC_BATCH_OVERHEAD, self.base_offset, False,
                              self.position + KC_BATCH_OVERHEAD, self.position + self.size_in_bytes)


# -- v2 batch header -----------------------------------------------------------

def write_batch_header(out, Py_ssize_t pos, int64_t base_offset, int32_t total_size,
                       int32_t partition_leader_epoch, int16_t attributes, int32_t last_offset_delta,
                       int64_t base_timestamp, int64_t max_timestamp, int64_t producer_id,
                       int16_t producer_epoch, int32_t base_sequence, int32_t records_count) -> int:
    """Write the 61-byte v2 header at ``out[pos:]`` for a batch of ``total_size`` bytes whose
    records are already in place at ``out[pos+61:pos+total_size]``, then its CRC-32C over
    ``[21, total_size)`` (DefaultRecordBatch.writeHeader).  Returns the CRC."""
    cdef Py_buffer view
    cdef uint8_t *p
    cdef uint32_t crc
    PyObject_GetBuffer(out, &view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        if pos < 0 or total_size < KC_BATCH_OVERHEAD or pos > view.len or total_size > view.len - pos:
            raise ValueError("the batch does not fit in the output buffer")
        p = <uint8_t *>view.buf + pos
        with nogil:
            kc_batch_write(p, total_size, base_offset, partition_leader_epoch, attributes, last_offset_delta,
                           base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence, records_count)
        crc = kc_load_be32(p + KC_BATCH_CRC)
    finally:
        PyBuffer_Release(&view)
    return crc


def assemble_batch(records, int64_t base_offset, int32_t partition_leader_epoch, int16_t attributes,
                   int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                   int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                   int32_t records_count, out=None):
    """A whole v2 batch: header + ``records`` (the stored records region) + CRC.

    Returns new ``bytes``, or writes into the writable buffer ``out`` (at
    least 61 + len(records) bytes) and returns the batch size.
    """
    cdef Py_buffer rv
    cdef Py_ssize_t total
    cdef object result
    PyObject_GetBuffer(records, &rv, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        total = KC_BATCH_OVERHEAD + rv.len
        if total > INT32_MAX_:
            raise RecordBuilderError(f"batch of {total} bytes exceeds the int32 size field")
        if out is None:
            result = PyBytes_FromStringAndSize(NULL, total)
            memcpy(PyBytes_AS_STRING(result) + KC_BATCH_OVERHEAD, rv.buf, rv.len)
            kc_batch_write(<uint8_t *>PyBytes_AS_STRING(result), total, base_offset, partition_leader_epoch,
                           attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                           producer_epoch, base_sequence, records_count)
            return result
        mv = memoryview(out)
        if len(mv) < total:
            raise ValueError("output buffer too small")
        mv[KC_BATCH_OVERHEAD:total] = memoryview(records).cast("B")
        write_batch_header(out, 0, base_offset, <int32_t>total, partition_leader_epoch, attributes,
                           last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                           base_sequence, records_count)
        return total
    finally:
        PyBuffer_Release(&rv)


def read_batch_header(buf, Py_ssize_t pos=0) -> tuple:
    """The v2 header fields at ``buf[pos:pos+61]``: (baseOffset, batchLength,
    partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
    maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount)."""
    cdef Py_buffer view
    cdef kc_batch_header_t h
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if pos < 0 or pos > view.len or view.len - pos < KC_BATCH_OVERHEAD:
            raise ValueError("fewer than 61 bytes for a v2 batch header")
        kc_batch_read(<const uint8_t *>view.buf + pos, &h)
        return (h.base_offset, h.length, h.partition_leader_epoch, h.magic, h.crc, h.attributes,
                h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
                h.base_sequence, h.records_count)
    finally:
        PyBuffer_Release(&view)
