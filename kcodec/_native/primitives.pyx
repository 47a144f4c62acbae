# cython: language_level=3, boundscheck=False, wraparound=False
"""CRC-32C, CRC-32 and Kafka's zigzag varints over any contiguous buffer.

Every function accepts an object exporting the buffer protocol (bytes,
bytearray, memoryview, mmap, numpy arrays of any dtype); the bytes are read in
place.  The checksum loops release the GIL.
"""
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_FromStringAndSize
from libc.stdint cimport uint8_t, uint32_t, int32_t, int64_t

from kcodec.errors import CorruptRecordError

cdef int _GIL_THRESHOLD = 4096


def crc32c_backend() -> str:
    """Which CRC-32C implementation runs on long inputs.

    ``"vpclmulqdq"`` (carry-less folding with AVX-512, the CRC instruction
    for inputs under 256 bytes), ``"sse4.2"``, ``"armv8-crc"`` or
    ``"portable"``.  ``KCODEC_CRC_VPCLMUL=0`` in the environment turns the
    first off.
    """
    return kc_crc32c_backend().decode("ascii")


ctypedef uint32_t (*crc_fn)(uint32_t, const uint8_t *, size_t) noexcept nogil


cdef inline uint32_t _crc(object data, uint32_t value, crc_fn fn) except? 0xFFFFFFFF:
    cdef Py_buffer view
    cdef uint32_t out
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if view.len >= _GIL_THRESHOLD:
            with nogil:
                out = fn(value, <const uint8_t *>view.buf, <size_t>view.len)
        else:
            out = fn(value, <const uint8_t *>view.buf, <size_t>view.len)
    finally:
        PyBuffer_Release(&view)
    return out


def crc32c(data, unsigned int value=0) -> int:
    """CRC-32C (Castagnoli) of ``data``, continuing from ``value``.

    ``crc32c(b"123456789") == 0xE3069283``; ``crc32c(b, crc32c(a)) == crc32c(a + b)``.
    """
    return _crc(data, value, kc_crc32c)


def crc32c_portable(data, unsigned int value=0) -> int:
    """CRC-32C computed by the table-driven fallback (for testing the dispatch)."""
    return _crc(data, value, kc_crc32c_portable)


def crc32c_using(backend: str, data, unsigned int value=0) -> int:
    """CRC-32C by one named backend of :func:`crc32c_backends` (for tests and benchmarks).

    ``"vpclmulqdq"`` folds every input of 256 bytes or more (the CRC
    instruction finishes shorter ones and the tail).
    """
    if backend == "portable":
        return _crc(data, value, kc_crc32c_portable)
    if backend in ("sse4.2", "armv8-crc") and backend in _BACKENDS:
        return _crc(data, value, kc_crc32c_sse42)
    if backend == "vpclmulqdq" and kc_crc32c_has_vpclmul():
        return _crc(data, value, kc_crc32c)
    raise ValueError(f"CRC-32C backend {backend!r} is not available here; have {crc32c_backends()}")


def crc32c_copy(data, dst, Py_ssize_t offset=0, unsigned int value=0, bint stream=False) -> int:
    """Copy ``data`` into the writable buffer ``dst`` at ``offset``; its CRC-32C continuing from ``value``.

    The copy the batch builder makes of a large value, the CRC taken on the
    way; ``stream`` lets a long copy bypass the cache (for tests and
    benchmarks).
    """
    cdef Py_buffer view, out_view
    cdef uint32_t out
    PyObject_GetBuffer(dst, &out_view, PyBUF_SIMPLE | PyBUF_WRITABLE)
    try:
        PyObject_GetBuffer(data, &view, PyBUF_SIMPLE)
        try:
            if offset < 0 or offset > out_view.len - view.len:
                raise ValueError(f"{view.len} bytes do not fit in {out_view.len} at {offset}")
            with nogil:
                out = kc_crc32c_copy(value, <uint8_t *>out_view.buf + offset, <const uint8_t *>view.buf,
                                     <size_t>view.len, stream)
        finally:
            PyBuffer_Release(&view)
    finally:
        PyBuffer_Release(&out_view)
    return out


