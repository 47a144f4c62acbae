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
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer, PyCapsule_Destructor
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdio cimport snprintf

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_load_be32, kc_load_le32, kc_store_be32
from kcodec._native.primitives cimport kc_bytes_shrink, kc_crc32, kc_store_le32, kc_xxh32
from kcodec._native.native_codec cimport (kcodec_codec_v1, KCODEC_CODEC_CAPSULE_NAME, KCODEC_CODEC_ABI_VERSION,
                                          KCODEC_CODEC_THREAD_SAFE, KCODEC_CODEC_ERROR, KCODEC_CODEC_CORRUPT,
                                          KCODEC_CODEC_DST_TOO_SMALL, KCODEC_CODEC_BAD_LEVEL,
                                          KCODEC_CODEC_BAD_MAGIC, PyThread_type_lock,
                                          PyThread_allocate_lock, PyThread_free_lock, PyThread_acquire_lock,
                                          PyThread_release_lock, WAIT_LOCK)

from kcodec.errors import CorruptCompressedDataError, LimitExceededError

cdef extern from "Python.h":
    object PyMemoryView_FromMemory(char *mem, Py_ssize_t size, int flags)
    int PyBUF_WRITE
    int PyBUF_READ

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
            _le32(o + pos, <uint32_t>chunk | 0x80000000u)
            memcpy(o + pos + 4, src + start, chunk)
            pos += 4 + chunk
        else:
            _le32(o + pos, <uint32_t>written)
            pos += 4 + written
        start += chunk
    _le32(o + pos, 0)
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


cdef struct _Zstd:
    # libzstd's functions, from ZSTD_ENTRY_POINTS
    _zstd_create_fn create_cctx
    _zstd_free_fn free_cctx
    _zstd_set_fn set
    _zstd_reset_fn reset
    _zstd_stream_fn stream
    _zstd_bound_fn bound
    _zstd_create_fn create_dctx
    _zstd_free_fn free_dctx
    _zstd_dctx_fn decompress
    _zstd_is_error_fn is_error
    _zstd_error_name_fn error_name


cdef struct _ZstdCtx:
    # [0]: stable buffers, from the caller's input straight into the result;
    # [1]: libzstd's own input ring buffer, as zstd-jni's stream uses it.
    void *cctx[2]
    int level[2]   # the level set on each, or _ZSTD_NO_LEVEL
    void *dctx
    _ZstdCtx *next   # in a _ZstdCodec's free list


cdef int _zstd_functions(tuple addresses, _Zstd *z) except -1:
    cdef size_t a[11]
    cdef int i
    if len(addresses) != len(ZSTD_ENTRY_POINTS):
        raise ValueError(f"ZstdContext needs {len(ZSTD_ENTRY_POINTS)} addresses, got {len(addresses)}")
    for i in range(11):
        a[i] = addresses[i]
        if a[i] == 0:
            raise ValueError(f"no address for {ZSTD_ENTRY_POINTS[i]}")
    z.create_cctx = <_zstd_create_fn>a[0]
    z.free_cctx = <_zstd_free_fn>a[1]
    z.set = <_zstd_set_fn>a[2]
    z.reset = <_zstd_reset_fn>a[3]
    z.stream = <_zstd_stream_fn>a[4]
    z.bound = <_zstd_bound_fn>a[5]
    z.create_dctx = <_zstd_create_fn>a[6]
    z.free_dctx = <_zstd_free_fn>a[7]
    z.decompress = <_zstd_dctx_fn>a[8]
    z.is_error = <_zstd_is_error_fn>a[9]
    z.error_name = <_zstd_error_name_fn>a[10]
    return 0


cdef size_t _zstd_java_frames(const _Zstd *z, void *cctx) noexcept nogil:
    cdef size_t code = z.set(cctx, _ZSTD_c_contentSizeFlag, 0)
    if not z.is_error(code):
        code = z.set(cctx, _ZSTD_c_checksumFlag, 0)
    if not z.is_error(code):
        code = z.set(cctx, _ZSTD_c_dictIDFlag, 0)
    # Libraries before 1.5.7 reject the parameter: they have no pre-splitter to turn off.
    z.set(cctx, _ZSTD_c_blockSplitterLevel, _ZSTD_NO_PRESPLIT)
    return code


cdef void _zstd_ctx_free(const _Zstd *z, _ZstdCtx *c) noexcept nogil:
    cdef int i
    for i in range(2):
        if c.cctx[i] != NULL:
            z.free_cctx(c.cctx[i])
    if c.dctx != NULL:
        z.free_dctx(c.dctx)
    free(c)


