# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Magic v2 records: decoding into Record objects or offset/length arrays, and encoding.

The loops run over raw pointers into the caller's buffer through
``csrc/kc_record.h``; the array scan releases the GIL.
"""
cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy
from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME

import numpy as np
cimport numpy as cnp

from kcodec._native.primitives cimport kc_crc32c, kc_store_be16, kc_store_be32, kc_store_be64
from kcodec._native.primitives cimport kc_load_be16, kc_load_be32, kc_load_be64
from kcodec._native.primitives cimport kc_varint_size
from kcodec.errors import BufferReleasedError, InvalidRecordError, RecordBuilderError

cnp.import_array()

cdef enum:
    INT32_MAX_ = 2147483647
cdef int64_t NO_TIMESTAMP = -1
cdef int64_t _NO_LAST = -9223372036854775807 - 1


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
    return bytes(x)


cdef inline str _header_key(k):
    if isinstance(k, str):
        return <str>k
    return bytes(k).decode("utf-8", "replace")


@cython.freelist(64)
@cython.final
@cython.no_gc
cdef class Record:
    """One record: offset, timestamp, key, value, headers (read-only).

    ``key``/``value`` are ``bytes`` or ``None`` (null; distinct from ``b""``);
    ``headers`` is a tuple of ``(str, bytes | None)`` in wire order.  For
    control records ``control_type`` is a ControlRecordType and, for COMMIT
    and ABORT, ``coordinator_epoch`` the marker's epoch.

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
        self.headers = tuple([(_header_key(k), _to_bytes(v)) for k, v in headers]) if headers else ()
        self.sequence = sequence
        self.is_control = is_control
        self.control_type = control_type
        self.coordinator_epoch = None if coordinator_epoch is None else int(coordinator_epoch)

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


cdef inline object _bytes_or_none(const uint8_t *p, int32_t n):
    if n < 0:
        return None
    return PyBytes_FromStringAndSize(<const char *>p, n)


cdef tuple _headers(const uint8_t *p, const uint8_t *end, int32_t count):
    cdef kc_header_t h
    cdef int n
    cdef list out
    if count == 0:
        return ()
    out = []
    for _ in range(count):
        n = kc_parse_header(p, end, &h)
        p += n
        out.append((PyUnicode_DecodeUTF8(<const char *>h.key, h.key_len, "replace"),
                    _bytes_or_none(h.value, h.value_len)))
    return tuple(out)


cdef inline int32_t _sequence(int32_t base_seq, int32_t delta):
    if base_seq < 0:
        return -1
    if base_seq > INT32_MAX_ - delta:
        return delta - (INT32_MAX_ - base_seq) - 1
    return base_seq + delta


