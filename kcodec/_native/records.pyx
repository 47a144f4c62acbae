# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Magic v2 records: decoding into Record objects or offset/length arrays, and encoding.

The loops run over raw pointers into the caller's buffer through
``csrc/kc_record.h``; the array scan releases the GIL.
"""
cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, _PyBytes_Resize
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_SIZE
from cpython.list cimport PyList_AsTuple
from cpython.sequence cimport PySequence_Fast_GET_SIZE, PySequence_Fast_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_AsUTF8AndSize
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME

import numpy as np
cimport numpy as cnp

from kcodec._native.primitives cimport kc_load_be32, kc_load_be64, kc_varint_size, kc_bytes_shrink
from kcodec._native.primitives cimport (kc_batch_header_t, kc_batch_read, kc_batch_write, kc_batch_checksum,
                                        KC_BATCH_CRC)
from kcodec._native.native_codec cimport NativeCodec, native_of
from kcodec._java_utf8 import decode as _java_utf8_decode
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType, get_codec
from kcodec.errors import (BufferReleasedError, CorruptRecordError, InvalidRecordError, KcodecError,
                           RecordBuilderError)

cnp.import_array()

cdef enum:
    INT32_MAX_ = 2147483647
    BATCH_OVERHEAD_ = 61
cdef int64_t NO_TIMESTAMP = -1
cdef int64_t _NO_LAST = INT64_MIN


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


cdef inline bint _list_or_tuple(obj):
    return type(obj) is list or type(obj) is tuple


cdef object _item_of(seq, Py_ssize_t i, str name):
    if i >= PySequence_Fast_GET_SIZE(seq):
        raise RecordBuilderError(f"append_many: {name} has only {i} items, fewer than keys and values")
    return <object>PySequence_Fast_GET_ITEM(seq, i)


cdef object _next_of(it, Py_ssize_t i, str name):
    for item in it:
        return item
    raise RecordBuilderError(f"append_many: {name} has only {i} items, fewer than keys and values")


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


cdef extern from "kc_members.h":
    int kc_expose_object_field(PyTypeObject *type, const char *name, Py_ssize_t offset) except -1
    Py_ssize_t KC_RECORD_KEY, KC_RECORD_VALUE, KC_RECORD_TIMESTAMP_TYPE


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


cdef inline int64_t _parse(const uint8_t *p, const uint8_t *end, kc_record_t *r, bint stream) nogil:
    if stream:
        return kc_parse_record_stream(p, end, r)
    return kc_parse_record(p, end, r)


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
            rc = _parse(p, end, &r, stream)
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


cdef extern from *:
    void __builtin_prefetch(const void *p) nogil


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
        rc = _parse(self.p, self.end, &r, self.stream)
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
    cdef Py_ssize_t i, cap, err_pos = 0, nh = 0
    cdef int32_t *c_off
    cdef int64_t *c_ts
    cdef int64_t *c_kp
    cdef int32_t *c_kl
    cdef int64_t *c_vp
    cdef int32_t *c_vl
    cdef int64_t *c_hs
    if count < 0:
        raise InvalidRecordError(f"Found invalid record count {count} in magic v2 batch", position=base_pos)
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        # The count is the batch's word, not the data's: every record that parses
        # takes at least KC_MIN_RECORD_SIZE bytes, so one slot more than the data can
        # hold is enough to reach the error a larger count must end in, and a
        # corrupt count cannot make the arrays outgrow the data.
        cap = min(<Py_ssize_t>count, view.len // KC_MIN_RECORD_SIZE + 1)
        off_d = np.empty(cap, np.int32)
        ts_d = np.empty(cap, np.int64)
        k_pos = np.empty(cap, np.int64)
        k_len = np.empty(cap, np.int32)
        v_pos = np.empty(cap, np.int64)
        v_len = np.empty(cap, np.int32)
        h_start = np.empty(cap + 1, np.int64)
        c_off = <int32_t *>cnp.PyArray_DATA(off_d)
        c_ts = <int64_t *>cnp.PyArray_DATA(ts_d)
        c_kp = <int64_t *>cnp.PyArray_DATA(k_pos)
        c_kl = <int32_t *>cnp.PyArray_DATA(k_len)
        c_vp = <int64_t *>cnp.PyArray_DATA(v_pos)
        c_vl = <int32_t *>cnp.PyArray_DATA(v_len)
        c_hs = <int64_t *>cnp.PyArray_DATA(h_start)
        start = <const uint8_t *>view.buf
        end = start + view.len
        p = start
        with nogil:
            for i in range(cap):
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
        if cap < count:  # unreachable while records take KC_MIN_RECORD_SIZE bytes or more
            raise InvalidRecordError(f"Record count {count} cannot fit in {view.len} bytes of records",
                                     position=base_pos)
        if p != end:
            raise InvalidRecordError("Incorrect declared batch size, records still remaining in file",
                                     position=base_pos + (p - start))
        h_start[cap] = nh
        hk_pos = np.empty(nh, np.int64)
        hk_len = np.empty(nh, np.int32)
        hv_pos = np.empty(nh, np.int64)
        hv_len = np.empty(nh, np.int32)
        if nh and _fill_headers(start, end, count, stream, hk_pos, hk_len, hv_pos, hv_len) < 0:
            raise CorruptRecordError("The records changed while they were being read "
                                     "(a buffer written to by another thread)", position=base_pos)
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


cdef int _fill_headers(const uint8_t *start, const uint8_t *end, int32_t count, bint stream,
                       hk_pos_o, hk_len_o, hv_pos_o, hv_len_o) except? -2:
    # A second pass over records the first pass validated: headers are rare
    # enough that sizing the arrays first is cheaper than growing them.  The
    # caller's buffer may be a bytearray another thread writes to, so this pass
    # checks again rather than trust the first one; -1 means the records changed.
    cdef kc_record_t r
    cdef kc_header_t h
    cdef const uint8_t *p = start
    cdef const uint8_t *hp
    cdef int32_t i, j
    cdef int rc
    cdef Py_ssize_t n = 0
    cdef int64_t[::1] hkp = hk_pos_o
    cdef int32_t[::1] hkl = hk_len_o
    cdef int64_t[::1] hvp = hv_pos_o
    cdef int32_t[::1] hvl = hv_len_o
    cdef Py_ssize_t cap = hkp.shape[0]
    with nogil:
        for i in range(count):
            if _parse(p, end, &r, stream) < 0 or r.header_count > cap - n:
                return -1
            hp = r.headers_start
            for j in range(r.header_count):
                rc = kc_parse_header(hp, end, &h)
                if rc < 0:
                    return -1
                hp += rc
                hkp[n] = h.key - start
                hkl[n] = h.key_len
                hvp[n] = (h.value - start) if h.value_len >= 0 else 0
                hvl[n] = h.value_len
                n += 1
            p = r.end
    return 0 if n == cap else -1


cdef inline int64_t _now_ms():
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef inline bint _is_none_codec(compression):
    # Codec NONE needs no codec object at all: skip the registry lookup per batch.
    if type(compression) is int or isinstance(compression, int):
        return not isinstance(compression, bool) and compression == 0
    if type(compression) is str:
        return (<str>compression) == "none"
    return False


cdef extern from "kc_pyseq.h":
    PyObject *kc_seq_item(PyObject *seq, bint is_list, Py_ssize_t i)
    bint kc_is_pair(PyObject *o)
    PyObject *kc_tuple_item(PyObject *t, Py_ssize_t i)
    bint kc_is_bytes(PyObject *o)
    bint kc_is_str(PyObject *o)
    bint kc_is_none(PyObject *o)
    const char *kc_bytes_data(PyObject *o)
    Py_ssize_t kc_bytes_len(PyObject *o)
    bint kc_is_seq(PyObject *o)
    Py_ssize_t kc_seq_size(PyObject *o)
    const char *kc_utf8(PyObject *o, Py_ssize_t *size) except NULL


cdef inline int _key_value(obj, Py_buffer *buf, bint *have, const uint8_t **ptr, int32_t *length) except -1:
    if obj is None:
        length[0] = -1
        ptr[0] = NULL
    elif type(obj) is bytes:
        ptr[0] = <const uint8_t *>PyBytes_AS_STRING(obj)
        if PyBytes_GET_SIZE(obj) > INT32_MAX_ - 5:
            raise RecordBuilderError("key or value of more than 2 GiB")
        length[0] = <int32_t>PyBytes_GET_SIZE(obj)
    else:
        PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        have[0] = True
        if buf.len > INT32_MAX_ - 5:
            raise RecordBuilderError("key or value of more than 2 GiB")
        ptr[0] = <const uint8_t *>buf.buf
        length[0] = <int32_t>buf.len
    return 0


cdef list _header_slow(h, const char **kp, Py_ssize_t *kl, const char **vp, Py_ssize_t *vl, list keep):
    # Any other header: a 2-sequence, a key of any buffer, a value of any buffer.  Every
    # object a pointer points into is kept, since h may hand out new objects.
    if type(h) is tuple and PyTuple_GET_SIZE(h) == 2:
        hk = (<tuple>h)[0]
        hv = (<tuple>h)[1]
    else:
        hk, hv = h
    if hk is None:
        raise RecordBuilderError("Invalid null header key found in headers")
    if keep is None:
        keep = []
    if isinstance(hk, str):
        kp[0] = PyUnicode_AsUTF8AndSize(hk, kl)
        keep.append(hk)
    else:
        b = hk if type(hk) is bytes else bytes(memoryview(hk))
        keep.append(b)
        kp[0] = PyBytes_AS_STRING(b)
        kl[0] = PyBytes_GET_SIZE(b)
    if hv is None:
        vp[0] = NULL
        vl[0] = -1
    else:
        b = _to_bytes(hv)
        keep.append(b)
        vp[0] = PyBytes_AS_STRING(b)
        vl[0] = PyBytes_GET_SIZE(b)
    return keep


_REENTERED = ("the builder was called again from Python code it was running "
              "(a header pair, a buffer export, its codec or its pool)")


cdef class BatchBuilderCore:
    """Native state and per-record work of :class:`~kcodec.records.RecordBatchBuilder`.

    The batch grows in one buffer that already has room for the 61-byte
    header: a ``bytes`` object owned by the builder (resized in place, and
    handed to the caller by ``build()`` without a copy), or a bytearray
    lent by a BufferPool.  Per record, nothing is allocated unless a header
    key or value is neither ``str`` nor ``bytes``.
    """

    def __cinit__(self, *args, **kwargs):
        self._store = NULL
        self._buf = NULL
        self._cap = 0
        self._hptr = NULL
        self._hlen = NULL
        self._hcap = 0

    def __dealloc__(self):
        Py_XDECREF(self._store)
        self._store = NULL
        free(self._hptr)
        free(self._hlen)

    def __init__(self, magic=2, compression=0, level=None, int64_t base_offset=0,
                 timestamp_type=0, log_append_time=None, int64_t producer_id=-1,
                 int16_t producer_epoch=-1, int32_t base_sequence=-1, bint is_transactional=False,
                 bint is_control=False, int32_t partition_leader_epoch=-1, delete_horizon_ms=None,
                 write_limit=None, pool=None, float estimated_compression_ratio=1.0):
        cdef Py_ssize_t initial
        if magic != 2:
            raise RecordBuilderError(f"RecordBatchBuilder writes magic 2, not {magic!r}; "
                                     "kcodec.batch_builder(magic=...) makes a builder for any magic")
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        if self._store != NULL:  # __init__ called again: start over
            if self._exports:
                raise BufferError("the records are exported (a memoryview of the builder is alive); "
                                  "release it before starting over")
            self._drop_store()
        if _is_none_codec(compression) and level is None:
            self._codec = None
            self._compression = 0
            self.compression_id = 0
            self.level = None
        else:
            codec = get_codec(compression)
            self._codec = codec
            self._compression = compression
            self.compression_id = codec.id
            self.level = codec.resolve_level(level)
            codec.check_magic(2)
        tt = timestamp_type if type(timestamp_type) is int else int(timestamp_type)
        if tt == 1:
            if log_append_time is None:
                raise RecordBuilderError("a LOG_APPEND_TIME batch needs log_append_time")
            self._lat = True
            self._log_append_time = log_append_time
        elif tt == 0:
            self._lat = False
            self._log_append_time = 0
        else:
            raise RecordBuilderError("magic v2 batches need CREATE_TIME or LOG_APPEND_TIME")
        if not estimated_compression_ratio > 0:
            raise RecordBuilderError(
                f"estimated_compression_ratio must be positive, not {estimated_compression_ratio!r}")
        self._ratio = estimated_compression_ratio
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        if delete_horizon_ms is not None and delete_horizon_ms >= 0:
            self._has_dh = True
            self._delete_horizon = delete_horizon_ms
        else:
            self._has_dh = False
            self._delete_horizon = 0
        if write_limit is None:
            self._write_limit = -1
            initial = 16384
        else:
            if write_limit < 0:
                raise RecordBuilderError(f"write_limit must be non-negative, got {write_limit}")
            self._write_limit = min(write_limit, INT32_MAX_)
            initial = min(max(<Py_ssize_t>self._write_limit, 256), 1 << 20)
        self.pool = pool
        self._size = 0
        self._count = 0
        self._exports = 0
        self._last_offset = _NO_LAST
        self._first_ts = NO_TIMESTAMP
        self._max_ts = NO_TIMESTAMP
        self._has_records = False
        self._built = False
        self._has_override = False
        self._last_override = 0
        self.compression_ratio = None
        self._new_store(BATCH_OVERHEAD_ + initial)

    # -- storage ---------------------------------------------------------------
    cdef int _new_store(self, Py_ssize_t cap) except -1:
        cdef object store
        if self.pool is None:
            store = PyBytes_FromStringAndSize(NULL, cap)
            self._store = <PyObject *>store
            Py_INCREF(store)
            self._buf = <uint8_t *>PyBytes_AS_STRING(store)
            self._cap = cap
        else:
            self._adopt(self._pool_get(cap))
        return 0

    cdef void _adopt(self, object store):
        # Make a pooled bytearray the store (the caller has let go of the previous one).
        Py_INCREF(store)
        self._store = <PyObject *>store
        self._buf = <uint8_t *>PyByteArray_AS_STRING(store)
        self._cap = PyByteArray_GET_SIZE(store)

    cdef object _pool_get(self, Py_ssize_t cap):
        store = self.pool.get(cap)
        if type(store) is not bytearray:
            raise TypeError("BufferPool.get() must return a bytearray")
        if PyByteArray_GET_SIZE(store) < cap:
            raise ValueError(f"BufferPool.get({cap}) returned a bytearray of {PyByteArray_GET_SIZE(store)} bytes")
        return store

    cdef void _drop_store(self):
        cdef object store
        if self._store == NULL:
            return
        store = <object>self._store
        Py_DECREF(store)
        self._store = NULL
        self._buf = NULL
        self._cap = 0
        if self.pool is not None and type(store) is bytearray:
            self.pool.put(store)

    cdef int _grow(self, Py_ssize_t need, bint keep) except -1:
        # Room for `need` bytes in the store; `keep` copies the bytes written so far.
        cdef Py_ssize_t cap = self._cap * 2
        cdef object old
        if self._store == NULL:
            raise RecordBuilderError("this builder has already built its batch")
        if need <= self._cap:
            return 0
        if self._exports:
            raise BufferError("the records buffer is exported and cannot grow")
        if cap < need:
            cap = need
        if self.pool is None:
            # On failure _PyBytes_Resize frees the store and leaves NULL: the builder then refuses appends.
            self._buf = NULL
            self._cap = 0
            _PyBytes_Resize(&self._store, cap)
            self._buf = <uint8_t *>PyBytes_AS_STRING(<object>self._store)
            self._cap = cap
            return 0
        # The pool is Python: until it has answered, the builder keeps its old store
        # whole, so a failing get() loses nothing.
        store = self._pool_get(cap)
        if self._exports:  # a view was taken meanwhile: it must keep seeing the old store
            self.pool.put(store)
            raise BufferError("the records buffer is exported and cannot grow")
        old = <object>self._store
        if keep:
            memcpy(PyByteArray_AS_STRING(store), self._buf, BATCH_OVERHEAD_ + self._size)
        Py_DECREF(old)  # the store's own reference; `old` keeps it for the pool
        self._adopt(store)
        self.pool.put(old)
        return 0

    def __getbuffer__(self, Py_buffer *view, int flags):
        # The records written so far: the input of the codec in build().
        if self._built or self._store == NULL:
            raise BufferError("this builder has already built its batch")
        view.buf = self._buf + BATCH_OVERHEAD_
        view.obj = self
        view.len = self._size
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &view.len  # this view's length, not the builder's, which grows
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._exports -= 1

    # -- state -----------------------------------------------------------------
    @property
    def codec(self):
        """The codec that compresses this batch (looked up on first use for NONE)."""
        if self._codec is None:
            self._codec = get_codec(self._compression)
        return self._codec

    @property
    def timestamp_type(self):
        return TimestampType.LOG_APPEND_TIME if self._lat else TimestampType.CREATE_TIME

    @property
    def log_append_time(self):
        return self._log_append_time if self._lat else None

    @property
    def delete_horizon_ms(self):
        return self._delete_horizon if self._has_dh else None

    @property
    def write_limit(self):
        return None if self._write_limit < 0 else self._write_limit

    @property
    def estimated_compression_ratio(self) -> float:
        return self._ratio

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def uncompressed_size(self) -> int:
        """Bytes of the batch if written uncompressed."""
        return BATCH_OVERHEAD_ + self._size

    @property
    def estimated_size(self) -> int:
        """Kafka's ``estimatedBytesWritten()`` (see the class documentation)."""
        return self._estimated()

    @property
    def next_offset(self) -> int:
        return self._last_offset + 1 if self._has_records else self.base_offset

    @property
    def last_offset(self):
        return self._last_offset if self._has_records else None

    @property
    def max_timestamp(self) -> int:
        return self._max_ts

    cdef int64_t _estimated(self):
        cdef float f
        if self.compression_id == 0:
            return BATCH_OVERHEAD_ + self._size
        # Java multiplies in float: (int) (written * estimatedCompressionRatio * 1.05f)
        f = <float>self._size
        f = f * self._ratio
        f = f * <float>1.05
        if f >= <float>INT32_MAX_:
            return BATCH_OVERHEAD_ + <int64_t>INT32_MAX_
        return BATCH_OVERHEAD_ + <int64_t>f

    def is_full(self) -> bool:
        """Kafka's ``isFull()``: built, or a write limit the estimated size has reached."""
        return self._built or (self._write_limit >= 0 and self._count > 0
                               and self._write_limit <= self._estimated())

    # -- records ---------------------------------------------------------------
    cdef list _scan_headers(self, headers, int32_t *count, int64_t *size):
        # Pointers and lengths of every header key and value into the scratch arrays;
        # returns the temporaries those pointers need alive (None when there are none).
        # The pairs of a list or a tuple are read through borrowed references (the
        # caller's sequence keeps them alive, and no Python code runs while exact
        # (str | bytes, bytes | None) tuples are read); any other iterable, or a list
        # with a pair that needs the slow path, is made a tuple first, which is
        # kept with the temporaries.
        cdef list keep = None
        cdef bint is_list
        cdef Py_ssize_t n, i
        cdef Py_ssize_t kl = 0, vl = 0
        cdef const char *kp
        cdef const char *vp = NULL
        cdef int64_t total = 0
        cdef PyObject *h
        cdef PyObject *hk
        cdef PyObject *hv
        count[0] = 0
        size[0] = 0
        if not kc_is_seq(<PyObject *>headers):
            if not headers:
                return None
            headers = tuple(headers)
            keep = [headers]
        n = kc_seq_size(<PyObject *>headers)
        if n == 0:
            return keep
        is_list = type(headers) is list
        if n > INT32_MAX_:
            raise RecordBuilderError("too many headers")
        if n > self._hcap:
            self._hptr = <const char **>realloc(self._hptr, 2 * n * sizeof(char *))
            self._hlen = <Py_ssize_t *>realloc(self._hlen, 2 * n * sizeof(Py_ssize_t))
            if self._hptr == NULL or self._hlen == NULL:
                self._hcap = 0
                raise MemoryError()
            self._hcap = n
        i = 0
        while i < n:
            h = kc_seq_item(<PyObject *>headers, is_list, i)
            kp = NULL
            if kc_is_pair(h):
                hk = kc_tuple_item(h, 0)
                hv = kc_tuple_item(h, 1)
                if kc_is_bytes(hv) or kc_is_none(hv):
                    if kc_is_str(hk):
                        kp = kc_utf8(hk, &kl)
                    elif kc_is_bytes(hk):
                        kp = kc_bytes_data(hk)
                        kl = kc_bytes_len(hk)
                if kp != NULL:
                    if kc_is_none(hv):
                        vp = NULL
                        vl = -1
                    else:
                        vp = kc_bytes_data(hv)
                        vl = kc_bytes_len(hv)
            if kp == NULL:
                if is_list:
                    # The slow path runs Python code (unpacking, buffer exports) that could
                    # change the list and free the pairs read so far: scan a snapshot
                    # from the start instead.
                    headers = PyList_AsTuple(headers)
                    keep = [headers]
                    is_list = False
                    total = 0
                    i = 0
                    continue
                keep = _header_slow(<object>h, &kp, &kl, &vp, &vl, keep)
            if kl > INT32_MAX_ - 5 or vl > INT32_MAX_ - 5:
                raise RecordBuilderError("header of more than 2 GiB")
            self._hptr[2 * i] = kp
            self._hlen[2 * i] = kl
            self._hptr[2 * i + 1] = vp
            self._hlen[2 * i + 1] = vl
            total += kc_header_size(<int32_t>kl, <int32_t>vl)
            i += 1
        count[0] = <int32_t>n
        size[0] = total
        return keep

    def append(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        """Append a data record; returns its offset.

        ``None`` key/value is null, ``b""`` is empty (both round-trip).
        ``timestamp`` defaults to now (CREATE_TIME) or the log append time;
        ``offset`` defaults to the next offset and may leave gaps but must
        increase.  ``headers`` are ``(str, bytes | None)`` pairs.
        """
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        return self._add(key, value, timestamp, headers, offset)

    def _append_raw(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        # Without the data/control check: the control records of a control batch.
        return self._add(key, value, timestamp, headers, offset)

    def append_many(self, keys, values, timestamps=None, headers=None) -> int:
        """Append records from parallel sequences (lists, tuples, numpy object arrays).

        As many records are appended as ``keys`` and ``values`` both have;
        ``timestamps`` and ``headers`` are optional sequences with at least
        as many items (RecordBuilderError when one runs out, after the
        records before it are appended).  Returns how many were appended.
        """
        cdef Py_ssize_t n = 0
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        if _list_or_tuple(keys) and _list_or_tuple(values) and \
                (timestamps is None or _list_or_tuple(timestamps)) and (headers is None or _list_or_tuple(headers)):
            # Indexed directly, without iterator objects; sizes are read again at
            # every step (as list iterators do), since a key's buffer or a
            # timestamp's __index__ may run code that changes the lists.
            while n < PySequence_Fast_GET_SIZE(keys) and n < PySequence_Fast_GET_SIZE(values):
                ts = None if timestamps is None else _item_of(timestamps, n, "timestamps")
                if ts is not None and type(ts) is not int:
                    ts = int(ts)
                hs = () if headers is None else _item_of(headers, n, "headers")
                if n >= PySequence_Fast_GET_SIZE(keys) or n >= PySequence_Fast_GET_SIZE(values):
                    break  # int() above ran code that shortened them
                # Owned references: _add may run code (a headers iterable) that empties the lists.
                key = <object>PySequence_Fast_GET_ITEM(keys, n)
                value = <object>PySequence_Fast_GET_ITEM(values, n)
                self._add(key, value, ts, () if hs is None else hs, None)
                n += 1
            return n
        ts_iter = iter(timestamps) if timestamps is not None else None
        h_iter = iter(headers) if headers is not None else None
        for key, value in zip(keys, values):
            ts = _next_of(ts_iter, n, "timestamps") if ts_iter is not None else None
            hs = _next_of(h_iter, n, "headers") if h_iter is not None else ()
            self._add(key, value, None if ts is None else int(ts), hs if hs is not None else (), None)
            n += 1
        return n

    cdef int64_t _add(self, key, value, timestamp, headers, offset) except? -9223372036854775807:
        cdef Py_buffer kb, vb
        cdef int32_t klen = -1, vlen = -1, hcount = 0, j
        cdef int64_t hsize = 0, body, off, delta, ts, base
        cdef const uint8_t *kp = NULL
        cdef const uint8_t *vp = NULL
        cdef uint8_t *p
        cdef bint have_k = False, have_v = False
        cdef list keep = None
        if self._built:
            raise RecordBuilderError("this builder has already built its batch")
        if offset is None:
            off = self._last_offset + 1 if self._has_records else self.base_offset
        else:
            off = offset
            if self._has_records and off <= self._last_offset:
                raise RecordBuilderError(
                    f"Illegal offset {off} following previous offset {self._last_offset} "
                    "(Offsets must increase monotonically).")
        delta = off - self.base_offset
        if delta > INT32_MAX_ or delta < -INT32_MAX_ - 1:
            raise RecordBuilderError(
                f"Maximum offset delta exceeded, base offset: {self.base_offset}, last offset: {off}")
        if self._count == INT32_MAX_ - 1:
            raise RecordBuilderError("Maximum number of records per batch exceeded, max records: 2147483647")
        if timestamp is None:
            ts = self._log_append_time if self._lat else _now_ms()
        else:
            ts = timestamp
            if ts < 0 and ts != NO_TIMESTAMP:
                raise RecordBuilderError(f"Invalid negative timestamp {ts}")
        if self._has_dh:
            base = self._delete_horizon
        elif self._has_records:
            base = self._first_ts
        else:
            base = ts
        if self._busy:
            # Python code run by this builder (a header pair to unpack, a buffer to export,
            # its pool) called it again: the scratch header arrays and the offsets above
            # are in use, and the store may be between two buffers.
            raise RecordBuilderError(_REENTERED)
        self._busy = True
        try:
            keep = self._scan_headers(headers, &hcount, &hsize)
            _key_value(key, &kb, &have_k, &kp, &klen)
            _key_value(value, &vb, &have_v, &vp, &vlen)
            body = kc_record_body_size(ts - base, <int32_t>delta, klen, vlen, hcount, hsize)
            if body > INT32_MAX_ - 5:
                raise RecordBuilderError(f"record of {body} bytes is too large")
            self._grow(BATCH_OVERHEAD_ + self._size + body + 5, True)
            p = self._buf + BATCH_OVERHEAD_ + self._size
            p += kc_write_record_sized(p, body, ts - base, <int32_t>delta, kp, klen, vp, vlen, hcount)
            for j in range(hcount):
                p += kc_write_header(p, <const uint8_t *>self._hptr[2 * j], <int32_t>self._hlen[2 * j],
                                     <const uint8_t *>self._hptr[2 * j + 1], <int32_t>self._hlen[2 * j + 1])
        finally:
            self._busy = False
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        self._size = p - (self._buf + BATCH_OVERHEAD_)
        self._count += 1
        if not self._has_records:
            self._first_ts = ts
            self._has_records = True
        if ts > self._max_ts:
            self._max_ts = ts
        self._last_offset = off
        return off

    def has_room_for(self, key, value, headers=(), timestamp=None) -> bool:
        """Kafka's ``hasRoomFor``: whether this record keeps the batch within ``write_limit``.

        The first record always fits.  After it, the estimated size (see
        :attr:`estimated_size`) plus the record's uncompressed size must not
        exceed the limit; like Kafka, the new record is not scaled by the
        compression estimate.
        """
        cdef Py_buffer kb, vb
        cdef bint have_k = False, have_v = False
        cdef const uint8_t *kp
        cdef const uint8_t *vp
        cdef int32_t klen = -1, vlen = -1, hcount = 0
        cdef list keep = None
        cdef int64_t hsize = 0, ts, tsd, body
        cdef int32_t offd
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        if self.is_full():
            return False
        if self._count == 0 or self._write_limit < 0:
            return True
        ts = _now_ms() if timestamp is None else timestamp
        # Kafka sizes the delta from the first record's timestamp, whatever the base timestamp.
        tsd = ts - self._first_ts
        offd = <int32_t>(self._last_offset - self.base_offset + 1)
        keep = self._scan_headers(headers, &hcount, &hsize)
        try:
            _key_value(key, &kb, &have_k, &kp, &klen)
            _key_value(value, &vb, &have_v, &vp, &vlen)
        finally:
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        body = kc_record_body_size(tsd, offd, klen, vlen, hcount, hsize)
        return self._write_limit >= self._estimated() + kc_record_size(body)

    def _set_last_offset(self, int64_t offset) -> None:
        # Kafka's overrideLastOffset (see RecordBatchBuilder.override_last_offset).
        if self._has_records and offset < self._last_offset:
            raise RecordBuilderError(
                f"last offset {offset} is below the last appended offset {self._last_offset}")
        self._has_override = True
        self._last_override = offset

    # -- building --------------------------------------------------------------
    cdef bint _compress_native(self) except -1:
        # A codec with native functions (kcodec/codec.h: every built-in, and
        # plugins that have them) writes the frame, without the GIL, after
        # room for the header in a new bytes object that becomes the batch:
        # the compressed payload is then never copied.
        cdef NativeCodec native = native_of(self.codec)
        if native is None:
            return False
        out = native.compress_after(self._buf + BATCH_OVERHEAD_, self._size,
                                    0 if self.level is None else self.level, 2, BATCH_OVERHEAD_)
        if PyBytes_GET_SIZE(out) > INT32_MAX_:
            raise RecordBuilderError(f"batch of {PyBytes_GET_SIZE(out)} bytes exceeds the int32 size field")
        self._drop_store()
        self._store = <PyObject *>out
        Py_INCREF(out)
        self._buf = <uint8_t *>PyBytes_AS_STRING(out)
        self._cap = PyBytes_GET_SIZE(out)
        return True

    def build(self):
        """Write header, CRC-32C and (compressed) records.

        Without a pool the result is ``bytes`` owned by the caller (the
        builder's own buffer, handed over without a copy).  With a pool it is
        a :class:`~kcodec.records.PooledBuffer` to ``release()`` after use.
        """
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        self._busy = True  # the codec and the pool run Python code
        try:
            return self._build()
        finally:
            self._busy = False

    cdef object _build(self):
        cdef Py_buffer pv
        cdef Py_ssize_t plen, total
        cdef int16_t attributes
        cdef int64_t base_ts, max_ts, last
        cdef float ratio
        cdef object out
        cdef object store
        cdef object detached = None
        cdef uint8_t *dst = NULL
        cdef int exports
        if self._built:
            raise RecordBuilderError("build() was already called")
        if self._count == 0:
            raise RecordBuilderError("cannot build a batch without records (Kafka writes nothing)")
        if self._has_dh:
            base_ts = self._delete_horizon
        else:
            base_ts = self._first_ts
        if base_ts < 0 and base_ts != NO_TIMESTAMP:
            raise RecordBuilderError(f"Invalid message timestamp {base_ts}")
        attributes = <int16_t>self.compression_id
        if self._lat:
            attributes |= 0x08
            max_ts = self._log_append_time
        else:
            max_ts = self._max_ts
        if self.is_transactional:
            attributes |= 0x10
        if self.is_control:
            attributes |= 0x20
        if self._has_dh:
            attributes |= 0x40
        last = self._last_override if self._has_override else self._last_offset
        # A live view of the records (memoryview(builder)) keeps this builder and its
        # store alive and must keep seeing valid memory: the batch is then assembled
        # in a separate buffer (`detached`) and the store stays until the builder goes.
        if self.compression_id == 0:
            plen = self._size
        elif self.pool is None and self._exports == 0 and self._compress_native():
            plen = self._cap - BATCH_OVERHEAD_
        else:
            exports = self._exports
            payload = self.codec.compress(self, self.level, magic=2)
            if self._exports > exports:
                # The codec's result (or something it kept) views the records: work from a copy.
                payload = bytes(payload)
                if self._exports > exports:
                    raise BufferError(f"codec {self.codec.name!r} kept a view of the records it compressed")
            PyObject_GetBuffer(payload, &pv, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
            try:
                plen = pv.len
                if BATCH_OVERHEAD_ + plen > INT32_MAX_:
                    raise RecordBuilderError(f"batch of {BATCH_OVERHEAD_ + plen} bytes exceeds the int32 size field")
                if self._exports:
                    detached = self._detached(BATCH_OVERHEAD_ + plen)
                    dst = _data_of(detached)
                else:
                    # The records are in the payload now: their memory takes the compressed bytes.
                    self._grow(BATCH_OVERHEAD_ + plen, False)
                    dst = self._buf
                memcpy(dst + BATCH_OVERHEAD_, pv.buf, plen)
            finally:
                PyBuffer_Release(&pv)
            del payload
        ratio = <float>plen / <float>(self._size if self._size > 0 else 1)
        self.compression_ratio = ratio
        total = BATCH_OVERHEAD_ + plen
        if total > INT32_MAX_:
            raise RecordBuilderError(f"batch of {total} bytes exceeds the int32 size field")
        if detached is None:
            if self._exports:
                detached = self._detached(total)
                dst = _data_of(detached)
                memcpy(dst + BATCH_OVERHEAD_, self._buf + BATCH_OVERHEAD_, plen)
            else:
                dst = self._buf
        if total < 65536:
            kc_batch_write(dst, total, self.base_offset, self.partition_leader_epoch, attributes,
                           <int32_t>(last - self.base_offset), base_ts, max_ts, self.producer_id,
                           self.producer_epoch, self.base_sequence, self._count)
        else:  # the CRC of a large batch runs without the GIL
            with nogil:
                kc_batch_write(dst, total, self.base_offset, self.partition_leader_epoch, attributes,
                               <int32_t>(last - self.base_offset), base_ts, max_ts, self.producer_id,
                               self.producer_epoch, self.base_sequence, self._count)
        self._built = True
        if detached is not None:
            return detached if self.pool is None else PooledBuffer(detached, total, self.pool)
        if self.pool is None:
            kc_bytes_shrink(&self._store, total)
            out = <object>self._store
            Py_DECREF(out)
            self._store = NULL
        else:
            store = <object>self._store
            Py_DECREF(store)
            self._store = NULL
            out = PooledBuffer(store, total, self.pool)
        self._buf = NULL
        self._cap = 0
        return out

    cdef object _detached(self, Py_ssize_t size):
        # A buffer for the batch apart from the store (see build()): bytes, or a pooled bytearray.
        if self.pool is None:
            return PyBytes_FromStringAndSize(NULL, size)
        return self._pool_get(size)


cdef inline uint8_t *_data_of(obj):
    # The memory of a bytes or bytearray made by BatchBuilderCore._detached().
    if type(obj) is bytes:
        return <uint8_t *>PyBytes_AS_STRING(obj)
    return <uint8_t *>PyByteArray_AS_STRING(obj)


def record_size(int32_t offset_delta, int64_t timestamp_delta, key, value, headers=()) -> int:
    """Encoded size of a record (Kafka's DefaultRecord.sizeInBytes)."""
    cdef int64_t hsize = 0
    cdef int32_t hcount = 0
    cdef int32_t klen = -1 if key is None else len(memoryview(key).cast("B"))
    cdef int32_t vlen = -1 if value is None else len(memoryview(value).cast("B"))
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(memoryview(hk))
        hvb = _to_bytes(hv)
        hsize += kc_header_size(len(hkb), -1 if hvb is None else len(hvb))
        hcount += 1
    cdef int64_t body = kc_record_body_size(timestamp_delta, offset_delta, klen, vlen, hcount, hsize)
    return kc_record_size(body)


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
                if view.len - position < 12:
                    raise CorruptRecordError("fewer than 12 bytes left for a batch's offset and size",
                                             position=position)
                total = <int32_t>kc_load_be32(p + 8) + <Py_ssize_t>12
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
        cdef uint8_t hdr[61]
        cdef kc_batch_header_t h
        if total < BATCH_OVERHEAD_:
            # too small for a header: ensure_valid() reports it; fields read as zero
            memset(hdr, 0, BATCH_OVERHEAD_)
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
        start = self.position + min(<Py_ssize_t>BATCH_OVERHEAD_, self.size_in_bytes)
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
        if self.size_in_bytes < BATCH_OVERHEAD_:
            raise CorruptRecordError(
                f"Record batch is corrupt (the size {self.size_in_bytes} is smaller than the minimum "
                f"allowed overhead {BATCH_OVERHEAD_})", position=self.position, batch_offset=self.base_offset)
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
        return self.size_in_bytes >= BATCH_OVERHEAD_ and self.crc == self.compute_checksum()

    def ensure_valid(self) -> None:
        """Kafka's DefaultRecordBatch.ensureValid: minimum size and CRC-32C (CorruptRecordError)."""
        cdef Py_buffer view
        if self.size_in_bytes < BATCH_OVERHEAD_:
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
        cdef int cid = self.attributes & 0x07
        cdef NativeCodec native
        payload = self.payload
        if cid == 0:
            return payload
        try:
            codec = get_codec(cid)
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)
        try:
            native = native_of(codec)
            if native is not None:
                return native.decompress_buffer(payload, 2, self._max_size)
            return codec.decompress(payload, magic=2, max_size=self._max_size)
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)

    def _pooled_records(self):
        """:meth:`records_data`, decompressed into a buffer of the batch's pool where it has one
        and its codec native functions: then a PooledBuffer the caller releases."""
        cdef int cid = self.attributes & 0x07
        cdef NativeCodec native
        if cid == 0 or self._pool is None:
            return self.records_data()
        try:
            native = native_of(get_codec(cid))
            if native is None:
                return self.records_data()
            store, size = native.decompress_buffer(self.payload, 2, self._max_size, self._pool)
        except KcodecError as exc:
            raise exc.with_context(position=self.position, batch_offset=self.base_offset)
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
            return RecordIterator(self.records_data(), self.record_count, self.base_offset, self.base_timestamp,
                                  tstype, lat, self.max_timestamp, self.base_sequence, False, True,
                                  self.position, self.base_offset, True)
        return RecordIterator(self._src, self.record_count, self.base_offset, self.base_timestamp, tstype, lat,
                              self.max_timestamp, self.base_sequence, False, False,
                              self.position + BATCH_OVERHEAD_, self.base_offset, False,
                              self.position + BATCH_OVERHEAD_, self.position + self.size_in_bytes)


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
        if pos < 0 or total_size < 61 or pos > view.len or total_size > view.len - pos:
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
        total = 61 + rv.len
        if total > INT32_MAX_:
            raise RecordBuilderError(f"batch of {total} bytes exceeds the int32 size field")
        if out is None:
            result = PyBytes_FromStringAndSize(NULL, total)
            memcpy(PyBytes_AS_STRING(result) + 61, rv.buf, rv.len)
            kc_batch_write(<uint8_t *>PyBytes_AS_STRING(result), total, base_offset, partition_leader_epoch,
                           attributes, last_offset_delta, base_timestamp, max_timestamp, producer_id,
                           producer_epoch, base_sequence, records_count)
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


def read_batch_header(buf, Py_ssize_t pos=0) -> tuple:
    """The v2 header fields at ``buf[pos:pos+61]``: (baseOffset, batchLength,
    partitionLeaderEpoch, magic, crc, attributes, lastOffsetDelta, baseTimestamp,
    maxTimestamp, producerId, producerEpoch, baseSequence, recordsCount)."""
    cdef Py_buffer view
    cdef kc_batch_header_t h
    PyObject_GetBuffer(buf, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if pos < 0 or pos > view.len or view.len - pos < 61:
            raise ValueError("fewer than 61 bytes for a v2 batch header")
        kc_batch_read(<const uint8_t *>view.buf + pos, &h)
        return (h.base_offset, h.length, h.partition_leader_epoch, h.magic, h.crc, h.attributes,
                h.last_offset_delta, h.base_timestamp, h.max_timestamp, h.producer_id, h.producer_epoch,
                h.base_sequence, h.records_count)
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
    cdef Py_buffer _held  # an export of _store until release(): a bytearray cannot be resized under it
    cdef bint _holding
    cdef Py_ssize_t _len
    cdef int _exports
    cdef bint _released

    def __cinit__(self, store, Py_ssize_t length, pool):
        self._holding = False
        PyObject_GetBuffer(store, &self._held, PyBUF_SIMPLE)
        self._holding = True
        if length < 0 or length > self._held.len:
            raise ValueError(f"length {length} is outside the pooled buffer's {self._held.len} bytes")
        self._store = store
        self._len = length
        self._pool = pool
        self._exports = 0
        self._released = False

    def __dealloc__(self):
        if self._holding:
            PyBuffer_Release(&self._held)
            self._holding = False

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
        PyBuffer_Release(&self._held)
        self._holding = False
        store = self._store
        self._store = None
        self._pool._give_back(store)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def tobytes(self) -> bytes:
        self._check()
        return PyBytes_FromStringAndSize(<const char *>self._held.buf, self._len)

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self._released:
            raise BufferReleasedError("this pooled buffer was released back to its pool")
        view.buf = self._held.buf
        view.obj = self
        view.len = self._len
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &view.len
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._exports -= 1


cdef extern from "kc_tp_new.h":
    object _tp_new "kc_tp_new"(object type, object args, PyObject *kwds)


cdef int _entry_at(const uint8_t *buf, Py_ssize_t limit, Py_ssize_t pos, bint strict, Py_ssize_t *total,
                   int *magic) except -1:
    """One step of Kafka's ``ByteBufferLogInputStream`` over ``buf[:limit]``: 1 when a complete entry
    (``total`` bytes, ``magic``) starts at ``pos``, 0 where the walk ends.

    Fewer than 12 or 17 bytes left, or an entry running past the end, end it
    (``strict``: CorruptRecordError for those trailing bytes); a size below
    14 or a magic outside 0..2 raises CorruptRecordError.
    """
    cdef Py_ssize_t remaining = limit - pos
    cdef const uint8_t *p = buf + pos
    cdef int32_t size
    if remaining >= 12:
        size = <int32_t>kc_load_be32(p + 8)
        if size < 14:
            raise CorruptRecordError(f"Record size {size} is less than the minimum record overhead (14)",
                                     position=pos)
        if remaining >= 17:
            magic[0] = <int8_t>p[16]
            if magic[0] < 0 or magic[0] > 2:
                raise CorruptRecordError(f"Invalid magic found in record: {magic[0]}", position=pos)
            total[0] = <Py_ssize_t>size + 12
            if remaining >= total[0]:
                return 1
    if strict and remaining > 0:
        raise CorruptRecordError(f"{remaining} trailing bytes do not form a complete batch", position=pos)
    return 0


@cython.final
cdef class EntryWalker:
    """``(position, size, offset, magic)`` of each complete entry of ``buf[start:end]`` (see _entry_at).

    Backs :func:`kcodec.records.framing.iter_entries`; the buffer is acquired
    afresh on every step, as :class:`BatchReader` does.
    """
    cdef object src
    cdef Py_ssize_t pos
    cdef Py_ssize_t end
    cdef bint bounded
    cdef bint strict
    cdef bint done

    def __cinit__(self, src, Py_ssize_t start=0, end=None, bint strict=False):
        if start < 0:
            raise ValueError(f"start must not be negative, got {start}")
        self.src = src
        self.pos = start
        self.bounded = end is not None
        self.end = end if self.bounded else 0
        self.strict = strict
        self.done = False

    def __iter__(self):
        return self

    def __next__(self):
        cdef Py_buffer view
        cdef Py_ssize_t total, limit, pos = self.pos
        cdef int magic
        if self.done:
            raise StopIteration
        PyObject_GetBuffer(self.src, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            limit = min(self.end, view.len) if self.bounded else view.len
            self.done = True  # until a complete entry is found (an error ends the walk too)
            if _entry_at(<const uint8_t *>view.buf, limit, pos, self.strict, &total, &magic):
                self.done = False
                self.pos = pos + total
                return pos, total, <int64_t>kc_load_be64(<const uint8_t *>view.buf + pos), magic
            raise StopIteration
        finally:
            PyBuffer_Release(&view)


@cython.final
cdef class BatchReader:
    """The batches of a buffer, walked natively as Kafka's ``ByteBufferLogInputStream`` walks them.

    Backs :func:`kcodec.read_batches`.  v2 batches are made as instances of
    ``batch_cls`` (a RecordBatchBase subclass) without going through Python,
    and their size and CRC-32C are checked here when ``validate``; other
    magics are handed to ``legacy(src, position, size, max_decompressed_size,
    pool, validate)``.  The buffer is acquired afresh on every step, so one
    that changes between steps is read as it is then.  The walk follows
    Kafka's rules (see _entry_at), as :class:`EntryWalker` does.
    """
    cdef object src
    cdef object batch_cls
    cdef object legacy
    cdef object max_size
    cdef object pool
    cdef bint validate
    cdef bint strict
    cdef bint done
    cdef Py_ssize_t pos

    def __cinit__(self, src, batch_cls, legacy, bint validate=True, bint strict=False, max_decompressed_size=None,
                  pool=None, Py_ssize_t start=0):
        if not issubclass(batch_cls, RecordBatchBase):
            raise TypeError("batch_cls must be a RecordBatchBase subclass")
        self.src = src
        self.batch_cls = batch_cls
        self.legacy = legacy
        self.validate = validate
        self.strict = strict
        self.max_size = max_decompressed_size
        self.pool = pool
        if start < 0:
            raise ValueError(f"start must not be negative, got {start}")
        self.pos = start
        self.done = False

    def __iter__(self):
        return self

    def __next__(self):
        cdef Py_buffer view
        cdef const uint8_t *p
        cdef Py_ssize_t total, pos = self.pos
        cdef int magic
        cdef RecordBatchBase batch
        if self.done:
            raise StopIteration
        PyObject_GetBuffer(self.src, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            self.done = True  # until a complete entry is found (an error ends the walk too)
            if not _entry_at(<const uint8_t *>view.buf, view.len, pos, self.strict, &total, &magic):
                raise StopIteration
            self.done = False
            self.pos = pos + total
            if magic < 2:
                return self.legacy(self.src, pos, total, self.max_size, self.pool, self.validate)
            p = <const uint8_t *>view.buf + pos
            # tp_new directly: no Python-level call of __new__ per batch
            batch = <RecordBatchBase>_tp_new(self.batch_cls, (), NULL)
            batch._fill(self.src, p, pos, total, self.max_size, self.pool)
            if self.validate:
                batch._ensure_valid_at(p)
            return batch
        finally:
            PyBuffer_Release(&view)
