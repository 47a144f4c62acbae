# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Framing scanners for Kafka's compressed payloads, and XXH32.

The compression libraries do the (de)compression; these functions walk the
framing around it (LZ4 frame blocks, snappy-java chunks, zstd frames) in C
with the GIL released, check every length against the buffer before it is
used, and return where each block lies.  The Python codecs then hand exactly
those slices to the library, so a hostile length can neither read past the
input nor make anything allocate before the size limits are checked.

Errors carry Kafka's (Java) messages where Kafka has one.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.object cimport PyObject
from cpython.ref cimport Py_DECREF
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_load_be32, kc_load_le32, kc_store_be32
from kcodec._native.primitives cimport kc_bytes_shrink

from kcodec.errors import CorruptCompressedDataError, LimitExceededError

cdef extern from "kc_xxhash.h" nogil:
    uint32_t kc_xxh32(const uint8_t *p, size_t len, uint32_t seed)

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_WRITE

cdef Py_ssize_t _GIL_THRESHOLD = 4096


cdef inline void _get(object data, Py_buffer *view) except *:
    PyObject_GetBuffer(data, view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)


def xxh32(data, unsigned int seed=0) -> int:
    """XXH32 of ``data`` (any contiguous buffer); ``xxh32(b"") == 0x02CC5D05``."""
    cdef Py_buffer view
    cdef uint32_t out
    _get(data, &view)
    try:
        if view.len >= _GIL_THRESHOLD:
            with nogil:
                out = kc_xxh32(<const uint8_t *>view.buf, <size_t>view.len, seed)
        else:
            out = kc_xxh32(<const uint8_t *>view.buf, <size_t>view.len, seed)
    finally:
        PyBuffer_Release(&view)
    return out


def alloc_bytes(Py_ssize_t size):
    """A new ``bytes`` of ``size`` uninitialised bytes and a writable view of its storage.

    Lets a decompressor write straight into the object it returns, sparing
    the copy a ``bytearray`` -> ``bytes`` conversion would cost.  The caller
    owns the only reference, fills every byte, and releases the view before
    the bytes object is shared.
    """
    if size < 0:
        raise ValueError("negative size")
    b = PyBytes_FromStringAndSize(NULL, size)
    return b, PyMemoryView_FromMemory(PyBytes_AS_STRING(b), size, PyBUF_WRITE)


# --------------------------------------------------------------------------
# Block tables: (offset, length, extra) triples filled without the GIL.

cdef struct _Blocks:
    int64_t *v
    Py_ssize_t n
    Py_ssize_t cap


cdef int _push(_Blocks *b, int64_t off, int64_t length, int64_t extra) noexcept nogil:
    cdef int64_t *nv
    cdef Py_ssize_t ncap
    if b.n == b.cap:
        ncap = 16 if b.cap == 0 else b.cap * 2
        nv = <int64_t *>realloc(b.v, <size_t>ncap * 3 * sizeof(int64_t))
        if nv == NULL:
            return -1
        b.v = nv
        b.cap = ncap
    b.v[3 * b.n] = off
    b.v[3 * b.n + 1] = length
    b.v[3 * b.n + 2] = extra
    b.n += 1
    return 0


cdef list _to_list(_Blocks *b):
    cdef Py_ssize_t i
    return [(b.v[3 * i], b.v[3 * i + 1], b.v[3 * i + 2]) for i in range(b.n)]


cdef object _corrupt(str codec, str message, Py_ssize_t pos):
    return CorruptCompressedDataError(f"{codec}: {message}", position=pos)


# --------------------------------------------------------------------------
# LZ4: Kafka's frame (spec 8.5).

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
# snappy: snappy-java's stream, or one raw block (spec 8.4).

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


# --------------------------------------------------------------------------
# zstd: frame boundaries, window sizes and truncation (spec 8.6).

cdef enum:
    ZS_OK = 0
    ZS_TRUNCATED = 1
    ZS_UNKNOWN = 2
    ZS_WINDOW = 3
    ZS_RESERVED = 4
    ZS_BLOCK = 5