cdef inline int64_t _parse(const uint8_t *p, const uint8_t *end, kc_record_t *r, bint stream) nogil:
    if stream:
        return kc_parse_record_stream(p, end, r)
    return kc_parse_record(p, end, r)


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
    cdef Record rec
    cdef list out
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
    out = []
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        start = <const uint8_t *>view.buf
        p = start
        end = start + view.len
        for i in range(count):
            rc = _parse(p, end, &r, stream)
            if rc < 0:
                _raise_record(<int>rc, &r, p - start)
            rec = Record.__new__(Record)
            rec.offset = base_offset + r.offset_delta
            rec.timestamp = max_timestamp if log_append_time else base_timestamp + r.timestamp_delta
            rec.timestamp_type = timestamp_type
            rec.key = _bytes_or_none(r.key, r.key_len)
            rec.value = _bytes_or_none(r.value, r.value_len)
            rec.headers = _headers(r.headers_start, end, r.header_count)
            rec.sequence = _sequence(base_sequence, r.offset_delta)
            rec.is_control = is_control
            out.append(rec)
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
    cdef bint log_append_time, is_control, stream
    cdef Py_ssize_t base_pos
    cdef bint fixed_pos
    cdef object batch_offset

    def __cinit__(self, data, int32_t count, int64_t base_offset, int64_t base_timestamp,
                  timestamp_type, bint log_append_time, int64_t max_timestamp,
                  int32_t base_sequence, bint is_control, bint stream=False, Py_ssize_t base_pos=0,
                  batch_offset=None, bint fixed_pos=False):
        # fixed_pos: errors report base_pos itself (the batch), for decompressed data
        # whose offsets do not map onto the source buffer.
        self.has_view = False
        self.batch_offset = batch_offset
        self.fixed_pos = fixed_pos
        if count < 0:
            raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch",
                                     position=base_pos, batch_offset=batch_offset)
        PyObject_GetBuffer(data, &self.view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        self.has_view = True
        self.start = <const uint8_t *>self.view.buf
        self.p = self.start
        self.end = self.start + self.view.len
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
        rc = _parse(self.p, self.end, &r, self.stream)
        if rc < 0:
            pos = self.base_pos if self.fixed_pos else self.base_pos + (self.p - self.start)
            self._close()
            raise InvalidRecordError(record_error_message(<int>rc, r.length, r.bad_value), position=pos,
                                     batch_offset=self.batch_offset)
        rec = Record.__new__(Record)
        rec.offset = self.base_offset + r.offset_delta
        rec.timestamp = self.max_timestamp if self.log_append_time else self.base_timestamp + r.timestamp_delta
        rec.timestamp_type = self.timestamp_type
        rec.key = _bytes_or_none(r.key, r.key_len)
        rec.value = _bytes_or_none(r.value, r.value_len)
        rec.headers = _headers(r.headers_start, self.end, r.header_count)
        rec.sequence = _sequence(self.base_sequence, r.offset_delta)
        rec.is_control = self.is_control
        self.p = r.end
        self.remaining -= 1
        if self.remaining == 0 and self.p != self.end:
            pos = self.base_pos if self.fixed_pos else self.base_pos + (self.p - self.start)
            self._close()
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=pos, batch_offset=self.batch_offset)
        return rec


cdef class RecordIndex:
    """Where each record's fields are in a records region (numpy arrays, length ``count``).

    ``header_start`` has ``count + 1`` entries: record i's headers are
    ``header_start[i]:header_start[i+1]`` of the ``h*`` arrays.  Lengths are
    -1 for null.  ``size`` is the bytes the records occupy.
    """


def scan_v2_records(data, int32_t count, Py_ssize_t base_pos=0, bint stream=False):
    """Index ``count`` records of ``data`` without creating Python objects per record (GIL released).

    Positions in the result are offsets into ``data``; errors report
    ``base_pos + offset`` as their position.  ``stream`` selects Kafka's
    rules for the records of a compressed batch.
    """
    cdef Py_buffer view
    cdef kc_record_t r
    cdef const uint8_t *start
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef int64_t rc = 0
    cdef int32_t i
    cdef Py_ssize_t err_pos = 0, nh = 0
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch", position=base_pos)
    cdef cnp.ndarray[int32_t] off_d = np.empty(count, np.int32)
    cdef cnp.ndarray[int64_t] ts_d = np.empty(count, np.int64)
    cdef cnp.ndarray[int64_t] k_pos = np.empty(count, np.int64)
    cdef cnp.ndarray[int32_t] k_len = np.empty(count, np.int32)
    cdef cnp.ndarray[int64_t] v_pos = np.empty(count, np.int64)
    cdef cnp.ndarray[int32_t] v_len = np.empty(count, np.int32)
    cdef cnp.ndarray[int64_t] h_start = np.empty(count + 1, np.int64)
    cdef int32_t *c_off = <int32_t *>off_d.data
    cdef int64_t *c_ts = <int64_t *>ts_d.data
    cdef int64_t *c_kp = <int64_t *>k_pos.data
    cdef int32_t *c_kl = <int32_t *>k_len.data
    cdef int64_t *c_vp = <int64_t *>v_pos.data
    cdef int32_t *c_vl = <int32_t *>v_len.data
    cdef int64_t *c_hs = <int64_t *>h_start.data
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        start = <const uint8_t *>view.buf
        end = start + view.len
        p = start
        with nogil:
            for i in range(count):
                rc = _parse(p, end, &r, stream)
                if rc < 0:
                    err_pos = p - start
                    break
                c_off[i] = r.offset_delta
                c_ts[i] = r.timestamp_delta
                c_kp[i] = (r.key - start) if r.key_len >= 0 else 0
                c_kl[i] = r.key_len
                c_vp[i] = (r.value - start) if r.value_len >= 0 else 0
                c_vl[i] = r.value_len
                c_hs[i] = nh
                nh += r.header_count
                p = r.end
        if rc < 0:
            _raise_record(<int>rc, &r, base_pos + err_pos)
        if p != end:
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=base_pos + (p - start))
        h_start[count] = nh
        hk_pos = np.empty(nh, np.int64)
        hk_len = np.empty(nh, np.int32)
        hv_pos = np.empty(nh, np.int64)
        hv_len = np.empty(nh, np.int32)
        if nh:
            _fill_headers(start, end, count, stream, hk_pos, hk_len, hv_pos, hv_len)
    finally:
        PyBuffer_Release(&view)
    cdef RecordIndex idx = RecordIndex.__new__(RecordIndex)
    idx.offset_delta = off_d
    idx.timestamp_delta = ts_d
    idx.key_pos = k_pos
    idx.key_len = k_len
    idx.value_pos = v_pos
    idx.value_len = v_len
    idx.header_start = h_start
    idx.hkey_pos = hk_pos
    idx.hkey_len = hk_len
    idx.hval_pos = hv_pos
    idx.hval_len = hv_len
    idx.size = p - start
    return idx


