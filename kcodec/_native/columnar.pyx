# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Columnar record paths: gather record fields into Arrow buffers, and encode
records straight from Arrow buffers.  Python touches only per-batch objects;
every per-record step is a C loop without the GIL.
"""
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS,
                             PyBUF_FORMAT, PyBUF_ND)
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int16_t, int32_t, int64_t
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, realloc, free

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_bytes_shrink
from kcodec._native.primitives cimport kc_load_be32, kc_varint_size
from kcodec._native.primitives cimport (KC_MIN_RECORD_SIZE, kc_record_body_size, kc_header_size,
                                        kc_write_record_sized, kc_write_header, kc_record_t, kc_header_t,
                                        kc_parse_record, kc_parse_header, kc_parse_record_stream, kc_bincol_t,
                                        kc_gather_t, kc_gather_region, kc_gather_region_views,
                                        kc_view_put, kc_nullmap_to_validity)
from kcodec._native.primitives cimport (kc_batch_header_t, kc_batch_read, kc_batch_write, kc_batch_checksum,
                                        KC_BATCH_OVERHEAD, KC_BATCH_LENGTH, KC_BATCH_MAGIC, KC_BATCH_ATTRIBUTES,
                                        KC_BATCH_RECORDS_COUNT, KC_BATCH_COMPRESSION_MASK,
                                        KC_BATCH_CONTROL, KC_BATCH_TIMESTAMP_TYPE)
from kcodec._native.native_codec cimport NativeCodec

import numpy as np
cimport numpy as cnp

from kcodec.errors import LimitExceededError, RecordBuilderError

cnp.import_array()

cdef extern from "kc_columns.h":
    ctypedef struct kc_col_t:
        const uint8_t *valid
        int64_t voff
        const int64_t *offs
        const int32_t *offs32
        const uint8_t *data
    int64_t kc_off(const kc_col_t *c, int64_t i) nogil
    bint kc_bit_valid(const uint8_t *bitmap, int64_t offset, int64_t i) nogil
    int32_t kc_col_len(const kc_col_t *c, int64_t i) nogil
    ctypedef struct kc_batch_fill_t:
        int64_t row_end
        int64_t written
        int64_t max_ts
        int64_t last_off
        int err
        int64_t err_row
    int64_t kc_rows_bound(int64_t r0, int64_t n, const kc_col_t *key, int has_key, const kc_col_t *value,
                          const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval) nogil
    void kc_fill_batch(uint8_t *dst, int64_t r0, int64_t n, int64_t write_limit,
                       const kc_col_t *key, int has_key, const kc_col_t *value,
                       const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                       const int64_t *ts, const int64_t *offsets, int64_t base_offset,
                       kc_batch_fill_t *res) nogil
    int64_t kc_encode_rows(uint8_t *dst, int64_t r0, int64_t r1, const int32_t *bodies,
                           const kc_col_t *key, int has_key, const kc_col_t *value,
                           const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                           const int64_t *ts, int64_t first_ts, const int64_t *offsets,
                           int64_t base_offset, int64_t first_off) nogil


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
    c.offs = NULL
    c.offs32 = NULL
    if offs.dtype == np.int32:
        c.offs32 = <const int32_t *>cnp.PyArray_DATA(offs)
    elif offs.dtype == np.int64:
        c.offs = <const int64_t *>cnp.PyArray_DATA(offs)
    else:
        raise TypeError(f"offsets must be int32 or int64, not {offs.dtype}")
    if not offs.flags.c_contiguous:
        raise ValueError("offsets must be contiguous")
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
    memset(&ck, 0, sizeof(_Col))
    memset(&chl, 0, sizeof(_Col))
    memset(&chk, 0, sizeof(_Col))
    memset(&chv, 0, sizeof(_Col))
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
    if direct is not None:
        return _encode_direct(n, &ck, has_key, &cv, &chl, has_h, &chk, &chv, &ts[0] if n else NULL,
                              &offs_in[0] if has_offsets else NULL, base_offset, write_limit, direct)
    # Compressed batches: sizes first, so the records regions are written once, into one buffer.
    cdef cnp.ndarray[int64_t] rec_bytes = np.empty(n, np.int64)
    cdef int64_t *rb = <int64_t *>rec_bytes.data
    cdef cnp.ndarray[int32_t] rec_bodies = np.empty(n, np.int32)
    cdef int32_t *bd = <int32_t *>rec_bodies.data
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
                h0 = kc_off(&chl, i)
                h1 = kc_off(&chl, i + 1)
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
            bd[i] = <int32_t>body
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
    cdef cnp.ndarray[uint8_t] out = np.empty(total, np.uint8)
    cdef uint8_t *o = <uint8_t *>out.data
    cdef Py_ssize_t bi
    with nogil:
        for bi in range(nbatch):
            kc_encode_rows(o + bpos[bi], brow[bi], brow[bi + 1], bd, &ck, has_key, &cv, &chl, has_h, &chk, &chv,
                           &ts[0] if n else NULL, bft[bi], &offs_in[0] if has_offsets else NULL, base_offset,
                           bfo[bi])
    return (out, b_row[:nbatch + 1], b_pos[:nbatch + 1], b_first_ts[:nbatch], b_max_ts[:nbatch],
            b_first_off[:nbatch], b_last_off[:nbatch])






# from_arrow drops the GIL while it fills a batch once this many bytes of
# batches were filled with it held: a switch costs more than a small batch's
# fill, and other threads still get the GIL every ~0.1 ms of work.
cdef enum:
    _GIL_DROP_BYTES = 1 << 20


cdef inline void _fill_direct(uint8_t *dst, int64_t r0, Py_ssize_t n, int64_t write_limit, const _Col *ck,
                              bint has_key, const _Col *cv, const _Col *chl, bint has_h, const _Col *chk,
                              const _Col *chv, const int64_t *ts, const int64_t *offs, int64_t base_offset,
                              int64_t first_off, int16_t attributes, int64_t producer_id, int16_t producer_epoch,
                              int32_t base_sequence, int32_t leader_epoch, int64_t lat,
                              kc_batch_fill_t *res) noexcept nogil:
    cdef int32_t seq
    kc_fill_batch(dst + 61, r0, n, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs, base_offset, res)
    if res.err == 0:
        # Kafka's sequence numbers wrap at Integer.MAX_VALUE.
        seq = base_sequence if base_sequence < 0 else <int32_t>((<int64_t>base_sequence + r0) & 0x7fffffff)
        _write_batch(dst, res.written, first_off, <int32_t>(res.last_off - first_off), ts[r0],
                     lat if lat >= 0 else res.max_ts, <int32_t>(res.row_end - r0), attributes, producer_id,
                     producer_epoch, seq, leader_epoch)


cdef list _encode_direct(Py_ssize_t n, const _Col *ck, bint has_key, const _Col *cv, const _Col *chl, bint has_h,
                         const _Col *chk, const _Col *chv, const int64_t *ts, const int64_t *offs,
                         int64_t base_offset, int64_t write_limit, tuple direct):
    """Uncompressed batches in one pass over the columns, each written straight into its final bytes.

    Each batch object is allocated at the most its records can take (the
    write limit, or the first record when that is larger, or all remaining
    rows when they are smaller), filled, and shrunk to what was written.
    """
    cdef int16_t attributes, producer_epoch
    cdef int64_t producer_id, lat, r0 = 0, cap, first_off, held = 0
    cdef int32_t base_sequence, leader_epoch
    attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat = direct
    cdef list out = []
    cdef kc_batch_fill_t res
    cdef PyObject *blob
    cdef uint8_t *dst
    while r0 < n:
        cap = kc_rows_bound(r0, n, ck, has_key, cv, chl, has_h, chk, chv)
        if cap > write_limit - 61:
            cap = max(write_limit - 61, kc_rows_bound(r0, r0 + 1, ck, has_key, cv, chl, has_h, chk, chv))
        blob = _raw_bytes(NULL, 61 + cap)
        dst = <uint8_t *>_raw_bytes_data(blob)
        first_off = offs[r0] if offs != NULL else base_offset + r0
        held += cap
        if held >= _GIL_DROP_BYTES:
            held = 0
            with nogil:
                _fill_direct(dst, r0, n, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs, base_offset,
                             first_off, attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat,
                             &res)
        else:
            _fill_direct(dst, r0, n, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs, base_offset,
                         first_off, attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat, &res)
        if res.err:
            Py_DECREF(<object>blob)
            if res.err == 1:
                raise RecordBuilderError(f"row {res.err_row}: header keys must not be null")
            raise RecordBuilderError(f"row {res.err_row}: offset too far from the first offset of its batch")
        kc_bytes_shrink(&blob, 61 + res.written)
        out.append(<object>blob)
        Py_DECREF(<object>blob)
        r0 = res.row_end
    return out


cdef inline void _write_batch(uint8_t *p, int64_t payload_len, int64_t base_offset, int32_t last_offset_delta,
                              int64_t first_timestamp, int64_t max_timestamp, int32_t count, int16_t attributes,
                              int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                              int32_t partition_leader_epoch) noexcept nogil:
    # The header before a records region of payload_len bytes already at p + 61 (argument order of batch_bytes).
    kc_batch_write(p, KC_BATCH_OVERHEAD + payload_len, base_offset, partition_leader_epoch, attributes,
                   last_offset_delta, first_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                   count)




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


def compressed_batch(NativeCodec codec, records, int level, int64_t base_offset, int32_t last_offset_delta,
                     int64_t first_timestamp, int64_t max_timestamp, int32_t count, int16_t attributes,
                     int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                     int32_t partition_leader_epoch) -> bytes:
    """One complete v2 batch whose ``records`` region a native codec compresses (kcodec/codec.h).

    The codec writes its frame after room for the header in the result, and
    header and CRC-32C are written in place: the compressed payload is never copied.
    """
    cdef Py_buffer view
    cdef bytes batch
    PyObject_GetBuffer(records, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        batch = codec.compress_after(<const uint8_t *>view.buf, view.len, level, 2, 61)
    finally:
        PyBuffer_Release(&view)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(batch)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(batch)
    with nogil:
        _write_batch(p, n - 61, base_offset, last_offset_delta, first_timestamp, max_timestamp, count, attributes,
                     producer_id, producer_epoch, base_sequence, partition_leader_epoch)
    return batch


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
                o[i] = (_murmur2(c.data + kc_off(&c, i), ln) & 0x7fffffff) % num_partitions
    return out


cdef extern from "kc_control.h" nogil:
    int kc_control_region_ok(const uint8_t *p, const uint8_t *end, int32_t count)


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
        size = <int32_t>kc_load_be32(buf + pos + KC_BATCH_LENGTH)
        if size < 49 or remaining < 17 or buf[pos + KC_BATCH_MAGIC] != 2 or remaining < size + 12:
            return -1
        attrs = buf[pos + KC_BATCH_ATTRIBUTES + 1]
        if attrs & KC_BATCH_COMPRESSION_MASK:
            return -1
        count = <int32_t>kc_load_be32(buf + pos + KC_BATCH_RECORDS_COUNT)
        # A count the records region cannot hold is damage (reported by the general
        # path); it must not reach the column sizing, which trusts n_records.
        if count < 0 or count > (size - 49) // KC_MIN_RECORD_SIZE:
            return -1
        if include_control or not (attrs & KC_BATCH_CONTROL):
            n_records[0] += count
        pos += size + 12


cdef struct _Grow:
    uint8_t *p
    int64_t len
    int64_t cap


cdef extern from "kc_column_cache.h":
    void *kc_cache_take(size_t want, size_t *cap) nogil
    void kc_cache_give(void *p, size_t cap) nogil
    size_t kc_cache_set_limit(size_t limit, size_t min_block) nogil
    void kc_cache_state(size_t *limit, size_t *held, size_t *min_block) nogil
    int kc_cache_init()


if kc_cache_init() != 0:
    raise ImportError("could not register the column cache's fork handlers")


def column_cache(limit=None, min_block=None) -> tuple:
    """``(limit, held, min_block)`` of the cache of column memory that to_arrow reuses.

    Column blocks of at least ``min_block`` bytes (1 MiB unless changed)
    that Arrow releases are kept, up to ``limit`` bytes in all (256 MiB
    unless changed), for the next conversion to fill without page faults.
    Passing ``limit`` and/or ``min_block`` changes them (``limit=0`` frees
    the cache and turns it off); the values in force before the call are
    returned.
    """
    cdef size_t old, held, old_min, now, now_min
    if limit is not None and limit < 0:
        raise ValueError("the cache limit must be >= 0")
    if min_block is not None and min_block < 1:
        raise ValueError("the smallest cached block must be >= 1 byte")
    kc_cache_state(&old, &held, &old_min)
    if limit is not None or min_block is not None:
        kc_cache_set_limit(old if limit is None else <size_t>limit,
                           old_min if min_block is None else <size_t>min_block)
        kc_cache_state(&now, &held, &now_min)  # what the new settings left held
    return old, held, old_min


cdef inline int _reserve(_Grow *g, int64_t extra, bint zero=False) noexcept nogil:
    # Doubling growth into a cached block when one fits (see kc_cache_take),
    # else realloc, which remaps large blocks instead of copying them.
    # Only validity bitmaps need zeroed growth (bits are OR-ed in).
    cdef int64_t cap
    cdef size_t got = 0
    cdef uint8_t *q
    if g.len + extra <= g.cap:
        return 0
    cap = g.cap * 2 if g.cap else 4096
    while cap < g.len + extra:
        cap *= 2
    q = <uint8_t *>kc_cache_take(<size_t>cap, &got)
    if q != NULL:
        if g.p != NULL:
            memcpy(q, g.p, <size_t>(g.cap if zero else g.len))
            kc_cache_give(g.p, <size_t>g.cap)
        cap = <int64_t>got
    else:
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
    cdef size_t cap
    cdef Py_ssize_t shape[1]

    def __dealloc__(self):
        kc_cache_give(self.p, self.cap)

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
    o.cap = <size_t>g.cap
    g.p = NULL
    g.cap = 0
    g.len = 0
    return o


cdef inline void _put(_Grow *data, _Grow *offs, _Grow *nullmap, int64_t row, const uint8_t *src, int32_t ln,
                      int64_t *nulls) noexcept nogil:
    """Append one binary value (ln -1 = null): data bytes, int32 end offset, null-map bit.

    The object path's counterpart of kc_gather_region; the caller has
    reserved room (see _reserve_batch).
    """
    if ln > 0:
        memcpy(data.p + data.len, src, ln)
        data.len += ln
    (<int32_t *>(offs.p + offs.len))[0] = <int32_t>data.len
    offs.len += 4
    nullmap.len = (row >> 3) + 1
    if ln < 0:
        nullmap.p[row >> 3] |= <uint8_t>(1 << (row & 7))
        nulls[0] += 1


cdef inline int _reserve_views(_Grow *g, int64_t rows) noexcept nogil:
    """Room for ``rows`` more 16-byte views and null-map bits of a views column."""
    if _reserve(&g[0], 16 * rows) < 0 or _reserve(&g[2], rows // 8 + 2, True) < 0:
        return -1
    return 0


cdef inline int _put_view(_Grow *views, _Grow *nullmap, _Grow *spill, int64_t row, const uint8_t *src, int32_t ln,
                          int64_t *nulls) noexcept nogil:
    """Append one value as a view (ln -1 = null), a long one copied into the spill buffer (variadic buffer 0).

    The object path's counterpart of kc_gather_region_views; 0, -1 (no memory) or -2 (2 GiB spilled).
    """
    if ln > 12:
        if spill.len + ln > 2147483647:
            return -2
        if _reserve(spill, ln) < 0:
            return -1
        memcpy(spill.p + spill.len, src, ln)
        src = spill.p + spill.len
        spill.len += ln
    if _reserve_views(views, 1) < 0:
        return -1
    kc_view_put(views.p + views.len, src, ln, 0, spill.p)
    views.len += 16
    nullmap.len = (row >> 3) + 1
    if ln < 0:
        nullmap.p[row >> 3] |= <uint8_t>(1 << (row & 7))
        nulls[0] += 1
    return 0


cdef inline int _reserve_batch(_Grow *g, int64_t rows, int64_t batch_bytes) noexcept nogil:
    """Room for one column's values from one batch: at most batch_bytes of data and ``rows`` entries."""
    if g[0].len + batch_bytes > 2147483647:
        return -2
    if _reserve(&g[0], batch_bytes) < 0 or _reserve(&g[1], 4 * rows) < 0 or _reserve(&g[2], rows // 8 + 2, True) < 0:
        return -1
    return 0




# Growable buffers of a column accumulator: per binary column c (key, value,
# header key, header value) g[3c] data, g[3c + 1] int32 offsets, g[3c + 2]
# null map; then per record offsets, timestamps, timestamp types, and the
# headers list's int32 offsets and null map (records without headers).
# With views, g[0] and g[3] hold key and value as Arrow's 16-byte views (no
# offsets), and the values of legacy records, which have no region to
# reference, are copied into g[_G_SPILL] (variadic buffer 0).
cdef enum:
    _G_OFFSET = 12
    _G_TS = 13
    _G_TYPE = 14
    _G_HLIST = 15
    _G_HNULL = 16
    _G_SPILL = 17
    _G_COUNT = 18


cdef struct _Acc:
    _Grow g[18]
    int64_t nulls[4]
    int64_t hnulls
    int64_t n
    int64_t nh
    bint headers
    bint views
    const uint8_t *vbase  # views: the variadic buffer the next region's long values are in
    int32_t vindex


cdef int _acc_init(_Acc *a, bint headers, bint views=False) noexcept nogil:
    # Offset buffers (the four binary columns' and the headers list's) start with their leading 0.
    cdef int i, k
    memset(a, 0, sizeof(_Acc))
    a.headers = headers
    a.views = views
    for i in range(5):
        k = 3 * i + 1 if i < 4 else _G_HLIST
        if _reserve(&a.g[k], 4) < 0:
            return -1
        (<int32_t *>a.g[k].p)[0] = 0
        a.g[k].len = 4
    return 0


cdef void _acc_free(_Acc *a) noexcept nogil:
    cdef int k
    for k in range(_G_COUNT):
        kc_cache_give(a.g[k].p, <size_t>a.g[k].cap)
        a.g[k].p = NULL


cdef inline void _acc_set_lengths(_Acc *a) noexcept nogil:
    """Used lengths of every buffer from the row and header counts."""
    cdef int k
    cdef int64_t rows
    for k in range(4):
        rows = a.n if k < 2 else a.nh
        if k >= 2 or not a.views:
            a.g[3 * k + 1].len = 4 * (rows + 1)
        a.g[3 * k + 2].len = (rows + 7) >> 3
    a.g[_G_OFFSET].len = 8 * a.n
    a.g[_G_TS].len = 8 * a.n
    a.g[_G_TYPE].len = 4 * a.n
    a.g[_G_HLIST].len = 4 * (a.n + 1)
    a.g[_G_HNULL].len = (a.n + 7) >> 3


cdef int _acc_add(_Acc *a, const uint8_t *p, const uint8_t *end, int32_t count, int64_t base_off,
                  int64_t base_ts, int64_t max_ts, bint lat, bint stream) noexcept nogil:
    """Append the ``count`` records of one records region.  0, -1 (no memory), -2 (2 GiB column), 1 (bad data)."""
    cdef int k, err
    cdef int64_t region = end - p
    cdef kc_gather_t g
    if count < 0:
        return 1
    # Everything this region can add: its bytes, its records (each >= KC_MIN_RECORD_SIZE bytes),
    # a header per 2 bytes.
    if count > region // KC_MIN_RECORD_SIZE + 1:
        return 1
    for k in range(4 if a.headers else 2):
        if k < 2 and a.views:
            err = _reserve_views(&a.g[3 * k], count)
        else:
            err = _reserve_batch(&a.g[3 * k], count if k < 2 else region // 2, region)
        if err:
            return err
    if (_reserve(&a.g[_G_OFFSET], 8 * count) < 0 or _reserve(&a.g[_G_TS], 8 * count) < 0
            or _reserve(&a.g[_G_TYPE], 4 * count) < 0 or _reserve(&a.g[_G_HLIST], 4 * count) < 0
            or _reserve(&a.g[_G_HNULL], count // 8 + 2, True) < 0):
        return -1
    for k in range(4):
        g.col[k].data = a.g[3 * k].p
        g.col[k].len = a.g[3 * k].len
        g.col[k].offs = <int32_t *>a.g[3 * k + 1].p
        g.col[k].nullmap = a.g[3 * k + 2].p
        g.col[k].nulls = a.nulls[k]
    g.offset = <int64_t *>a.g[_G_OFFSET].p
    g.timestamp = <int64_t *>a.g[_G_TS].p
    g.ts_type = <int32_t *>a.g[_G_TYPE].p
    g.hlist = <int32_t *>a.g[_G_HLIST].p
    g.hnullmap = a.g[_G_HNULL].p
    g.hnulls = a.hnulls
    g.n = a.n
    g.nh = a.nh
    if a.views:
        g.vbase = a.vbase
        g.vindex = a.vindex
        err = kc_gather_region_views(&g, p, end, count, stream, base_off, base_ts, max_ts, lat, a.headers)
    else:
        err = kc_gather_region(&g, p, end, count, stream, base_off, base_ts, max_ts, lat, a.headers)
    for k in range(4):
        a.g[3 * k].len = g.col[k].len
        a.nulls[k] = g.col[k].nulls
    a.hnulls = g.hnulls
    a.n = g.n
    a.nh = g.nh
    _acc_set_lengths(a)
    return err


cdef void _acc_presize(_Acc *a, int64_t rows, int64_t seen, int64_t total, bint bounded) noexcept nogil:
    """Reserve, once the first batches are in, what all ``rows`` records (<= 0: estimated) will need.

    Growing by doubling copies each column about once more in all; sizing
    from what ``seen`` of the ``total`` input bytes produced (with an eighth
    to spare) leaves growth for uneven data only.  ``bounded``: the input is
    uncompressed, so no column holds more than ``total`` bytes.  Best effort:
    a reservation that fails is left to growth, which reports a real lack of
    memory.
    """
    cdef int k
    cdef double scale
    cdef int64_t want, most = total if bounded else 2147483647
    if seen <= 0 or a.n <= 0 or total <= seen:
        return
    scale = <double>total / <double>seen * 1.125
    if rows <= 0:  # not known: as many per input byte as so far
        rows = <int64_t>(a.n * scale) + 16
    if rows <= a.n:
        return
    if most > 2147483647:
        most = 2147483647
    for k in range(4 if a.headers else 2):
        if k < 2 and a.views:
            _reserve_views(&a.g[3 * k], rows - a.n)
            continue
        want = min(<int64_t>(a.g[3 * k].len * scale) + 64, most)
        if want > a.g[3 * k].len and _reserve(&a.g[3 * k], want - a.g[3 * k].len) < 0:
            return
        # int32 offsets: one per record (key, value) or per header, with the same spare
        want = (rows if k < 2 else <int64_t>(a.nh * scale) + 16) + 1
        if _reserve(&a.g[3 * k + 1], 4 * want - a.g[3 * k + 1].len) < 0:
            return
        if _reserve(&a.g[3 * k + 2], want // 8 + 2 - a.g[3 * k + 2].len, True) < 0:
            return
    if (_reserve(&a.g[_G_OFFSET], 8 * (rows - a.n)) < 0 or _reserve(&a.g[_G_TS], 8 * (rows - a.n)) < 0
            or _reserve(&a.g[_G_TYPE], 4 * (rows - a.n)) < 0 or _reserve(&a.g[_G_HLIST], 4 * (rows - a.n)) < 0):
        return
    _reserve(&a.g[_G_HNULL], (rows + 7) // 8 + 2 - a.g[_G_HNULL].len, True)


cdef object _validity(_Grow *g, int64_t rows, int64_t nulls):
    if not nulls:
        return None
    kc_nullmap_to_validity(g.p, rows)
    return _own(g)


cdef extern from "kc_arrow_time.h":
    Py_ssize_t kc_ms_to_us(int64_t *ts, Py_ssize_t n) nogil


cdef extern from "kc_ascii.h":
    int kc_all_ascii(const uint8_t *p, Py_ssize_t n) nogil


def all_ascii(data) -> bool:
    """Whether every byte of ``data`` is below 0x80 (GIL released)."""
    cdef Py_buffer view
    cdef int r
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        with nogil:
            r = kc_all_ascii(<const uint8_t *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)
    return r != 0


cdef tuple _acc_result(_Acc *a, list sources=None):
    """(n, offsets, timestamps us, timestamp types, headers, columns, data buffers); see columns_uncompressed_v2.

    ``sources``: with views, the buffers the views reference, variadic buffer 1 onwards.
    """
    cdef int k
    cdef int64_t rows
    cdef Py_ssize_t bad
    with nogil:
        bad = kc_ms_to_us(<int64_t *>a.g[_G_TS].p, a.n)
    if bad >= 0:
        raise LimitExceededError(
            f"The record at offset {(<int64_t *>a.g[_G_OFFSET].p)[bad]} has timestamp "
            f"{(<int64_t *>a.g[_G_TS].p)[bad]} ms, outside the range of Arrow's timestamp('us')")
    columns = []
    for k in range(4):
        rows = a.n if k < 2 else a.nh
        columns.append((rows, _own(&a.g[3 * k]), None if k < 2 and a.views else _own(&a.g[3 * k + 1]),
                        _validity(&a.g[3 * k + 2], rows, a.nulls[k]), a.nulls[k]))
    buffers = [_own(&a.g[_G_SPILL])] + sources if a.views else None
    hdrs = None
    if a.headers:
        hdrs = (np.frombuffer(_own(&a.g[_G_HLIST]), np.int32)[:a.n + 1], _validity(&a.g[_G_HNULL], a.n, a.hnulls),
                a.hnulls)
    return (a.n, np.frombuffer(_own(&a.g[_G_OFFSET]), np.int64)[:a.n],
            np.frombuffer(_own(&a.g[_G_TS]), np.int64)[:a.n],
            np.frombuffer(_own(&a.g[_G_TYPE]), np.int32)[:a.n], hdrs, columns, buffers)


cdef class ColumnAccumulator:
    """Records of many batches gathered into Arrow-ready buffers, one records region at a time.

    For batches that need Python first (compressed ones: the codec returns
    the records region); ``add`` returns False when the region does not
    parse, and the caller then reports the error with Kafka's message.

    With ``views``, key and value are Arrow views: long values reference the
    regions given to ``add``, which the accumulator holds (and the result
    hands on) instead of copying them.
    """
    cdef _Acc a
    cdef list sources

    def __cinit__(self, bint headers=True, bint views=False):
        self.sources = []
        if _acc_init(&self.a, headers, views) < 0:
            raise MemoryError()

    def __dealloc__(self):
        _acc_free(&self.a)

    def presize(self, int64_t seen, int64_t total) -> None:
        """Reserve room for a whole input of ``total`` bytes, judged by what its first ``seen`` bytes gave.

        A hint: nothing is raised when the room cannot be had.
        """
        _acc_presize(&self.a, 0, seen, total, False)

    def add(self, data, int32_t count, int64_t base_offset, int64_t base_timestamp, int64_t max_timestamp,
            bint log_append_time, bint stream) -> bool:
        cdef Py_buffer view
        cdef int err
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            if self.a.views:
                if self.a.vindex == 2147483647:
                    raise LimitExceededError("more than 2**31 buffers behind one Arrow column")
                # The region stays where it is: the views point into it, and the result holds it.
                self.sources.append(data)
                self.a.vbase = <const uint8_t *>view.buf
                self.a.vindex = <int32_t>len(self.sources)
            with nogil:
                err = _acc_add(&self.a, <const uint8_t *>view.buf, <const uint8_t *>view.buf + view.len, count,
                               base_offset, base_timestamp, max_timestamp, log_append_time, stream)
        finally:
            PyBuffer_Release(&view)
        if err == -1:
            raise MemoryError()
        if err == -2:
            raise LimitExceededError("more than 2 GiB in one Arrow column; convert fewer batches at a time")
        return err == 0

    def add_record(self, int64_t offset, int64_t timestamp, int32_t timestamp_type, key, value,
                   headers) -> None:
        """Append one decoded record (legacy v0/v1 batches, which are rare, come this way)."""
        cdef int k
        cdef int64_t i
        # Everything that can run Python code (iteration, encoding, buffer exports) first,
        # into bytes: that code could otherwise re-enter this accumulator mid-write.
        fields = [None if f is None else (f if type(f) is bytes else bytes(memoryview(f))) for f in (key, value)]
        pairs = []
        if self.a.headers:
            for name, hv in headers:
                pairs.append((name.encode("utf-8") if isinstance(name, str) else bytes(memoryview(name)),
                              None if hv is None else (hv if type(hv) is bytes else bytes(memoryview(hv)))))
        i = self.a.n
        for k in range(2):
            self._put_object(3 * k, i, fields[k], &self.a.nulls[k])
        for hk, hv in pairs:
            self._put_object(6, self.a.nh, hk, &self.a.nulls[2])
            self._put_object(9, self.a.nh, hv, &self.a.nulls[3])
            self.a.nh += 1
        for k, size in ((_G_OFFSET, 8), (_G_TS, 8), (_G_TYPE, 4), (_G_HLIST, 4)):
            if _reserve(&self.a.g[k], size) < 0:
                raise MemoryError()
        if _reserve(&self.a.g[_G_HNULL], 2, True) < 0:
            raise MemoryError()
        (<int64_t *>self.a.g[_G_OFFSET].p)[i] = offset
        (<int64_t *>self.a.g[_G_TS].p)[i] = timestamp
        (<int32_t *>self.a.g[_G_TYPE].p)[i] = timestamp_type
        (<int32_t *>self.a.g[_G_HLIST].p)[i + 1] = <int32_t>self.a.nh
        if self.a.headers and not pairs:
            self.a.g[_G_HNULL].p[i >> 3] |= <uint8_t>(1 << (i & 7))
            self.a.hnulls += 1
        self.a.n += 1
        _acc_set_lengths(&self.a)

    cdef int _put_object(self, int c, int64_t row, obj, int64_t *nulls) except -1:
        cdef Py_buffer view
        cdef int err
        cdef const uint8_t *src = NULL
        cdef int32_t ln = -1
        if obj is not None:
            PyObject_GetBuffer(obj, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
            src = <const uint8_t *>view.buf
            ln = <int32_t>view.len
        try:
            if c < 6 and self.a.views:
                err = _put_view(&self.a.g[c], &self.a.g[c + 2], &self.a.g[_G_SPILL], row, src, ln, nulls)
            else:
                err = _reserve_batch(&self.a.g[c], 1, max(ln, 0))
                if err == 0:
                    _put(&self.a.g[c], &self.a.g[c + 1], &self.a.g[c + 2], row, src, ln, nulls)
        finally:
            if obj is not None:
                PyBuffer_Release(&view)
        if err == -1:
            raise MemoryError()
        if err == -2:
            raise LimitExceededError("more than 2 GiB in one Arrow column; convert fewer batches at a time")
        return 0

    @property
    def n(self) -> int:
        return self.a.n

    def result(self) -> tuple:
        """The gathered columns (the accumulator is empty afterwards)."""
        out = _acc_result(&self.a, self.sources)
        self.sources = []
        _acc_free(&self.a)
        if _acc_init(&self.a, self.a.headers, self.a.views) < 0:
            raise MemoryError()
        return out


def split_batches(data, Py_ssize_t parts, Py_ssize_t min_part, Py_ssize_t min_mean_batch=0):
    """Cut points ``[0, ..., len]`` that split a buffer into at most ``parts`` runs of whole batches.

    Each run but the last holds at least ``min_part`` bytes (and about an
    equal share).  Only the batch length fields are read; a buffer the walk
    cannot follow (a length that is too small or overruns the buffer), or
    whose batches average fewer than ``min_mean_batch`` bytes, is returned
    whole, for the caller's single pass to judge.
    """
    cdef Py_buffer view
    cdef Py_ssize_t length, pos = 0, last = 0, share, size, count = 0
    cdef const uint8_t *buf
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        buf = <const uint8_t *>view.buf
        length = view.len
        cuts = [0]
        if parts < 2 or length < 2 * min_part:
            return [0, length]
        share = max(min_part, length // parts)
        while length - pos >= 12:
            size = <int32_t>kc_load_be32(buf + pos + 8)
            if size < 0 or size > length - pos - 12:
                return [0, length]
            pos += size + 12
            count += 1
            if pos - last >= share and length - pos >= min_part and len(cuts) < parts:
                cuts.append(pos)
                last = pos
        if count * min_mean_batch > pos:
            return [0, length]
        cuts.append(length)
        return cuts
    finally:
        PyBuffer_Release(&view)


def columns_uncompressed_v2(data, bint validate=True, bint include_control=False, bint headers=True,
                            Py_ssize_t start=0, Py_ssize_t stop=-1, bint views=False,
                            Py_ssize_t view_buffer_limit=2147483647):
    """Every record of a buffer of uncompressed v2 batches, as Arrow-ready buffers, in one native pass.

    ``start`` and ``stop`` (batch boundaries) restrict the pass to a part of
    the buffer, so that several threads can share one buffer.

    Each batch is CRC-checked (and a control batch's records checked as
    Kafka reads them) and then parsed while it is in cache, copying
    keys, values and headers straight into the column buffers.  Returns None
    when the buffer holds anything else (compressed or legacy batches,
    trailing bytes, damage): the general path then decodes it and reports
    errors with Kafka's messages.  Otherwise ``(n, offsets, timestamps us,
    timestamp types, headers, columns)`` where ``columns`` holds, for key,
    value, header key and header value, ``(length, data, int32 offsets,
    validity bitmap or None, null count)`` (header columns empty unless
    ``headers``) and ``headers`` is the headers list's ``(int32 offsets,
    validity bitmap or None, null count)``, or None without ``headers``.

    With ``views`` the key and value data are Arrow's 16-byte views and
    their offsets None; a last element lists the variadic buffers they
    reference: an empty one, then slices of ``data`` (each at most
    ``view_buffer_limit`` bytes, 2 GiB, as views hold 32-bit offsets).
    Without, that element is None.
    """
    cdef Py_buffer view
    cdef Py_ssize_t n = 0, length, pos, size
    cdef const uint8_t *buf
    cdef int64_t rc = 0
    cdef uint8_t attrs
    cdef kc_batch_header_t h
    cdef int err = 0
    cdef bint presized = False
    cdef _Acc a
    cdef Py_ssize_t source = 0  # views: where the current variadic buffer starts
    cdef list starts = [0]
    if _acc_init(&a, headers, views) < 0:
        _acc_free(&a)
        raise MemoryError()
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if stop < 0:
            stop = view.len
        if not 0 <= start <= stop <= view.len:
            raise ValueError(f"part [{start}, {stop}) is outside the buffer of {view.len} bytes")
        buf = <const uint8_t *>view.buf + start
        length = stop - start
        a.vbase = buf
        a.vindex = 1
        with nogil:
            rc = _walk(buf, length, include_control, &n)
            pos = 0
            while rc >= 0 and pos < length and err == 0:
                size = <int32_t>kc_load_be32(buf + pos + KC_BATCH_LENGTH) + 12
                if size < KC_BATCH_OVERHEAD or size > length - pos:  # changed since _walk (a writer in another thread)
                    err = 1
                    break
                kc_batch_read(buf + pos, &h)
                attrs = <uint8_t>h.attributes
                if validate and h.crc != kc_batch_checksum(buf + pos, size):
                    err = 1
                elif validate and (attrs & KC_BATCH_CONTROL) and not kc_control_region_ok(
                        buf + pos + KC_BATCH_OVERHEAD, buf + pos + size, h.records_count):
                    err = 1  # Kafka's control record checks fail: reported by the general path
                elif include_control or not (attrs & KC_BATCH_CONTROL):
                    if views and pos + size - source > view_buffer_limit:
                        source = pos
                        a.vbase = buf + pos
                        a.vindex += 1
                        with gil:
                            starts.append(pos)
                    err = _acc_add(&a, buf + pos + KC_BATCH_OVERHEAD, buf + pos + size, h.records_count,
                                   h.base_offset, h.base_timestamp, h.max_timestamp,
                                   (attrs & KC_BATCH_TIMESTAMP_TYPE) != 0, False)
                pos += size
                if not presized and err == 0 and pos >= 65536:
                    presized = True
                    _acc_presize(&a, n, pos, length, True)
        if err == -1:
            raise MemoryError()
        if err == -2:
            raise LimitExceededError("more than 2 GiB in one Arrow column; convert fewer batches at a time")
        if rc < 0 or err:
            return None
        if not views:
            return _acc_result(&a)
        whole = memoryview(data)
        if whole.ndim != 1 or whole.itemsize != 1:
            whole = whole.cast("B")
        starts.append(length)
        return _acc_result(&a, [whole[start + a0:start + a1] for a0, a1 in zip(starts, starts[1:])])
    finally:
        PyBuffer_Release(&view)
        _acc_free(&a)
