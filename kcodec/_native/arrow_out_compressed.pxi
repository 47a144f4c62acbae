# Arrow out for compressed v2 batches: one native walk that decompresses each batch through its
# codec's kcodec/codec.h functions into one reused buffer and gathers its records, without the GIL.


cdef enum:
    _FIRST_REGION = 65536  # the decompression buffer's first size when the codec gives no hint


cdef int _v2_entry(const uint8_t *buf, Py_ssize_t length, Py_ssize_t pos, Py_ssize_t *total) noexcept nogil:
    """One step of Kafka's entry walk (see _entry_at) that stays on v2 batches: 1 when a complete
    v2 batch of ``total`` (>= 61) bytes starts at ``pos``, 0 where the walk ends, -1 for anything
    the general path must judge (an error there, a legacy entry, a batch too short for its header)."""
    cdef Py_ssize_t remaining = length - pos
    cdef int32_t size
    if remaining < 12:
        return 0
    size = <int32_t>kc_load_be32(buf + pos + KC_BATCH_LENGTH)
    if size < 14:
        return -1
    if remaining < 17:
        return 0
    if buf[pos + KC_BATCH_MAGIC] != 2:
        return -1
    total[0] = <Py_ssize_t>size + 12
    if remaining < total[0]:
        return 0
    return 1 if total[0] >= KC_BATCH_OVERHEAD else -1


def compression_ids(data, Py_ssize_t start=0, Py_ssize_t stop=-1) -> int:
    """The codec ids of the batches in ``data[start:stop]`` with records to decode, as a bit mask;
    -1 when it holds anything but complete v2 batches (a trailing partial batch aside)."""
    cdef Py_buffer view
    cdef Py_ssize_t pos, total
    cdef const uint8_t *buf
    cdef int step, mask = 0
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if stop < 0:
            stop = view.len
        if not 0 <= start <= stop <= view.len:
            raise ValueError(f"part [{start}, {stop}) is outside the buffer of {view.len} bytes")
        buf = <const uint8_t *>view.buf + start
        pos = 0
        with nogil:
            while True:
                step = _v2_entry(buf, stop - start, pos, &total)
                if step <= 0:
                    break
                if <int32_t>kc_load_be32(buf + pos + KC_BATCH_RECORDS_COUNT) != 0:
                    mask |= 1 << (buf[pos + KC_BATCH_ATTRIBUTES + 1] & KC_BATCH_COMPRESSION_MASK)
                pos += total
        return -1 if step < 0 else mask
    finally:
        PyBuffer_Release(&view)


cdef int64_t _decompress_region(NativeCodec codec, const uint8_t *src, int64_t n, _Grow *out,
                                int64_t max_size) noexcept nogil:
    """The records region at ``src`` decompressed into ``out`` (grown as the codec asks, up to
    ``max_size``): its size, or a negative code (the general path then reports the error)."""
    cdef int64_t cap, got
    cdef char err[1]
    err[0] = 0
    cap = -1
    if codec.api.decompressed_size != NULL:
        cap = codec.api.decompressed_size(codec.api.state, src, n, 2)
    if cap < 0:
        cap = max(4 * n, <int64_t>_FIRST_REGION)
    cap = max(min(cap, max_size), out.cap)
    while True:
        if cap > out.cap:
            out.len = 0  # nothing to keep: the codec writes the region afresh
            if _reserve(out, cap) < 0:
                return KCODEC_CODEC_ERROR
        got = codec.call_decompress(src, n, out.p, min(out.cap, max_size), 2, err, 0)
        if got != KCODEC_CODEC_DST_TOO_SMALL or out.cap >= max_size:
            return got
        cap = min(max(out.cap * 4, <int64_t>_FIRST_REGION), max_size)


