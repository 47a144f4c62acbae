# LZ4: Kafka's frame (Lz4BlockOutputStream / Lz4BlockInputStream), scanned, written and read through liblz4's
# entry points, and the lz4 codec's kcodec/codec.h capsule.
# Part of kcodec._native.codecs (included by codecs.pyx).

# -- the frame scanner ---------------------------------------------------------

cdef enum:
    LZ4_OK = 0
    LZ4_PREMATURE = 1
    LZ4_BAD_MAGIC = 2
    LZ4_RESERVED = 3
    LZ4_DEPENDENT = 4
    LZ4_VERSION = 5
    LZ4_RESERVED2 = 6
    LZ4_BLOCK_SIZE_ID = 7
    LZ4_RESERVED3 = 8
    LZ4_HC = 9
    LZ4_BLOCK_TOO_BIG = 10
    LZ4_BLOCK_CHECKSUM = 11
    LZ4_NOMEM = 12
    LZ4_CONTENT_CHECKSUM_MISSING = 13


cdef struct _Lz4Scan:
    int err
    Py_ssize_t pos
    uint32_t a
    uint32_t b
    int64_t max_block
    int64_t end


cdef void _lz4_scan(const uint8_t *p, Py_ssize_t n, bint check_hc, _Lz4Scan *r, _Blocks *blocks) noexcept nogil:
    cdef Py_ssize_t pos, desc_start
    cdef uint8_t flg, bd, hc
    cdef uint32_t size, stored
    cdef bint raw, block_checksum, content_checksum
    cdef int bsid
    r.err = LZ4_OK
    r.pos = 0
    r.a = 0
    r.b = 0
    r.max_block = 0
    r.end = 0
    if n < 6:
        r.err = LZ4_PREMATURE
        r.pos = n
        return
    if kc_load_le32(p) != 0x184D2204u:
        r.err = LZ4_BAD_MAGIC
        r.pos = 0
        return
    flg = p[4]
    bd = p[5]
    r.pos = 4
    if flg & 0x03:
        r.err = LZ4_RESERVED
        return
    if not (flg & 0x20):
        r.err = LZ4_DEPENDENT
        return
    if (flg >> 6) != 1:
        r.err = LZ4_VERSION
        r.a = flg >> 6
        return
    r.pos = 5
    if bd & 0x0F:
        r.err = LZ4_RESERVED2
        return
    bsid = (bd >> 4) & 0x07
    if bsid < 4:
        r.err = LZ4_BLOCK_SIZE_ID
        return
    if bd & 0x80:
        r.err = LZ4_RESERVED3
        return
    r.max_block = (<int64_t>1) << (2 * bsid + 8)
    block_checksum = (flg & 0x10) != 0
    content_checksum = (flg & 0x04) != 0
    desc_start = 4
    pos = 6
    if flg & 0x08:
        # The content size is skipped unread, as Kafka does.
        if n - pos < 8:
            r.err = LZ4_PREMATURE
            r.pos = n
            return
        pos += 8
    if pos >= n:
        r.err = LZ4_PREMATURE
        r.pos = n
        return
    hc = p[pos]
    if check_hc and hc != ((kc_xxh32(p + desc_start, <size_t>(pos - desc_start), 0) >> 8) & 0xFF):
        r.err = LZ4_HC
        r.pos = pos
        r.a = hc
        return
    pos += 1
    while True:
        if n - pos < 4:
            r.err = LZ4_PREMATURE
            r.pos = n
            return
        stored = kc_load_le32(p + pos)
        raw = (stored & 0x80000000u) != 0
        size = stored & 0x7FFFFFFFu
        if size == 0:
            pos += 4
            if content_checksum:
                # Read but, as in Kafka, never verified.
                if n - pos < 4:
                    r.err = LZ4_CONTENT_CHECKSUM_MISSING
                    r.pos = n
                    return
                pos += 4
            r.end = pos
            return
        if size > r.max_block:
            r.err = LZ4_BLOCK_TOO_BIG
            r.pos = pos
            r.a = size
            return
        pos += 4
        if n - pos < <Py_ssize_t>size + (4 if block_checksum else 0):
            r.err = LZ4_PREMATURE
            r.pos = n
            return
        if block_checksum and kc_xxh32(p + pos, size, 0) != kc_load_le32(p + pos + size):
            r.err = LZ4_BLOCK_CHECKSUM
            r.pos = pos + size
            return
        if _push(blocks, pos, size, 1 if raw else 0) < 0:
            r.err = LZ4_NOMEM
            return
        pos += size + (4 if block_checksum else 0)


