# Arrow in: records encoded straight from Arrow columns (from_arrow), and the v2 batch
# writers that wrap a records region (uncompressed or through a native codec).


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
                    tuple direct=None, cuts=None, bint joined=False, bytearray into=None):
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

    ``cuts`` (int64 row starts of each batch, then ``n``) cuts the batches
    there instead of by the write limit: the batches a replay of a producer
    decided, built in one call.  With ``direct`` and ``cuts``, ``joined``
    writes those batches one after another into a single ``bytes`` (as in a
    segment) and returns ``(that bytes, batch count)``: no object per batch.
    Given a bytearray ``into``, they are written there instead when it is
    large enough (else into a new, larger bytearray), and the result is
    ``(the bytearray written, bytes written, batch count)``: a caller that
    builds again and again writes into memory it has already touched.
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
    cdef const int64_t[::1] cut_rows
    cdef const int64_t *cut = NULL
    cdef Py_ssize_t ncuts = 0, next_cut = 1, c
    if cuts is not None:
        cut_rows = cuts
        ncuts = cut_rows.shape[0]
        if ncuts < 2 or cut_rows[0] != 0 or cut_rows[ncuts - 1] != n:
            raise ValueError("cuts must start at row 0 and end at n")
        for c in range(1, ncuts):
            if cut_rows[c] <= cut_rows[c - 1]:
                raise ValueError("cuts must increase strictly")
        cut = &cut_rows[0]
    if joined and (direct is None or cut == NULL):
        raise ValueError("joined batches need direct header fields and cuts")
    if joined:
        return _encode_joined(n, &ck, has_key, &cv, &chl, has_h, &chk, &chv, &ts[0] if n else NULL,
                              &offs_in[0] if has_offsets else NULL, base_offset, direct, cut, ncuts, into)
    if direct is not None:
        return _encode_direct(n, &ck, has_key, &cv, &chl, has_h, &chk, &chv, &ts[0] if n else NULL,
                              &offs_in[0] if has_offsets else NULL, base_offset, write_limit, direct, cut, ncuts)
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
            if cut != NULL:
                if batch_records > 0 and i == cut[next_cut]:
                    next_cut += 1
                    nbatch += 1
                    batch_records = 0
                    in_batch = 0
                    first_ts = ts[i]
                    first_off = off
                    body = kc_record_body_size(0, 0, kl, vl, hc, hs)
                    rb[i] = kc_varint_size(<int32_t>body) + body
            elif batch_records > 0:
                if compressed:
                    f_written = <float>in_batch
                    f_written = f_written * estimated_ratio
                    f_written = f_written * f_factor
                    est = KC_BATCH_OVERHEAD + <int32_t>f_written
                else:
                    est = KC_BATCH_OVERHEAD + in_batch
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
    kc_fill_batch(dst + KC_BATCH_OVERHEAD, r0, n, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs,
                  base_offset, res)
    if res.err == 0:
        # Kafka's sequence numbers wrap at Integer.MAX_VALUE.
        seq = base_sequence if base_sequence < 0 else <int32_t>((<int64_t>base_sequence + r0) & 0x7fffffff)
        # the CRC the fill took of its records as it went, joined to the header's
        kc_batch_write_fields(dst, KC_BATCH_OVERHEAD + res.written, first_off, leader_epoch, attributes,
                              <int32_t>(res.last_off - first_off), ts[r0], lat if lat >= 0 else res.max_ts,
                              producer_id, producer_epoch, seq, <int32_t>(res.row_end - r0))
        kc_batch_seal_from(dst, KC_BATCH_OVERHEAD + res.written, res.crc, <size_t>res.crc_done)


