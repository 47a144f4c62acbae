# Walking the entries of a buffer as Kafka's ByteBufferLogInputStream does:
# EntryWalker (positions only) and BatchReader (batch objects).
# Part of kcodec._native.records (included by records.pyx).

cdef int _entry_at(const uint8_t *buf, Py_ssize_t limit, Py_ssize_t pos, bint strict, kc_entry_t *e) except -1:
    """One step of Kafka's ``ByteBufferLogInputStream`` over ``buf[:limit]`` (kc_walk_step): 1 when a
    complete entry (``e.total`` bytes, ``e.magic``) starts at ``pos``, 0 where the walk ends.

    Fewer than 12 or 17 bytes left, or an entry running past the end, end it
    (``strict``: CorruptRecordError for those trailing bytes); a size below
    14 or a magic outside 0..2 raises CorruptRecordError.
    """
    cdef kc_entry_kind_t kind = kc_walk_step(buf, limit, pos, e)
    if kind == KC_ENTRY_BATCH or kind == KC_ENTRY_MESSAGE:
        return 1
    if kind == KC_ENTRY_BAD_SIZE:
        raise CorruptRecordError(
            f"Record size {e.size} is less than the minimum record overhead ({KC_ENTRY_MIN_SIZE})", position=e.pos)
    if kind == KC_ENTRY_BAD_MAGIC:
        raise CorruptRecordError(f"Invalid magic found in record: {e.magic}", position=e.pos)
    if strict and kind == KC_ENTRY_PARTIAL:
        raise CorruptRecordError(f"{e.remaining} trailing bytes do not form a complete batch", position=e.pos)
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
        cdef Py_ssize_t limit, pos = self.pos
        cdef kc_entry_t e
        if self.done:
            raise StopIteration
        PyObject_GetBuffer(self.src, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            limit = min(self.end, view.len) if self.bounded else view.len
            self.done = True  # until a complete entry is found (an error ends the walk too)
            if _entry_at(<const uint8_t *>view.buf, limit, pos, self.strict, &e):
                self.done = False
                self.pos = e.next
                return pos, e.total, <int64_t>kc_load_be64(<const uint8_t *>view.buf + pos + KC_ENTRY_OFFSET), e.magic
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
        cdef Py_ssize_t pos = self.pos
        cdef kc_entry_t e
        cdef RecordBatchBase batch
        if self.done:
            raise StopIteration
        PyObject_GetBuffer(self.src, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            self.done = True  # until a complete entry is found (an error ends the walk too)
            if not _entry_at(<const uint8_t *>view.buf, view.len, pos, self.strict, &e):
                raise StopIteration
            self.done = False
            self.pos = e.next
            if e.magic != KC_ENTRY_MAGIC_V2:
                return self.legacy(self.src, pos, e.total, self.max_size, self.pool, self.validate)
            p = <const uint8_t *>view.buf + pos
            # tp_new directly: no Python-level call of __new__ per batch
            batch = <RecordBatchBase>_tp_new(self.batch_cls, (), NULL)
            batch._fill(self.src, p, pos, e.total, self.max_size, self.pool)
            if self.validate:
                batch._ensure_valid_at(p)
            return batch
        finally:
            PyBuffer_Release(&view)