cdef void _fill_headers(const uint8_t *start, const uint8_t *end, int32_t count, bint stream,
                        hk_pos_o, hk_len_o, hv_pos_o, hv_len_o):
    # A second pass over already validated records: headers are rare enough that
    # sizing the arrays first is cheaper than growing them.
    cdef kc_record_t r
    cdef kc_header_t h
    cdef const uint8_t *p = start
    cdef const uint8_t *hp
    cdef int32_t i, j
    cdef Py_ssize_t n = 0
    cdef int64_t[::1] hkp = hk_pos_o
    cdef int32_t[::1] hkl = hk_len_o
    cdef int64_t[::1] hvp = hv_pos_o
    cdef int32_t[::1] hvl = hv_len_o
    with nogil:
        for i in range(count):
            _parse(p, end, &r, stream)
            hp = r.headers_start
            for j in range(r.header_count):
                hp += kc_parse_header(hp, end, &h)
                hkp[n] = h.key - start
                hkl[n] = h.key_len
                hvp[n] = (h.value - start) if h.value_len >= 0 else 0
                hvl[n] = h.value_len
                n += 1
            p = r.end


cdef inline int64_t _now_ms():
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef class RecordsWriter:
    """The builder's working memory: v2 records encoded into a growable native buffer,
    with MemoryRecordsBuilder's per-record bookkeeping and checks done natively."""

    def __cinit__(self, Py_ssize_t initial=4096, int64_t base_offset=0, delete_horizon_ms=None,
                  log_append_time=None, bint is_control=False):
        self.cap = max(initial, 64)
        self.buf = <uint8_t *>malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()
        self.size = 0
        self.count = 0
        self.exports = 0
        self.base_offset = base_offset
        self.last_offset = _NO_LAST
        self.first_timestamp = NO_TIMESTAMP
        self.max_timestamp = NO_TIMESTAMP
        self.has_records = False
        self.has_delete_horizon = delete_horizon_ms is not None
        self.delete_horizon = delete_horizon_ms if delete_horizon_ms is not None else 0
        self.log_append = log_append_time is not None
        self.log_append_time = log_append_time if log_append_time is not None else 0
        self.is_control = is_control
        self.closed = False

    def __dealloc__(self):
        free(self.buf)

    cdef int _reserve(self, Py_ssize_t extra) except -1:
        cdef Py_ssize_t need = self.size + extra
        cdef Py_ssize_t cap = self.cap
        cdef uint8_t *nb
        if need <= cap:
            return 0
        if self.exports:
            raise BufferError("records buffer is exported and cannot grow")
        while cap < need:
            cap *= 2
        nb = <uint8_t *>realloc(self.buf, cap)
        if nb == NULL:
            raise MemoryError()
        self.buf = nb
        self.cap = cap
        return 0

    @property
    def next_offset(self) -> int:
        return self.base_offset if not self.has_records else self.last_offset + 1

    @property
    def delta_base(self):
        """The timestamp deltas are relative to (None before the first record)."""
        if self.has_delete_horizon:
            return self.delete_horizon
        return self.first_timestamp if self.has_records else None

    def clear(self):
        if self.exports:
            raise BufferError("records buffer is exported")
        self.size = 0
        self.count = 0
        self.has_records = False
        self.last_offset = _NO_LAST
        self.first_timestamp = NO_TIMESTAMP
        self.max_timestamp = NO_TIMESTAMP
        self.closed = False

    def reset(self, int64_t base_offset=0, delete_horizon_ms=None, log_append_time=None,
              bint is_control=False) -> None:
        """Empty the writer for a new batch, keeping its memory (pooled writers)."""
        self.clear()
        self.base_offset = base_offset
        self.has_delete_horizon = delete_horizon_ms is not None
        self.delete_horizon = delete_horizon_ms if delete_horizon_ms is not None else 0
        self.log_append = log_append_time is not None
        self.log_append_time = log_append_time if log_append_time is not None else 0
        self.is_control = is_control

    @property
    def capacity(self) -> int:
        return self.cap

    def append(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        """Append a data record (see RecordBatchBuilder.append); returns its offset."""
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        return self._add(key, value, timestamp, headers, offset)

    def append_raw(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        """Append without the data/control check (control records of a control batch)."""
        return self._add(key, value, timestamp, headers, offset)

    def append_many(self, keys, values, timestamps=None, headers=None) -> int:
        """Append records from parallel sequences; returns how many were appended."""
        cdef Py_ssize_t n = 0
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        ts_iter = iter(timestamps) if timestamps is not None else None
        h_iter = iter(headers) if headers is not None else None
        for key, value in zip(keys, values):
            ts = next(ts_iter) if ts_iter is not None else None
            hs = next(h_iter) if h_iter is not None else ()
            self._add(key, value, None if ts is None else int(ts), hs or (), None)
            n += 1
        return n

    cdef int64_t _add(self, key, value, timestamp, headers, offset) except? -9223372036854775807:
        cdef Py_buffer kb, vb
        cdef int32_t klen = -1, vlen = -1, hcount = 0
        cdef int64_t hsize = 0, body, written, off, delta, ts, base
        cdef const uint8_t *kp = NULL
        cdef const uint8_t *vp = NULL
        cdef bint have_k = False, have_v = False
        cdef list hl = None
        if self.closed:
            raise RecordBuilderError("this builder has already built its batch")
        if offset is None:
            off = self.last_offset + 1 if self.has_records else self.base_offset
        else:
            off = offset
            if self.has_records and off <= self.last_offset:
                raise RecordBuilderError(
                    f"Illegal offset {off} following previous offset {self.last_offset} "
                    "(Offsets must increase monotonically).")
        delta = off - self.base_offset
        if delta > INT32_MAX_ or delta < -INT32_MAX_ - 1:
            raise RecordBuilderError(
                f"Maximum offset delta exceeded, base offset: {self.base_offset}, last offset: {off}")
        if self.count == INT32_MAX_ - 1:
            raise RecordBuilderError("Maximum number of records per batch exceeded, max records: 2147483647")
        if timestamp is None:
            ts = self.log_append_time if self.log_append else _now_ms()
        else:
            ts = timestamp
            if ts < 0 and ts != NO_TIMESTAMP:
                raise RecordBuilderError(f"Invalid negative timestamp {ts}")
        if self.has_delete_horizon:
            base = self.delete_horizon
        elif self.has_records:
            base = self.first_timestamp
        else:
            base = ts
        if headers:
            hl = []
            for hk, hv in headers:
                if hk is None:
                    raise RecordBuilderError("Invalid null header key found in headers")
                hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
                hvb = _to_bytes(hv)
                hl.append((hkb, hvb))
                hsize += kc_header_size(len(hkb), -1 if hvb is None else len(hvb))
            hcount = len(hl)
        try:
            if key is not None:
                if type(key) is bytes:
                    kp = <const uint8_t *>PyBytes_AS_STRING(key)
                    klen = <int32_t>PyBytes_GET_SIZE(key)
                else:
                    PyObject_GetBuffer(key, &kb, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
                    have_k = True
                    kp = <const uint8_t *>kb.buf
                    klen = <int32_t>kb.len
            if value is not None:
                if type(value) is bytes:
                    vp = <const uint8_t *>PyBytes_AS_STRING(value)
                    vlen = <int32_t>PyBytes_GET_SIZE(value)
                else:
                    PyObject_GetBuffer(value, &vb, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
                    have_v = True
                    vp = <const uint8_t *>vb.buf
                    vlen = <int32_t>vb.len
            body = kc_record_body_size(ts - base, <int32_t>delta, klen, vlen, hcount, hsize)
            if body > INT32_MAX_ - 5:
                raise RecordBuilderError(f"record of {body} bytes is too large")
            self._reserve(body + 5)
            written = kc_write_record_sized(self.buf + self.size, body, ts - base, <int32_t>delta,
                                            kp, klen, vp, vlen, hcount)
        finally:
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        if hl is not None:
            for hkb, hvb in hl:
                written += kc_write_header(self.buf + self.size + written,
                                           <const uint8_t *>PyBytes_AS_STRING(hkb), <int32_t>len(hkb),
                                           NULL if hvb is None else <const uint8_t *>PyBytes_AS_STRING(hvb),
                                           -1 if hvb is None else <int32_t>len(hvb))
        self.size += written
        self.count += 1
        if not self.has_records:
            self.first_timestamp = ts
            self.has_records = True
        if ts > self.max_timestamp:
            self.max_timestamp = ts
        self.last_offset = off
        return off

    def __getbuffer__(self, Py_buffer *view, int flags):
        view.buf = self.buf
        view.obj = self
        view.len = self.size
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &self.size
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self.exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self.exports -= 1


def record_size(int32_t offset_delta, int64_t timestamp_delta, key, value, headers=()) -> int:
    """Encoded size of a record (Kafka's DefaultRecord.sizeInBytes)."""
    cdef int64_t hsize = 0
    cdef int32_t hcount = 0
    cdef int32_t klen = -1 if key is None else len(memoryview(key).cast("B"))
    cdef int32_t vlen = -1 if value is None else len(memoryview(value).cast("B"))
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else hk
        hvb = _to_bytes(hv)
        hsize += kc_header_size(len(hkb), -1 if hvb is None else len(hvb))
        hcount += 1
    cdef int64_t body = kc_record_body_size(timestamp_delta, offset_delta, klen, vlen, hcount, hsize)
    return kc_record_size(body)


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
        if pos < 0 or total_size < 61 or pos + total_size > view.len:
            raise ValueError("the batch does not fit in the output buffer")
        p = <uint8_t *>view.buf + pos
        kc_store_be64(p, <uint64_t>base_offset)
        kc_store_be32(p + 8, <uint32_t>(total_size - 12))
        kc_store_be32(p + 12, <uint32_t>partition_leader_epoch)
        p[16] = 2
        kc_store_be16(p + 21, <uint16_t>attributes)
        kc_store_be32(p + 23, <uint32_t>last_offset_delta)
        kc_store_be64(p + 27, <uint64_t>base_timestamp)
        kc_store_be64(p + 35, <uint64_t>max_timestamp)
        kc_store_be64(p + 43, <uint64_t>producer_id)
        kc_store_be16(p + 51, <uint16_t>producer_epoch)
        kc_store_be32(p + 53, <uint32_t>base_sequence)
        kc_store_be32(p + 57, <uint32_t>records_count)
        with nogil:
            crc = kc_crc32c(0, p + 21, <size_t>(total_size - 21))
        kc_store_be32(p + 17, crc)
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
        total = 61 + rv.len
        if total > INT32_MAX_:
            raise RecordBuilderError(f"batch of {total} bytes exceeds the int32 size field")
        if out is None:
            result = PyBytes_FromStringAndSize(NULL, total)
            memcpy(PyBytes_AS_STRING(result) + 61, rv.buf, rv.len)
            _write_header_raw(<uint8_t *>PyBytes_AS_STRING(result), base_offset, <int32_t>total,
                              partition_leader_epoch, attributes, last_offset_delta, base_timestamp,
                              max_timestamp, producer_id, producer_epoch, base_sequence, records_count)
            return result
        mv = memoryview(out)
        if len(mv) < total:
            raise ValueError("output buffer too small")
        mv[61:total] = memoryview(records).cast("B")
        write_batch_header(out, 0, base_offset, <int32_t>total, partition_leader_epoch, attributes,
                           last_offset_delta, base_timestamp, max_timestamp, producer_id, producer_epoch,
                           base_sequence, records_count)
        return total
    finally:
        PyBuffer_Release(&rv)


cdef void _write_header_raw(uint8_t *p, int64_t base_offset, int32_t total_size,
                            int32_t partition_leader_epoch, int16_t attributes, int32_t last_offset_delta,
                            int64_t base_timestamp, int64_t max_timestamp, int64_t producer_id,
                            int16_t producer_epoch, int32_t base_sequence, int32_t records_count) noexcept:
    kc_store_be64(p, <uint64_t>base_offset)
    kc_store_be32(p + 8, <uint32_t>(total_size - 12))
    kc_store_be32(p + 12, <uint32_t>partition_leader_epoch)
    p[16] = 2
    kc_store_be16(p + 21, <uint16_t>attributes)
    kc_store_be32(p + 23, <uint32_t>last_offset_delta)
    kc_store_be64(p + 27, <uint64_t>base_timestamp)
    kc_store_be64(p + 35, <uint64_t>max_timestamp)
    kc_store_be64(p + 43, <uint64_t>producer_id)
    kc_store_be16(p + 51, <uint16_t>producer_epoch)
    kc_store_be32(p + 53, <uint32_t>base_sequence)
    kc_store_be32(p + 57, <uint32_t>records_count)
    kc_store_be32(p + 17, kc_crc32c(0, p + 21, <size_t>(total_size - 21)))


def read_batch_header(buf, Py_ssize_t pos=0) -> tuple:
    """The v2 header fields at ``buf[pos:pos+61]``: (baseOffset, batchLength,
    partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
    maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount)."""
    cdef Py_buffer view
    cdef const uint8_t *p
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if pos < 0 or pos + 61 > view.len:
            raise ValueError("fewer than 61 bytes for a v2 batch header")
        p = <const uint8_t *>view.buf + pos
        return (<int64_t>kc_load_be64(p), <int32_t>kc_load_be32(p + 8), <int32_t>kc_load_be32(p + 12),
                <int8_t>p[16], kc_load_be32(p + 17), <int16_t>kc_load_be16(p + 21),
                <int32_t>kc_load_be32(p + 23), <int64_t>kc_load_be64(p + 27), <int64_t>kc_load_be64(p + 35),
                <int64_t>kc_load_be64(p + 43), <int16_t>kc_load_be16(p + 51), <int32_t>kc_load_be32(p + 53),
                <int32_t>kc_load_be32(p + 57))
    finally:
        PyBuffer_Release(&view)


cdef class PooledBuffer:
    """Bytes borrowed from a :class:`~kcodec.records.BufferPool`, valid until :meth:`release`.

    It exports the buffer protocol (``bytes(pb)``, ``memoryview(pb)``).  After
    ``release()`` the memory goes back to the pool for reuse, and any access
    raises BufferReleasedError; releasing while a memoryview of it is still
    alive raises BufferError, so reused memory can never be seen through a
    stale view.
    """
    cdef object _store  # the bytearray owned by the pool
    cdef object _pool
    cdef Py_ssize_t _len
    cdef Py_ssize_t _shape
    cdef int _exports
    cdef bint _released

    def __cinit__(self, store, Py_ssize_t length, pool):
        self._store = store
        self._len = length
        self._pool = pool
        self._exports = 0
        self._released = False

    @property
    def released(self) -> bool:
        return self._released

    def __len__(self):
        self._check()
        return self._len

    cdef _check(self):
        if self._released:
            raise BufferReleasedError("this pooled buffer was released back to its pool")

    def release(self) -> None:
        if self._released:
            return
        if self._exports:
            raise BufferError(f"pooled buffer still has {self._exports} live memoryview(s); release them first")
        self._released = True
        self._pool._give_back(self._store)
        self._store = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def tobytes(self) -> bytes:
        self._check()
        return bytes(memoryview(self._store)[:self._len])

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self._released:
            raise BufferReleasedError("this pooled buffer was released back to its pool")
        cdef Py_buffer inner
        PyObject_GetBuffer(self._store, &inner, PyBUF_SIMPLE)
        view.buf = inner.buf
        PyBuffer_Release(&inner)  # the bytearray stays alive and unresized: the pool holds it
        self._shape = self._len
        view.obj = self
        view.len = self._len
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &self._shape
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._exports -= 1