cdef list _encode_direct(Py_ssize_t n, const _Col *ck, bint has_key, const _Col *cv, const _Col *chl, bint has_h,
                         const _Col *chk, const _Col *chv, const int64_t *ts, const int64_t *offs,
                         int64_t base_offset, int64_t write_limit, tuple direct, const int64_t *cut,
                         Py_ssize_t ncuts):
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
    cdef Py_ssize_t b = 0, end = n
    if cut != NULL:
        write_limit = INT64_MAX
    while r0 < n:
        if cut != NULL:
            b += 1
            end = cut[b]
        cap = kc_rows_bound(r0, end, ck, has_key, cv, chl, has_h, chk, chv)
        if cap > write_limit - KC_BATCH_OVERHEAD:
            cap = max(write_limit - KC_BATCH_OVERHEAD, kc_rows_bound(r0, r0 + 1, ck, has_key, cv, chl, has_h, chk, chv))
        blob = _raw_bytes(NULL, KC_BATCH_OVERHEAD + cap)
        dst = <uint8_t *>_raw_bytes_data(blob)
        first_off = offs[r0] if offs != NULL else base_offset + r0
        held += cap
        if held >= _GIL_DROP_BYTES:
            held = 0
            with nogil:
                _fill_direct(dst, r0, end, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs, base_offset,
                             first_off, attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat,
                             &res)
        else:
            _fill_direct(dst, r0, end, write_limit, ck, has_key, cv, chl, has_h, chk, chv, ts, offs, base_offset,
                         first_off, attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat, &res)
        if res.err:
            Py_DECREF(<object>blob)
            if res.err == 1:
                raise RecordBuilderError(f"row {res.err_row}: header keys must not be null")
            raise RecordBuilderError(f"row {res.err_row}: offset too far from the first offset of its batch")
        kc_bytes_shrink(&blob, KC_BATCH_OVERHEAD + res.written)
        out.append(<object>blob)
        Py_DECREF(<object>blob)
        r0 = res.row_end
    return out


cdef tuple _encode_joined(Py_ssize_t n, const _Col *ck, bint has_key, const _Col *cv, const _Col *chl, bint has_h,
                         const _Col *chk, const _Col *chv, const int64_t *ts, const int64_t *offs,
                         int64_t base_offset, tuple direct, const int64_t *cut, Py_ssize_t ncuts,
                         bytearray into):
    """The batches of ``cut`` back to back in one ``bytes`` allocated at their bound and shrunk once,
    or in ``into`` (see encode_columnar)."""
    cdef int16_t attributes, producer_epoch
    cdef int64_t producer_id, lat, r0 = 0, first_off, pos = 0, cap
    cdef int32_t base_sequence, leader_epoch
    attributes, producer_id, producer_epoch, base_sequence, leader_epoch, lat = direct
    cdef kc_batch_fill_t res
    cdef Py_ssize_t b
    cap = kc_rows_bound(0, n, ck, has_key, cv, chl, has_h, chk, chv) + KC_BATCH_OVERHEAD * (ncuts - 1)
    cdef PyObject *blob = NULL
    cdef uint8_t *dst
    cdef Py_buffer pin
    if into is not None:
        if len(into) < cap:
            # uninitialized: every byte handed back is written first
            into = PyByteArray_FromStringAndSize(NULL, max(cap, 2 * len(into)))
        # held while the GIL is let go, so that nothing can resize it meanwhile
        PyObject_GetBuffer(into, &pin, PyBUF_SIMPLE | PyBUF_WRITABLE)
        dst = <uint8_t *>pin.buf
    else:
        blob = _raw_bytes(NULL, cap)
        dst = <uint8_t *>_raw_bytes_data(blob)
    res.err = 0
    try:
        with nogil:
            for b in range(1, ncuts):
                first_off = offs[r0] if offs != NULL else base_offset + r0
                _fill_direct(dst + pos, r0, cut[b], INT64_MAX, ck, has_key, cv, chl, has_h, chk, chv, ts, offs,
                             base_offset, first_off, attributes, producer_id, producer_epoch, base_sequence,
                             leader_epoch, lat, &res)
                if res.err:
                    break
                pos += KC_BATCH_OVERHEAD + res.written
                r0 = res.row_end
    finally:
        if into is not None:
            PyBuffer_Release(&pin)
    if res.err:
        if blob != NULL:
            Py_DECREF(<object>blob)
        if res.err == 1:
            raise RecordBuilderError(f"row {res.err_row}: header keys must not be null")
        raise RecordBuilderError(f"row {res.err_row}: offset too far from the first offset of its batch")
    if into is not None:
        return into, pos, ncuts - 1
    kc_bytes_shrink(&blob, pos)
    out = <object>blob
    Py_DECREF(out)
    return out, ncuts - 1


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
        out = PyBytes_FromStringAndSize(NULL, KC_BATCH_OVERHEAD + view.len)
        p = <uint8_t *>PyBytes_AS_STRING(out)
        with nogil:
            memcpy(p + KC_BATCH_OVERHEAD, view.buf, view.len)
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
        batch = codec.compress_after(<const uint8_t *>view.buf, view.len, level, 2, KC_BATCH_OVERHEAD)
    finally:
        PyBuffer_Release(&view)
    cdef Py_ssize_t n = PyBytes_GET_SIZE(batch)
    cdef uint8_t *p = <uint8_t *>PyBytes_AS_STRING(batch)
    with nogil:
        _write_batch(p, n - KC_BATCH_OVERHEAD, base_offset, last_offset_delta, first_timestamp, max_timestamp, count,
                     attributes, producer_id, producer_epoch, base_sequence, partition_leader_epoch)
    return batch


