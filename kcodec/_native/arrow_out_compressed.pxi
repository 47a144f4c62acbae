# Arrow out for compressed v2 batches: one native walk that decompresses each batch through its
# codec's kcodec/codec.h functions (into one reused buffer; with views, into a region per batch
# that the chunk holds) and gathers its records, without the GIL.


cdef enum:
    _FIRST_REGION = 65536  # the decompression buffer's first size when the codec gives no hint


def compression_ids(data, Py_ssize_t start=0, Py_ssize_t stop=-1) -> int:
    """The codec ids of the batches in ``data[start:stop]`` with records to decode, as a bit mask;
    -1 when it holds anything but complete v2 batches (a trailing partial batch aside)."""
    cdef Py_buffer view
    cdef Py_ssize_t pos
    cdef const uint8_t *buf
    cdef int step, mask = 0
    cdef kc_entry_t e
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
                step = kc_walk_v2(buf, stop - start, pos, &e)
                if step <= 0:
                    break
                if <int32_t>kc_load_be32(buf + pos + KC_BATCH_RECORDS_COUNT) != 0:
                    mask |= 1 << (buf[pos + KC_BATCH_ATTRIBUTES + 1] & KC_BATCH_COMPRESSION_MASK)
                pos = e.next
        return -1 if step < 0 else mask
    finally:
        PyBuffer_Release(&view)


cdef int64_t _decompress_region(NativeCodec codec, const uint8_t *src, int64_t n, _Grow *out,
                                int64_t max_size, bint own) noexcept nogil:
    """The records region at ``src`` decompressed into ``out`` (grown as the codec asks, up to
    ``max_size``): its size, or a negative code (the general path then reports the error).

    ``own``: ``out`` is a region of its own (PyMem_Raw memory, traced as Python's, for a chunk
    to hold), trimmed to the size; else a reused buffer of column memory.
    """
    cdef uint8_t *q
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
            if own:
                PyMem_RawFree(out.p)
                out.p = <uint8_t *>PyMem_RawMalloc(cap)
                out.cap = cap if out.p != NULL else 0
                if out.p == NULL:
                    return KCODEC_CODEC_ERROR
            elif _reserve(out, cap) < 0:
                return KCODEC_CODEC_ERROR
        got = codec.call_decompress(src, n, out.p, min(out.cap, max_size), 2, err, 0)
        if got != KCODEC_CODEC_DST_TOO_SMALL or out.cap >= max_size:
            if own and 0 <= got < out.cap:
                q = <uint8_t *>PyMem_RawRealloc(out.p, max(got, 1))
                if q != NULL:
                    out.p, out.cap = q, got
            return got
        cap = min(max(out.cap * 4, <int64_t>_FIRST_REGION), max_size)


cdef struct _Source:
    # views: a buffer the views of one batch reference: a decompressed region owned here
    # (p, cap, the size in n) or, p NULL, n bytes of the input from start
    uint8_t *p
    int64_t cap
    int64_t start
    int64_t n


cdef int _note_source(_Acc *a, _Grow *sources, uint8_t *p, int64_t cap, int64_t start, int64_t n,
                      const uint8_t *at) noexcept nogil:
    """Make the buffer at ``at`` the next variadic buffer of a views accumulator, noted in ``sources``."""
    cdef _Source *s
    if a.vcount == 2147483646 or _reserve(sources, sizeof(_Source)) < 0:
        return -1
    s = <_Source *>(sources.p + sources.len)
    s.p, s.cap, s.start, s.n = p, cap, start, n
    sources.len += sizeof(_Source)
    a.vcount += 1
    a.vbase = at
    a.vindex = a.vcount
    return 0


