# snappy: snappy-java's (xerial) stream or one raw block (SnappyCompression), scanned,
# framed and decoded, and the snappy codec's kcodec/codec.h capsule.
# Part of kcodec._native.codecs (included by codecs.pyx).

cdef extern from "kc_snappy.h" nogil:
    ctypedef struct kc_snappy_table_t:
        pass
    size_t kc_snappy_bound(size_t n)
    size_t kc_snappy_compress(const uint8_t *src, size_t n, uint8_t *dst, kc_snappy_table_t *t)


# -- the stream scanner --------------------------------------------------------

cdef enum:
    SN_OK = 0
    SN_EMPTY = 1
    SN_CONCAT_HEADER = 2
    SN_NEGATIVE = 3
    SN_TOO_BIG = 4
    SN_TRUNCATED = 5
    SN_ZERO = 6
    SN_PREAMBLE = 7
    SN_LIMIT = 8
    SN_NOMEM = 9
    SN_VERSION = 10
    SN_IMPOSSIBLE = 11

cdef const uint8_t *_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
# snappy-java's stream header: the magic, version 1, compatible version 1
cdef const uint8_t *_SNAPPY_HEADER = b"\x82SNAPPY\x00\x00\x00\x00\x01\x00\x00\x00\x01"
cdef int64_t _SNAPPY_MAX_CHUNK = 512 * 1024 * 1024


cdef struct _SnScan:
    int err
    Py_ssize_t pos
    int64_t a
    int64_t total
    bint framed


cdef inline int _snappy_preamble(const uint8_t *p, Py_ssize_t n, int64_t *out) noexcept nogil:
    # The uncompressed length: a little-endian base-128 varint of at most
    # five bytes that must fit 32 bits, as libsnappy parses it.
    cdef uint64_t v = 0
    cdef int i
    for i in range(5):
        if i >= n:
            return -1
        v |= (<uint64_t>(p[i] & 0x7F)) << (7 * i)
        if not (p[i] & 0x80):
            if v > 0xFFFFFFFFu:
                return -1
            out[0] = <int64_t>v
            return 0
    return -1


cdef inline int64_t _snappy_max_expansion(int64_t size) noexcept nogil:
    # No snappy element produces more than 64 bytes from 3 (a copy with a
    # two-byte offset), so a block can never honestly declare more: such a
    # length is refused before anything is allocated for it.
    return size * 22 + 64


cdef inline bint _is_magic(const uint8_t *p) noexcept nogil:
    cdef int i
    for i in range(8):
        if p[i] != _SNAPPY_MAGIC[i]:
            return False
    return True


cdef void _snappy_scan(const uint8_t *p, Py_ssize_t n, int64_t max_size, _SnScan *r, _Blocks *blocks) noexcept nogil:
    cdef Py_ssize_t pos
    cdef int64_t ulen
    cdef uint32_t word
    cdef int64_t length
    r.err = SN_OK
    r.pos = 0
    r.a = 0
    r.total = 0
    r.framed = False
    if n == 0:
        r.err = SN_EMPTY
        r.pos = 0
        return
    if n < 16 or not _is_magic(p):
        # Not snappy-java's stream: the whole payload is one raw block.
        if _snappy_preamble(p, n, &ulen) < 0:
            r.err = SN_PREAMBLE
            r.pos = 0
            return
        if ulen > _snappy_max_expansion(n):
            r.err = SN_IMPOSSIBLE
            r.a = ulen
            r.pos = 0
            return
        if ulen > max_size:
            r.err = SN_LIMIT
            r.a = ulen
            r.pos = 0
            return
        r.total = ulen
        if _push(blocks, 0, n, ulen) < 0:
            r.err = SN_NOMEM
        return
    r.framed = True
    # The version fields are not checked (Redpanda writes another one).
    pos = 16
    while n - pos >= 4:
        word = kc_load_be32(p + pos)
        if word == 0x82534E41u:
            # A second snappy-java stream appended to the first.
            if n - pos - 4 < 12:
                r.err = SN_CONCAT_HEADER
                r.pos = pos
                return
            if not _is_magic(p + pos):
                break  # snappy-java ends the stream quietly here
            if <int>kc_load_be32(p + pos + 8) < 1:
                r.err = SN_VERSION
                r.a = <int>kc_load_be32(p + pos + 8)
                r.pos = pos + 8
                return
            pos += 16
            continue
        length = <int>word
        if length < 0:
            r.err = SN_NEGATIVE
            r.a = length
            r.pos = pos
            return
        if length > _SNAPPY_MAX_CHUNK:
            r.err = SN_TOO_BIG
            r.a = length
            r.pos = pos
            return
        if length == 0:
            r.err = SN_ZERO
            r.pos = pos
            return
        pos += 4
        if n - pos < length:
            r.err = SN_TRUNCATED
            r.pos = pos
            r.a = length
            return
        if _snappy_preamble(p + pos, length, &ulen) < 0:
            r.err = SN_PREAMBLE
            r.pos = pos
            return
        if ulen > _snappy_max_expansion(length):
            r.err = SN_IMPOSSIBLE
            r.a = ulen
            r.pos = pos
            return
        if r.total + ulen > max_size:
            r.err = SN_LIMIT
            r.a = r.total + ulen
            r.pos = pos
            return
        r.total += ulen
        if _push(blocks, pos, length, ulen) < 0:
            r.err = SN_NOMEM
            return
        pos += length


