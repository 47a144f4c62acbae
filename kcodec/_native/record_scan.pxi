# RecordIndex: where every field of every record in a region lies, as numpy
# arrays, scanned without a Python object per record and without the GIL.
# Part of kcodec._native.records (included by records.pyx).

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
                rc = kc_parse_record_from(p, end, stream, &r)
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
            if kc_parse_record_from(p, end, stream, &r) < 0 or r.header_count > cap - n:
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
