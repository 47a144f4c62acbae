# zstd through libzstd's entry points: compression contexts, frames written and
# read in place, and the zstd codec's kcodec/codec.h capsule.
# Part of kcodec._native.codecs (included by codecs.pyx).

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

    def decompress(self, data, Py_ssize_t capacity, bint or_none=False):
        """The content of the frames in ``data``, which the caller knows to fit ``capacity`` bytes.

        Raises CorruptCompressedDataError with libzstd's message when they do
        not decode (a content larger than ``capacity`` reads as corrupt: the
        caller's bound comes from the blocks themselves), or with ``or_none``
        returns None when the content is larger than ``capacity``.
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
                if or_none and code == <size_t>(-_ZSTD_DST_TOO_SMALL):
                    return None
                raise CorruptCompressedDataError(
                    f"zstd: {self._z.error_name(code).decode('ascii', 'replace')}", position=0)
            return _bytes_of(result, <Py_ssize_t>code)
        finally:
            PyBuffer_Release(&view)


# -- the zstd capsule ----------------------------------------------------------

cdef struct _ZstdNative:
    kcodec_codec_v1 api
    _Zstd z
    PyThread_type_lock lock   # guards idle
    _ZstdCtx *idle            # contexts no thread is using
    uint8_t window_log[24]    # the window libzstd picks for an unknown size, levels -1..22


cdef enum:
    _ZSTD_DST_TOO_SMALL = 70   # ZSTD_error_dstSize_tooSmall (zstd_errors.h, stable since 1.3)
    _ZSTD_FIRST_GUESS = 65536  # the smallest first buffer for frames that declare no content size
    _ZSTD_FIRST_RATIO = 256    # its size per compressed byte: above most Kafka batches' ratios
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
    if r.content_size >= 0:
        return r.content_size   # declared, and no more than the blocks can hold (_zstd_scan)
    # Without a declared size, the blocks' bound counts 128 KiB for each
    # compressed block, however short: a few hundred corrupt bytes would ask
    # for megabytes.  Start from what the input can plausibly hold; a reader
    # grows its buffer when libzstd says it is too small.
    return min(r.bound, max(<int64_t>_ZSTD_FIRST_GUESS, _ZSTD_FIRST_RATIO * <int64_t>n))


cdef int64_t _zstd_n_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap, int magic,
                                char *err, size_t err_cap) noexcept nogil:
    cdef _ZstdNative *st = <_ZstdNative *>state
    cdef _ZsScan r
    cdef size_t code = 0
    cdef _ZstdCtx *c
    cdef uint8_t *fixed = NULL
    if magic != 2:
        return KCODEC_CODEC_BAD_MAGIC
    # The frames are walked first, as zstd-jni refuses them: cut short,
    # followed by other bytes, or with a window over 128 MiB.
    _zstd_scan(src, n, 27, &r)
    if r.err != ZS_OK:
        return _fail(KCODEC_CODEC_CORRUPT, err, err_cap, "zstd: malformed frame", NULL, r.pos)
    if r.frames == 0:
        return 0
    if r.empty:
        # zstd-jni steps over empty compressed blocks; ZSTD_decompressDCtx
        # would not, so it reads a copy where they are empty raw blocks.
        fixed = <uint8_t *>malloc(<size_t>n)
        if fixed == NULL:
            return _fail(KCODEC_CODEC_ERROR, err, err_cap, "zstd: out of memory", NULL, -1)
        memcpy(fixed, src, <size_t>n)
        _zstd_scan(src, n, 27, &r, fixed)
        src = fixed
    c = _zstd_take(st, &code)
    if c == NULL:
        free(fixed)
        return _zstd_error(st, KCODEC_CODEC_ERROR, code, err, err_cap)
    code = st.z.decompress(c.dctx, dst, <size_t>cap, src, <size_t>n)
    _zstd_give(st, c)
    free(fixed)
    if st.z.is_error(code):
        # Into room for the blocks' bound, libzstd's "too small" is a corrupt block's claim (a
        # sequence longer than a block can hold): a reader growing its buffer on it would grow
        # to its limit without ever decoding more.
        if code == <size_t>(-_ZSTD_DST_TOO_SMALL) and cap < r.bound:
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