def snappy_scan(data, int64_t max_size) -> tuple:
    """Walk a snappy payload: ``(framed, [(offset, size, uncompressed_size)], total)``.

    Raises LimitExceededError as soon as the uncompressed sizes the blocks
    declare add up to more than ``max_size``, before anything is allocated.
    """
    cdef Py_buffer view
    cdef _SnScan r
    cdef _Blocks blocks
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _get(data, &view)
    try:
        if view.len >= _GIL_THRESHOLD:
            with nogil:
                _snappy_scan(<const uint8_t *>view.buf, view.len, max_size, &r, &blocks)
        else:
            _snappy_scan(<const uint8_t *>view.buf, view.len, max_size, &r, &blocks)
        if r.err == SN_OK:
            return bool(r.framed), _to_list(&blocks), r.total
    finally:
        PyBuffer_Release(&view)
        free(blocks.v)
    if r.err == SN_NOMEM:
        raise MemoryError()
    if r.err == SN_LIMIT:
        raise LimitExceededError(
            f"snappy: the blocks declare at least {r.a} uncompressed bytes, "
            f"more than the limit of {max_size}", position=r.pos)
    msg = {
        SN_EMPTY: "[EMPTY_INPUT] Cannot decompress empty stream",
        SN_CONCAT_HEADER: "Insufficient header size in a concatenated block",
        SN_VERSION: f"[INCOMPATIBLE_VERSION] Compressed with an incompatible codec version {r.a}. "
                    "At least version 1 is required",
        SN_NEGATIVE: f"[INVALID_CHUNK_SIZE] chunkSize is too big or negative : {r.a}",
        SN_TOO_BIG: f"[INVALID_CHUNK_SIZE] chunkSize is too big or negative : {r.a}",
        SN_TRUNCATED: f"failed to read chunk (needs {r.a} bytes)",
        SN_ZERO: "[PARSING_ERROR] zero-length chunk",
        SN_PREAMBLE: "[PARSING_ERROR] invalid uncompressed length in the block header",
        SN_IMPOSSIBLE: f"[PARSING_ERROR] a block declares {r.a} uncompressed bytes, "
                       "more than its size can encode",
    }[r.err]
    raise _corrupt("snappy", msg, r.pos)


