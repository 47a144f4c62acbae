# Arrow out: records of v2 batches gathered into Arrow-ready column buffers (to_arrow).


cdef int64_t _walk(const uint8_t *buf, Py_ssize_t length, bint include_control, Py_ssize_t *n_records) noexcept nogil:
    """Count the records of a buffer made only of complete, uncompressed v2 batches; -1 otherwise.

    Reads batch headers only; CRCs are checked batch by batch in the copy pass, while each batch is in cache.
    """
    cdef Py_ssize_t pos = 0
    cdef int32_t count
    cdef uint8_t attrs
    cdef int step
    cdef kc_entry_t e
    n_records[0] = 0
    while True:
        step = kc_walk_v2(buf, length, pos, &e)
        if step <= 0:  # a trailing partial batch too is for the general path to judge
            return 0 if step == 0 and pos == length else -1
        attrs = buf[pos + KC_BATCH_ATTRIBUTES + 1]
        if attrs & KC_BATCH_COMPRESSION_MASK:
            return -1
        count = <int32_t>kc_load_be32(buf + pos + KC_BATCH_RECORDS_COUNT)
        # A count the records region cannot hold is damage (reported by the general
        # path); it must not reach the column sizing, which trusts n_records.
        if count < 0 or count > (e.total - KC_BATCH_OVERHEAD) // KC_MIN_RECORD_SIZE:
            return -1
        if include_control or not (attrs & KC_BATCH_CONTROL):
            n_records[0] += count
        pos = e.next


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
    """Room for one column's values from one batch: at most batch_bytes of data and ``rows`` entries.

    The data gets 16 bytes more: kc_gather.h moves a short header key or value as 16 bytes.
    """
    if g[0].len + batch_bytes > 2147483647:
        return -2
    if _reserve(&g[0], batch_bytes + 16) < 0 or _reserve(&g[1], 4 * rows) < 0 or _reserve(&g[2], rows // 8 + 2, True) < 0:
        return -1
    return 0


# Growable buffers of a column accumulator: per binary column c (key, value,
# header key, header value) g[3c] data, g[3c + 1] int32 offsets, g[3c + 2]
# null map; then per record offsets, timestamps, timestamp types, and the
# headers list's int32 offsets and null map (records without headers).
# With views, g[0] and g[3] hold key and value as Arrow's 16-byte views (no
# offsets), and the values of legacy records, which have no region to
# reference, are copied into g[_G_SPILL] (variadic buffer 0); g[_G_VSTARTS]
# collects, during one pass over an uncompressed buffer, the int64 offsets
# where the variadic buffers it references start.
cdef enum:
    _G_OFFSET = 12
    _G_TS = 13
    _G_TYPE = 14
    _G_HLIST = 15
    _G_HNULL = 16
    _G_SPILL = 17
    _G_VSTARTS = 18
    _G_COUNT = 19


cdef struct _Acc:
    _Grow g[19]
    int64_t nulls[4]
    int64_t hnulls
    int64_t n
    int64_t nh
    bint headers
    bint views
    const uint8_t *vbase  # views: the variadic buffer the next region's long values are in
    int32_t vindex
    int32_t vcount  # views: variadic buffers so far, the spill buffer not counted
    int64_t vlimit  # views: the most bytes one variadic buffer of an uncompressed input spans


cdef int _acc_init(_Acc *a, bint headers, bint views=False) noexcept nogil:
    # Offset buffers (the four binary columns' and the headers list's) start with their leading 0.
    cdef int i, k
    memset(a, 0, sizeof(_Acc))
    a.headers = headers
    a.views = views
    a.vlimit = 2147483647
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


cdef struct _AccMark:
    # What an accumulator held before a pass that may be undone
    int64_t n
    int64_t nh
    int64_t data_len[4]
    int64_t nulls[4]
    int64_t hnulls


cdef void _acc_mark(_Acc *a, _AccMark *m) noexcept nogil:
    cdef int k
    m.n = a.n
    m.nh = a.nh
    m.hnulls = a.hnulls
    for k in range(4):
        m.data_len[k] = a.g[3 * k].len
        m.nulls[k] = a.nulls[k]


cdef inline void _clear_bits_from(_Grow *g, int64_t row) noexcept nogil:
    # Null maps are OR-ed into: bits of rows taken back must read 0 again.
    if g.p == NULL or (row >> 3) >= g.cap:
        return
    g.p[row >> 3] &= <uint8_t>((1 << (row & 7)) - 1)
    memset(g.p + (row >> 3) + 1, 0, <size_t>(g.cap - (row >> 3) - 1))


cdef void _acc_rewind(_Acc *a, _AccMark *m) noexcept nogil:
    """Take back everything added since ``m`` was marked."""
    cdef int k
    a.n = m.n
    a.nh = m.nh
    a.hnulls = m.hnulls
    for k in range(4):
        a.g[3 * k].len = m.data_len[k]
        a.nulls[k] = m.nulls[k]
        _clear_bits_from(&a.g[3 * k + 2], m.n if k < 2 else m.nh)
    _clear_bits_from(&a.g[_G_HNULL], m.n)
    _acc_set_lengths(a)


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


cdef class ColumnAccumulator:
    """Records of many batches gathered into Arrow-ready buffers, one records region at a time.

    For batches that need Python first (compressed ones: the codec returns
    the records region); ``add`` returns False when the region does not
    parse, and the caller then reports the error with Kafka's message.

    With ``views``, key and value are Arrow views: long values reference the
    regions given to ``add`` (and the buffers given to ``add_uncompressed``),
    which the accumulator holds, and its result hands on, instead of copying them.
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
                if self.a.vcount == 2147483646:
                    raise LimitExceededError("more than 2**31 buffers behind one Arrow column")
                # The region stays where it is: the views point into it, and the result holds it.
                self.sources.append(data)
                self.a.vcount += 1
                self.a.vbase = <const uint8_t *>view.buf
                self.a.vindex = self.a.vcount
            with nogil:
                err = _acc_add(&self.a, <const uint8_t *>view.buf, <const uint8_t *>view.buf + view.len, count,
                               base_offset, base_timestamp, max_timestamp, log_append_time, stream)
        finally:
            PyBuffer_Release(&view)
        _raise_acc_error(err)
        return err == 0

    def add_uncompressed(self, data, bint validate=True, bint include_control=False) -> bool:
        """Every record of a buffer of uncompressed v2 batches, in one native pass (see columns_uncompressed_v2).

        False, with nothing added, when the buffer holds anything else.
        """
        cdef Py_buffer view
        cdef int err
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            with nogil:
                err = _acc_add_uncompressed(&self.a, <const uint8_t *>view.buf, view.len, validate, include_control)
        finally:
            PyBuffer_Release(&view)
        _raise_acc_error(err)
        if err == 0:
            self.sources += _view_sources(&self.a, data, 0, view.len)
        return err == 0

    def add_v2(self, data, codecs, bint validate=True, bint include_control=False,
               int64_t max_decompressed_size=2147483647) -> bool:
        """Every record of a buffer of v2 batches of any codec, in one native pass (see columns_v2).

        False, with nothing added, when the buffer holds anything else.
        """
        return _add_v2_buffer(&self.a, data, tuple(codecs), validate, include_control, max_decompressed_size,
                              0, -1, self.sources) == 0

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
        return _raise_acc_error(err)

    @property
    def n(self) -> int:
        return self.a.n

    def result(self) -> RecordChunk:
        """The gathered columns (the accumulator is empty afterwards)."""
        out = _chunk_of(&self.a, self.sources)
        self.sources = []
        _acc_free(&self.a)
        if _acc_init(&self.a, self.a.headers, self.a.views) < 0:
            raise MemoryError()
        return out


def split_batches(data, Py_ssize_t parts, Py_ssize_t min_part, Py_ssize_t min_mean_batch=0):
    """Cut points ``[0, ..., len]`` that split a buffer into at most ``parts`` runs of whole batches.

    Each run but the last holds at least ``min_part`` bytes (and about an
    equal share).  The cuts come from the entry walk (kc_walk_step), which
    reads only sizes and magics; a buffer with a corrupt entry or a partial
    one (past its size field), or whose entries average fewer than
    ``min_mean_batch`` bytes, is returned whole, for the caller's single pass
    to judge.
    """
    cdef Py_buffer view
    cdef Py_ssize_t length, pos = 0, last = 0, share, count = 0
    cdef const uint8_t *buf
    cdef kc_entry_kind_t kind
    cdef kc_entry_t e
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        buf = <const uint8_t *>view.buf
        length = view.len
        cuts = [0]
        if parts < 2 or length < 2 * min_part:
            return [0, length]
        share = max(min_part, length // parts)
        while True:
            kind = kc_walk_step(buf, length, pos, &e)
            if kind == KC_ENTRY_END or (kind == KC_ENTRY_PARTIAL and e.need == KC_BATCH_LOG_OVERHEAD):
                break  # the last part keeps a tail too short for a size, for its pass to judge
            if kind != KC_ENTRY_BATCH and kind != KC_ENTRY_MESSAGE:
                return [0, length]
            pos = e.next
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


cdef int _acc_add_uncompressed(_Acc *a, const uint8_t *buf, Py_ssize_t length, bint validate,
                               bint include_control) noexcept nogil:
    """Every record of a buffer of only uncompressed v2 batches, in one pass.

    0; 1 when the buffer holds anything else (compressed or legacy batches,
    trailing bytes, damage), the accumulator then left as it was; -1 (no
    memory) or -2 (a 2 GiB column) as _acc_add.
    """
    cdef Py_ssize_t n = 0, pos = 0, size
    cdef int64_t rc
    cdef uint8_t attrs
    cdef kc_batch_header_t h
    cdef kc_entry_t e
    cdef int k, err = 0
    cdef bint presized = a.n > 0  # sizing from this buffer alone would misjudge what came before
    cdef _AccMark mark
    cdef Py_ssize_t source = 0  # views: where the current variadic buffer starts in buf
    _acc_mark(a, &mark)
    a.g[_G_VSTARTS].len = 0
    if a.views:
        a.vbase = buf
        a.vindex = a.vcount + 1
        if _vstart(a, 0) < 0:
            return -1
    rc = _walk(buf, length, include_control, &n)
    while rc >= 0 and pos < length and err == 0:
        if kc_walk_v2(buf, length, pos, &e) != 1:  # changed since _walk (a writer in another thread)
            err = 1
            break
        size = e.total
        kc_batch_read(buf + pos, &h)
        attrs = <uint8_t>h.attributes
        if validate and h.crc != kc_batch_checksum(buf + pos, size):
            err = 1
        elif validate and (attrs & KC_BATCH_CONTROL) and not kc_control_region_ok(
                buf + pos + KC_BATCH_OVERHEAD, buf + pos + size, h.records_count):
            err = 1  # Kafka's control record checks fail: reported by the general path
        elif include_control or not (attrs & KC_BATCH_CONTROL):
            if a.views and pos + size - source > a.vlimit:
                source = pos
                a.vbase = buf + pos
                a.vindex += 1
                if _vstart(a, pos) < 0:
                    err = -1
                    break
            err = _acc_add(a, buf + pos + KC_BATCH_OVERHEAD, buf + pos + size, h.records_count,
                           h.base_offset, h.base_timestamp, h.max_timestamp,
                           (attrs & KC_BATCH_TIMESTAMP_TYPE) != 0, False)
        pos += size
        if not presized and err == 0 and pos >= 65536:
            presized = True
            _acc_presize(a, n, pos, length, True)
    if rc < 0 or err == 1:
        _acc_rewind(a, &mark)
        a.g[_G_VSTARTS].len = 0
        return 1
    return err


cdef int _vstart(_Acc *a, int64_t pos) noexcept nogil:
    """Note that a variadic buffer starts at ``pos`` of the buffer being gathered (see _view_sources)."""
    if _reserve(&a.g[_G_VSTARTS], 8) < 0:
        return -1
    (<int64_t *>(a.g[_G_VSTARTS].p + a.g[_G_VSTARTS].len))[0] = pos
    a.g[_G_VSTARTS].len += 8
    return 0


cdef list _view_sources(_Acc *a, data, Py_ssize_t start, Py_ssize_t stop):
    """The variadic buffers the last uncompressed pass over ``data[start:stop]`` noted, as slices of it."""
    cdef int64_t k, count = a.g[_G_VSTARTS].len // 8
    cdef const int64_t *at = <const int64_t *>a.g[_G_VSTARTS].p
    if not a.views or count == 0:
        return []
    whole = memoryview(data)
    if whole.ndim != 1 or whole.itemsize != 1:
        whole = whole.cast("B")
    ends = [at[k] for k in range(1, count)] + [stop - start]
    a.vcount += <int32_t>count
    a.g[_G_VSTARTS].len = 0
    return [whole[start + at[k]:start + ends[k]] for k in range(count)]


cdef int _raise_acc_error(int err) except -1:
    if err == -1:
        raise MemoryError()
    if err == -2:
        raise LimitExceededError("more than 2 GiB in one Arrow column; convert fewer batches at a time")
    return 0


def columns_uncompressed_v2(data, bint validate=True, bint include_control=False, bint headers=True,
                            Py_ssize_t start=0, Py_ssize_t stop=-1, bint views=False,
                            int64_t view_buffer_limit=2147483647):
    """Every record of a buffer of uncompressed v2 batches, as a RecordChunk, in one native pass.

    ``start`` and ``stop`` (batch boundaries) restrict the pass to a part of
    the buffer, so that several threads can share one buffer.

    Each batch is CRC-checked (and a control batch's records checked as
    Kafka reads them) and then parsed while it is in cache, copying
    keys, values and headers straight into the column buffers.  Returns None
    when the buffer holds anything else (compressed or legacy batches,
    trailing bytes, damage): the general path then decodes it and reports
    errors with Kafka's messages.

    With ``views`` key and value are Arrow views, long values referencing
    ``data`` through slices of at most ``view_buffer_limit`` bytes (2 GiB:
    views hold 32-bit offsets), which the chunk holds.
    """
    cdef Py_buffer view
    cdef int err = 0
    cdef _Acc a
    if _acc_init(&a, headers, views) < 0:
        _acc_free(&a)
        raise MemoryError()
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if stop < 0:
            stop = view.len
        if not 0 <= start <= stop <= view.len:
            raise ValueError(f"part [{start}, {stop}) is outside the buffer of {view.len} bytes")
        with nogil:
            a.vlimit = view_buffer_limit
            err = _acc_add_uncompressed(&a, <const uint8_t *>view.buf + start, stop - start, validate,
                                        include_control)
        _raise_acc_error(err)
        return None if err else _chunk_of(&a, _view_sources(&a, data, start, stop))
    finally:
        PyBuffer_Release(&view)
        _acc_free(&a)
