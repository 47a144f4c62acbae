# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""kcodec's side of kcodec/codec.h: a codec's native functions called without the GIL.

:func:`native_of` gives the :class:`NativeCodec` of a codec object whose
``native_codec()`` returns a capsule, or None for a codec that works through
its Python methods only.  The builder, ``from_arrow``, ``to_arrow`` and the
readers take this one path for every codec, built-in or plugin.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_GetPointer, PyCapsule_IsValid
from cpython.ref cimport Py_DECREF
from libc.stdint cimport uint8_t, int64_t

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_bytes_shrink

import threading
import weakref

from kcodec.errors import CorruptCompressedDataError, KcodecError, LimitExceededError, UnsupportedCodecError

cdef enum:
    _ERR_CAP = 256
    _FIRST_GUESS_MIN = 65536

#: codec object -> its NativeCodec, or False for a Python-only codec
_known = weakref.WeakKeyDictionary()
# Made under a lock: two NativeCodecs of one codec would each have their own
# lock, and a codec that is not thread-safe would then run on two threads.
_making = threading.Lock()


# The answers of _known again, by id(codec) with a weak reference that tells whether the object
# at that address is still the one asked about: the readers and the builder ask once per batch,
# and WeakKeyDictionary.get runs Python code (about a microsecond) where this is two C calls.
cdef dict _by_address = {}


cdef void _remember(object codec, object found):
    key = id(codec)
    try:
        ref = weakref.ref(codec, lambda r, key=key: _forget(key, r))
    except TypeError:
        return
    _by_address[key] = (ref, found)


def _forget(key, ref):
    # The codec has died: its address may be reused, by an object that is not it.
    entry = _by_address.get(key)
    if entry is not None and entry[0] is ref:
        del _by_address[key]


cpdef NativeCodec native_of(object codec):
    """The NativeCodec of ``codec``, made once per codec object; None when it has no capsule."""
    entry = _by_address.get(id(codec))
    if entry is not None and (<tuple>entry)[0]() is codec:
        found = (<tuple>entry)[1]
        return found if found is not False else None
    try:
        found = _known.get(codec)
    except TypeError:  # not weakly referenceable or not hashable: asked every time
        found = None
    if found is None:
        with _making:
            try:
                found = _known.get(codec)
            except TypeError:
                found = None
            if found is None:
                capsule = codec.native_codec()
                found = False if capsule is None else NativeCodec(capsule, codec)
                try:
                    _known[codec] = found
                except TypeError:
                    pass
    _remember(codec, found)
    return found if found is not False else None


