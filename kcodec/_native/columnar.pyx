# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Columnar record paths: gather record fields into Arrow buffers, and encode
records straight from Arrow buffers.  Python touches only per-batch objects;
every per-record step is a C loop without the GIL.
"""
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS,
                             PyBUF_FORMAT, PyBUF_ND)
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, realloc, free

import numpy as np
cimport numpy as cnp

from kcodec.errors import RecordBuilderError

cnp.import_array()

cdef extern from "kc_record.h" nogil:
    int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta, int32_t key_len,
                                int32_t value_len, int32_t header_count, int64_t headers_size)
    int64_t kc_header_size(int32_t key_len, int32_t value_len)
    int64_t kc_write_record_sized(uint8_t *p, int64_t body_size, int64_t timestamp_delta, int32_t offset_delta,
                                  const uint8_t *key, int32_t key_len, const uint8_t *value, int32_t value_len,
                                  int32_t header_count)
    int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len)

cdef extern from "kc_crc.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const uint8_t *buf, size_t len)

cdef extern from "kc_endian.h" nogil:
    uint32_t kc_load_be32(const uint8_t *p)
    uint64_t kc_load_be64(const uint8_t *p)
    void kc_store_be16(uint8_t *p, uint16_t v)
    void kc_store_be32(uint8_t *p, uint32_t v)
    void kc_store_be64(uint8_t *p, uint64_t v)

cdef extern from "kc_varint.h" nogil:
    int kc_varint_size(int32_t v)

def gather_binary(list datas, list positions, list lengths, Py_ssize_t total_rows):
    """Concatenate variable-length fields of many records into Arrow binary buffers.

    ``datas[i]`` is a buffer, ``positions[i]``/``lengths[i]`` int64/int32
    arrays into it (length -1 = null).  Returns ``(offsets int32[n+1],
    data uint8[], validity bitmap uint8[] or None, null_count)``.
    """
    cdef Py_ssize_t nb = len(datas), b, i, row = 0, total = 0, nulls = 0
    cdef cnp.ndarray[int32_t] offsets = np.empty(total_rows + 1, np.int32)
    cdef int32_t *offs = <int32_t *>offsets.data
    cdef const int64_t[::1] pos
    cdef const int32_t[::1] ln
    cdef Py_ssize_t n
    for b in range(nb):
        ln = lengths[b]
        for i in range(ln.shape[0]):
            if ln[i] > 0:
                total += ln[i]
            elif ln[i] < 0:
                nulls += 1
    if total > 2147483647:
        raise OverflowError("more than 2 GiB in one column; convert fewer batches at a time")
    cdef cnp.ndarray[uint8_t] out = np.empty(total, np.uint8)
    cdef uint8_t *o = <uint8_t *>out.data
    cdef cnp.ndarray[uint8_t] valid
    cdef uint8_t *v = NULL
    if nulls:
        valid = np.zeros((total_rows + 7) // 8, np.uint8)
        v = <uint8_t *>valid.data
    cdef Py_buffer view
    cdef const uint8_t *src
    cdef int32_t cur = 0
    for b in range(nb):
        pos = positions[b]
        ln = lengths[b]
        n = ln.shape[0]
        PyObject_GetBuffer(datas[b], &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            src = <const uint8_t *>view.buf
            with nogil:
                for i in range(n):
                    offs[row] = cur
                    if ln[i] >= 0:
                        memcpy(o + cur, src + pos[i], ln[i])
                        cur += ln[i]
                        if v != NULL:
                            v[row >> 3] |= <uint8_t>(1 << (row & 7))
                    row += 1
        finally:
            PyBuffer_Release(&view)
    offs[row] = cur
    return offsets, out, (valid if nulls else None), nulls


cdef extern from *:
    """
    /* Column accessors for the encode loops: forced inline, since GCC leaves
       them out of line in the large loop bodies and the per-record call costs ~10%. */
    typedef struct {
        const uint8_t *valid;   /* Arrow validity bitmap or NULL */
        int64_t voff;           /* the array's offset into that bitmap */
        const int64_t *offs;    /* int64 value offsets (large binary) */
        const uint8_t *data;
    } kc_col_t;

    static inline __attribute__((always_inline)) int kc_bit_valid(const uint8_t *bitmap, int64_t offset,
                                                                  int64_t i) {
        if (bitmap == NULL) return 1;
        i += offset;
        return (bitmap[i >> 3] >> (i & 7)) & 1;
    }

    static inline __attribute__((always_inline)) int32_t kc_col_len(const kc_col_t *c, int64_t i) {
        if (!kc_bit_valid(c->valid, c->voff, i)) return -1;
        return (int32_t)(c->offs[i + 1] - c->offs[i]);
    }
    """
    ctypedef struct kc_col_t:
        const uint8_t *valid
        int64_t voff
        const int64_t *offs
        const uint8_t *data
    bint kc_bit_valid(const uint8_t *bitmap, int64_t offset, int64_t i) nogil
    int32_t kc_col_len(const kc_col_t *c, int64_t i) nogil


ctypedef kc_col_t _Col


cdef int _col_from(tuple spec, _Col *c, list keep) except -1:
    # spec = (validity buffer or None, validity offset, int64 offsets ndarray, data buffer or None)
    cdef Py_buffer view
    valid, voff, offs, data = spec
    c.voff = voff
    c.valid = NULL
    c.data = NULL
    if valid is not None:
        arr = np.frombuffer(valid, np.uint8)
        keep.append(arr)
        c.valid = <const uint8_t *>cnp.PyArray_DATA(arr)
    keep.append(offs)
    c.offs = <const int64_t *>cnp.PyArray_DATA(offs)
    if data is not None:
        arr = np.frombuffer(data, np.uint8)
        keep.append(arr)
        c.data = <const uint8_t *>cnp.PyArray_DATA(arr) if arr.shape[0] else <const uint8_t *>""
    else:
        c.data = <const uint8_t *>""
    return 0


def encode_columnar(Py_ssize_t n, key, value, hdr_list, hkey, hval, timestamps, offsets,
                    int64_t base_offset, int64_t write_limit, float estimated_ratio, bint compressed,
                    tuple direct=None):
    """Encode ``n`` records into v2 records regions, cut into batches by Kafka's batch.size rule.

    Columns are ``(validity, validity_offset, int64 offsets, data)`` tuples
    (``key``/``hkey``/``hval`` may be None; ``hdr_list`` is the list column's
    ``(validity, offset, int64 list offsets, None)``).  ``timestamps`` is
    int64 ms per row; ``offsets`` int64 per row or None (then
    ``base_offset + row``).  ``write_limit``, ``estimated_ratio`` and
    ``compressed`` drive Kafka's ``MemoryRecordsBuilder.hasRoomFor``.  Returns ``(records_buffer, batch row starts,
    batch byte starts, first/max timestamps, first/last offsets)`` as numpy arrays.

    With ``direct = (attributes, producer_id, producer_epoch, base_sequence,
    partition_leader_epoch, log_append_time or -1)`` (uncompressed batches)
    each batch's records go straight into its final ``bytes`` after the
    header, and the list of complete batches is returned instead.
    """
    cdef list keep = []
    cdef _Col ck, cv, chl, chk, chv
    cdef bint has_key = key is not None, has_h = hdr_list is not None
    if has_key:
        _col_from(key, &ck, keep)
    _col_from(value, &cv, keep)
    if has_h:
        _col_from(hdr_list, &chl, keep)
        _col_from(hkey, &chk, keep)
        _col_from(hval, &chv, keep)
    cdef const int64_t[::1] ts = timestamps
    cdef const int64_t[::1] offs_in
    cdef bint has_offsets = offsets is not None
    if has_offsets:
        offs_in = offsets
    # Sizes first, so the output is allocated once.
    cdef cnp.ndarray[int64_t] rec_bytes = np.empty(n, np.int64)
    cdef int64_t *rb = <int64_t *>rec_bytes.data
    cdef Py_ssize_t i, j, h0, h1
    cdef int32_t kl, vl, hkl, hvl, hc
    cdef int64_t hs, body, total = 0
    cdef int64_t first_ts = 0, first_off = 0, off
    # batch bookkeeping (at most n batches)
    cdef cnp.ndarray[int64_t] b_row = np.empty(n + 1, np.int64)
    cdef cnp.ndarray[int64_t] b_pos = np.empty(n + 1, np.int64)
    cdef cnp.ndarray[int64_t] b_first_ts = np.empty(n, np.int64)
    cdef cnp.ndarray[int64_t] b_max_ts = np.empty(n, np.int64)
    cdef cnp.ndarray[int64_t] b_first_off = np.empty(n, np.int64)
    cdef cnp.ndarray[int64_t] b_last_off = np.empty(n, np.int64)
    cdef int64_t *brow = <int64_t *>b_row.data
    cdef int64_t *bpos = <int64_t *>b_pos.data
    cdef int64_t *bft = <int64_t *>b_first_ts.data
    cdef int64_t *bmt = <int64_t *>b_max_ts.data
    cdef int64_t *bfo = <int64_t *>b_first_off.data
    cdef int64_t *blo = <int64_t *>b_last_off.data
    cdef Py_ssize_t nbatch = 0
    cdef int64_t in_batch = 0, batch_records = 0, est
    # Java computes the estimate in float (estimatedCompressionRatio and 1.05f
    # are floats), and the cut points depend on its rounding.
    cdef float f_written, f_factor = <float>1.05
    cdef int err = 0
    cdef Py_ssize_t err_row = -1
    with nogil:
        for i in range(n):
            off = offs_in[i] if has_offsets else base_offset + i
            if batch_records == 0:
                first_ts = ts[i]
                first_off = off
            kl = kc_col_len(&ck, i) if has_key else -1
            vl = kc_col_len(&cv, i)
            hs = 0
            hc = 0
            if has_h and kc_bit_valid(chl.valid, chl.voff, i):
                h0 = chl.offs[i]
                h1 = chl.offs[i + 1]
                hc = <int32_t>(h1 - h0)
                for j in range(h0, h1):
                    hkl = kc_col_len(&chk, j)
                    if hkl < 0:
                        err = 1
                        err_row = i
                        break
                    hs += kc_header_size(hkl, kc_col_len(&chv, j))
            if err:
                break
            if off - first_off > 2147483647 or off - first_off < -2147483648:
                err = 2
                err_row = i
                break
            body = kc_record_body_size(ts[i] - first_ts, <int32_t>(off - first_off), kl, vl, hc, hs)
            rb[i] = kc_varint_size(<int32_t>body) + body
            # Kafka's hasRoomFor: the first record always fits, then
            # limit >= 61 + (int)(written * ratio * 1.05f) (compressed) + record size;
            # the new record's own size is not scaled (Kafka stays conservative).
            if batch_records > 0:
                if compressed:
                    f_written = <float>in_batch
                    f_written = f_written * estimated_ratio
                    f_written = f_written * f_factor
                    est = 61 + <int32_t>f_written
                else:
                    est = 61 + in_batch
                if write_limit < est + rb[i]:
                    nbatch += 1
                    batch_records = 0
                    in_batch = 0
                    first_ts = ts[i]
                    first_off = off
                    body = kc_record_body_size(0, 0, kl, vl, hc, hs)
                    rb[i] = kc_varint_size(<int32_t>body) + body
            if batch_records == 0:
                brow[nbatch] = i
                bpos[nbatch] = total
                bft[nbatch] = first_ts
                bfo[nbatch] = first_off
                bmt[nbatch] = -1
            if ts[i] > bmt[nbatch]:
                bmt[nbatch] = ts[i]
            blo[nbatch] = off
            in_batch += rb[i]
            total += rb[i]
            batch_records += 1
    if err == 1:
        raise RecordBuilderError(f"row {err_row}: header keys must not be null")
    if err == 2:
        raise RecordBuilderError(f"row {err_row}: offset too far from the first offset of its batch")
    if n:
        nbatch += 1
    brow[nbatch] = n
    bpos[nbatch] = total
    cdef cnp.ndarray[uint8_t] out
    cdef uint8_t *o = NULL
    cdef list blobs = []
    cdef uint8_t **dests = NULL
    cdef int16_t attributes = 0, producer_epoch = -1
    cdef int64_t producer_id = -1, lat = -1
    cdef int32_t base_sequence = -1, leader_epoch = -1, seq
    cdef bint is_direct = direct is not None
    cdef Py_ssize_t bi = 0
    cdef int64_t w = 0
    cdef uint8_t *dst
    cdef const uint8_t *kp
    cdef const uint8_t *vp
    if is_direct:
        attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat = direct
        dests = <uint8_t **>malloc(max(nbatch, 1) * sizeof(uint8_t *))
        if dests == NULL:
            raise MemoryError()
        for bi in range(nbatch):
            blob = PyBytes_FromStringAndSize(NULL, 61 + bpos[bi + 1] - bpos[bi])
            blobs.append(blob)
            dests[bi] = <uint8_t *>PyBytes_AS_STRING(blob)
    else:
        out = np.empty(total, np.uint8)
        o = <uint8_t *>out.data
    try:
        with nogil:
            for bi in range(nbatch):
                dst = (dests[bi] + 61) if is_direct else (o + bpos[bi])
                w = 0
                for i in range(brow[bi], brow[bi + 1]):
                    off = offs_in[i] if has_offsets else base_offset + i
                    kl = kc_col_len(&ck, i) if has_key else -1
                    vl = kc_col_len(&cv, i)
                    kp = (ck.data + ck.offs[i]) if kl >= 0 else NULL
                    vp = cv.data + cv.offs[i] if vl >= 0 else NULL
                    hc = 0
                    hs = 0
                    if has_h and kc_bit_valid(chl.valid, chl.voff, i):
                        h0 = chl.offs[i]
                        h1 = chl.offs[i + 1]
                        hc = <int32_t>(h1 - h0)
                        for j in range(h0, h1):
                            hs += kc_header_size(kc_col_len(&chk, j), kc_col_len(&chv, j))
                    body = kc_record_body_size(ts[i] - bft[bi], <int32_t>(off - bfo[bi]), kl, vl, hc, hs)
                    w += kc_write_record_sized(dst + w, body, ts[i] - bft[bi], <int32_t>(off - bfo[bi]),
                                               kp, kl, vp, vl, hc)
                    if hc:
                        for j in range(h0, h1):
                            hkl = kc_col_len(&chk, j)
                            hvl = kc_col_len(&chv, j)
                            w += kc_write_header(dst + w, chk.data + chk.offs[j], hkl,
                                                 (chv.data + chv.offs[j]) if hvl >= 0 else NULL, hvl)
                if is_direct:
                    # Kafka's sequence numbers wrap at Integer.MAX_VALUE.
                    seq = base_sequence if base_sequence < 0 else \
                        <int32_t>((<int64_t>base_sequence + brow[bi]) & 0x7fffffff)
                    _write_batch(dests[bi], w, bfo[bi], <int32_t>(blo[bi] - bfo[bi]), bft[bi],
                                 lat if lat >= 0 else bmt[bi], <int32_t>(brow[bi + 1] - brow[bi]), attributes,
                                 producer_id, producer_epoch, seq, leader_epoch)
    finally:
        free(dests)
    if is_direct:
        return blobs
    return (out, b_row[:nbatch + 1], b_pos[:nbatch + 1], b_first_ts[:nbatch], b_max_ts[:nbatch],
            b_first_off[:nbatch], b_last_off[:nbatch])


cdef void _write_batch(uint8_t *p, int64_t payload_len, int64_t base_offset, int32_t last_offset_delta,
                       int64_t first_timestamp, int64_t max_timestamp, int32_t count, int16_t attributes,
                       int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                       int32_t partition_leader_epoch) noexcept nogil:
    """The 61-byte v2 header in front of a payload already at p + 61, then the CRC-32C over both."""
    kc_store_be64(p, <uint64_t>base_offset)
    kc_store_be32(p + 8, <uint32_t>(49 + payload_len))
    kc_store_be32(p + 12, <uint32_t>partition_leader_epoch)
    p[16] = 2
    kc_store_be16(p + 21, <uint16_t>attributes)
    kc_store_be32(p + 23, <uint32_t>last_offset_delta)
    kc_store_be64(p + 27, <uint64_t>first_timestamp)
    kc_store_be64(p + 35, <uint64_t>max_timestamp)
    kc_store_be64(p + 43, <uint64_t>producer_id)
    kc_store_be16(p + 51, <uint16_t>producer_epoch)
    kc_store_be32(p + 53, <uint32_t>base_sequence)
    kc_store_be32(p + 57, <uint32_t>count)
    kc_store_be32(p + 17, kc_crc32c(0, p + 21, 40 + payload_len))




def batch_bytes(payload, int64_t base_offset, int32_t last_offset_delta, int64_t first_timestamp,
                int64_t max_timestamp, int32_t count, int16_t attributes, int64_t producer_id,
                int16_t producer_epoch, int32_t base_sequence, int32_t partition_leader_epoch) -> bytes:
    """One complete v2 batch: the 61-byte header, CRC-32C, then ``payload`` (the records region).

    Written into the result in place, so each batch costs one copy of its payload.
    """
    cdef Py_buffer view
    PyObject_GetBuffer(payload, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    cdef bytes out
    cdef uint8_t *p
    try:
        out = PyBytes_FromStringAndSize(NULL, 61 + view.len)
        p = <uint8_t *>PyBytes_AS_STRING(out)
        with nogil:
            memcpy(p + 61, view.buf, view.len)
            _write_batch(p, view.len, base_offset, last_offset_delta, first_timestamp, max_timestamp, count,
                         attributes, producer_id, producer_epoch, base_sequence, partition_leader_epoch)
    finally:
        PyBuffer_Release(&view)
    return out


cdef inline int32_t _murmur2(const uint8_t *data, int64_t length) noexcept nogil:
    # Kafka's Utils.murmur2: seed 0x9747b28c, little-endian 4-byte blocks, Java int arithmetic.
    cdef uint32_t m = 0x5bd1e995
    cdef int r = 24
    cdef uint32_t seed = 0x9747b28c
    cdef uint32_t h = seed ^ <uint32_t>length
    cdef int64_t i, nblocks = length // 4
    cdef uint32_t k
    for i in range(nblocks):
        k = (<uint32_t>data[4 * i]) | (<uint32_t>data[4 * i + 1] << 8) | \
            (<uint32_t>data[4 * i + 2] << 16) | (<uint32_t>data[4 * i + 3] << 24)
        k *= m
        k ^= k >> r
        k *= m
        h *= m
        h ^= k
    cdef int64_t tail = nblocks * 4
    cdef int rem = length % 4
    if rem == 3:
        h ^= (<uint32_t>data[tail + 2]) << 16
    if rem >= 2:
        h ^= (<uint32_t>data[tail + 1]) << 8
    if rem >= 1:
        h ^= data[tail]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return <int32_t>h


def murmur2_bytes(data) -> int:
    """Kafka's murmur2 hash of a buffer (signed 32-bit)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        return _murmur2(<const uint8_t *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


