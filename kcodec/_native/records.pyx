# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Magic v2 records: decoding into Record objects or offset/length arrays, and encoding.

The loops run over raw pointers into the caller's buffer through
``csrc/kc_record.h``; the array scan releases the GIL.
"""
cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS
from cpython.bytes cimport PyBytes_FromStringAndSize
from cpython.unicode cimport PyUnicode_DecodeUTF8
from libc.stdint cimport uint8_t, int32_t, int64_t, uint32_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy

import numpy as np
cimport numpy as cnp

from kcodec.errors import BufferReleasedError, InvalidRecordError, RecordBuilderError

cnp.import_array()

cdef extern from "kc_record.h" nogil:
    int KC_REC_OK, KC_REC_STRUCTURE, KC_REC_SHORT, KC_REC_NEG_HEADERS, KC_REC_MANY_HEADERS
    int KC_REC_NEG_HKEY, KC_REC_SIZE_MISMATCH, KC_REC_EOF
    ctypedef struct kc_record_t:
        int32_t length
        int32_t consumed
        int32_t header_count
        int32_t bad_value
        int64_t timestamp_delta
        int32_t offset_delta
        int32_t key_len
        int32_t value_len
        const uint8_t *key
        const uint8_t *value
        const uint8_t *headers
        const uint8_t *end
    ctypedef struct kc_header_t:
        int32_t key_len
        int32_t value_len
        const uint8_t *key
        const uint8_t *value
    int kc_parse_record(const uint8_t *p, const uint8_t *end, kc_record_t *r)
    int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h, const uint8_t **nxt, int32_t *bad)
    int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta, int32_t key_len,
                                int32_t value_len, int32_t header_count, int64_t headers_size)
    int64_t kc_header_size(int32_t key_len, int32_t value_len)
    int64_t kc_write_record(uint8_t *p, int32_t body_size, int64_t timestamp_delta, int32_t offset_delta,
                            const uint8_t *key, int32_t key_len, const uint8_t *value, int32_t value_len,
                            int32_t header_count)
    int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len)

cdef extern from "kc_varint.h" nogil:
    int kc_varint_size(int32_t v)


def record_error_message(int code, int32_t length, int32_t consumed, int32_t bad) -> str:
    """Kafka's text for a record parse failure (DefaultRecord.readFrom)."""
    if code == KC_REC_SHORT:
        return (f"Invalid record size: expected {length} bytes in record payload, but instead the "
                f"buffer has only {bad} remaining bytes.")
    if code == KC_REC_NEG_HEADERS:
        return f"Found invalid number of record headers {bad}"
    if code == KC_REC_MANY_HEADERS:
        return f"Found invalid number of record headers. {bad} is larger than the remaining size of the buffer"
    if code == KC_REC_NEG_HKEY:
        return f"Invalid negative header key size {bad}"
    if code == KC_REC_SIZE_MISMATCH:
        return (f"Invalid record size: expected to read {length} bytes in record payload, "
                f"but instead read {consumed}")
    if code == KC_REC_EOF:
        return "Incorrect declared batch size, premature EOF reached"
    return "Found invalid record structure"


cdef _raise_record(int code, kc_record_t *r, Py_ssize_t pos):
    raise InvalidRecordError(record_error_message(code, r.length, r.consumed, r.bad_value), position=pos)


@cython.freelist(64)
@cython.final
cdef class Record:
    """One record: offset, timestamp, key, value, headers (read-only).

    ``key``/``value`` are ``bytes`` or ``None`` (null; distinct from ``b""``);
    ``headers`` is a tuple of ``(str, bytes | None)`` in wire order.
    """
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef readonly tuple headers
    cdef readonly int32_t sequence
    cdef readonly bint is_control
    cdef public object control_type
    cdef public object coordinator_epoch

    def __init__(self, int64_t offset, int64_t timestamp, timestamp_type, key, value, headers=(),
                 int32_t sequence=-1, bint is_control=False, control_type=None, coordinator_epoch=None):
        self.offset = offset
        self.timestamp = timestamp
        self.timestamp_type = timestamp_type
        self.key = key
        self.value = value
        self.headers = tuple(headers)
        self.sequence = sequence
        self.is_control = is_control
        self.control_type = control_type
        self.coordinator_epoch = coordinator_epoch

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
    cdef int32_t bad = 0
    cdef list out
    if count == 0:
        return ()
    out = []
    for _ in range(count):
        kc_parse_header(p, end, &h, &p, &bad)
        out.append((PyUnicode_DecodeUTF8(<const char *>h.key, h.key_len, "replace"),
                    _bytes_or_none(h.value, h.value_len)))
    return tuple(out)