cdef _ZstdCtx *_zstd_ctx_new(const _Zstd *z, size_t *code) noexcept nogil:
    """New contexts set up for Java's frames; NULL on failure (code: a libzstd error, or 0 for memory)."""
    cdef _ZstdCtx *c = <_ZstdCtx *>calloc(1, sizeof(_ZstdCtx))
    cdef int i
    code[0] = 0
    if c == NULL:
        return NULL
    for i in range(2):
        c.cctx[i] = z.create_cctx()
        c.level[i] = _ZSTD_NO_LEVEL
    c.dctx = z.create_dctx()
    if c.cctx[0] == NULL or c.cctx[1] == NULL or c.dctx == NULL:
        _zstd_ctx_free(z, c)
        return NULL
    for i in range(2):
        code[0] = _zstd_java_frames(z, c.cctx[i])
        if z.is_error(code[0]):
            _zstd_ctx_free(z, c)
            return NULL
    code[0] = z.set(c.cctx[0], _ZSTD_c_stableInBuffer, 1)
    if not z.is_error(code[0]):
        code[0] = z.set(c.cctx[0], _ZSTD_c_stableOutBuffer, 1)
    if z.is_error(code[0]):
        _zstd_ctx_free(z, c)
        return NULL
    return c


cdef size_t _zstd_frame(const _Zstd *z, void *cctx, _ZstdBuffer *out, _ZstdBuffer *inp) noexcept nogil:
    """All of inp in one frame: 0, a libzstd error code, or 1 when the output stopped moving."""
    cdef size_t code = z.reset(cctx, _ZSTD_reset_session_only)
    cdef size_t in_before, out_before
    cdef int op, stalls
    if z.is_error(code):
        return code
    # e_continue until the input is taken, so that the parameters are chosen
    # for an unknown size, as for Java's stream; then flush and end.
    for op in range(3):   # _ZSTD_e_continue, _ZSTD_e_flush, _ZSTD_e_end
        stalls = 0
        while True:
            in_before = inp.pos
            out_before = out.pos
            code = z.stream(cctx, out, inp, op)
            if z.is_error(code):
                return code
            if (inp.pos == inp.size) if op == _ZSTD_e_continue else code == 0:
                break
            if inp.pos == in_before and out.pos == out_before:
                stalls += 1
                if stalls > 4:   # cannot happen with an output at the bound
                    return 1
    return 0


cdef size_t _zstd_compress(const _Zstd *z, _ZstdCtx *c, const uint8_t *src, size_t n, uint8_t *dst, size_t cap,
                           int level, bint stream, size_t *written) noexcept nogil:
    """One Java frame of src into dst (cap at least compressBound + _ZSTD_FRAME_SLACK): 0, 1 or an error code."""
    cdef _ZstdBuffer inp, out
    cdef size_t code
    if level != c.level[stream]:
        code = z.set(c.cctx[stream], _ZSTD_c_compressionLevel, level)
        if z.is_error(code):
            return code
        c.level[stream] = level
    inp.ptr = <void *>src
    inp.size = n
    inp.pos = 0
    out.ptr = dst
    out.size = cap
    out.pos = 0
    code = _zstd_frame(z, c.cctx[stream], &out, &inp)
    if z.is_error(code):
        z.reset(c.cctx[stream], _ZSTD_reset_session_only)
    written[0] = out.pos
    return code