def partition_column(valid, Py_ssize_t voff, offsets, data, Py_ssize_t n, int32_t num_partitions):
    """``toPositive(murmur2(key)) % num_partitions`` per row of an Arrow large-binary column; null -> -1."""
    cdef _Col c
    cdef list keep = []
    _col_from((valid, voff, offsets, data), &c, keep)
    cdef cnp.ndarray[int32_t] out = np.empty(n, np.int32)
    cdef int32_t *o = <int32_t *>out.data
    cdef Py_ssize_t i
    cdef int32_t ln
    with nogil:
        for i in range(n):
            ln = kc_col_len(&c, i)
            if ln < 0:
                o[i] = -1
            else:
                o[i] = (_murmur2(c.data + c.offs[i], ln) & 0x7fffffff) % num_partitions
    return out


cdef extern from "kc_record.h" nogil:
    ctypedef struct kc_record_t:
        int32_t length
        int32_t header_count
        int64_t timestamp_delta
        int32_t offset_delta
        int32_t key_len
        int32_t value_len
        const uint8_t *key
        const uint8_t *value
        const uint8_t *headers_start
        const uint8_t *end
    ctypedef struct kc_header_t:
        int32_t key_len
        int32_t value_len
        const uint8_t *key
        const uint8_t *value
    int64_t kc_parse_record(const uint8_t *p, const uint8_t *end, kc_record_t *r)
    int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h)