cdef inline int32_t _sequence(int32_t base_seq, int32_t delta):
    if base_seq < 0:
        return -1
    if base_seq > 2147483647 - delta:
        return delta - (2147483647 - base_seq) - 1
    return base_seq + delta


def decode_records(data, int32_t count, int64_t base_offset, int64_t base_timestamp,
                   timestamp_type, bint log_append_time, int64_t max_timestamp,
                   int32_t base_sequence, bint is_control):
    """Decode ``count`` records from ``data`` (a batch's uncompressed records region) into Records.

    Raises InvalidRecordError with Kafka's messages; ``position`` is relative to ``data``.
    """
    cdef Py_buffer view
    cdef kc_record_t r
    cdef const uint8_t *p
    cdef const uint8_t *start
    cdef const uint8_t *end
    cdef int rc
    cdef int32_t i
    cdef Record rec
    cdef list out = []
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        start = <const uint8_t *>view.buf
        p = start
        end = start + view.len
        for i in range(count):
            rc = kc_parse_record(p, end, &r)
            if rc != KC_REC_OK:
                _raise_record(rc, &r, p - start)
            rec = Record.__new__(Record)
            rec.offset = base_offset + r.offset_delta
            rec.timestamp = max_timestamp if log_append_time else base_timestamp + r.timestamp_delta
            rec.timestamp_type = timestamp_type
            rec.key = _bytes_or_none(r.key, r.key_len)
            rec.value = _bytes_or_none(r.value, r.value_len)
            rec.headers = _headers(r.headers, end, r.header_count)
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


cdef class RecordIndex:
    """Where each record's fields are in a records region (numpy arrays, length ``count``).

    ``header_start`` has ``count + 1`` entries: record i's headers are
    ``header_start[i]:header_start[i+1]`` of the ``h*`` arrays.  Lengths are
    -1 for null.
    """
    cdef readonly object offset_delta, timestamp_delta, key_pos, key_len, value_pos, value_len
    cdef readonly object header_start, hkey_pos, hkey_len, hval_pos, hval_len
    cdef readonly Py_ssize_t size


def scan_v2_records(data, int32_t count, Py_ssize_t base_pos=0):
    """Index ``count`` records of ``data`` without creating Python objects per record (GIL released).

    Positions in the result are offsets into ``data``; errors report
    ``base_pos + offset`` as their position.
    """
    cdef Py_buffer view
    cdef kc_record_t r
    cdef kc_header_t h
    cdef const uint8_t *start
    cdef const uint8_t *p
    cdef const uint8_t *hp
    cdef const uint8_t *end
    cdef int rc = 0
    cdef int32_t i, j, bad = 0
    cdef Py_ssize_t err_pos = 0, nh = 0, hcap
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch")
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
                rc = kc_parse_record(p, end, &r)
                if rc != KC_REC_OK:
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
        if rc != KC_REC_OK:
            _raise_record(rc, &r, base_pos + err_pos)
        if p != end:
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=base_pos + (p - start))
        h_start[count] = nh
        hk_pos = np.empty(nh, np.int64)
        hk_len = np.empty(nh, np.int32)
        hv_pos = np.empty(nh, np.int64)
        hv_len = np.empty(nh, np.int32)
        if nh:
            _fill_headers(start, end, count, off_d, k_pos, k_len, v_pos, v_len, hk_pos, hk_len, hv_pos, hv_len)
    finally:
        PyBuffer_Release(&view)
    idx = RecordIndex.__new__(RecordIndex)
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