cdef class ZstdContext:
    """One thread's libzstd contexts for Kafka's zstd frames; not to be shared between threads.

    ``addresses`` are those of :data:`ZSTD_ENTRY_POINTS`, in that order.
    Frames are written as zstd-jni's stream writes them: no content size,
    checksum or dictionary id, the data flushed as a block, then an empty
    last block, and blocks cut only at 128 KiB (no pre-splitting).
    """
    cdef _Zstd _z
    cdef _ZstdCtx *_c

    def __cinit__(self, tuple addresses):
        cdef size_t code
        _zstd_functions(addresses, &self._z)
        self._c = _zstd_ctx_new(&self._z, &code)
        if self._c == NULL:
            self._check(code)
            raise MemoryError("zstd: cannot create a context")

    def __dealloc__(self):
        if self._c != NULL:
            _zstd_ctx_free(&self._z, self._c)

    cdef int _check(self, size_t code) except -1:
        if self._z.is_error(code):
            raise ValueError(f"zstd: {self._z.error_name(code).decode('ascii', 'replace')}")
        return 0

    def compress(self, data, int level, Py_ssize_t headroom=0, bint stream=False) -> bytes:
        """One frame of ``data`` at ``level``, after ``headroom`` uninitialised bytes.

        ``stream`` compresses through libzstd's input ring buffer, as
        zstd-jni's stream does; without it the input is read in place, which
        finds the same matches as the ring buffer only up to the level's window.
        """
        cdef Py_buffer view
        cdef size_t code = 0, cap, written = 0
        cdef PyObject *result
        cdef uint8_t *dst
        if headroom < 0:
            raise ValueError("negative headroom")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            cap = self._z.bound(<size_t>view.len) + _ZSTD_FRAME_SLACK
            result = _raw_bytes(NULL, headroom + <Py_ssize_t>cap)
            dst = <uint8_t *>_raw_bytes_data(result) + headroom
            with nogil:   # zstd takes microseconds even on a small frame
                code = _zstd_compress(&self._z, self._c, <const uint8_t *>view.buf, <size_t>view.len, dst, cap,
                                      level, stream, &written)
            if code != 0:
                Py_DECREF(<object>result)
                self._check(code)
                raise ValueError("zstd: the frame did not fit its bound")
            return _bytes_of(result, headroom + <Py_ssize_t>written)
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
                code = self._z.decompress(self._c.dctx, dst, <size_t>capacity, view.buf, <size_t>view.len)
            if self._z.is_error(code):
                Py_DECREF(<object>result)
                raise CorruptCompressedDataError(
                    f"zstd: {self._z.error_name(code).decode('ascii', 'replace')}", position=0)
            return _bytes_of(result, <Py_ssize_t>code)
        finally:
            PyBuffer_Release(&view)


# --------------------------------------------------------------------------
# Kafka's codecs behind kcodec/codec.h: the struct each built-in codec's
# native_codec() returns, the same interface a plugin implements.  The
# builder, from_arrow, to_arrow and the readers call these without the GIL.

cdef inline int64_t _fail(int64_t code, char *err, size_t err_cap, const char *message,
                          const char *detail, int64_t at) noexcept nogil:
    # A negative code with its message in err (the caller's, up to err_cap bytes):
    # message, then detail or " at byte <at>" when given.
    if err != NULL and err_cap > 0:
        if detail != NULL:
            snprintf(err, err_cap, "%s%s", message, detail)
        elif at >= 0:
            snprintf(err, err_cap, "%s at byte %lld", message, <long long>at)
        else:
            snprintf(err, err_cap, "%s", message)
    return code


cdef void _free_native(object capsule) noexcept:
    free(PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME))


cdef object _capsule(kcodec_codec_v1 *api, void *state, uint32_t flags, PyCapsule_Destructor destructor):
    api.abi_version = KCODEC_CODEC_ABI_VERSION
    api.flags = flags
    api.state = state
    return PyCapsule_New(api, KCODEC_CODEC_CAPSULE_NAME, destructor)


# -- lz4 ----------------------------------------------------------------------

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


# -- zstd ---------------------------------------------------------------------

cdef struct _ZstdNative:
    kcodec_codec_v1 api
    _Zstd z
    PyThread_type_lock lock   # guards idle
    _ZstdCtx *idle            # contexts no thread is using
    uint8_t window_log[24]    # the window libzstd picks for an unknown size, levels -1..22


cdef enum:
    _ZSTD_DST_TOO_SMALL = 70   # ZSTD_error_dstSize_tooSmall (zstd_errors.h, stable since 1.3)
    _ZSTD_KEPT_MAX = 19

#: Contexts for levels above this one are made for one frame and freed after it, as zstd-jni
#: makes one per batch: for a stream of unknown size their windows of 8-128 MiB take 170 MB
#: (level 20) to 720 MB (22) of tables, which a context kept for reuse would hold for good.
ZSTD_KEPT_CONTEXT_MAX_LEVEL = _ZSTD_KEPT_MAX


cdef _ZstdCtx *_zstd_take(_ZstdNative *st, size_t *code) noexcept nogil:
    cdef _ZstdCtx *c
    PyThread_acquire_lock(st.lock, WAIT_LOCK)
    c = st.idle
    if c != NULL:
        st.idle = c.next
    PyThread_release_lock(st.lock)
    if c == NULL:
        c = _zstd_ctx_new(&st.z, code)
    return c


cdef void _zstd_give(_ZstdNative *st, _ZstdCtx *c) noexcept nogil:
    PyThread_acquire_lock(st.lock, WAIT_LOCK)
    c.next = st.idle
    st.idle = c
    PyThread_release_lock(st.lock)


cdef int64_t _zstd_n_bound(void *state, int64_t n, int level, int magic) noexcept nogil:
    cdef _ZstdNative *st = <_ZstdNative *>state
    return KCODEC_CODEC_ERROR if n < 0 else <int64_t>st.z.bound(<size_t>n) + _ZSTD_FRAME_SLACK