cdef int64_t _walk(const uint8_t *buf, Py_ssize_t length, bint include_control, Py_ssize_t *n_records) noexcept nogil:
    """Count the records of a buffer made only of complete, uncompressed v2 batches; -1 otherwise.

    Reads batch headers only; CRCs are checked batch by batch in the copy pass, while each batch is in cache.
    """
    cdef Py_ssize_t pos = 0, remaining, size
    cdef int32_t count
    cdef uint8_t attrs
    n_records[0] = 0
    while True:
        remaining = length - pos
        if remaining < 12:
            return 0 if remaining == 0 else -1
        size = <int32_t>kc_load_be32(buf + pos + 8)
        if size < 49 or remaining < 17 or buf[pos + 16] != 2 or remaining < size + 12:
            return -1
        attrs = buf[pos + 22]
        if attrs & 0x07:
            return -1
        count = <int32_t>kc_load_be32(buf + pos + 57)
        if count < 0:
            return -1
        if include_control or not (attrs & 0x20):
            n_records[0] += count
        pos += size + 12


cdef struct _Grow:
    uint8_t *p
    int64_t len
    int64_t cap


cdef inline int _reserve(_Grow *g, int64_t extra, bint zero=False) noexcept nogil:
    # Doubling growth; realloc of large blocks remaps pages instead of copying them.
    # Only validity bitmaps need zeroed growth (bits are OR-ed in).
    cdef int64_t cap
    cdef uint8_t *q
    if g.len + extra <= g.cap:
        return 0
    cap = g.cap * 2 if g.cap else 4096
    while cap < g.len + extra:
        cap *= 2
    q = <uint8_t *>realloc(g.p, cap)
    if q == NULL:
        return -1
    if zero:
        memset(q + g.cap, 0, cap - g.cap)
    g.p = q
    g.cap = cap
    return 0