def lz4_scan(data, bint check_hc=True) -> tuple:
    """Walk a Kafka LZ4 frame: ``(max_block_size, [(offset, size, stored_raw)], end)``.

    ``end`` is where the frame (end mark and optional content checksum) ends;
    Kafka ignores whatever follows.  ``check_hc=False`` skips the descriptor
    checksum, as Kafka does for magic 0 whose writers hashed the wrong bytes.
    """
    cdef Py_buffer view
    cdef _Lz4Scan r
    cdef _Blocks blocks
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _get(data, &view)
    try:
        with nogil:
            _lz4_scan(<const uint8_t *>view.buf, view.len, check_hc, &r, &blocks)
        if r.err == LZ4_OK:
            return r.max_block, _to_list(&blocks), r.end
    finally:
        PyBuffer_Release(&view)
        free(blocks.v)
    if r.err == LZ4_NOMEM:
        raise MemoryError()
    msg = {
        LZ4_PREMATURE: "Stream ended prematurely",
        LZ4_BAD_MAGIC: "Stream unsupported (invalid magic bytes)",
        LZ4_RESERVED: "Reserved bits must be 0",
        LZ4_DEPENDENT: "Dependent block stream is unsupported",
        LZ4_VERSION: f"Version {r.a} is unsupported",
        LZ4_RESERVED2: "Reserved2 field must be 0",
        LZ4_BLOCK_SIZE_ID: "Block size value must be between 4 and 7",
        LZ4_RESERVED3: "Reserved3 field must be 0",
        LZ4_HC: "Stream frame descriptor corrupted",
        LZ4_BLOCK_TOO_BIG: f"Block size {r.a} exceeded max: {r.max_block}",
        LZ4_BLOCK_CHECKSUM: "Block checksum mismatch",
        LZ4_CONTENT_CHECKSUM_MISSING: "Stream ended prematurely (content checksum missing)",
    }[r.err]
    raise _corrupt("lz4", msg, r.pos)


# --------------------------------------------------------------------------
# LZ4 frames natively, through liblz4 entry points handed in as addresses
# (the ones python-lz4's extension carries; see kcodec.compression.lz4).
# One call per frame instead of one per 64 KiB block, and the blocks are
# written straight into the result instead of joined afterwards.

ctypedef int (*_lz4_decompress_fn)(const char *src, char *dst, int compressed_size, int capacity) noexcept nogil
ctypedef int (*_lz4_compress_fn)(const char *src, char *dst, int size, int capacity) noexcept nogil
ctypedef int (*_lz4_compress_hc_fn)(const char *src, char *dst, int size, int capacity, int level) noexcept nogil