def snappy_frame_compress(data, header, Py_ssize_t block_size, compress_into, Py_ssize_t max_block_out,
                          Py_ssize_t headroom=0) -> bytes:
    """snappy-java's framing of ``data``: ``header``, then per ``block_size`` bytes a big-endian length and a block.

    ``compress_into(block, out)`` compresses one block into the writable
    view ``out`` (``max_block_out`` bytes, the library's bound for a full
    block) and returns the bytes written.  Blocks go straight into the
    result, which is allocated once and shrunk at the end.  ``headroom``
    bytes (uninitialised) come first in the result.
    """
    cdef Py_buffer view, hview
    cdef Py_ssize_t nblocks, bound, pos
    cdef PyObject *out
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    PyObject_GetBuffer(header, &hview, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        nblocks = (view.len + block_size - 1) // block_size
        bound = hview.len + nblocks * (4 + max_block_out)
        out = _raw_bytes(NULL, headroom + bound)
        try:
            pos = _snappy_frame_into(compress_into, max_block_out, <const uint8_t *>view.buf, view.len,
                                     <uint8_t *>_raw_bytes_data(out) + headroom, bound,
                                     <const uint8_t *>hview.buf, hview.len, block_size)
        except BaseException:
            Py_DECREF(<object>out)
            raise
        return _bytes_of(out, headroom + pos)
    finally:
        PyBuffer_Release(&hview)
        PyBuffer_Release(&view)


# -- the snappy capsule -----------------------------------------------------------

cdef int64_t _snappy_block(const uint8_t *p, int64_t n, uint8_t *o, int64_t ulen) noexcept nogil:
    """One raw snappy block (preamble included) into o[0:ulen]: ulen, or -1 if it is not exactly that."""
    cdef int64_t ip = 0, op = 0, length, offset, i
    cdef uint8_t tag
    cdef int extra
    while ip < n and p[ip] & 0x80:   # the preamble, checked by the scan
        ip += 1
    ip += 1
    while ip < n:
        tag = p[ip]
        ip += 1
        if tag & 3 == 0:
            length = (tag >> 2) + 1
            if length <= 16 and n - ip >= 16 and ulen - op >= 16:
                # A short literal (most are) as one 16-byte move: the bytes past it are
                # inside both buffers and are written over by what follows.
                memcpy(o + op, p + ip, 16)
                ip += length
                op += length
                continue
            if length > 60:
                extra = <int>length - 60
                if n - ip < extra:
                    return -1
                length = 0
                for i in range(extra):
                    length |= (<int64_t>p[ip + i]) << (8 * i)
                length += 1
                ip += extra
            if n - ip < length or ulen - op < length:
                return -1
            memcpy(o + op, p + ip, length)
            ip += length
            op += length
            continue
        if tag & 3 == 1:
            if n - ip < 1:
                return -1
            length = ((tag >> 2) & 7) + 4
            offset = ((<int64_t>(tag >> 5)) << 8) | p[ip]
            ip += 1
        elif tag & 3 == 2:
            if n - ip < 2:
                return -1
            length = (tag >> 2) + 1
            offset = p[ip] | (<int64_t>p[ip + 1] << 8)
            ip += 2
        else:
            if n - ip < 4:
                return -1
            length = (tag >> 2) + 1
            offset = kc_load_le32(p + ip)
            ip += 4
        if offset == 0 or offset > op or ulen - op < length:
            return -1
        if offset >= 16 and ulen - op >= length + 16:
            # 16 bytes at a time (most matches: one move), each read 16 or more bytes behind
            # where it is written, so already final even when the match overlaps its own
            # output; the last move may run up to 15 bytes past the match, inside the output.
            memcpy(o + op, o + op - offset, 16)
            i = 16
            while i < length:
                memcpy(o + op + i, o + op + i - offset, 16)
                i += 16
        elif offset >= 8 and ulen - op >= length + 8:
            # The same 8 bytes at a time.
            i = 0
            while i < length:
                memcpy(o + op + i, o + op + i - offset, 8)
                i += 8
        elif offset >= length:
            memcpy(o + op, o + op - offset, length)
        else:
            for i in range(length):   # an overlapping copy repeats the last `offset` bytes
                o[op + i] = o[op + i - offset]
        op += length
    return op if op == ulen else -1


cdef int64_t _snappy_n_bound(void *state, int64_t n, int level, int magic) noexcept nogil:
    if n < 0:
        return KCODEC_CODEC_ERROR
    return 16 + ((n + 32767) // 32768) * (4 + <int64_t>kc_snappy_bound(32768))


cdef int64_t _snappy_frame_into(object compress_into, int64_t max_block_out, const uint8_t *src, int64_t n,
                                uint8_t *o, int64_t cap, const uint8_t *header, int64_t header_len,
                                int64_t block_size) except -1:
    """snappy-java's framing of src into o (cap at least its bound): the bytes written.

    ``compress_into(block, out)`` compresses one block into the writable view
    ``out`` and returns the bytes written.
    """
    cdef int64_t pos = header_len, start
    cdef Py_ssize_t written
    memcpy(o, header, header_len)
    dst = PyMemoryView_FromMemory(<char *>o, cap, PyBUF_WRITE)
    source = PyMemoryView_FromMemory(<char *>src, n, PyBUF_READ)
    try:
        for start in range(0, n, block_size):
            written = compress_into(source[start:start + block_size], dst[pos + 4:pos + 4 + max_block_out])
            if written < 0 or written > max_block_out:
                raise ValueError(f"snappy: the library reported {written} bytes for one block")
            kc_store_be32(o + pos, <uint32_t>written)
            pos += 4 + written
    finally:
        dst.release()
        source.release()
    return pos


cdef int64_t _snappy_n_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int level,
                                int magic, char *err, size_t err_cap) noexcept nogil:
    # snappy-java's stream: its header, then per 32 KiB of input a big-endian length and a raw
    # block, compressed here (kc_snappy.h) as snappy-java's libsnappy compresses it.
    cdef kc_snappy_table_t *table
    cdef int64_t pos = 16, start, size
    cdef size_t written
    if cap < _snappy_n_bound(state, n, level, magic):
        return KCODEC_CODEC_DST_TOO_SMALL
    table = <kc_snappy_table_t *>malloc(sizeof(kc_snappy_table_t))
    if table == NULL:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "snappy: out of memory", NULL, -1)
    memcpy(dst, _SNAPPY_HEADER, 16)
    start = 0
    while start < n:
        size = min(n - start, <int64_t>32768)
        written = kc_snappy_compress(src + start, <size_t>size, dst + pos + 4, table)
        kc_store_be32(dst + pos, <uint32_t>written)
        pos += 4 + <int64_t>written
        start += size
    free(table)
    return pos