cdef class _Owned:
    """Read-only buffer over memory filled by the native scan (handed to Arrow without a copy)."""
    cdef uint8_t *p
    cdef Py_ssize_t n
    cdef Py_ssize_t shape[1]

    def __dealloc__(self):
        free(self.p)

    def __getbuffer__(self, Py_buffer *view, int flags):
        self.shape[0] = self.n
        view.buf = <void *>self.p
        view.obj = self
        view.len = self.n
        view.readonly = 1
        view.itemsize = 1
        view.format = NULL
        if flags & PyBUF_FORMAT:
            view.format = b"B"
        view.ndim = 1
        view.shape = self.shape if (flags & PyBUF_ND) else NULL
        view.strides = NULL
        view.suboffsets = NULL
        view.internal = NULL

    def __releasebuffer__(self, Py_buffer *view):
        pass


cdef _Owned _own(_Grow *g):
    cdef _Owned o = _Owned.__new__(_Owned)
    if g.p == NULL and _reserve(g, 1) < 0:  # Arrow wants a real address even for no bytes
        raise MemoryError()
    o.p = g.p
    o.n = g.len
    g.p = NULL
    return o


cdef inline void _put(_Grow *data, _Grow *offs, _Grow *valid, int64_t row, const uint8_t *src, int32_t ln,
                      int64_t *nulls) noexcept nogil:
    """Append one binary value (ln -1 = null): data bytes, int32 end offset, validity bit.

    The caller has reserved room for the whole batch (see _reserve_batch).
    """
    if ln > 0:
        memcpy(data.p + data.len, src, ln)
        data.len += ln
    (<int32_t *>(offs.p + offs.len))[0] = <int32_t>data.len
    offs.len += 4
    valid.len = (row >> 3) + 1
    if ln >= 0:
        valid.p[row >> 3] |= <uint8_t>(1 << (row & 7))
    else:
        nulls[0] += 1