cdef void _fill_headers(const uint8_t *start, const uint8_t *end, int32_t count, off_d, k_pos, k_len,
                        v_pos, v_len, hk_pos_o, hk_len_o, hv_pos_o, hv_len_o):
    # A second pass: headers are rare enough that sizing the arrays first is cheaper than growing them.
    cdef kc_record_t r
    cdef kc_header_t h
    cdef const uint8_t *p = start
    cdef const uint8_t *hp
    cdef int32_t i, j, bad = 0
    cdef Py_ssize_t n = 0
    cdef int64_t[::1] hkp = hk_pos_o
    cdef int32_t[::1] hkl = hk_len_o
    cdef int64_t[::1] hvp = hv_pos_o
    cdef int32_t[::1] hvl = hv_len_o
    with nogil:
        for i in range(count):
            kc_parse_record(p, end, &r)
            hp = r.headers
            for j in range(r.header_count):
                kc_parse_header(hp, end, &h, &hp, &bad)
                hkp[n] = h.key - start
                hkl[n] = h.key_len
                hvp[n] = (h.value - start) if h.value_len >= 0 else 0
                hvl[n] = h.value_len
                n += 1
            p = r.end


cdef class RecordsWriter:
    """A growable buffer that v2 records are encoded into (the builder's working memory)."""
    cdef uint8_t *buf
    cdef Py_ssize_t cap
    cdef readonly Py_ssize_t size
    cdef readonly int32_t count
    cdef int exports

    def __cinit__(self, Py_ssize_t initial=4096):
        self.cap = max(initial, 64)
        self.buf = <uint8_t *>malloc(self.cap)
        if self.buf == NULL:
            raise MemoryError()
        self.size = 0
        self.count = 0
        self.exports = 0

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

    def clear(self):
        if self.exports:
            raise BufferError("records buffer is exported")
        self.size = 0
        self.count = 0

    def append(self, int32_t offset_delta, int64_t timestamp_delta, key, value, headers=()):
        """Encode one record; returns its encoded size."""
        cdef Py_buffer kb, vb
        cdef int32_t klen = -1, vlen = -1, hcount = 0
        cdef int64_t hsize = 0, body
        cdef const uint8_t *kp = NULL
        cdef const uint8_t *vp = NULL
        cdef bint have_k = False, have_v = False
        cdef list hl = None
        cdef int64_t written
        if headers:
            hl = []
            for hk, hv in headers:
                if hk is None:
                    raise RecordBuilderError("header keys must not be null")
                hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(hk)
                hvb = None if hv is None else (hv.encode("utf-8") if isinstance(hv, str) else bytes(hv))
                hl.append((hkb, hvb))
                hsize += kc_header_size(len(hkb), -1 if hvb is None else len(hvb))
            hcount = len(hl)
        try:
            if key is not None:
                PyObject_GetBuffer(key, &kb, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
                have_k = True
                kp = <const uint8_t *>kb.buf
                klen = <int32_t>kb.len
            if value is not None:
                PyObject_GetBuffer(value, &vb, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
                have_v = True
                vp = <const uint8_t *>vb.buf
                vlen = <int32_t>vb.len
            body = kc_record_body_size(timestamp_delta, offset_delta, klen, vlen, hcount, hsize)
            if body > 2147483647 - 5:
                raise RecordBuilderError(f"record of {body} bytes is too large")
            self._reserve(body + 5)
            written = kc_write_record(self.buf + self.size, <int32_t>body, timestamp_delta, offset_delta,
                                      kp, klen, vp, vlen, hcount)
        finally:
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        if hl is not None:
            for hkb, hvb in hl:
                written += kc_write_header(self.buf + self.size + written, <const uint8_t *><char *>hkb,
                                           len(hkb), NULL if hvb is None else <const uint8_t *><char *>hvb,
                                           -1 if hvb is None else len(hvb))
        self.size += written
        self.count += 1
        return written

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
    cdef int32_t klen = -1 if key is None else len(key)
    cdef int32_t vlen = -1 if value is None else len(value)
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else hk
        hsize += kc_header_size(len(hkb), -1 if hv is None else len(hv))
        hcount += 1
    cdef int64_t body = kc_record_body_size(timestamp_delta, offset_delta, klen, vlen, hcount, hsize)
    return kc_varint_size(<int32_t>body) + body


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
