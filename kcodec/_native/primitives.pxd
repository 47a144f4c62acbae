# cython: language_level=3
# C-level declarations shared by kcodec's Cython modules (``cimport``).
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int32_t, int64_t

cdef extern from "Python.h":
    # A new bytes object as a raw pointer, for results filled and then shrunk
    # (with _PyBytes_Resize) before anyone else holds them.
    PyObject *_raw_bytes "PyBytes_FromStringAndSize"(const char *v, Py_ssize_t size) except NULL
    char *_raw_bytes_data "PyBytes_AS_STRING"(PyObject *b)

cdef extern from "kc_pybytes.h":
    # a new bytes object shrunk to n bytes (see the header)
    int kc_bytes_shrink(PyObject **b, Py_ssize_t n) except -1

cdef extern from "kc_crc.h" nogil:
    uint32_t kc_crc32c(uint32_t crc, const uint8_t *buf, size_t len)
    uint32_t kc_crc32c_portable(uint32_t crc, const uint8_t *buf, size_t len)
    uint32_t kc_crc32(uint32_t crc, const uint8_t *buf, size_t len)
    uint32_t kc_crc32c_sse42(uint32_t crc, const uint8_t *buf, size_t len)
    int kc_crc32c_has_vpclmul()
    const char *kc_crc32c_backend()

cdef extern from "kc_varint.h" nogil:
    int KC_VARINT_TRUNCATED
    int KC_VARINT_TOO_LONG
    int kc_varint_size(int32_t v)
    int kc_varlong_size(int64_t v)
    int kc_write_varint(uint8_t *p, int32_t v)
    int kc_write_varlong(uint8_t *p, int64_t v)
    int kc_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
    int kc_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)

cdef extern from "kc_endian.h" nogil:
    uint16_t kc_load_be16(const uint8_t *p)
    uint32_t kc_load_be32(const uint8_t *p)
    uint64_t kc_load_be64(const uint8_t *p)
    void kc_store_be16(uint8_t *p, uint16_t v)
    void kc_store_be32(uint8_t *p, uint32_t v)
    void kc_store_be64(uint8_t *p, uint64_t v)
    uint32_t kc_load_le32(const uint8_t *p)
    void kc_store_le32(uint8_t *p, uint32_t v)
