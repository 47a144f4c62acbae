# What every codec's framing uses: XXH32, new bytes filled in place, block
# tables built without the GIL, the corrupt-data error, and the plumbing of the
# kcodec/codec.h capsules.
# Part of kcodec._native.codecs (included by codecs.pyx).

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


cdef object _bytes_of(PyObject *out, Py_ssize_t n):
    """The new bytes object ``out``, whose only reference the caller hands over, shrunk to ``n`` bytes."""
    kc_bytes_shrink(&out, n)  # on failure the object is freed and the error raised
    result = <object>out
    Py_DECREF(result)
    return result


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
