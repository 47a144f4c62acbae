# gzip through zlib: Java's GZIPOutputStream framing written and any gzip
# members read, as the gzip codec's kcodec/codec.h capsule.
# Part of kcodec._native.codecs (included by codecs.pyx).

cdef const uint8_t *_JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
cdef enum:
    _GZ_FHCRC = 0x02
    _GZ_FEXTRA = 0x04
    _GZ_FNAME = 0x08
    _GZ_FCOMMENT = 0x10
    _ZLIB_CHUNK = 1 << 30   # zlib counts in unsigned int


cdef int64_t _gzip_n_bound(void *state, int64_t n, int level, int magic) noexcept nogil:
    # deflateBound's general bound for raw deflate, the JDK header and the trailer
    return KCODEC_CODEC_ERROR if n < 0 else n + ((n + 7) >> 3) + ((n + 63) >> 6) + 5 + 10 + 8 + 16


# -- streams kept for reuse ----------------------------------------------------
# deflateInit2 allocates about 270 KB (window, hash chains, pending buffer) and
# deflateEnd frees it.  Made and ended for each batch, that costs little while
# the allocator keeps the freed blocks for the next one, and about 50 us a batch
# of page faults where it hands them back to the system (glibc does once the
# free space at the top of its heap passes its trim threshold).  Streams are
# kept instead, per level (a stream's level is fixed when it is made), in lists
# threads take from and give back, reset before each use: a reset stream
# writes what a new one with its parameters writes.  A stream is made only
# when its list is empty, so a list never holds more streams than were in use
# at once.  The reset still clears the 64 KB hash table, which with the block's
# Huffman codes is most of what a batch of a few records costs.

cdef struct _GzipStream:
    z_stream zs
    _GzipStream *next   # in a _GzipNative's list


cdef struct _GzipNative:
    kcodec_codec_v1 api
    PyThread_type_lock lock     # guards deflaters and inflaters
    _GzipStream *deflaters[10]  # idle deflate streams by level 1..9 ([0] unused)
    _GzipStream *inflaters      # idle inflate streams


cdef _GzipStream *_gzip_pop(_GzipNative *st, _GzipStream **head) noexcept nogil:
    cdef _GzipStream *s
    PyThread_acquire_lock(st.lock, WAIT_LOCK)
    s = head[0]
    if s != NULL:
        head[0] = s.next
    PyThread_release_lock(st.lock)
    return s


cdef void _gzip_push(_GzipNative *st, _GzipStream **head, _GzipStream *s) noexcept nogil:
    PyThread_acquire_lock(st.lock, WAIT_LOCK)
    s.next = head[0]
    head[0] = s
    PyThread_release_lock(st.lock)