def crc32c_combine(unsigned int crc1, unsigned int crc2, size_t len2) -> int:
    """The CRC-32C of ``a + b`` from ``crc32c(a)``, ``crc32c(b)`` and ``len(b)`` (zlib's crc32_combine)."""
    return kc_crc32c_combine(crc1, crc2, len2)


def crc32c_backends() -> tuple:
    """The CRC-32C backends this CPU can run, fastest first."""
    return _BACKENDS


cdef tuple _find_backends():
    out = []
    if kc_crc32c_has_vpclmul():
        out.append("vpclmulqdq")
    hw = kc_crc32c_backend().decode("ascii")
    if hw in ("sse4.2", "armv8-crc"):
        out.append(hw)
    elif hw == "vpclmulqdq":
        out.append("sse4.2")
    out.append("portable")
    return tuple(out)


cdef tuple _BACKENDS = _find_backends()


def crc32(data, unsigned int value=0) -> int:
    """CRC-32 (IEEE, as ``zlib.crc32``) of ``data``, continuing from ``value``."""
    return _crc(data, value, kc_crc32)


def crc32_portable(data, unsigned int value=0) -> int:
    """CRC-32 computed by the table-driven fallback (for testing the dispatch)."""
    return _crc(data, value, kc_crc32_portable)


def crc32_backend() -> str:
    """Which CRC-32 implementation runs on inputs of 128 bytes or more.

    ``"pclmulqdq"`` (carry-less folding) or ``"portable"``;
    ``KCODEC_CRC32_PCLMUL=0`` in the environment turns the first off.
    """
    return kc_crc32_backend().decode("ascii")


def varint_size(int value) -> int:
    """Bytes the zigzag varint encoding of the int32 ``value`` takes (Kafka ``sizeOfVarint``)."""
    return kc_varint_size(value)


def varlong_size(long long value) -> int:
    """Bytes the zigzag varlong encoding of the int64 ``value`` takes."""
    return kc_varlong_size(value)


def encode_varint(int value) -> bytes:
    """Zigzag varint bytes of an int32 (minimal encoding, as Kafka writes)."""
    cdef uint8_t tmp[5]
    cdef int n = kc_write_varint(tmp, value)
    return PyBytes_FromStringAndSize(<char *>tmp, n)


def encode_varlong(long long value) -> bytes:
    """Zigzag varlong bytes of an int64."""
    cdef uint8_t tmp[10]
    cdef int n = kc_write_varlong(tmp, value)
    return PyBytes_FromStringAndSize(<char *>tmp, n)


cdef _varint_error(int rc, Py_ssize_t pos, str what):
    if rc == KC_VARINT_TRUNCATED:
        raise CorruptRecordError(f"truncated {what} at byte {pos}", position=pos)
    limit = "5th" if what == "varint" else "10th"
    raise CorruptRecordError(
        f"{what} at byte {pos} is too long: the most significant bit in the {limit} byte is set",
        position=pos)


cdef tuple _decode_zigzag(data, Py_ssize_t pos, bint wide):
    """``(value, next_pos)`` of the varint, or with ``wide`` the varlong, at ``pos`` of ``data``."""
    cdef Py_buffer view
    cdef int32_t narrow = 0
    cdef int64_t out = 0
    cdef const uint8_t *start
    cdef const uint8_t *end
    cdef int rc
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        if pos < 0 or pos > view.len:
            raise IndexError(f"position {pos} outside a buffer of {view.len} bytes")
        start, end = <const uint8_t *>view.buf + pos, <const uint8_t *>view.buf + view.len
        if wide:
            rc = kc_read_varlong(start, end, &out)
        else:
            rc = kc_read_varint(start, end, &narrow)
            out = narrow
    finally:
        PyBuffer_Release(&view)
    if rc < 0:
        _varint_error(rc, pos, "varlong" if wide else "varint")
    return out, pos + rc


def decode_varint(data, Py_ssize_t pos=0) -> tuple:
    """Decode a zigzag varint at ``pos``; returns ``(value, next_pos)``.

    Kafka's rules: over-long encodings are accepted, only the low 4 bits of a
    5th byte count, a continuation bit on the 5th byte raises.
    """
    return _decode_zigzag(data, pos, False)


def decode_varlong(data, Py_ssize_t pos=0) -> tuple:
    """Decode a zigzag varlong at ``pos``; returns ``(value, next_pos)``."""
    return _decode_zigzag(data, pos, True)
