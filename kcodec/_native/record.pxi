# Record, its lazily decoded headers, and decoding a records region into Records
# (all at once: decode_records; one per next(): RecordIterator).
# Part of kcodec._native.records (included by records.pyx).

def record_error_message(int code, int32_t length, int32_t bad) -> str:
    """Kafka's text for a record parse failure code of kc_record.h."""
    fmt = kc_record_error_message(code).decode("ascii")
    if code in (KC_REC_SHORT, KC_REC_SIZE_MISMATCH):
        return fmt.replace("%d", str(length), 1).replace("%d", str(bad), 1)
    if code == KC_REC_STREAM_SHORT:
        return fmt.replace("%d", str(length), 1)
    return fmt.replace("%d", str(bad), 1)


cdef _raise_record(int code, kc_record_t *r, Py_ssize_t pos):
    raise InvalidRecordError(record_error_message(code, r.length, r.bad_value), position=pos)


cdef inline object _to_bytes(x):
    if x is None or type(x) is bytes:
        return x
    if isinstance(x, str):
        return (<str>x).encode("utf-8")
    return bytes(memoryview(x))


cdef inline str _header_key(k):
    if isinstance(k, str):
        return <str>k
    return _java_utf8_decode(bytes(memoryview(k)))


cdef str _decode_key(const char *p, Py_ssize_t n):
    # Header keys as Kafka's Java clients see them (String(bytes, UTF_8)): valid UTF-8
    # decodes the same everywhere; malformed keys get Java's U+FFFD placement.
    try:
        return PyUnicode_DecodeUTF8(p, n, NULL)
    except UnicodeDecodeError:
        return _java_utf8_decode(PyBytes_FromStringAndSize(p, n))


@cython.freelist(64)
@cython.final
@cython.no_gc
cdef class Record:
    """One record: offset, timestamp, key, value, headers (read-only).

    ``key``/``value`` are ``bytes`` or ``None`` (null; distinct from ``b""``);
    ``headers`` is a tuple of ``(str, bytes | None)`` in wire order.  For
    control records ``control_type`` is a ControlRecordType and, for COMMIT
    and ABORT, ``coordinator_epoch`` the marker's epoch.

    Records read from an immutable ``bytes`` buffer decode their headers on
    first access (the reader has already checked their structure); the record
    keeps that ``bytes`` object alive until then.  Records read from any
    other buffer own decoded headers from the start, so they never pin or
    observe the caller's memory.

    Records hold only immutable values, so they are not tracked by the cyclic
    garbage collector: reading millions of them does not trigger collections.
    """

    def __init__(self, int64_t offset, int64_t timestamp, timestamp_type, key, value, headers=(),
                 int32_t sequence=-1, bint is_control=False, control_type=None, coordinator_epoch=None):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = _to_bytes(key)
        self.value = _to_bytes(value)
        self._headers = tuple([(_header_key(k), _to_bytes(v)) for k, v in headers]) if headers else ()
        self._hsrc = None
        self.sequence = sequence
        self.is_control = is_control
        self.control_type = control_type
        self.coordinator_epoch = None if coordinator_epoch is None else int(coordinator_epoch)

    @property
    def headers(self) -> tuple:
        if self._headers is None:
            if self._hsrc is None:
                return ()
            self._headers = _headers(self._hp, self._hend, self._hcount)
            self._hsrc = None
        return self._headers

    def _set_control(self, control_type, coordinator_epoch) -> None:
        # Filled in by RecordBatch after it parsed the control key and value.
        self.control_type = control_type
        self.coordinator_epoch = None if coordinator_epoch is None else int(coordinator_epoch)

    def __repr__(self):
        return (f"Record(offset={self.offset}, timestamp={self.timestamp}, key={self.key!r}, "
                f"value={self.value!r}, headers={self.headers!r})")

    def __eq__(self, other):
        if not isinstance(other, Record):
            return NotImplemented
        o = <Record>other
        return (self.offset == o.offset and self.timestamp == o.timestamp and self.key == o.key
                and self.value == o.value and self.headers == o.headers and self.sequence == o.sequence
                and self.is_control == o.is_control)

    __hash__ = None

    def __reduce__(self):
        return (Record, (self.offset, self.timestamp, self.timestamp_type, self.key, self.value,
                         self.headers, self.sequence, self.is_control, self.control_type,
                         self.coordinator_epoch))


kc_expose_object_field(<PyTypeObject *>Record, "key", KC_RECORD_KEY)
kc_expose_object_field(<PyTypeObject *>Record, "value", KC_RECORD_VALUE)
kc_expose_object_field(<PyTypeObject *>Record, "timestamp_type", KC_RECORD_TIMESTAMP_TYPE)