cdef inline int64_t _lz4_frame_bound(int64_t n, int64_t header_len, int64_t block_size) noexcept nogil:
    # LZ4_compressBound per block, plus its size word, plus header and end mark
    cdef int64_t nblocks = (n + block_size - 1) // block_size
    return header_len + nblocks * (4 + block_size + block_size // 255 + 16) + 4


cdef int64_t _lz4_frame_write(const uint8_t *src, int64_t n, uint8_t *o, int64_t cap, const uint8_t *header,
                              int64_t header_len, int level, _lz4_compress_fn fast, _lz4_compress_hc_fn hc,
                              int64_t block_size) noexcept nogil:
    """Kafka's LZ4 frame of src into o (cap at least _lz4_frame_bound): the bytes written."""
    cdef int64_t pos = header_len, start = 0, chunk
    cdef int written
    memcpy(o, header, header_len)
    while start < n:
        chunk = min(block_size, n - start)
        if level == 0:
            written = fast(<const char *>src + start, <char *>o + pos + 4, <int>chunk, <int>(cap - pos - 4))
        else:
            written = hc(<const char *>src + start, <char *>o + pos + 4, <int>chunk, <int>(cap - pos - 4), level)
        if written <= 0 or written >= chunk:
            kc_store_le32(o + pos, <uint32_t>chunk | 0x80000000u)
            memcpy(o + pos + 4, src + start, chunk)
            pos += 4 + chunk
        else:
            kc_store_le32(o + pos, <uint32_t>written)
            pos += 4 + written
        start += chunk
    kc_store_le32(o + pos, 0)
    return pos + 4


def lz4_frame_compress(data, header, int level, size_t compress_addr, size_t compress_hc_addr,
                       Py_ssize_t block_size=65536, Py_ssize_t headroom=0) -> bytes:
    """Kafka's LZ4 frame of ``data``: ``header``, one block per ``block_size`` bytes, the end mark.

    ``level`` 0 selects ``LZ4_compress_default`` (Kafka's fast compressor),
    otherwise ``LZ4_compress_HC`` at that level; a block that does not
    shrink is stored raw with bit 31 of its size set.  ``headroom`` bytes
    (uninitialised) come first in the result, for a caller that writes its
    own header there.
    """
    cdef Py_buffer view, hview
    cdef Py_ssize_t bound, pos
    cdef PyObject *out
    cdef uint8_t *o
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    PyObject_GetBuffer(header, &hview, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        bound = _lz4_frame_bound(view.len, hview.len, block_size)
        out = _raw_bytes(NULL, headroom + bound)
        o = <uint8_t *>_raw_bytes_data(out) + headroom
        with nogil:
            pos = _lz4_frame_write(<const uint8_t *>view.buf, view.len, o, bound, <const uint8_t *>hview.buf,
                                   hview.len, level, <_lz4_compress_fn>compress_addr,
                                   <_lz4_compress_hc_fn>compress_hc_addr, block_size)
        return _bytes_of(out, headroom + pos)
    finally:
        PyBuffer_Release(&hview)
        PyBuffer_Release(&view)


cdef int64_t _lz4_blocks_bound(_Blocks *blocks, int64_t max_block) noexcept nogil:
    # The most the blocks can hold: raw blocks their size, others the frame's block maximum.
    cdef int64_t bound = 0
    cdef Py_ssize_t i
    for i in range(blocks.n):
        bound += blocks.v[3 * i + 1] if blocks.v[3 * i + 2] else max_block
    return bound


cdef int64_t _lz4_blocks_read(const uint8_t *src, _Blocks *blocks, int64_t max_block, uint8_t *o, int64_t cap,
                              _lz4_decompress_fn dec, int64_t *err_pos) noexcept nogil:
    """The blocks of a scanned frame into o[0:cap]: the bytes written, or
    KCODEC_CODEC_CORRUPT / KCODEC_CODEC_DST_TOO_SMALL with the block's offset in err_pos."""
    cdef Py_ssize_t i
    cdef int64_t pos = 0, off, size
    cdef int got
    cdef char *probe
    for i in range(blocks.n):
        off = blocks.v[3 * i]
        size = blocks.v[3 * i + 1]
        err_pos[0] = off
        if blocks.v[3 * i + 2]:
            if size > cap - pos:
                return KCODEC_CODEC_DST_TOO_SMALL
            memcpy(o + pos, src + off, size)
            pos += size
            continue
        got = dec(<const char *>src + off, <char *>o + pos, <int>size, <int>min(max_block, cap - pos))
        if got < 0:
            if cap - pos < max_block:
                # Corrupt, or valid but too large for the room left: decode the block (at most 4 MiB) to tell.
                probe = <char *>malloc(max_block)
                if probe == NULL:
                    return KCODEC_CODEC_ERROR
                got = dec(<const char *>src + off, probe, <int>size, <int>max_block)
                free(probe)
                if got >= 0:
                    return KCODEC_CODEC_DST_TOO_SMALL
            return KCODEC_CODEC_CORRUPT
        pos += got
    return pos


def lz4_frame_decompress(data, bint check_hc, int64_t max_size, size_t decompress_addr) -> bytes:
    """The content of a Kafka LZ4 frame, decoded in one native pass; errors as the Python path gives them.

    The result is allocated once, at the most the blocks can hold and never
    more than ``max_size`` bytes, then shrunk to what was written.
    """
    cdef Py_buffer view
    cdef _Lz4Scan r
    cdef _Blocks blocks
    cdef int64_t cap, got = 0, err_pos = 0
    cdef uint8_t *o
    cdef PyObject *done
    cdef PyObject *out = NULL
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        with nogil:
            _lz4_scan(<const uint8_t *>view.buf, view.len, check_hc, &r, &blocks)
        if r.err != LZ4_OK:
            # the Python entry point words every scan error
            free(blocks.v)
            blocks.v = NULL
            blocks.n = 0
            lz4_scan(data, check_hc)
            raise CorruptCompressedDataError("lz4: malformed frame", position=r.pos)
        cap = min(_lz4_blocks_bound(&blocks, r.max_block), max_size)
        out = _raw_bytes(NULL, cap)
        o = <uint8_t *>_raw_bytes_data(out)
        with nogil:
            got = _lz4_blocks_read(<const uint8_t *>view.buf, &blocks, r.max_block, o, cap,
                                   <_lz4_decompress_fn>decompress_addr, &err_pos)
        if got == KCODEC_CODEC_CORRUPT:
            raise CorruptCompressedDataError("lz4: corrupt block (LZ4 decompression failed)", position=err_pos)
        if got == KCODEC_CODEC_DST_TOO_SMALL:
            raise LimitExceededError(f"lz4: decompressed data exceeds the limit of {max_size} bytes",
                                     position=err_pos)
        if got < 0:
            raise MemoryError()
        done = out
        out = NULL  # handed to _bytes_of: the finally clause must not free it
        return _bytes_of(done, got)
    finally:
        if out != NULL:
            Py_DECREF(<object>out)
        PyBuffer_Release(&view)
        free(blocks.v)


# -- the lz4 capsule ----------------------------------------------------------

cdef struct _Lz4Native:
    kcodec_codec_v1 api   # first: the capsule's pointer is the whole struct
    _lz4_compress_fn fast
    _lz4_compress_hc_fn hc
    _lz4_decompress_fn dec
    uint8_t header[7]
    uint8_t header_v0[7]


cdef enum:
    _LZ4_BLOCK = 65536
    _LZ4_FAST_LEVEL = 9
    _LZ4_HC_MAX = 12


cdef int64_t _lz4_n_bound(void *state, int64_t n, int level, int magic) noexcept nogil:
    return KCODEC_CODEC_ERROR if n < 0 else _lz4_frame_bound(n, 7, _LZ4_BLOCK)


cdef int64_t _lz4_n_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int level,
                             int magic, char *err, size_t err_cap) noexcept nogil:
    cdef _Lz4Native *st = <_Lz4Native *>state
    cdef const uint8_t *header = &st.header_v0[0] if magic == 0 else &st.header[0]
    if level < 1 or level > 17:
        return KCODEC_CODEC_BAD_LEVEL
    if cap < _lz4_frame_bound(n, 7, _LZ4_BLOCK):
        return KCODEC_CODEC_DST_TOO_SMALL
    return _lz4_frame_write(src, n, dst, cap, header, 7,
                            0 if level == _LZ4_FAST_LEVEL else min(level, _LZ4_HC_MAX), st.fast, st.hc, _LZ4_BLOCK)


cdef int64_t _lz4_n_size(void *state, const uint8_t *src, int64_t n, int magic) noexcept nogil:
    cdef _Lz4Scan r
    cdef _Blocks blocks
    cdef int64_t bound = -1
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _lz4_scan(src, n, magic != 0, &r, &blocks)
    if r.err == LZ4_OK:
        bound = _lz4_blocks_bound(&blocks, r.max_block)
    free(blocks.v)
    return bound


cdef int64_t _lz4_n_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int magic,
                               char *err, size_t err_cap) noexcept nogil:
    cdef _Lz4Native *st = <_Lz4Native *>state
    cdef _Lz4Scan r
    cdef _Blocks blocks
    cdef int64_t got, err_pos = 0
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _lz4_scan(src, n, magic != 0, &r, &blocks)
    if r.err != LZ4_OK:
        free(blocks.v)
        return _fail(KCODEC_CODEC_ERROR if r.err == LZ4_NOMEM else KCODEC_CODEC_CORRUPT, err, err_cap,
                     "lz4: malformed frame", NULL, r.pos)
    got = _lz4_blocks_read(src, &blocks, r.max_block, dst, cap, st.dec, &err_pos)
    free(blocks.v)
    if got == KCODEC_CODEC_CORRUPT:
        return _fail(got, err, err_cap, "lz4: corrupt block", NULL, err_pos)
    return got