cdef void _free_sources(_Grow *sources, int64_t since) noexcept nogil:
    """Give back the decompressed regions noted from entry ``since`` on, and forget those entries."""
    cdef _Source *s = <_Source *>sources.p
    cdef int64_t k
    for k in range(since, sources.len // <int64_t>sizeof(_Source)):
        PyMem_RawFree(s[k].p)
        s[k].p = NULL
    sources.len = since * sizeof(_Source)


@cython.final
cdef class _Decompressed:
    """A batch's decompressed records region, which the view columns of a chunk reference."""
    cdef uint8_t *p
    cdef int64_t cap
    cdef int64_t n

    def __getbuffer__(self, Py_buffer *view, int flags):
        PyBuffer_FillInfo(view, self, self.p, self.n, 1, flags)

    def __dealloc__(self):
        PyMem_RawFree(self.p)


cdef list _take_sources(_Grow *sources, data, Py_ssize_t start):
    """The noted buffers as objects for a chunk to hold: slices of ``data`` (the pass began at
    ``start``) and the decompressed regions, whose memory they then own."""
    cdef _Source *s = <_Source *>sources.p
    cdef int64_t k, count = sources.len // <int64_t>sizeof(_Source)
    cdef _Decompressed region
    out = []
    if count == 0:
        return out
    whole = memoryview(data)
    if whole.ndim != 1 or whole.itemsize != 1:
        whole = whole.cast("B")
    try:
        for k in range(count):
            if s[k].p == NULL:
                out.append(whole[start + s[k].start:start + s[k].start + s[k].n])
            else:
                region = _Decompressed.__new__(_Decompressed)
                region.p, region.cap, region.n = s[k].p, s[k].cap, s[k].n
                s[k].p = NULL
                out.append(region)
    finally:
        _free_sources(sources, 0)
    return out


cdef int _acc_add_v2(_Acc *a, const uint8_t *buf, Py_ssize_t length, PyObject **codecs, bint validate,
                     bint include_control, int64_t max_size, _Grow *region, _Grow *sources) noexcept nogil:
    """Every record of a buffer of v2 batches of any codec in ``codecs`` (by id; NULL: none), in one pass.

    0; 1 when the buffer holds anything the general path must judge (legacy
    batches, damage, a codec not given, a failed decompression), the
    accumulator then left as it was; -1 (no memory) or -2 (a 2 GiB column).
    Compressed control batches, which Kafka does not write, are left to the
    general path too.  With views each batch is decompressed into a region
    of its own, noted in ``sources`` with the input's uncompressed records
    regions (see _take_sources); else into ``region``, reused.
    """
    cdef Py_ssize_t pos = 0, total
    cdef int64_t got
    cdef kc_batch_header_t h
    cdef uint8_t attrs, cid
    cdef int step, err = 0
    cdef bint presized = a.n > 0
    cdef _AccMark mark
    cdef _Grow fresh
    cdef int32_t vcount = a.vcount
    cdef kc_entry_t e
    _acc_mark(a, &mark)
    while err == 0:
        step = kc_walk_v2(buf, length, pos, &e)
        if step <= 0:
            err = 1 if step < 0 else 0
            break
        total = e.total
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
                if a.views and _note_source(a, sources, NULL, 0, pos + KC_BATCH_OVERHEAD, total - KC_BATCH_OVERHEAD,
                                            buf + pos + KC_BATCH_OVERHEAD) < 0:
                    err = -1
                    break
                err = _acc_add(a, buf + pos + KC_BATCH_OVERHEAD, buf + pos + total, h.records_count,
                               h.base_offset, h.base_timestamp, h.max_timestamp,
                               (attrs & KC_BATCH_TIMESTAMP_TYPE) != 0, False)
            else:
                if a.views:  # a region per batch, which the views reference
                    memset(&fresh, 0, sizeof(_Grow))
                    region = &fresh
                got = _decompress_region(<NativeCodec>codecs[cid], buf + pos + KC_BATCH_OVERHEAD,
                                         total - KC_BATCH_OVERHEAD, region, max_size, a.views)
                if a.views and (got < 0 or _note_source(a, sources, fresh.p, fresh.cap, 0, got, fresh.p) < 0):
                    PyMem_RawFree(fresh.p)
                    err = 1 if got < 0 else -1
                    break
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
        if a.views:
            _free_sources(sources, 0)
            a.vcount = vcount
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
                        Py_ssize_t start, Py_ssize_t stop, list held) except -2:
    """_acc_add_v2 over ``data[start:stop]`` (stop -1: the end): 0, or 1 when the general path must take it.

    With views, the buffers the new views reference are appended to ``held``.
    """
    cdef Py_buffer view
    cdef int err
    cdef _Grow region, sources
    cdef PyObject *natives[8]
    _native_table(codecs, natives)
    memset(&region, 0, sizeof(_Grow))
    memset(&sources, 0, sizeof(_Grow))
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if stop < 0:
            stop = view.len
        if not 0 <= start <= stop <= view.len:
            raise ValueError(f"part [{start}, {stop}) is outside the buffer of {view.len} bytes")
        with nogil:
            err = _acc_add_v2(a, <const uint8_t *>view.buf + start, stop - start, natives, validate,
                              include_control, max_size, &region, &sources)
        if err == 0 and a.views:
            held += _take_sources(&sources, data, start)
    finally:
        PyBuffer_Release(&view)
        kc_cache_give(region.p, <size_t>region.cap)
        _free_sources(&sources, 0)
        kc_cache_give(sources.p, <size_t>sources.cap)
    _raise_acc_error(err)
    return err


def columns_v2(data, codecs, bint validate=True, bint include_control=False, bint headers=True,
               int64_t max_decompressed_size=2147483647, Py_ssize_t start=0, Py_ssize_t stop=-1,
               bint views=False):
    """Every record of a buffer of v2 batches of any codec, as a RecordChunk, in one native pass.

    ``codecs`` holds, by codec id, the NativeCodec of every codec the
    batches use (None for the others; see compression_ids).  The walk, the
    CRC checks, the decompressions (each batch into one reused buffer, at
    most ``max_decompressed_size`` bytes) and the gather run without the GIL.
    Returns None when the buffer holds anything else (legacy batches, a
    codec not given, damage, a failed decompression): the general path then
    decodes it and reports errors with Kafka's messages.  ``start`` and
    ``stop`` (batch boundaries) restrict the pass to a part of the buffer.
    With ``views`` key and value are Arrow views referencing the input's
    uncompressed records and a decompressed region per batch, which the chunk holds.
    """
    cdef _Acc a
    cdef list held = []
    if _acc_init(&a, headers, views) < 0:
        _acc_free(&a)
        raise MemoryError()
    try:
        if _add_v2_buffer(&a, data, tuple(codecs), validate, include_control, max_decompressed_size, start, stop,
                          held):
            return None
        return _chunk_of(&a, held)
    finally:
        _acc_free(&a)