cdef _GzipStream *_gzip_take_deflater(_GzipNative *st, int level) noexcept nogil:
    # An idle stream of this level, reset, or a new one; NULL when zlib cannot make one.
    cdef _GzipStream *s = _gzip_pop(st, &st.deflaters[level])
    if s != NULL:
        if deflateReset(&s.zs) == Z_OK:
            return s
        deflateEnd(&s.zs)
        free(s)
    s = <_GzipStream *>calloc(1, sizeof(_GzipStream))
    if s == NULL:
        return NULL
    # raw deflate (the framing is written here) with java.util.zip.Deflater's memLevel 8
    if deflateInit2(&s.zs, level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK:
        free(s)
        return NULL
    return s


cdef _GzipStream *_gzip_take_inflater(_GzipNative *st) noexcept nogil:
    cdef _GzipStream *s = _gzip_pop(st, &st.inflaters)
    if s != NULL:
        if inflateReset(&s.zs) == Z_OK:
            return s
        inflateEnd(&s.zs)
        free(s)
    s = <_GzipStream *>calloc(1, sizeof(_GzipStream))
    if s == NULL:
        return NULL
    if inflateInit2(&s.zs, -15) != Z_OK:
        free(s)
        return NULL
    return s


cdef int64_t _gzip_n_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int level,
                              int magic, char *err, size_t err_cap) noexcept nogil:
    cdef _GzipNative *st = <_GzipNative *>state
    cdef _GzipStream *s
    cdef z_stream *zs
    cdef int rc
    cdef int64_t pos
    if level != -1 and (level < 1 or level > 9):
        return KCODEC_CODEC_BAD_LEVEL
    if cap < _gzip_n_bound(state, n, level, magic) or n >= _ZLIB_CHUNK:
        return KCODEC_CODEC_DST_TOO_SMALL if n < _ZLIB_CHUNK else KCODEC_CODEC_ERROR
    if level == -1:
        level = 6
    s = _gzip_take_deflater(st, level)
    if s == NULL:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot initialise zlib", NULL, -1)
    zs = &s.zs
    memcpy(dst, _JAVA_GZIP_HEADER, 10)
    zs.next_in = <uint8_t *>src   # zlib reads it only (z_const without ZLIB_CONST)
    zs.avail_in = <unsigned int>n
    zs.next_out = dst + 10
    zs.avail_out = <unsigned int>min(cap - 18, <int64_t>_ZLIB_CHUNK)
    # the input, then the end, as two calls like zlib.compressobj's compress() and flush()
    rc = deflate(zs, Z_NO_FLUSH)
    if rc == Z_OK or rc == Z_BUF_ERROR:
        rc = deflate(zs, Z_FINISH)
    pos = 10 + <int64_t>zs.total_out
    # the stream must not keep pointers into the caller's buffers while it waits
    zs.next_in = NULL
    zs.next_out = NULL
    _gzip_push(st, &st.deflaters[level], s)
    if rc != Z_STREAM_END:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: deflate did not finish", NULL, -1)
    kc_store_le32(dst + pos, kc_crc32(0, src, <size_t>n))
    kc_store_le32(dst + pos + 4, <uint32_t>n)   # ISIZE: the size modulo 2**32
    return pos + 8


cdef inline int64_t _gzip_skip_zero_terminated(const uint8_t *p, int64_t n, int64_t pos) noexcept nogil:
    # Past the NUL that ends a header string (FNAME, FCOMMENT), or -1.
    while pos < n and p[pos] != 0:
        pos += 1
    return pos + 1 if pos < n else -1


cdef int64_t _gzip_header_end(const uint8_t *p, int64_t n, int64_t pos) noexcept nogil:
    # Position after the member header at pos (GZIPInputStream.readHeader), or -1.
    cdef int64_t start = pos
    cdef uint8_t flags
    if n - pos < 10 or p[pos] != 0x1F or p[pos + 1] != 0x8B or p[pos + 2] != 8:
        return -1
    flags = p[pos + 3]
    pos += 10
    if flags & _GZ_FEXTRA:
        if n - pos < 2:
            return -1
        pos += 2 + (p[pos] | (p[pos + 1] << 8))
        if pos > n:
            return -1
    if flags & _GZ_FNAME:
        pos = _gzip_skip_zero_terminated(p, n, pos)
    if flags & _GZ_FCOMMENT and pos >= 0:
        pos = _gzip_skip_zero_terminated(p, n, pos)
    if pos < 0:
        return -1
    if flags & _GZ_FHCRC:
        if n - pos < 2 or <uint32_t>(p[pos] | (p[pos + 1] << 8)) != (kc_crc32(0, p + start, <size_t>(pos - start)) & 0xFFFF):
            return -1
        pos += 2
    return pos


cdef int64_t _gzip_member(z_stream *zs, const uint8_t *src, int64_t n, int64_t *pos, uint8_t *dst, int64_t cap,
                          int64_t out) noexcept nogil:
    # Inflate one member's deflate data from src[pos] into dst[out:cap]: the new out, or a negative code.
    cdef int rc
    cdef unsigned int took_in, took_out
    while True:
        zs.next_in = <uint8_t *>src + pos[0]
        zs.avail_in = <unsigned int>min(n - pos[0], <int64_t>_ZLIB_CHUNK)
        zs.next_out = dst + out
        zs.avail_out = <unsigned int>min(cap - out, <int64_t>_ZLIB_CHUNK)
        took_in = zs.avail_in
        took_out = zs.avail_out
        rc = inflate(zs, Z_NO_FLUSH)
        pos[0] += took_in - zs.avail_in
        out += took_out - zs.avail_out
        if rc == Z_STREAM_END:
            return out
        if rc != Z_OK and rc != Z_BUF_ERROR:
            return KCODEC_CODEC_CORRUPT
        if out == cap:
            return KCODEC_CODEC_DST_TOO_SMALL
        if pos[0] == n:
            return KCODEC_CODEC_CORRUPT   # Unexpected end of ZLIB input stream