def lz4_native_codec(size_t compress_addr, size_t compress_hc_addr, size_t decompress_addr, bytes header,
                     bytes header_v0):
    """The lz4 codec's kcodec/codec.h capsule over liblz4's ``LZ4_compress_default``,
    ``LZ4_compress_HC`` and ``LZ4_decompress_safe`` (thread-safe: liblz4 keeps no state)."""
    if len(header) != 7 or len(header_v0) != 7:
        raise ValueError("lz4 frame headers are 7 bytes")
    cdef _Lz4Native *st = <_Lz4Native *>calloc(1, sizeof(_Lz4Native))
    if st == NULL:
        raise MemoryError()
    st.fast = <_lz4_compress_fn>compress_addr
    st.hc = <_lz4_compress_hc_fn>compress_hc_addr
    st.dec = <_lz4_decompress_fn>decompress_addr
    memcpy(st.header, <const char *>header, 7)
    memcpy(st.header_v0, <const char *>header_v0, 7)
    st.api.compress_bound = _lz4_n_bound
    st.api.compress = _lz4_n_compress
    st.api.decompressed_size = _lz4_n_size
    st.api.decompress = _lz4_n_decompress
    return _capsule(&st.api, st, KCODEC_CODEC_THREAD_SAFE, _free_native)