cdef int64_t _zstd_error(_ZstdNative *st, int64_t kind, size_t code, char *err, size_t err_cap) noexcept nogil:
    if code == 0:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "zstd: cannot create a context", NULL, -1)
    if code == 1:
        return _fail(KCODEC_CODEC_ERROR, err, err_cap, "zstd: the frame did not fit its bound", NULL, -1)
    return _fail(kind, err, err_cap, "zstd: ", st.z.error_name(code), -1)


cdef int64_t _zstd_n_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int level,
                              int magic, char *err, size_t err_cap) noexcept nogil:
    cdef _ZstdNative *st = <_ZstdNative *>state
    cdef size_t code = 0, written = 0
    cdef _ZstdCtx *c
    cdef bint stream, kept
    if magic != 2:
        return KCODEC_CODEC_BAD_MAGIC
    if level < -131072 or level > 22:
        return KCODEC_CODEC_BAD_LEVEL
    if cap < _zstd_n_bound(state, n, level, magic):
        return KCODEC_CODEC_DST_TOO_SMALL
    # Beyond the level's window the input streams through libzstd's ring
    # buffer, as zstd-jni's does: in place it would find other matches.
    stream = n > (<int64_t>1 << st.window_log[max(level, -1) + 1])
    kept = level <= _ZSTD_KEPT_MAX
    c = _zstd_take(st, &code) if kept else _zstd_ctx_new(&st.z, &code)
    if c == NULL:
        return _zstd_error(st, KCODEC_CODEC_ERROR, code, err, err_cap)
    code = _zstd_compress(&st.z, c, src, <size_t>n, dst, <size_t>cap, level, stream, &written)
    if kept:
        _zstd_give(st, c)
    else:
        _zstd_ctx_free(&st.z, c)
    if code != 0:
        return _zstd_error(st, KCODEC_CODEC_ERROR, code, err, err_cap)
    return <int64_t>written


cdef int64_t _zstd_n_size(void *state, const uint8_t *src, int64_t n, int magic) noexcept nogil:
    cdef _ZsScan r
    _zstd_scan(src, n, 27, &r)
    if r.err != ZS_OK:
        return -1
    if r.frames == 0:
        return 0
    return r.content_size if r.content_size >= 0 else r.bound


cdef int64_t _zstd_n_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int magic,
                                char *err, size_t err_cap) noexcept nogil:
    cdef _ZstdNative *st = <_ZstdNative *>state
    cdef _ZsScan r
    cdef size_t code = 0
    cdef _ZstdCtx *c
    if magic != 2:
        return KCODEC_CODEC_BAD_MAGIC
    # The frames are walked first, as zstd-jni refuses them: cut short,
    # followed by other bytes, or with a window over 128 MiB.
    _zstd_scan(src, n, 27, &r)
    if r.err != ZS_OK:
        return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "zstd: malformed frame", NULL, r.pos)
    if r.frames == 0:
        return 0
    c = _zstd_take(st, &code)
    if c == NULL:
        return _zstd_error(st, KCODEC_CODEC_ERROR, code, err, err_cap)
    code = st.z.decompress(c.dctx, dst, <size_t>cap, src, <size_t>n)
    _zstd_give(st, c)
    if st.z.is_error(code):
        if code == <size_t>(-_ZSTD_DST_TOO_SMALL):
            return KCODEC_CODEC_DST_TOO_SMALL
        return _zstd_error(st, KCODEC_CODEC_CORRUPT, code, err, err_cap)
    return <int64_t>code


cdef void _free_zstd(object capsule) noexcept:
    cdef _ZstdNative *st = <_ZstdNative *>PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME)
    cdef _ZstdCtx *c
    while st.idle != NULL:
        c = st.idle
        st.idle = c.next
        _zstd_ctx_free(&st.z, c)
    if st.lock != NULL:
        PyThread_free_lock(st.lock)
    free(st)