cdef inline object _bytes_or_none(const uint8_t *p, int32_t n):
    if n < 0:
        return None
    return PyBytes_FromStringAndSize(<const char *>p, n)


cdef tuple _headers(const uint8_t *p, const uint8_t *end, int32_t count):
    cdef kc_header_t h
    cdef int n
    cdef tuple out
    cdef int32_t i
    if count <= 0:
        return ()
    out = PyTuple_New(count)
    for i in range(count):
        n = kc_parse_header(p, end, &h)
        if n < 0:  # only reachable for bytes that changed after the record was checked
            raise InvalidRecordError(record_error_message(n, 0, h.bad_value))
        p += n
        item = (_decode_key(<const char *>h.key, h.key_len),
                _bytes_or_none(h.value, h.value_len))
        Py_INCREF(item)
        PyTuple_SET_ITEM(out, i, item)
    return out


cdef inline object _lazy_owner(data):
    # The bytes object whose memory `data` exposes, if any: only immutable memory
    # may be decoded after the reader has let go of its buffer export.
    if type(data) is bytes:
        return data
    if type(data) is memoryview:
        base = (<memoryview>data).obj
        if type(base) is bytes:
            return base
    return None


cdef inline int32_t _increment_sequence(int32_t seq, int32_t inc) noexcept nogil:
    # DefaultRecordBatch.incrementSequence in Java's wrapping int arithmetic (wraps from
    # 2^31-1 to 0; a corrupt negative delta must not be C's undefined overflow).
    cdef int32_t limit = <int32_t>(<uint32_t>INT32_MAX_ - <uint32_t>inc)
    if seq > limit:
        return <int32_t>(<uint32_t>inc - (<uint32_t>INT32_MAX_ - <uint32_t>seq) - 1u)
    return <int32_t>(<uint32_t>seq + <uint32_t>inc)


cdef inline int32_t _sequence(int32_t base_seq, int32_t delta) noexcept nogil:
    # A record's sequence (DefaultRecord.readFrom): none when the batch's base is negative.
    if base_seq < 0:
        return -1
    return _increment_sequence(base_seq, delta)


cdef inline Record _make_record(kc_record_t *r, int64_t base_offset, int64_t base_timestamp,
                                object timestamp_type, bint log_append_time, int64_t max_timestamp,
                                int32_t base_sequence, bint is_control, object owner):
    cdef Record rec = Record.__new__(Record)
    rec.offset = kc_add_i64(base_offset, r.offset_delta)
    rec.timestamp = max_timestamp if log_append_time else kc_add_i64(base_timestamp, r.timestamp_delta)
    rec.timestamp_type = timestamp_type
    rec.key = _bytes_or_none(r.key, r.key_len)
    rec.value = _bytes_or_none(r.value, r.value_len)
    if r.header_count == 0:
        rec._headers = ()
    elif owner is not None:
        rec._hsrc = owner
        rec._hp = r.headers_start
        rec._hend = r.end
        rec._hcount = r.header_count
    else:
        rec._headers = _headers(r.headers_start, r.end, r.header_count)
    rec.sequence = _sequence(base_sequence, r.offset_delta)
    rec.is_control = is_control
    return rec


def decode_records(data, int32_t count, int64_t base_offset, int64_t base_timestamp,
                   timestamp_type, bint log_append_time, int64_t max_timestamp,
                   int32_t base_sequence, bint is_control, bint stream=False):
    """Decode ``count`` records from ``data`` (a batch's uncompressed records region) into Records.

    ``stream`` selects Kafka's rules for decompressed streams (compressed
    batches).  Raises InvalidRecordError with Kafka's messages; ``position``
    is relative to ``data``.
    """
    cdef Py_buffer view
    cdef kc_record_t r
    cdef const uint8_t *p
    cdef const uint8_t *start
    cdef const uint8_t *end
    cdef int64_t rc
    cdef int32_t i
    cdef list out
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    owner = _lazy_owner(data)
    out = []  # grown as records parse: a corrupt count must not size an allocation
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        start = <const uint8_t *>view.buf
        p = start
        end = start + view.len
        for i in range(count):
            rc = kc_parse_record_from(p, end, stream, &r)
            if rc < 0:
                _raise_record(<int>rc, &r, p - start)
            out.append(_make_record(&r, base_offset, base_timestamp, timestamp_type, log_append_time,
                                    max_timestamp, base_sequence, is_control, owner))
            p = r.end
        if p != end:
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=p - start)
    finally:
        PyBuffer_Release(&view)
    return out