cdef struct _ZsScan:
    int err
    Py_ssize_t pos
    int frames
    int64_t content_size
    int64_t bound
    uint64_t window


cdef void _zstd_scan(const uint8_t *p, Py_ssize_t n, int window_log_max, _ZsScan *r) noexcept nogil:
    cdef Py_ssize_t pos = 0, fstart
    cdef uint32_t magic, bh, bsize
    cdef uint8_t fhd, wd
    cdef int fcs_flag, did_flag, fcs_len, btype
    cdef bint single, checksum, last
    cdef uint64_t fcs, window, block_max
    cdef int i
    r.err = ZS_OK
    r.pos = 0
    r.window = 0
    r.frames = 0
    r.content_size = 0
    r.bound = 0
    while pos < n:
        fstart = pos
        if n - pos < 4:
            r.err = ZS_TRUNCATED
            r.pos = pos
            return
        magic = kc_load_le32(p + pos)
        if (magic & 0xFFFFFFF0u) == 0x184D2A50u:
            if n - pos < 8 or <uint64_t>(n - pos - 8) < kc_load_le32(p + pos + 4):
                r.err = ZS_TRUNCATED
                r.pos = pos
                return
            pos += 8 + <Py_ssize_t>kc_load_le32(p + pos + 4)
            continue
        if magic != 0xFD2FB528u:
            r.err = ZS_UNKNOWN
            r.pos = pos
            return
        pos += 4
        if pos >= n:
            r.err = ZS_TRUNCATED
            r.pos = fstart
            return
        fhd = p[pos]
        pos += 1
        if fhd & 0x08:
            r.err = ZS_RESERVED
            r.pos = pos - 1
            return
        fcs_flag = fhd >> 6
        single = (fhd & 0x20) != 0
        checksum = (fhd & 0x04) != 0
        did_flag = fhd & 0x03
        window = 0
        if not single:
            if pos >= n:
                r.err = ZS_TRUNCATED
                r.pos = fstart
                return
            wd = p[pos]
            pos += 1
            window = (<uint64_t>1) << (10 + (wd >> 3))
            window += (window >> 3) * (wd & 7)
        if did_flag:
            pos += 4 if did_flag == 3 else did_flag
        fcs_len = 8 if fcs_flag == 3 else (4 if fcs_flag == 2 else (2 if fcs_flag == 1 else (1 if single else 0)))
        if pos + fcs_len > n:
            r.err = ZS_TRUNCATED
            r.pos = fstart
            return
        fcs = 0
        for i in range(fcs_len):
            fcs |= (<uint64_t>p[pos + i]) << (8 * i)
        if fcs_len == 2:
            fcs += 256
        pos += fcs_len
        if single:
            window = fcs
        if window > ((<uint64_t>1) << window_log_max):
            r.err = ZS_WINDOW
            r.pos = fstart
            r.window = window
            return
        if fcs_len == 0 or r.content_size < 0:
            r.content_size = -1
        else:
            r.content_size += <int64_t>fcs
            if r.content_size < 0 or fcs > (<uint64_t>1 << 62):
                r.content_size = (<int64_t>1) << 62
        block_max = window if window < 131072 else 131072
        if block_max == 0:
            block_max = 131072
        while True:
            if n - pos < 3:
                r.err = ZS_TRUNCATED
                r.pos = fstart
                return
            bh = p[pos] | (<uint32_t>p[pos + 1] << 8) | (<uint32_t>p[pos + 2] << 16)
            pos += 3
            last = bh & 1
            btype = (bh >> 1) & 3
            bsize = bh >> 3
            if btype == 3 or bsize > 131072:
                r.err = ZS_BLOCK
                r.pos = pos - 3
                return
            # Regenerated size: exact for raw and RLE blocks, at most the
            # block maximum for compressed ones.
            r.bound += <int64_t>(block_max if btype == 2 else bsize)
            if btype == 1:
                bsize = 1
            if n - pos < <Py_ssize_t>bsize:
                r.err = ZS_TRUNCATED
                r.pos = fstart
                return
            pos += bsize
            if last:
                break
        if checksum:
            if n - pos < 4:
                r.err = ZS_TRUNCATED
                r.pos = fstart
                return
            pos += 4
        r.frames += 1


