# BuilderBuffer: the buffer a v2 batch is written in (Kafka's ByteBufferOutputStream
# under MemoryRecordsBuilder): owned bytes or a pooled bytearray, grown, exported, handed over.
# Part of kcodec._native.records (included by records.pyx).

if kc_builder_cache_init() != 0:
    raise ImportError("could not register the builder cache's fork handlers")


def builder_cache(limit=None, min_block=None) -> tuple:
    """``(limit, held, min_block)`` of the cache of blocks the builder writes compressed batches in.

    Without a pool, a builder with a codec writes its records in a block of
    this cache when one is held (blocks of at least ``min_block`` bytes,
    1 MiB unless changed), and gives the block back once the codec has
    compressed them, up to ``limit`` bytes in all (64 MiB unless changed):
    the next batch then fills memory that is already mapped, at its full
    size.  Passing ``limit`` and/or ``min_block`` changes them (``limit=0``
    frees the cache and turns it off); the values in force before the call
    are returned.
    """
    cdef size_t old, held, old_min, now, now_min
    if limit is not None and limit < 0:
        raise ValueError("the cache limit must be >= 0")
    if min_block is not None and min_block < 1:
        raise ValueError("the smallest cached block must be >= 1 byte")
    kc_block_state(&kc_builder_cache, &old, &held, &old_min)
    if limit is not None or min_block is not None:
        kc_block_set_limit(&kc_builder_cache, old if limit is None else <size_t>limit,
                           old_min if min_block is None else <size_t>min_block)
    return old, held, old_min


cdef class BuilderBuffer:
    """The buffer under :class:`BatchBuilderCore`: room for the 61-byte header, then the records.

    A ``bytes`` object owned here (resized in place, and handed to the
    caller by ``build()`` without a copy), a bytearray lent by a
    BufferPool, or (a compressed batch without a pool: the records never
    leave the builder) a block of the builder cache.  The records written
    so far are exported through the buffer protocol: the input of the codec
    in ``build()``.
    """

    def __cinit__(self, *args, **kwargs):
        self._store = NULL
        self._buf = NULL
        self._cap = 0
        self._block = False
        self._use_block = False

    def __dealloc__(self):
        Py_XDECREF(self._store)
        self._store = NULL
        if self._block:
            kc_block_give(&kc_builder_cache, self._buf, <size_t>self._cap)
            self._block = False

    cdef int _new_block(self, Py_ssize_t cap) except -1:
        # Any held block big enough (a 1 MiB batch after a 1 MiB batch: no growth at all), else malloc.
        cdef size_t got = 0, min_block, limit, held
        cdef void *p
        kc_block_state(&kc_builder_cache, &limit, &held, &min_block)
        p = kc_block_take(&kc_builder_cache, max(<size_t>cap, min_block), 0, &got)
        if p == NULL:
            p = malloc(<size_t>cap)
            if p == NULL:
                raise MemoryError()
            got = <size_t>cap
        self._buf = <uint8_t *>p
        self._cap = <Py_ssize_t>got
        self._block = True
        return 0

    cdef int _grow_block(self, Py_ssize_t cap, bint keep) except -1:
        # A cached block of at least cap bytes if one is held, else realloc (which remaps large blocks).
        cdef size_t got = 0
        cdef void *p = kc_block_take(&kc_builder_cache, <size_t>cap, 0, &got)
        if p != NULL:
            if keep:
                memcpy(p, self._buf, KC_BATCH_OVERHEAD + self._size)
            kc_block_give(&kc_builder_cache, self._buf, <size_t>self._cap)
        else:
            p = realloc(self._buf, <size_t>cap)
            if p == NULL:
                raise MemoryError()
            got = <size_t>cap
        self._buf = <uint8_t *>p
        self._cap = <Py_ssize_t>got
        return 0

    cdef int _new_store(self, Py_ssize_t cap) except -1:
        cdef object store
        if self.pool is None and self._use_block:
            return self._new_block(cap)
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
        if self._block:
            kc_block_give(&kc_builder_cache, self._buf, <size_t>self._cap)
            self._block = False
            self._buf = NULL
            self._cap = 0
            return
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
        if self._store == NULL and not self._block:
            raise RecordBuilderError("this builder has already built its batch")
        if need <= self._cap:
            return 0
        if self._exports:
            raise BufferError("the records buffer is exported and cannot grow")
        if cap < need:
            cap = need
        if self._block:
            return self._grow_block(cap, keep)
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
            memcpy(PyByteArray_AS_STRING(store), self._buf, KC_BATCH_OVERHEAD + self._size)
        Py_DECREF(old)  # the store's own reference; `old` keeps it for the pool
        self._adopt(store)
        self.pool.put(old)
        return 0

    def __getbuffer__(self, Py_buffer *view, int flags):
        # The records written so far: the input of the codec in build().
        if self._built or (self._store == NULL and not self._block):
            raise BufferError("this builder has already built its batch")
        view.buf = self._buf + KC_BATCH_OVERHEAD
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

    cdef object _detached(self, Py_ssize_t size):
        # A buffer for the batch apart from the store (see build()): bytes, or a pooled bytearray.
        if self.pool is None:
            return PyBytes_FromStringAndSize(NULL, size)
        return self._pool_get(size)


cdef inline uint8_t *_data_of(obj):
    # The memory of a bytes or bytearray made by BuilderBuffer._detached().
    if type(obj) is bytes:
        return <uint8_t *>PyBytes_AS_STRING(obj)
    return <uint8_t *>PyByteArray_AS_STRING(obj)
