# cython: language_level=3
# kcodec/codec.h (the native codec interface, version 1) and kcodec's caller of it.
from libc.stdint cimport uint8_t, uint32_t, int64_t

cdef extern from "pythread.h":
    ctypedef void *PyThread_type_lock
    PyThread_type_lock PyThread_allocate_lock()
    void PyThread_free_lock(PyThread_type_lock lock)
    int PyThread_acquire_lock(PyThread_type_lock lock, int wait) nogil
    void PyThread_release_lock(PyThread_type_lock lock) nogil
    int WAIT_LOCK

cdef extern from "kcodec/codec.h" nogil:
    const char *KCODEC_CODEC_CAPSULE_NAME
    int KCODEC_CODEC_ABI_VERSION
    unsigned int KCODEC_CODEC_THREAD_SAFE
    int KCODEC_CODEC_ERROR
    int KCODEC_CODEC_CORRUPT
    int KCODEC_CODEC_DST_TOO_SMALL
    int KCODEC_CODEC_BAD_LEVEL
    int KCODEC_CODEC_BAD_MAGIC
    ctypedef struct kcodec_codec_v1:
        uint32_t abi_version
        uint32_t flags
        void *state
        int64_t (*compress_bound)(void *state, int64_t src_len, int level, int magic) noexcept nogil
        int64_t (*compress)(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                            int level, int magic, char *err, size_t err_cap) noexcept nogil
        int64_t (*decompressed_size)(void *state, const uint8_t *src, int64_t src_len, int magic) noexcept nogil
        int64_t (*decompress)(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                              int magic, char *err, size_t err_cap) noexcept nogil


cdef class NativeCodec:
    cdef object capsule
    cdef object codec  # a callable giving the codec: a weak reference where it can be one
    cdef const kcodec_codec_v1 *api
    cdef PyThread_type_lock lock
    cdef readonly str name
    cdef readonly bint thread_safe
    cdef bint explaining

    cdef object _error(self, int64_t code, const char *err, bint compressing)
    cdef int _decompress_failed(self, int64_t code, const char *err, data, int magic, int64_t max_size) except -1
    cdef int64_t _call_into(self, bint compressing, data, out, Py_ssize_t headroom, int level, int magic,
                            char *err, int64_t *room) except? -1

    cdef object compress_after(self, const uint8_t *src, Py_ssize_t n, int level, int magic, Py_ssize_t headroom)
    cdef object decompress_buffer(self, object data, int magic, int64_t max_size, object pool=*)
    cdef object decompress_at(self, const uint8_t *src, Py_ssize_t n, int magic, int64_t max_size, object pool,
                              object owner, Py_ssize_t start)
    cdef int64_t call_compress(self, const uint8_t *src, Py_ssize_t n, uint8_t *dst, Py_ssize_t cap, int level,
                               int magic, char *err, size_t err_cap) noexcept nogil
    cdef int64_t call_decompress(self, const uint8_t *src, Py_ssize_t n, uint8_t *dst, Py_ssize_t cap,
                                 int magic, char *err, size_t err_cap) noexcept nogil


cpdef NativeCodec native_of(object codec)