def compressed_batch_list(NativeCodec codec, encoded, int level, int16_t attributes, int64_t producer_id,
                          int16_t producer_epoch, int32_t base_sequence, int32_t partition_leader_epoch,
                          int64_t log_append_time=-1) -> list:
    """Every batch of ``encode_columnar``'s records regions (``encoded``), compressed by a native codec,
    as a list: ``compressed_batches``' batches in one call, without a Python step per batch.

    A ``base_sequence`` of 0 or more is the first batch's, each later one adds the records before
    it (``DefaultRecordBatch.incrementSequence``); ``log_append_time`` of 0 or more is every batch's
    max timestamp.
    """
    out_buf, rows, pos, first_ts, max_ts, first_off, last_off = encoded
    cdef const uint8_t[::1] data = out_buf
    cdef const int64_t[::1] r = rows
    cdef const int64_t[::1] p = pos
    cdef const int64_t[::1] fts = first_ts
    cdef const int64_t[::1] mts = max_ts
    cdef const int64_t[::1] fo = first_off
    cdef const int64_t[::1] lo = last_off
    cdef Py_ssize_t nb = fts.shape[0], b
    if r.shape[0] != nb + 1 or p.shape[0] != nb + 1:
        raise ValueError("compressed_batch_list: encode_columnar's row and byte starts need one value per batch, "
                         "and one more")
    cdef list out = []
    cdef bytes batch
    cdef int32_t seq
    cdef uint8_t *q
    cdef const uint8_t *src
    for b in range(nb):
        src = &data[0] + p[b] if p[b + 1] > p[b] else <const uint8_t *>""
        batch = codec.compress_after(src, p[b + 1] - p[b], level, 2, KC_BATCH_OVERHEAD)
        seq = base_sequence if base_sequence < 0 else <int32_t>((<int64_t>base_sequence + r[b]) % 2147483648)
        q = <uint8_t *>PyBytes_AS_STRING(batch)
        _write_batch(q, PyBytes_GET_SIZE(batch) - KC_BATCH_OVERHEAD, fo[b], <int32_t>(lo[b] - fo[b]), fts[b],
                     mts[b] if log_append_time < 0 else log_append_time, <int32_t>(r[b + 1] - r[b]), attributes,
                     producer_id, producer_epoch, seq, partition_leader_epoch)
        out.append(batch)
    return out