def zstd_scan(data, int window_log_max=27) -> tuple:
    """Walk zstd frames: ``(frames, total_content_size or -1, output_bound)``.

    Checks what a streaming decoder would only notice late or never: a frame
    cut short (``Truncated source``), bytes after the last frame that start
    no frame (``Unknown frame descriptor``), and windows above
    ``2**window_log_max`` (zstd-jni's limit: 27, 128 MiB).  Skippable frames
    are stepped over.  The content size is -1 unless every frame declares one;
    ``output_bound`` is the most the blocks can decompress to.
    """
    cdef Py_buffer view
    cdef _ZsScan r
    _get(data, &view)
    try:
        if view.len >= _GIL_THRESHOLD:
            with nogil:
                _zstd_scan(<const uint8_t *>view.buf, view.len, window_log_max, &r)
        else:
            _zstd_scan(<const uint8_t *>view.buf, view.len, window_log_max, &r)
    finally:
        PyBuffer_Release(&view)
    if r.err == ZS_OK:
        return r.frames, (r.content_size if r.frames else 0), r.bound
    msg = {
        ZS_TRUNCATED: "Truncated source",
        ZS_UNKNOWN: "Unknown frame descriptor",
        ZS_WINDOW: f"Frame requires too much memory for decoding "
                   f"(window {r.window} bytes, limit {1 << window_log_max})",
        ZS_RESERVED: "Unsupported frame parameter (reserved bit set)",
        ZS_BLOCK: "Corrupted block detected",
    }[r.err]
    raise _corrupt("zstd", msg, r.pos)


# --------------------------------------------------------------------------
# LZ4 frames natively, through liblz4 entry points handed in as addresses
# (the ones python-lz4's extension carries; see kcodec.compression.lz4).
# One call per frame instead of one per 64 KiB block, and the blocks are
# written straight into the result instead of joined afterwards.

ctypedef int (*_lz4_decompress_fn)(const char *src, char *dst, int compressed_size, int capacity) noexcept nogil
ctypedef int (*_lz4_compress_fn)(const char *src, char *dst, int size, int capacity) noexcept nogil
ctypedef int (*_lz4_compress_hc_fn)(const char *src, char *dst, int size, int capacity, int level) noexcept nogil



cdef inline void _le32(uint8_t *p, uint32_t v) noexcept nogil:
    p[0] = v & 0xFF
    p[1] = (v >> 8) & 0xFF
    p[2] = (v >> 16) & 0xFF
    p[3] = v >> 24


