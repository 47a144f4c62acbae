# Column memory: growable buffers that draw on the cache of blocks Arrow gave back.


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