cdef class NativeCodec:
    """A codec's kcodec_codec_v1 (``native_codec()``), called without the GIL.

    Codecs whose struct does not declare KCODEC_CODEC_THREAD_SAFE are called
    by one thread at a time.
    """

    def __cinit__(self, capsule, codec):
        if not PyCapsule_IsValid(capsule, KCODEC_CODEC_CAPSULE_NAME):
            raise UnsupportedCodecError(
                f"{codec!r}.native_codec() must return a PyCapsule named {KCODEC_CODEC_CAPSULE_NAME.decode()!r}")
        self.api = <const kcodec_codec_v1 *>PyCapsule_GetPointer(capsule, KCODEC_CODEC_CAPSULE_NAME)
        if self.api.abi_version != <uint32_t>KCODEC_CODEC_ABI_VERSION:
            raise UnsupportedCodecError(
                f"{codec!r} implements kcodec/codec.h version {self.api.abi_version}; "
                f"this kcodec reads version {KCODEC_CODEC_ABI_VERSION}")
        if self.api.compress_bound == NULL or self.api.compress == NULL or self.api.decompress == NULL:
            raise UnsupportedCodecError(f"{codec!r}: its kcodec_codec_v1 lacks a required function")
        self.capsule = capsule  # keeps the struct and its state alive
        # Weakly: native_of caches this object as the codec's value in a
        # WeakKeyDictionary, where a strong reference back would keep every
        # codec (and the contexts its capsule holds) alive for good.
        try:
            self.codec = weakref.ref(codec)
        except TypeError:  # not weakly referenceable: then never cached either
            self.codec = lambda codec=codec: codec
        self.name = getattr(codec, "name", "") or "codec"
        self.thread_safe = (self.api.flags & KCODEC_CODEC_THREAD_SAFE) != 0
        self.lock = NULL
        if not self.thread_safe:
            self.lock = PyThread_allocate_lock()
            if self.lock == NULL:
                raise MemoryError()

    def __dealloc__(self):
        if self.lock != NULL:
            PyThread_free_lock(self.lock)

    cdef object _error(self, int64_t code, const char *err, bint compressing):
        message = err[:len(err)].decode("utf-8", "replace") if err[0] else ""
        if code == KCODEC_CODEC_BAD_LEVEL:
            return UnsupportedCodecError(message or f"{self.name}: level not supported")
        if code == KCODEC_CODEC_BAD_MAGIC:
            return UnsupportedCodecError(message or f"{self.name} compression is not supported for this magic")
        if code == KCODEC_CODEC_CORRUPT or (not compressing and code < 0):
            return CorruptCompressedDataError(message or f"{self.name}: corrupt compressed data")
        if code == KCODEC_CODEC_DST_TOO_SMALL:
            return KcodecError(f"{self.name}: the compressed data exceeded the codec's own bound")
        return KcodecError(message or f"{self.name}: compression failed (code {code})")

    cdef object compress_after(self, const uint8_t *src, Py_ssize_t n, int level, int magic, Py_ssize_t headroom):
        """A new bytes object: ``headroom`` uninitialised bytes, then the compressed frame."""
        cdef int64_t bound, written
        cdef char err[_ERR_CAP]
        cdef PyObject *out
        cdef uint8_t *dst
        err[0] = 0
        with nogil:
            bound = self.api.compress_bound(self.api.state, n, level, magic)
        if bound < 0:
            raise self._error(bound, err, True)
        out = _raw_bytes(NULL, headroom + bound)
        dst = <uint8_t *>_raw_bytes_data(out) + headroom
        with nogil:
            written = self.call_compress(src, n, dst, bound, level, magic, err, _ERR_CAP)
        if written < 0 or written > bound:
            Py_DECREF(<object>out)
            raise self._error(written if written < 0 else KCODEC_CODEC_DST_TOO_SMALL, err, True)
        kc_bytes_shrink(&out, headroom + written)
        result = <object>out
        Py_DECREF(result)
        return result

    cdef int64_t call_compress(self, const uint8_t *src, Py_ssize_t n, uint8_t *dst, Py_ssize_t cap, int level,
                               int magic, char *err, size_t err_cap) noexcept nogil:
        cdef int64_t written
        if self.lock != NULL:
            PyThread_acquire_lock(self.lock, WAIT_LOCK)
        written = self.api.compress(self.api.state, src, n, dst, cap, level, magic, err, err_cap)
        if self.lock != NULL:
            PyThread_release_lock(self.lock)
        return written

    cdef int64_t call_decompress(self, const uint8_t *src, Py_ssize_t n, uint8_t *dst, Py_ssize_t cap,
                                 int magic, char *err, size_t err_cap) noexcept nogil:
        cdef int64_t got
        if self.lock != NULL:
            PyThread_acquire_lock(self.lock, WAIT_LOCK)
        got = self.api.decompress(self.api.state, src, n, dst, cap, magic, err, err_cap)
        if self.lock != NULL:
            PyThread_release_lock(self.lock)
        if got > cap:
            return KCODEC_CODEC_ERROR
        return got

    cdef object decompress_buffer(self, object data, int magic, int64_t max_size, object pool=None):
        """The decompressed ``data`` as bytes, at most ``max_size`` of them; with a
        :class:`~kcodec.records.BufferPool`, ``(bytearray from the pool, size)`` instead.

        The output starts at the codec's size hint (or four times the input)
        and grows while the codec answers DST_TOO_SMALL, up to ``max_size``.
        On any failure the codec's Python ``decompress`` is asked for its
        error, which names the byte; the native message stands if it has none.
        """
        cdef Py_buffer view
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            return self.decompress_at(<const uint8_t *>view.buf, view.len, magic, max_size, pool, data, -1)
        finally:
            PyBuffer_Release(&view)

    cdef object decompress_at(self, const uint8_t *src, Py_ssize_t n, int magic, int64_t max_size, object pool,
                              object owner, Py_ssize_t start):
        """decompress_buffer of the ``n`` bytes at ``src``, which the caller holds: ``owner[start:start + n]``
        (``owner`` itself when ``start`` < 0), viewed only to report an error."""
        cdef int64_t guess = -1, cap, room, got = 0
        cdef char err[_ERR_CAP]
        cdef PyObject *out = NULL
        cdef uint8_t *dst
        store = None
        err[0] = 0
        if self.api.decompressed_size != NULL:
            with nogil:
                guess = self.api.decompressed_size(self.api.state, src, n, magic)
        cap = guess if guess >= 0 else max(4 * <int64_t>n, <int64_t>_FIRST_GUESS_MIN)
        cap = min(cap, max_size)
        while True:
            if pool is None:
                out = _raw_bytes(NULL, cap)
                dst = <uint8_t *>_raw_bytes_data(out)
                room = cap
            else:
                store = pool.get(cap)
                dst = <uint8_t *>PyByteArray_AS_STRING(store)
                room = min(<int64_t>PyByteArray_GET_SIZE(store), max_size)
            with nogil:
                got = self.call_decompress(src, n, dst, room, magic, err, _ERR_CAP)
            if got >= 0:
                break
            if pool is None:
                Py_DECREF(<object>out)
                out = NULL
            else:
                pool.put(store)
            if got != KCODEC_CODEC_DST_TOO_SMALL or room >= max_size:
                break
            cap = min(max(room * 4, <int64_t>_FIRST_GUESS_MIN), max_size)
        if got < 0:
            self._decompress_failed(got, err, owner if start < 0 else memoryview(owner).cast("B")[start:start + n],
                                    magic, max_size)
        if pool is not None:
            return store, got
        kc_bytes_shrink(&out, got)
        result = <object>out
        Py_DECREF(result)
        return result

    cdef int _decompress_failed(self, int64_t code, const char *err, data, int magic, int64_t max_size) except -1:
        # The Python method's error (it names the byte) where it has one, else
        # the native one; a Python method that itself calls this object is not asked again.
        codec = self.codec()
        if codec is not None and not self.explaining:
            self.explaining = True
            try:
                codec.decompress(data, magic=magic, max_size=max_size)
            finally:
                self.explaining = False
        if code == KCODEC_CODEC_DST_TOO_SMALL:
            raise LimitExceededError(f"{self.name}: decompressed data exceeds the limit of {max_size} bytes")
        raise self._error(code, err, False)

    # -- Python entry points (the codecs' own methods use these) ---------------
    def compress(self, data, int level, int magic=2, Py_ssize_t headroom=0) -> bytes:
        """``headroom`` uninitialised bytes, then ``data`` compressed in the codec's framing for ``magic``."""
        cdef Py_buffer view
        if headroom < 0:
            raise ValueError("negative headroom")
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            return self.compress_after(<const uint8_t *>view.buf, view.len, level, magic, headroom)
        finally:
            PyBuffer_Release(&view)

    def compress_into(self, data, out, int level, int magic=2, Py_ssize_t headroom=0) -> int:
        """Compress ``data`` into ``out[headroom:]`` (writable); the bytes written."""
        cdef int64_t room, written
        cdef char err[_ERR_CAP]
        err[0] = 0
        written = self._call_into(True, data, out, headroom, level, magic, err, &room)
        if written == KCODEC_CODEC_DST_TOO_SMALL:
            raise LimitExceededError(f"{self.name}: the output buffer is too small for the compressed data")
        if written < 0:
            raise self._error(written, err, True)
        return written

    def compress_bound(self, Py_ssize_t size, int level, int magic=2) -> int:
        cdef char err[1]
        err[0] = 0
        cdef int64_t bound = self.api.compress_bound(self.api.state, size, level, magic)
        if bound < 0:
            raise self._error(bound, err, True)
        return bound

    def decompress(self, data, int magic=2, int64_t max_size=256 * 1024 * 1024) -> bytes:
        return self.decompress_buffer(data, magic, max_size)

    def decompress_into(self, data, out, int magic=2) -> int:
        """Decompress ``data`` into the writable ``out``, whose size is the limit; the bytes written."""
        cdef int64_t room, got
        cdef char err[_ERR_CAP]
        err[0] = 0
        got = self._call_into(False, data, out, 0, 0, magic, err, &room)
        if got < 0:
            self._decompress_failed(got, err, data, magic, room)
        return got

    cdef int64_t _call_into(self, bint compressing, data, out, Py_ssize_t headroom, int level, int magic,
                            char *err, int64_t *room) except? -1:
        """One call of the codec from ``data`` into the writable ``out[headroom:]``, whose size (set in
        ``room``) is the limit: the bytes written, or a negative KCODEC_CODEC_* code."""
        cdef Py_buffer src, dst
        cdef int64_t got
        PyObject_GetBuffer(out, &dst, PyBUF_SIMPLE | PyBUF_WRITABLE)
        try:
            if headroom < 0 or headroom > dst.len:
                raise ValueError(f"headroom {headroom} is outside the {dst.len}-byte output")
            room[0] = dst.len - headroom
            PyObject_GetBuffer(data, &src, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
            try:
                with nogil:
                    if compressing:
                        got = self.call_compress(<const uint8_t *>src.buf, src.len, <uint8_t *>dst.buf + headroom,
                                                 room[0], level, magic, err, _ERR_CAP)
                    else:
                        got = self.call_decompress(<const uint8_t *>src.buf, src.len, <uint8_t *>dst.buf + headroom,
                                                   room[0], magic, err, _ERR_CAP)
            finally:
                PyBuffer_Release(&src)
        finally:
            PyBuffer_Release(&dst)
        return got