@cython.final
cdef class RecordIterator:
    """Decodes the records of one batch lazily, one Record per ``next()``.

    Holds a buffer export of the records region for its lifetime.  Errors
    are InvalidRecordError with Kafka's messages; positions are relative to
    the region plus ``base_pos``.  As in Kafka, "records still remaining" is
    raised by the ``next()`` that returns the last declared record.
    """
    cdef Py_buffer view
    cdef bint has_view
    cdef const uint8_t *start
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef int32_t remaining
    cdef int64_t base_offset, base_timestamp, max_timestamp
    cdef int32_t base_sequence
    cdef object timestamp_type
    cdef object owner
    cdef bint log_append_time, is_control, stream
    cdef Py_ssize_t base_pos
    cdef bint fixed_pos
    cdef object batch_offset
    cdef const uint8_t *pf
    cdef const uint8_t *pf_end

    def __cinit__(self, data, int32_t count, int64_t base_offset, int64_t base_timestamp,
                  timestamp_type, bint log_append_time, int64_t max_timestamp,
                  int32_t base_sequence, bint is_control, bint stream=False, Py_ssize_t base_pos=0,
                  batch_offset=None, bint fixed_pos=False, Py_ssize_t region_start=0, Py_ssize_t region_end=-1):
        # fixed_pos: errors report base_pos itself (the batch), for decompressed data
        # whose offsets do not map onto the source buffer.  region_start/region_end
        # select the records region inside data (default: all of it).
        self.has_view = False
        self.batch_offset = batch_offset
        self.fixed_pos = fixed_pos
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch",
                                     position=base_pos, batch_offset=batch_offset)
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        self.has_view = True
        if region_end < 0:
            region_end = self.view.len
        if region_start < 0 or region_start > region_end or region_end > self.view.len:
            raise CorruptRecordError("the records region lies outside the buffer", position=base_pos,
                                     batch_offset=batch_offset)
        self.owner = _lazy_owner(data)
        self.start = <const uint8_t *>self.view.buf + region_start
        self.p = self.start
        self.end = <const uint8_t *>self.view.buf + region_end
        self.remaining = count
        self.base_offset = base_offset
        self.base_timestamp = base_timestamp
        self.max_timestamp = max_timestamp
        self.base_sequence = base_sequence
        self.timestamp_type = timestamp_type
        self.log_append_time = log_append_time
        self.is_control = is_control
        self.stream = stream
        self.base_pos = base_pos
        # While Python works through this batch, the memory after it (in a
        # log or fetch buffer: the next batch) is prefetched a few lines per
        # record, so the next batch's CRC pass finds it in cache instead of
        # waiting on DRAM.  Decompressed regions have no such neighbour.
        self.pf = self.end
        self.pf_end = self.end if stream else self.end + min(region_end - region_start, 256 * 1024)

    def __dealloc__(self):
        if self.has_view:
            PyBuffer_Release(&self.view)

    cdef void _close(self):
        if self.has_view:
            PyBuffer_Release(&self.view)
            self.has_view = False
        self.remaining = 0

    def __iter__(self):
        return self

    def __next__(self):
        cdef kc_record_t r
        cdef int64_t rc
        cdef Record rec
        cdef Py_ssize_t pos
        if self.remaining <= 0:
            self._close()
            raise StopIteration
        rc = kc_parse_record_from(self.p, self.end, self.stream, &r)
        if rc < 0:
            pos = self.base_pos if self.fixed_pos else self.base_pos + (self.p - self.start)
            self._close()
            raise InvalidRecordError(record_error_message(<int>rc, r.length, r.bad_value), position=pos,
                                     batch_offset=self.batch_offset)
        rec = _make_record(&r, self.base_offset, self.base_timestamp, self.timestamp_type,
                           self.log_append_time, self.max_timestamp, self.base_sequence, self.is_control,
                           self.owner)
        self.p = r.end
        self.remaining -= 1
        if self.pf < self.pf_end:
            # A hint only: prefetching never faults, even past the buffer.
            __builtin_prefetch(self.pf)
            __builtin_prefetch(self.pf + 64)
            __builtin_prefetch(self.pf + 128)
            __builtin_prefetch(self.pf + 192)
            self.pf += 256
        if self.remaining == 0 and self.p != self.end:
            pos = self.base_pos if self.fixed_pos else self.base_pos + (self.p - self.start)
            self._close()
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=pos, batch_offset=self.batch_offset)
        return rec
