# BuilderBuffer: the buffer a v2 batch is written in (Kafka's ByteBufferOutputStream
# under MemoryRecordsBuilder): owned bytes or a pooled bytearray, grown, exported, handed over.
# Part of kcodec._native.records (included by records.pyx).

cdef class BuilderBuffer:
    """The buffer under :class:`BatchBuilderCore`: room for the 61-byte header, then the records.

    A ``bytes`` object owned here (resized in place, and handed to the
    caller by ``build()`` without a copy), or a bytearray lent by a
    BufferPool.  The records written so far are exported through the buffer
    protocol: the input of the codec in ``build()``.
    """

    def __cinit__(self, *args, **kwargs):
        self._store = NULL
        self._buf = NULL
        self._cap = 0

    def __dealloc__(self):
        Py_XDECREF(self._store)
        self._store = NULL

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