cdef int64_t _gzip_n_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int magic,
                                char *err, size_t err_cap) noexcept nogil:
    cdef _GzipNative *st = <_GzipNative *>state
    cdef _GzipStream *s
    cdef int64_t pos, start, out = 0, got = 0, next_pos
    cdef const char *message = NULL
    pos = _gzip_header_end(src, n, 0)
    if pos < 0:
        return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: Not in GZIP format", NULL, -1)
    s = _gzip_take_inflater(st)
    if s == NULL:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot initialise zlib", NULL, -1)
    while True:
        start = out
        got = _gzip_member(&s.zs, src, n, &pos, dst, cap, out)
        if got < 0:
            if got == KCODEC_CODEC_CORRUPT:
                message = "gzip: invalid deflate data"
            break
        out = got
        if n - pos < 8 or kc_load_le32(src + pos) != kc_crc32(0, dst + start, <size_t>(out - start)) \
                or kc_load_le32(src + pos + 4) != <uint32_t>(out - start):
            got = KCODEC_CODEC_CORRUPT
            message = "gzip: Corrupt GZIP trailer"
            break
        pos += 8
        # the JDK reads a following member as more of the stream, and ignores anything else
        next_pos = _gzip_header_end(src, n, pos) if pos < n else -1
        if next_pos < 0:
            break
        pos = next_pos
        inflateReset(&s.zs)
    # a stream stopped in error is reset when next taken, like any other
    s.zs.next_in = NULL
    s.zs.next_out = NULL
    _gzip_push(st, &st.inflaters, s)
    if got < 0:
        return _fail(got, err, err_cap, message, NULL, pos) if message != NULL else got
    return out


cdef int64_t _gzip_n_size(void *state, const uint8_t *src, int64_t n, int magic) noexcept nogil:
    # A first guess for the output: the last member's ISIZE, which is the whole size of the
    # one member Java writes.  Capped at deflate's largest expansion (about 1032:1), so that
    # a forged trailer cannot make a small batch ask for gigabytes; when it is wrong (several
    # members, sizes of 4 GiB or more) the output grows as it does without a guess.
    if n < 18 or _gzip_header_end(src, n, 0) < 0:
        return -1
    return min(<int64_t>kc_load_le32(src + n - 4), n * 1032)


cdef void _gzip_free_list(_GzipStream *s, bint deflating) noexcept nogil:
    cdef _GzipStream *next
    while s != NULL:
        next = s.next
        if deflating:
            deflateEnd(&s.zs)
        else:
            inflateEnd(&s.zs)
        free(s)
        s = next


cdef void _free_gzip(object capsule) noexcept:
    cdef _GzipNative *st = <_GzipNative *>PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME)
    cdef int level
    for level in range(1, 10):
        _gzip_free_list(st.deflaters[level], True)
    _gzip_free_list(st.inflaters, False)
    if st.lock != NULL:
        PyThread_free_lock(st.lock)
    free(st)


def gzip_native_codec():
    """The gzip codec's kcodec/codec.h capsule over zlib.

    Deflate streams (one list per level) and inflate streams are kept in
    lists that threads take from and give back: thread-safe.
    """
    cdef _GzipNative *st = <_GzipNative *>calloc(1, sizeof(_GzipNative))
    if st == NULL:
        raise MemoryError()
    st.lock = PyThread_allocate_lock()
    if st.lock == NULL:
        free(st)
        raise MemoryError()
    st.api.compress_bound = _gzip_n_bound
    st.api.compress = _gzip_n_compress
    st.api.decompressed_size = _gzip_n_size
    st.api.decompress = _gzip_n_decompress
    return _capsule(&st.api, st, KCODEC_CODEC_THREAD_SAFE, _free_gzip)
