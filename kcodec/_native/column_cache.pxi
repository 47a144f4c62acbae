# Column memory: growable buffers that draw on the cache of blocks Arrow gave back, and
# the read-only buffer that hands a filled block to Arrow and returns it to the cache.


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


cdef struct _Grow:
    uint8_t *p
    int64_t len
    int64_t cap


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
