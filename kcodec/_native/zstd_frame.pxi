# zstd: frame boundaries, window sizes and truncation (ZstdCompression), checked
# before libzstd sees a byte.
# Part of kcodec._native.codecs (included by codecs.pyx).

cdef enum:
    ZS_OK = 0
    ZS_TRUNCATED = 1
    ZS_UNKNOWN = 2
    ZS_WINDOW = 3
    ZS_RESERVED = 4
    ZS_BLOCK = 5
    ZS_EMPTY = 6
    ZS_SIZE = 7


cdef struct _ZsScan:
    int err
    Py_ssize_t pos
    int frames
    int64_t content_size
    int64_t bound
    uint64_t window
    int64_t empty   # empty compressed blocks, which only libzstd's streaming decoder skips


cdef void _zstd_scan(const uint8_t *p, Py_ssize_t n, int window_log_max, _ZsScan *r,
                     uint8_t *fix=NULL) noexcept nogil:
    # ``fix``, a copy of ``p``, gets each empty compressed block rewritten as
    # an empty raw block with the same last-block bit, so that libzstd's
    # one-shot decoder reads what its streaming decoder reads.
    cdef Py_ssize_t pos = 0, fstart
    cdef uint32_t magic, bh, bsize
    cdef uint8_t fhd, wd
    cdef int fcs_flag, did_flag, fcs_len, btype
    cdef bint single, checksum, last
    cdef uint64_t fcs, window, block_max, regenerated_max
    cdef int64_t frame_start_bound
    cdef int i
    r.err = ZS_OK
    r.pos = 0
    r.window = 0
    r.frames = 0
    r.content_size = 0
    r.bound = 0
    r.empty = 0
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
        frame_start_bound = r.bound
        # Block_Maximum_Size: the window, at most 128 KiB.  zstd-jni's stream
        # (ZSTD_decompressContinue) refuses a raw or RLE block that regenerates
        # more; libzstd's one-shot call does not look, so it is checked here.
        block_max = window if window < 131072 else 131072
        regenerated_max = block_max
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
            if btype == 3 or bsize > 131072 or (btype != 2 and bsize > regenerated_max):
                r.err = ZS_BLOCK
                r.pos = pos - 3
                return
            if btype == 2 and bsize == 0:
                # A compressed block holds at least a literals section header:
                # ZSTD_decompressDCtx refuses an empty one, while
                # ZSTD_decompressStream (zstd-jni's ZstdInputStream, so Kafka)
                # steps over it, except in a single-segment frame, which it
                # decodes in one call as ZSTD_decompressDCtx does.
                if single:
                    r.err = ZS_EMPTY
                    r.pos = pos - 3
                    return
                r.empty += 1
                if fix != NULL:
                    fix[pos - 3] = <uint8_t>last
                    fix[pos - 2] = 0
                    fix[pos - 1] = 0
                if last:
                    break
                continue
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
        if fcs_len and fcs > <uint64_t>(r.bound - frame_start_bound):
            # libzstd checks the content size only once the blocks are decoded
            # (and fails with "Data corruption detected"); said now, before a
            # reader sizes its buffer from the claim.
            r.err = ZS_SIZE
            r.pos = fstart
            r.window = fcs
            return
        if checksum:
            if n - pos < 4:
                r.err = ZS_TRUNCATED
                r.pos = fstart
                return
            pos += 4
        r.frames += 1


def zstd_scan(data, int window_log_max=27) -> tuple:
    """Walk zstd frames: ``(frames, total_content_size or -1, output_bound, empty_blocks)``.

    Checks what a streaming decoder would only notice late or never: a frame
    cut short (``Truncated source``), bytes after the last frame that start
    no frame (``Unknown frame descriptor``), and windows above
    ``2**window_log_max`` (zstd-jni's limit: 27, 128 MiB).  Skippable frames
    are stepped over.  The content size is -1 unless every frame declares one;
    ``output_bound`` is the most the blocks can decompress to.  ``empty_blocks``
    counts empty compressed blocks outside single-segment frames, which
    zstd-jni steps over and libzstd's one-shot decoder refuses: decode
    :func:`zstd_without_empty_blocks` of such data (one in a single-segment
    frame is corrupt for both).
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
        return r.frames, (r.content_size if r.frames else 0), r.bound, r.empty
    raise _zstd_scan_error(&r, window_log_max)


cdef object _zstd_scan_error(_ZsScan *r, int window_log_max):
    msg = {
        ZS_TRUNCATED: "Truncated source",
        ZS_UNKNOWN: "Unknown frame descriptor",
        ZS_WINDOW: f"Frame requires too much memory for decoding "
                   f"(window {r.window} bytes, limit {1 << window_log_max})",
        ZS_RESERVED: "Unsupported frame parameter (reserved bit set)",
        ZS_BLOCK: "Corrupted block detected",
        ZS_EMPTY: "Data corruption detected (an empty compressed block in a single-segment frame)",
        ZS_SIZE: f"Data corruption detected (the frame declares {r.window} bytes, more than its blocks hold)",
    }[r.err]
    return _corrupt("zstd", msg, r.pos)


def zstd_without_empty_blocks(data) -> bytes:
    """``data`` with every empty compressed block made an empty raw block (see :func:`zstd_scan`)."""
    cdef Py_buffer view
    cdef _ZsScan r
    cdef PyObject *out
    _get(data, &view)
    try:
        out = _raw_bytes(<const char *>view.buf, view.len)
        _zstd_scan(<const uint8_t *>view.buf, view.len, 62, &r, <uint8_t *>_raw_bytes_data(out))
        if r.err != ZS_OK:
            Py_DECREF(<object>out)
            raise _zstd_scan_error(&r, 62)
        return _bytes_of(out, view.len)
    finally:
        PyBuffer_Release(&view)