cdef object _bytes_of(PyObject *out, Py_ssize_t n):
    """The new bytes object ``out``, whose only reference the caller hands over, shrunk to ``n`` bytes."""
    kc_bytes_shrink(&out, n)  # on failure the object is freed and the error raised
    result = <object>out
    Py_DECREF(result)
    return result


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
    cdef Py_ssize_t nblocks, bound, pos, start, written
    cdef PyObject *out
    cdef uint8_t *o
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    PyObject_GetBuffer(header, &hview, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        nblocks = (view.len + block_size - 1) // block_size
        bound = hview.len + nblocks * (4 + max_block_out)
        out = _raw_bytes(NULL, headroom + bound)
        o = <uint8_t *>_raw_bytes_data(out) + headroom
        memcpy(o, hview.buf, hview.len)
        pos = hview.len
        dst = None
        try:
            src = memoryview(data).cast("B")
            dst = PyMemoryView_FromMemory(<char *>o, bound, PyBUF_WRITE)
            for start in range(0, view.len, block_size):
                written = compress_into(src[start:start + block_size], dst[pos + 4:pos + 4 + max_block_out])
                if written < 0 or written > max_block_out:
                    raise ValueError(f"snappy: the library reported {written} bytes for one block")
                kc_store_be32(o + pos, <uint32_t>written)
                pos += 4 + written
        except BaseException:
            if dst is not None:
                dst.release()
            Py_DECREF(<object>out)
            raise
        dst.release()
        src.release()
        return _bytes_of(out, headroom + pos)
    finally:
        PyBuffer_Release(&hview)
        PyBuffer_Release(&view)


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
    cdef _lz4_compress_fn fast = <_lz4_compress_fn>compress_addr
    cdef _lz4_compress_hc_fn hc = <_lz4_compress_hc_fn>compress_hc_addr
    cdef Py_ssize_t nblocks, bound, pos, start, chunk
    cdef int written
    cdef PyObject *out
    cdef uint8_t *o
    cdef const char *src
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    PyObject_GetBuffer(header, &hview, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        nblocks = (view.len + block_size - 1) // block_size
        # LZ4_compressBound per block, plus its size word, plus header and end mark
        bound = hview.len + nblocks * (4 + block_size + block_size // 255 + 16) + 4
        out = _raw_bytes(NULL, headroom + bound)
        o = <uint8_t *>_raw_bytes_data(out) + headroom
        memcpy(o, hview.buf, hview.len)
        pos = hview.len
        src = <const char *>view.buf
        with nogil:
            start = 0
            while start < view.len:
                chunk = min(block_size, view.len - start)
                if level == 0:
                    written = fast(src + start, <char *>o + pos + 4, <int>chunk, <int>(bound - pos - 4))
                else:
                    written = hc(src + start, <char *>o + pos + 4, <int>chunk, <int>(bound - pos - 4), level)
                if written <= 0 or written >= chunk:
                    _le32(o + pos, <uint32_t>chunk | 0x80000000u)
                    memcpy(o + pos + 4, src + start, chunk)
                    pos += 4 + chunk
                else:
                    _le32(o + pos, <uint32_t>written)
                    pos += 4 + written
                start += chunk
            _le32(o + pos, 0)
            pos += 4
        return _bytes_of(out, headroom + pos)
    finally:
        PyBuffer_Release(&hview)
        PyBuffer_Release(&view)


def lz4_frame_decompress(data, bint check_hc, int64_t max_size, size_t decompress_addr) -> bytes:
    """The content of a Kafka LZ4 frame, decoded in one native pass; errors as the Python path gives them.

    The result is allocated once, at the most the blocks can hold (raw
    blocks their size, others the frame's block maximum) and never more
    than ``max_size + 1`` bytes, then shrunk to what was written.
    """
    cdef Py_buffer view
    cdef _Lz4Scan r
    cdef _Blocks blocks
    cdef _lz4_decompress_fn dec = <_lz4_decompress_fn>decompress_addr
    cdef Py_ssize_t i, cap, pos = 0
    cdef int64_t bound = 0, off, size
    cdef int got = 0
    cdef int err = 0        # 1 corrupt, 2 over the limit
    cdef int64_t err_pos = 0
    cdef PyObject *done
    cdef PyObject *out = NULL
    cdef uint8_t *o
    cdef char *probe
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
        for i in range(blocks.n):
            bound += blocks.v[3 * i + 1] if blocks.v[3 * i + 2] else r.max_block
            if bound > max_size:
                bound = max_size + 1
                break
        cap = <Py_ssize_t>bound
        out = _raw_bytes(NULL, cap)
        o = <uint8_t *>_raw_bytes_data(out)
        with nogil:
            for i in range(blocks.n):
                off = blocks.v[3 * i]
                size = blocks.v[3 * i + 1]
                if blocks.v[3 * i + 2]:
                    if size > max_size - pos:
                        err = 2
                        err_pos = off
                        break
                    memcpy(o + pos, <const uint8_t *>view.buf + off, size)
                    pos += size
                    continue
                got = dec(<const char *>view.buf + off, <char *>o + pos, <int>size,
                          <int>min(r.max_block, cap - pos))
                if got < 0:
                    err = 1
                    err_pos = off
                    if cap - pos < r.max_block:
                        # Corrupt, or valid but over the limit: decode the block (at most 4 MiB) to tell.
                        probe = <char *>malloc(r.max_block)
                        if probe != NULL:
                            if dec(<const char *>view.buf + off, probe, <int>size, <int>r.max_block) >= 0:
                                err = 2
                            free(probe)
                    break
                if got > max_size - pos:
                    err = 2
                    err_pos = off
                    break
                pos += got
        if err == 1:
            raise CorruptCompressedDataError("lz4: corrupt block (LZ4 decompression failed)", position=err_pos)
        if err == 2:
            raise LimitExceededError(f"lz4: decompressed data exceeds the limit of {max_size} bytes",
                                     position=err_pos)
        done = out
        out = NULL  # handed to _bytes_of: the finally clause must not free it
        return _bytes_of(done, pos)
    finally:
        if out != NULL:
            Py_DECREF(<object>out)
        PyBuffer_Release(&view)
        free(blocks.v)


# --------------------------------------------------------------------------
# zstd frames natively, through libzstd entry points handed in as addresses
# (the ones python-zstandard's CFFI extension carries; see
# kcodec.compression.zstd).  python-zstandard's streaming API copies the
# input into its window buffer and the output through a bounce buffer and a
# join; with libzstd's stable-buffer modes the frame is compressed from the
# caller's buffer straight into the result, and a frame is decoded straight
# into its bytes object, with the GIL released.

ctypedef struct _ZstdBuffer:    # ZSTD_inBuffer and ZSTD_outBuffer share this layout
    void *ptr
    size_t size
    size_t pos

ctypedef void *(*_zstd_create_fn)() noexcept nogil
ctypedef size_t (*_zstd_free_fn)(void *ctx) noexcept nogil
ctypedef size_t (*_zstd_set_fn)(void *ctx, int param, int value) noexcept nogil
ctypedef size_t (*_zstd_reset_fn)(void *ctx, int directive) noexcept nogil
ctypedef size_t (*_zstd_stream_fn)(void *ctx, _ZstdBuffer *out, _ZstdBuffer *inp, int end_op) noexcept nogil
ctypedef size_t (*_zstd_bound_fn)(size_t size) noexcept nogil
ctypedef size_t (*_zstd_dctx_fn)(void *ctx, void *dst, size_t cap, const void *src, size_t size) noexcept nogil
ctypedef unsigned (*_zstd_is_error_fn)(size_t code) noexcept nogil
ctypedef const char *(*_zstd_error_name_fn)(size_t code) noexcept nogil

#: The libzstd functions a ZstdContext calls, in the order of its ``addresses``.
ZSTD_ENTRY_POINTS = ("ZSTD_createCCtx", "ZSTD_freeCCtx", "ZSTD_CCtx_setParameter", "ZSTD_CCtx_reset",
                     "ZSTD_compressStream2", "ZSTD_compressBound", "ZSTD_createDCtx", "ZSTD_freeDCtx",
                     "ZSTD_decompressDCtx", "ZSTD_isError", "ZSTD_getErrorName")

# zstd.h's values; ZSTD_c_stableInBuffer/OutBuffer are experimental
# parameters, unchanged since libzstd 1.4.6 (the codec's self-check
# compares whole frames before it trusts them).  ZSTD_c_blockSplitterLevel
# (experimental parameter 20) came with libzstd 1.5.7's pre-splitter, which
# ends a 128 KiB block early where the data changes; zstd-jni 1.5.6, which
# Kafka's Java client uses, has no such step, so kcodec turns it off (1) to
# write Java's blocks.  Older libraries reject the parameter: nothing to turn off.
cdef enum:
    _ZSTD_c_compressionLevel = 100
    _ZSTD_c_contentSizeFlag = 200
    _ZSTD_c_checksumFlag = 201
    _ZSTD_c_dictIDFlag = 202
    _ZSTD_c_stableInBuffer = 1006
    _ZSTD_c_stableOutBuffer = 1007
    _ZSTD_c_blockSplitterLevel = 1017
    _ZSTD_NO_PRESPLIT = 1
    _ZSTD_NO_LEVEL = -2147483647 - 1   # no level set on a context yet
    _ZSTD_e_continue = 0
    _ZSTD_e_flush = 1
    _ZSTD_e_end = 2
    _ZSTD_reset_session_only = 1
    _ZSTD_FRAME_SLACK = 64      # the flushed block's and the empty last block's headers, beyond compressBound


cdef class ZstdContext:
    """One thread's libzstd contexts for Kafka's zstd frames; not to be shared between threads.

    ``addresses`` are those of :data:`ZSTD_ENTRY_POINTS`, in that order.
    Frames are written as zstd-jni's stream writes them: no content size,
    checksum or dictionary id, the data flushed as a block, then an empty
    last block, and blocks cut only at 128 KiB (no pre-splitting).
    """
    cdef _zstd_create_fn _create_cctx, _create_dctx
    cdef _zstd_free_fn _free_cctx, _free_dctx
    cdef _zstd_set_fn _set
    cdef _zstd_reset_fn _reset
    cdef _zstd_stream_fn _stream
    cdef _zstd_bound_fn _bound
    cdef _zstd_dctx_fn _decompress
    cdef _zstd_is_error_fn _is_error
    cdef _zstd_error_name_fn _error_name
    # [0]: stable buffers, from the caller's input straight into the result;
    # [1]: libzstd's own input ring buffer, as zstd-jni's stream uses it.
    cdef void *_cctx[2]
    cdef int _level[2]   # the level set on each, or _ZSTD_NO_LEVEL
    cdef void *_dctx

    def __cinit__(self, tuple addresses):
        cdef size_t a[11]
        cdef int i
        if len(addresses) != len(ZSTD_ENTRY_POINTS):
            raise ValueError(f"ZstdContext needs {len(ZSTD_ENTRY_POINTS)} addresses, got {len(addresses)}")
        for i in range(11):
            a[i] = addresses[i]
            if a[i] == 0:
                raise ValueError(f"no address for {ZSTD_ENTRY_POINTS[i]}")
        self._create_cctx = <_zstd_create_fn>a[0]
        self._free_cctx = <_zstd_free_fn>a[1]
        self._set = <_zstd_set_fn>a[2]
        self._reset = <_zstd_reset_fn>a[3]
        self._stream = <_zstd_stream_fn>a[4]
        self._bound = <_zstd_bound_fn>a[5]
        self._create_dctx = <_zstd_create_fn>a[6]
        self._free_dctx = <_zstd_free_fn>a[7]
        self._decompress = <_zstd_dctx_fn>a[8]
        self._is_error = <_zstd_is_error_fn>a[9]
        self._error_name = <_zstd_error_name_fn>a[10]
        for i in range(2):
            self._cctx[i] = self._create_cctx()
            self._level[i] = _ZSTD_NO_LEVEL
        self._dctx = self._create_dctx()
        if self._cctx[0] == NULL or self._cctx[1] == NULL or self._dctx == NULL:
            raise MemoryError("zstd: cannot create a context")
        for i in range(2):
            self._java_frames(self._cctx[i])
        self._check(self._set(self._cctx[0], _ZSTD_c_stableInBuffer, 1))
        self._check(self._set(self._cctx[0], _ZSTD_c_stableOutBuffer, 1))

    def __dealloc__(self):
        cdef int i
        for i in range(2):
            if self._cctx[i] != NULL:
                self._free_cctx(self._cctx[i])
        if self._dctx != NULL:
            self._free_dctx(self._dctx)

    cdef int _check(self, size_t code) except -1:
        if self._is_error(code):
            raise ValueError(f"zstd: {self._error_name(code).decode('ascii', 'replace')}")
        return 0

    cdef int _java_frames(self, void *cctx) except -1:
        self._check(self._set(cctx, _ZSTD_c_contentSizeFlag, 0))
        self._check(self._set(cctx, _ZSTD_c_checksumFlag, 0))
        self._check(self._set(cctx, _ZSTD_c_dictIDFlag, 0))
        # Libraries before 1.5.7 reject the parameter: they have no pre-splitter to turn off.
        self._set(cctx, _ZSTD_c_blockSplitterLevel, _ZSTD_NO_PRESPLIT)
        return 0

    cdef size_t _frame(self, void *cctx, _ZstdBuffer *out, _ZstdBuffer *inp) noexcept nogil:
        """All of inp in one frame: 0, a libzstd error code, or 1 when the output stopped moving."""
        cdef size_t code = self._reset(cctx, _ZSTD_reset_session_only)
        cdef size_t in_before, out_before
        cdef int op, stalls
        if self._is_error(code):
            return code
        # e_continue until the input is taken, so that the parameters are chosen
        # for an unknown size, as for Java's stream; then flush and end.
        for op in range(3):   # _ZSTD_e_continue, _ZSTD_e_flush, _ZSTD_e_end
            stalls = 0
            while True:
                in_before = inp.pos
                out_before = out.pos
                code = self._stream(cctx, out, inp, op)
                if self._is_error(code):
                    return code
                if (inp.pos == inp.size) if op == _ZSTD_e_continue else code == 0:
                    break
                if inp.pos == in_before and out.pos == out_before:
                    stalls += 1
                    if stalls > 4:   # cannot happen with an output at the bound
                        return 1
        return 0

    def compress(self, data, int level, Py_ssize_t headroom=0, bint stream=False) -> bytes:
        """One frame of ``data`` at ``level``, after ``headroom`` uninitialised bytes.

        ``stream`` compresses through libzstd's input ring buffer, as
        zstd-jni's stream does; without it the input is read in place, which
        finds the same matches as the ring buffer only up to the level's window.
        """
        cdef Py_buffer view
        cdef _ZstdBuffer inp, out
        cdef size_t code = 0, cap
        cdef PyObject *result
        cdef void *cctx = self._cctx[stream]
        if headroom < 0:
            raise ValueError("negative headroom")
        if level != self._level[stream]:
            self._check(self._set(cctx, _ZSTD_c_compressionLevel, level))
            self._level[stream] = level
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            cap = self._bound(<size_t>view.len) + _ZSTD_FRAME_SLACK
            result = _raw_bytes(NULL, headroom + <Py_ssize_t>cap)
            inp.ptr = view.buf
            inp.size = <size_t>view.len
            inp.pos = 0
            out.ptr = _raw_bytes_data(result) + headroom
            out.size = cap
            out.pos = 0
            with nogil:   # zstd takes microseconds even on a small frame
                code = self._frame(cctx, &out, &inp)
            if code != 0:
                Py_DECREF(<object>result)
                if self._is_error(code):
                    self._reset(cctx, _ZSTD_reset_session_only)
                    self._check(code)
                raise ValueError("zstd: the frame did not fit its bound")
            return _bytes_of(result, headroom + <Py_ssize_t>out.pos)
        finally:
            PyBuffer_Release(&view)

    def decompress(self, data, Py_ssize_t capacity) -> bytes:
        """The content of the frames in ``data``, which the caller knows to fit ``capacity`` bytes.

        Raises CorruptCompressedDataError with libzstd's message when they do
        not decode (a content larger than ``capacity`` reads as corrupt: the
        caller's bound comes from the blocks themselves).
        """
        cdef Py_buffer view
        cdef size_t code
        cdef PyObject *result
        cdef char *dst
        if capacity < 0:
            raise ValueError("negative capacity")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            result = _raw_bytes(NULL, capacity)
            dst = _raw_bytes_data(result)
            with nogil:   # zstd takes microseconds even on a small frame
                code = self._decompress(self._dctx, dst, <size_t>capacity,
                                        view.buf, <size_t>view.len)
            if self._is_error(code):
                Py_DECREF(<object>result)
                raise CorruptCompressedDataError(
                    f"zstd: {self._error_name(code).decode('ascii', 'replace')}", position=0)
            return _bytes_of(result, <Py_ssize_t>code)
        finally:
            PyBuffer_Release(&view)