cdef inline int _reserve_batch(_Grow *g, int64_t rows, int64_t batch_bytes) noexcept nogil:
    """Room for one column's values from one batch: at most batch_bytes of data and ``rows`` entries."""
    if g[0].len + batch_bytes > 2147483647:
        return -2
    if _reserve(&g[0], batch_bytes) < 0 or _reserve(&g[1], 4 * rows) < 0 or _reserve(&g[2], rows // 8 + 2, True) < 0:
        return -1
    return 0


cdef enum:
    _KEY = 0
    _VALUE = 1
    _HKEY = 2
    _HVALUE = 3


def columns_uncompressed_v2(data, bint validate=True, bint include_control=False, bint headers=True):
    """Every record of a buffer of uncompressed v2 batches, as Arrow-ready buffers, in one native pass.

    Each batch is CRC-checked and then parsed while it is in cache, copying
    keys, values and headers straight into the column buffers.  Returns None
    when the buffer holds anything else (compressed or legacy batches,
    trailing bytes, damage): the general path then decodes it and reports
    errors with Kafka's messages.  Otherwise ``(n, offsets, timestamps ms,
    timestamp types, header counts, columns)`` where ``columns`` holds, for
    key, value, header key and header value, ``(length, data, int32 offsets,
    validity bitmap, null count)`` (header columns empty unless ``headers``).
    """
    cdef Py_buffer view
    cdef Py_ssize_t n = 0, i = 0, length, pos, size
    cdef const uint8_t *buf
    cdef int64_t rc = 0, nh = 0
    cdef int32_t count, j, k
    cdef int64_t base_off, base_ts, max_ts
    cdef uint8_t attrs
    cdef bint lat
    cdef int err = 0
    cdef kc_record_t r
    cdef kc_header_t hd
    cdef const uint8_t *p
    cdef const uint8_t *end
    cdef const uint8_t *hp
    cdef _Grow g[12]
    cdef int64_t nulls[4]
    cdef int64_t *o_off
    cdef int64_t *o_ts
    cdef int32_t *o_ty
    cdef int64_t *o_hc
    memset(g, 0, sizeof(g))
    memset(nulls, 0, sizeof(nulls))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        buf = <const uint8_t *>view.buf
        length = view.len
        with nogil:
            rc = _walk(buf, length, include_control, &n)
        if rc < 0:
            return None
        offsets = np.empty(n, np.int64)
        stamps = np.empty(n, np.int64)
        types = np.empty(n, np.int32)
        hcount = np.empty(n, np.int64)
        o_off = <int64_t *>cnp.PyArray_DATA(offsets)
        o_ts = <int64_t *>cnp.PyArray_DATA(stamps)
        o_ty = <int32_t *>cnp.PyArray_DATA(types)
        o_hc = <int64_t *>cnp.PyArray_DATA(hcount)
        # g[3c] data, g[3c+1] int32 offsets (starting with 0), g[3c+2] validity, per column c
        with nogil:
            for k in range(4):
                if _reserve(&g[3 * k + 1], 4) < 0:
                    err = -1
                    break
                (<int32_t *>g[3 * k + 1].p)[0] = 0
                g[3 * k + 1].len = 4
            pos = 0
            while pos < length and err == 0:
                size = <int32_t>kc_load_be32(buf + pos + 8) + 12
                attrs = buf[pos + 22]
                if validate and kc_load_be32(buf + pos + 17) != kc_crc32c(0, buf + pos + 21, size - 21):
                    err = 1
                    break
                if include_control or not (attrs & 0x20):
                    base_off = <int64_t>kc_load_be64(buf + pos)
                    base_ts = <int64_t>kc_load_be64(buf + pos + 27)
                    max_ts = <int64_t>kc_load_be64(buf + pos + 35)
                    lat = (attrs & 0x08) != 0
                    count = <int32_t>kc_load_be32(buf + pos + 57)
                    p = buf + pos + 61
                    end = buf + pos + size
                    # Everything this batch can add: its bytes, its records, a header per 2 bytes.
                    for k in range(4 if headers else 2):
                        err = _reserve_batch(&g[3 * k], count if k < 2 else (size - 61) // 2, size - 61)
                        if err:
                            break
                    if err:
                        break
                    for j in range(count):
                        rc = kc_parse_record(p, end, &r)
                        if rc < 0:
                            err = 1
                            break
                        o_off[i] = base_off + r.offset_delta
                        o_ts[i] = max_ts if lat else base_ts + r.timestamp_delta
                        o_ty[i] = 1 if lat else 0
                        o_hc[i] = r.header_count
                        _put(&g[0], &g[1], &g[2], i, r.key, r.key_len, &nulls[0])
                        _put(&g[3], &g[4], &g[5], i, r.value, r.value_len, &nulls[1])
                        if headers:
                            hp = r.headers_start
                            for k in range(r.header_count):
                                # kc_parse_record has checked every header of this record
                                hp += kc_parse_header(hp, end, &hd)
                                _put(&g[6], &g[7], &g[8], nh, hd.key, hd.key_len, &nulls[2])
                                _put(&g[9], &g[10], &g[11], nh, hd.value, hd.value_len, &nulls[3])
                                nh += 1
                        i += 1
                        p = r.end
                    if err == 0 and p != end:
                        err = 1
                pos += size
        if err == -1:
            raise MemoryError()
        if err == -2:
            raise OverflowError("more than 2 GiB in one column; convert fewer batches at a time")
        if err:
            return None
        columns = []
        for k in range(4):
            columns.append((n if k < 2 else nh, _own(&g[3 * k]), _own(&g[3 * k + 1]),
                            _own(&g[3 * k + 2]) if nulls[k] else None, nulls[k]))
        return n, offsets, stamps, types, hcount, columns
    finally:
        PyBuffer_Release(&view)
        for k in range(12):
            free(g[k].p)
