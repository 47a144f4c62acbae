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


cdef int64_t _gzip_n_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int level,
                              int magic, char *err, size_t err_cap) noexcept nogil:
    cdef z_stream zs
    cdef int rc
    cdef int64_t pos
    if level != -1 and (level < 1 or level > 9):
        return KCODEC_CODEC_BAD_LEVEL
    if cap < _gzip_n_bound(state, n, level, magic) or n >= _ZLIB_CHUNK:
        return KCODEC_CODEC_DST_TOO_SMALL if n < _ZLIB_CHUNK else KCODEC_CODEC_ERROR
    memset(&zs, 0, sizeof(zs))
    # raw deflate (the framing is written here) with java.util.zip.Deflater's memLevel 8
    if deflateInit2(&zs, 6 if level == -1 else level, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY) != Z_OK:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot initialise zlib", NULL, -1)
    memcpy(dst, _JAVA_GZIP_HEADER, 10)
    zs.next_in = <uint8_t *>src   # zlib reads it only (z_const without ZLIB_CONST)
    zs.avail_in = <unsigned int>n
    zs.next_out = dst + 10
    zs.avail_out = <unsigned int>min(cap - 18, <int64_t>_ZLIB_CHUNK)
    # the input, then the end, as two calls like zlib.compressobj's compress() and flush()
    rc = deflate(&zs, Z_NO_FLUSH)
    if rc == Z_OK or rc == Z_BUF_ERROR:
        rc = deflate(&zs, Z_FINISH)
    pos = 10 + <int64_t>zs.total_out
    deflateEnd(&zs)
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
    cdef z_stream zs
    cdef int64_t pos, start, out = 0, got, next_pos
    pos = _gzip_header_end(src, n, 0)
    if pos < 0:
        return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: Not in GZIP format", NULL, -1)
    memset(&zs, 0, sizeof(zs))
    if inflateInit2(&zs, -15) != Z_OK:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot initialise zlib", NULL, -1)
    while True:
        start = out
        got = _gzip_member(&zs, src, n, &pos, dst, cap, out)
        if got < 0:
            inflateEnd(&zs)
            if got == KCODEC_CODEC_CORRUPT:
                return _fail(got, err, err_cap, "gzip: invalid deflate data", NULL, pos)
            return got
        out = got
        if n - pos < 8 or kc_load_le32(src + pos) != kc_crc32(0, dst + start, <size_t>(out - start)) \
                or kc_load_le32(src + pos + 4) != <uint32_t>(out - start):
            inflateEnd(&zs)
            return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: Corrupt GZIP trailer", NULL, pos)
        pos += 8
        # the JDK reads a following member as more of the stream, and ignores anything else
        next_pos = _gzip_header_end(src, n, pos) if pos < n else -1
        if next_pos < 0:
            break
        pos = next_pos
        inflateReset(&zs)
    inflateEnd(&zs)
    return out


cdef int64_t _gzip_n_size(void *state, const uint8_t *src, int64_t n, int magic) noexcept nogil:
    # A first guess for the output: the last member's ISIZE, which is the whole size of the
    # one member Java writes.  Capped at deflate's largest expansion (about 1032:1), so that
    # a forged trailer cannot make a small batch ask for gigabytes; when it is wrong (several
    # members, sizes of 4 GiB or more) the output grows as it does without a guess.
    if n < 18 or _gzip_header_end(src, n, 0) < 0:
        return -1
    return min(<int64_t>kc_load_le32(src + n - 4), n * 1032)


def gzip_native_codec():
    """The gzip codec's kcodec/codec.h capsule over zlib (thread-safe: a z_stream per call)."""
    cdef kcodec_codec_v1 *api = <kcodec_codec_v1 *>calloc(1, sizeof(kcodec_codec_v1))
    if api == NULL:
        raise MemoryError()
    api.compress_bound = _gzip_n_bound
    api.compress = _gzip_n_compress
    api.decompressed_size = _gzip_n_size
    api.decompress = _gzip_n_decompress
    return _capsule(api, NULL, KCODEC_CODEC_THREAD_SAFE, _free_native)