cdef int _acc_add_v2(_Acc *a, const uint8_t *buf, Py_ssize_t length, PyObject **codecs, bint validate,
                     bint include_control, int64_t max_size, _Grow *region) noexcept nogil:
    """Every record of a buffer of v2 batches of any codec in ``codecs`` (by id; NULL: none), in one pass.

    0; 1 when the buffer holds anything the general path must judge (legacy
    batches, damage, a codec not given, a failed decompression), the
    accumulator then left as it was; -1 (no memory) or -2 (a 2 GiB column).
    Compressed control batches, which Kafka does not write, are left to the
    general path too.
    """
    cdef Py_ssize_t pos = 0, total
    cdef int64_t got
    cdef kc_batch_header_t h
    cdef uint8_t attrs, cid
    cdef int step, err = 0
    cdef bint presized = a.n > 0
    cdef _AccMark mark
    _acc_mark(a, &mark)
    while err == 0:
        step = _v2_entry(buf, length, pos, &total)
        if step <= 0:
            err = 1 if step < 0 else 0
            break
        kc_batch_read(buf + pos, &h)
        attrs = <uint8_t>h.attributes
        cid = attrs & KC_BATCH_COMPRESSION_MASK
        if validate and h.crc != kc_batch_checksum(buf + pos, total):
            err = 1
        elif h.records_count < 0:
            err = 1
        elif (attrs & KC_BATCH_CONTROL) and cid != 0 and (validate or include_control):
            err = 1
        elif validate and (attrs & KC_BATCH_CONTROL) and not kc_control_region_ok(
                buf + pos + KC_BATCH_OVERHEAD, buf + pos + total, h.records_count):
            err = 1
        elif h.records_count > 0 and (include_control or not (attrs & KC_BATCH_CONTROL)):
            if cid != 0 and codecs[cid] == NULL:
                err = 1
            elif cid == 0:
                err = _acc_add(a, buf + pos + KC_BATCH_OVERHEAD, buf + pos + total, h.records_count,
                               h.base_offset, h.base_timestamp, h.max_timestamp,
                               (attrs & KC_BATCH_TIMESTAMP_TYPE) != 0, False)
            else:
                got = _decompress_region(<NativeCodec>codecs[cid], buf + pos + KC_BATCH_OVERHEAD,
                                         total - KC_BATCH_OVERHEAD, region, max_size)
                if got < 0:
                    err = 1
                else:
                    err = _acc_add(a, region.p, region.p + got, h.records_count, h.base_offset,
                                   h.base_timestamp, h.max_timestamp, (attrs & KC_BATCH_TIMESTAMP_TYPE) != 0, True)
        pos += total
        if not presized and err == 0 and pos >= 65536:
            presized = True
            _acc_presize(a, 0, pos, length, False)
    if err:
        _acc_rewind(a, &mark)
    return 1 if err > 0 else err


cdef int _native_table(codecs, PyObject **natives) except -1:
    """``codecs`` (one NativeCodec or None per codec id 0-7) as borrowed pointers; the caller holds ``codecs``."""
    cdef int k
    if len(codecs) != 8:
        raise ValueError("codecs must hold one entry per codec id 0-7")
    for k in range(8):
        natives[k] = NULL
        if codecs[k] is not None:
            if not isinstance(codecs[k], NativeCodec):
                raise TypeError(f"codec {k} is not a NativeCodec")
            natives[k] = <PyObject *>codecs[k]
    return 0


cdef int _add_v2_buffer(_Acc *a, data, tuple codecs, bint validate, bint include_control, int64_t max_size,
                        Py_ssize_t start, Py_ssize_t stop) except -2:
    """_acc_add_v2 over ``data[start:stop]`` (stop -1: the end): 0, or 1 when the general path must take it."""
    cdef Py_buffer view
    cdef int err
    cdef _Grow region
    cdef PyObject *natives[8]
    _native_table(codecs, natives)
    memset(&region, 0, sizeof(_Grow))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if stop < 0:
            stop = view.len
        if not 0 <= start <= stop <= view.len:
            raise ValueError(f"part [{start}, {stop}) is outside the buffer of {view.len} bytes")
        with nogil:
            err = _acc_add_v2(a, <const uint8_t *>view.buf + start, stop - start, natives, validate,
                              include_control, max_size, &region)
    finally:
        PyBuffer_Release(&view)
        kc_cache_give(region.p, <size_t>region.cap)
    _raise_acc_error(err)
    return err


def columns_v2(data, codecs, bint validate=True, bint include_control=False, bint headers=True,
               int64_t max_decompressed_size=2147483647, Py_ssize_t start=0, Py_ssize_t stop=-1):
    """Every record of a buffer of v2 batches of any codec, as a RecordChunk, in one native pass.

    ``codecs`` holds, by codec id, the NativeCodec of every codec the
    batches use (None for the others; see compression_ids).  The walk, the
    CRC checks, the decompressions (each batch into one reused buffer, at
    most ``max_decompressed_size`` bytes) and the gather run without the GIL.
    Returns None when the buffer holds anything else (legacy batches, a
    codec not given, damage, a failed decompression): the general path then
    decodes it and reports errors with Kafka's messages.  ``start`` and
    ``stop`` (batch boundaries) restrict the pass to a part of the buffer.
    """
    cdef _Acc a
    if _acc_init(&a, headers, False) < 0:
        _acc_free(&a)
        raise MemoryError()
    try:
        if _add_v2_buffer(&a, data, tuple(codecs), validate, include_control, max_decompressed_size, start, stop):
            return None
        return _chunk_of(&a)
    finally:
        _acc_free(&a)