def snappy_compress_raw(data) -> bytes:
    """One raw snappy block of ``data`` (length preamble, then elements), as libsnappy 1.1.10
    writes it; at most 2**32 - 1 bytes."""
    cdef Py_buffer view
    cdef kc_snappy_table_t *table
    cdef size_t written
    cdef PyObject *out
    cdef uint8_t *dst
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if view.len > 0xFFFFFFFF:
            raise ValueError(f"snappy blocks hold at most 2**32 - 1 bytes, not {view.len}")
        table = <kc_snappy_table_t *>malloc(sizeof(kc_snappy_table_t))
        if table == NULL:
            raise MemoryError()
        try:
            out = _raw_bytes(NULL, <Py_ssize_t>kc_snappy_bound(<size_t>view.len))
        except BaseException:
            free(table)
            raise
        dst = <uint8_t *>_raw_bytes_data(out)
        with nogil:
            written = kc_snappy_compress(<const uint8_t *>view.buf, <size_t>view.len, dst, table)
        free(table)
        kc_bytes_shrink(&out, <Py_ssize_t>written)
        result = <object>out
        Py_DECREF(result)
        return result
    finally:
        PyBuffer_Release(&view)


cdef int64_t _snappy_n_size(void *state, const uint8_t *src, int64_t n, int magic) noexcept nogil:
    cdef _SnScan r
    cdef _Blocks blocks
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _snappy_scan(src, n, INT64_MAX, &r, &blocks)
    free(blocks.v)
    return r.total if r.err == SN_OK else -1


cdef int64_t _snappy_n_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int magic,
                                  char *err, size_t err_cap) noexcept nogil:
    cdef _SnScan r
    cdef _Blocks blocks
    cdef int64_t pos = 0, off, size, usize
    cdef Py_ssize_t i
    blocks.v = NULL
    blocks.n = 0
    blocks.cap = 0
    _snappy_scan(src, n, cap, &r, &blocks)
    if r.err != SN_OK:
        free(blocks.v)
        if r.err == SN_LIMIT:
            return KCODEC_CODEC_DST_TOO_SMALL
        return _fail(KCODEC_CODEC_ERROR if r.err == SN_NOMEM else KCODEC_CODEC_CORRUPT, err, err_cap,
                     "snappy: malformed stream", NULL, r.pos)
    for i in range(blocks.n):
        off = blocks.v[3 * i]
        size = blocks.v[3 * i + 1]
        usize = blocks.v[3 * i + 2]
        if _snappy_block(src + off, size, dst + pos, usize) < 0:
            free(blocks.v)
            return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "snappy: corrupt block", NULL, off)
        pos += usize
    free(blocks.v)
    return pos


cdef void _free_snappy(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME))


def snappy_native_codec():
    """The snappy codec's kcodec/codec.h capsule: blocks compressed and decoded in C, without the GIL."""
    cdef kcodec_codec_v1 *api = <kcodec_codec_v1 *>calloc(1, sizeof(kcodec_codec_v1))
    if api == NULL:
        raise MemoryError()
    api.compress_bound = _snappy_n_bound
    api.compress = _snappy_n_compress
    api.decompressed_size = _snappy_n_size
    api.decompress = _snappy_n_decompress
    return _capsule(api, NULL, KCODEC_CODEC_THREAD_SAFE, _free_snappy)