def zstd_native_codec(tuple addresses, window_logs):
    """The zstd codec's kcodec/codec.h capsule over libzstd (:data:`ZSTD_ENTRY_POINTS`, in order).

    ``window_logs`` are the window logs libzstd picks for a stream of unknown
    size at levels -1..22 (every lower level uses -1's).  Contexts are kept
    in a list that threads take from and give back: thread-safe.
    """
    cdef _ZstdNative *st
    cdef int i
    if len(window_logs) != 24:
        raise ValueError("window_logs holds levels -1..22")
    st = <_ZstdNative *>calloc(1, sizeof(_ZstdNative))
    if st == NULL:
        raise MemoryError()
    try:
        _zstd_functions(addresses, &st.z)
        st.lock = PyThread_allocate_lock()
        if st.lock == NULL:
            raise MemoryError()
        for i in range(24):
            st.window_log[i] = window_logs[i]
    except BaseException:
        if st.lock != NULL:
            PyThread_free_lock(st.lock)
        free(st)
        raise
    st.api.compress_bound = _zstd_n_bound
    st.api.compress = _zstd_n_compress
    st.api.decompressed_size = _zstd_n_size
    st.api.decompress = _zstd_n_decompress
    return _capsule(&st.api, st, KCODEC_CODEC_THREAD_SAFE, _free_zstd)


# -- gzip (zlib) ----------------------------------------------------------------

cdef extern from "zlib.h" nogil:
    ctypedef struct z_stream:
        uint8_t *next_in
        unsigned int avail_in
        unsigned long total_in
        uint8_t *next_out
        unsigned int avail_out
        unsigned long total_out
        const char *msg
    int Z_OK, Z_STREAM_END, Z_BUF_ERROR, Z_NO_FLUSH, Z_FINISH, Z_DEFLATED, Z_DEFAULT_STRATEGY
    int deflateInit2(z_stream *s, int level, int method, int window_bits, int mem_level, int strategy)
    int deflate(z_stream *s, int flush)
    int deflateEnd(z_stream *s)
    int inflateInit2(z_stream *s, int window_bits)
    int inflate(z_stream *s, int flush)
    int inflateReset(z_stream *s)
    int inflateEnd(z_stream *s)

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


def gzip_native_codec():
    """The gzip codec's kcodec/codec.h capsule over zlib (thread-safe: a z_stream per call)."""
    cdef kcodec_codec_v1 *api = <kcodec_codec_v1 *>calloc(1, sizeof(kcodec_codec_v1))
    if api == NULL:
        raise MemoryError()
    api.compress_bound = _gzip_n_bound
    api.compress = _gzip_n_compress
    api.decompressed_size = NULL
    api.decompress = _gzip_n_decompress
    return _capsule(api, NULL, KCODEC_CODEC_THREAD_SAFE, _free_native)


# -- snappy ---------------------------------------------------------------------

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
        if offset >= length:
            memcpy(o + op, o + op - offset, length)
        else:
            for i in range(length):   # an overlapping copy repeats the last `offset` bytes
                o[op + i] = o[op + i - offset]
        op += length
    return op if op == ulen else -1


cdef struct _SnappyNative:
    kcodec_codec_v1 api
    PyObject *compress_into   # the library's block compressor (Python), a strong reference
    int64_t max_block_out


cdef int64_t _snappy_n_bound(void *state, int64_t n, int level, int magic) noexcept nogil:
    cdef _SnappyNative *st = <_SnappyNative *>state
    if n < 0:
        return KCODEC_CODEC_ERROR
    return 16 + ((n + 32767) // 32768) * (4 + st.max_block_out)


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
    # The block compressor is a Python library (cramjam has no C interface): this one takes the GIL.
    cdef _SnappyNative *st = <_SnappyNative *>state
    if cap < _snappy_n_bound(state, n, level, magic):
        return KCODEC_CODEC_DST_TOO_SMALL
    with gil:
        try:
            return _snappy_frame_into(<object>st.compress_into, st.max_block_out, src, n, dst, cap,
                                      _SNAPPY_HEADER, 16, 32768)
        except BaseException as exc:
            message = f"snappy: {exc}".encode("utf-8", "replace")
            return _fail(KCODEC_CODEC_ERROR, err, err_cap, message, NULL, -1)


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
    cdef _SnappyNative *st = <_SnappyNative *>PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME)
    Py_XDECREF(st.compress_into)
    free(st)


def snappy_native_codec(compress_into, Py_ssize_t max_block_out):
    """The snappy codec's kcodec/codec.h capsule: blocks decoded in C without the GIL; blocks
    compressed by ``compress_into(block, out) -> int`` (cramjam), under the GIL."""
    cdef _SnappyNative *st = <_SnappyNative *>calloc(1, sizeof(_SnappyNative))
    if st == NULL:
        raise MemoryError()
    Py_INCREF(compress_into)
    st.compress_into = <PyObject *>compress_into
    st.max_block_out = max_block_out
    st.api.compress_bound = _snappy_n_bound
    st.api.compress = _snappy_n_compress
    st.api.decompressed_size = _snappy_n_size
    st.api.decompress = _snappy_n_decompress
    return _capsule(&st.api, st, KCODEC_CODEC_THREAD_SAFE, _free_snappy)
