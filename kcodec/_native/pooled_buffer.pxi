# PooledBuffer: memory lent by a BufferPool until release().
# Part of kcodec._native.records (included by records.pyx).

cdef class PooledBuffer:
    """Bytes borrowed from a :class:`~kcodec.records.BufferPool`, valid until :meth:`release`.

    It exports the buffer protocol (``bytes(pb)``, ``memoryview(pb)``).  After
    ``release()`` the memory goes back to the pool for reuse, and any access
    raises BufferReleasedError; releasing while a memoryview of it is still
    alive raises BufferError, so reused memory can never be seen through a
    stale view.
    """
    cdef object _store  # the bytearray owned by the pool
    cdef object _pool
    cdef Py_buffer _held  # an export of _store until release(): a bytearray cannot be resized under it
    cdef bint _holding
    cdef Py_ssize_t _len
    cdef int _exports
    cdef bint _released

    def __cinit__(self, store, Py_ssize_t length, pool):
        self._holding = False
        PyObject_GetBuffer(store, &self._held, PyBUF_SIMPLE)
        self._holding = True
        if length < 0 or length > self._held.len:
            raise ValueError(f"length {length} is outside the pooled buffer's {self._held.len} bytes")
        self._store = store
        self._len = length
        self._pool = pool
        self._exports = 0
        self._released = False

    def __dealloc__(self):
        if self._holding:
            PyBuffer_Release(&self._held)
            self._holding = False

    @property
    def released(self) -> bool:
        return self._released

    def __len__(self):
        self._check()
        return self._len

    cdef _check(self):
        if self._released:
            raise BufferReleasedError("this pooled buffer was released back to its pool")

    def release(self) -> None:
        if self._released:
            return
        if self._exports:
            raise BufferError(f"pooled buffer still has {self._exports} live memoryview(s); release them first")
        self._released = True
        PyBuffer_Release(&self._held)
        self._holding = False
        store = self._store
        self._store = None
        self._pool._give_back(store)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()

    def tobytes(self) -> bytes:
        self._check()
        return PyBytes_FromStringAndSize(<const char *>self._held.buf, self._len)

    def __getbuffer__(self, Py_buffer *view, int flags):
        if self._released:
            raise BufferReleasedError("this pooled buffer was released back to its pool")
        view.buf = self._held.buf
        view.obj = self
        view.len = self._len
        view.readonly = 1
        view.itemsize = 1
        view.format = "B"
        view.ndim = 1
        view.shape = &view.len
        view.strides = &view.itemsize
        view.suboffsets = NULL
        view.internal = NULL
        self._exports += 1

    def __releasebuffer__(self, Py_buffer *view):
        self._exports -= 1
