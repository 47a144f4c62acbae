# cython: language_level=3
# C-level declarations shared by kcodec's Cython modules (``cimport``).
from cpython.object cimport PyObject
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int8_t, int16_t, int32_t, int64_t

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

cdef extern from "kc_batch.h" nogil:
    int KC_BATCH_BASE_OFFSET, KC_BATCH_LENGTH, KC_BATCH_PARTITION_LEADER_EPOCH, KC_BATCH_MAGIC, KC_BATCH_CRC
    int KC_BATCH_ATTRIBUTES, KC_BATCH_LAST_OFFSET_DELTA, KC_BATCH_BASE_TIMESTAMP, KC_BATCH_MAX_TIMESTAMP
    int KC_BATCH_PRODUCER_ID, KC_BATCH_PRODUCER_EPOCH, KC_BATCH_BASE_SEQUENCE, KC_BATCH_RECORDS_COUNT
    int KC_BATCH_OVERHEAD, KC_BATCH_LOG_OVERHEAD
    int KC_BATCH_COMPRESSION_MASK, KC_BATCH_TIMESTAMP_TYPE, KC_BATCH_TRANSACTIONAL, KC_BATCH_CONTROL
    int KC_BATCH_DELETE_HORIZON
    ctypedef struct kc_batch_header_t:
        int64_t base_offset
        int32_t length
        int32_t partition_leader_epoch
        int8_t magic
        uint32_t crc
        int16_t attributes
        int32_t last_offset_delta
        int64_t base_timestamp
        int64_t max_timestamp
        int64_t producer_id
        int16_t producer_epoch
        int32_t base_sequence
        int32_t records_count
    void kc_batch_read(const uint8_t *p, kc_batch_header_t *h)
    uint32_t kc_batch_checksum(const uint8_t *p, size_t size)
    void kc_batch_seal(uint8_t *p, size_t size)
    void kc_batch_write(uint8_t *p, size_t size, int64_t base_offset, int32_t partition_leader_epoch,
                        int16_t attributes, int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                        int64_t producer_id, int16_t producer_epoch, int32_t base_sequence, int32_t records_count)

cdef extern from "kc_message.h" nogil:
    int KC_MSG_LOG_OVERHEAD, KC_MSG_CRC, KC_MSG_MAGIC, KC_MSG_ATTRIBUTES, KC_MSG_TIMESTAMP
    int KC_MSG_HEADER_SIZE_V0, KC_MSG_HEADER_SIZE_V1, KC_MSG_OVERHEAD_V0
    int KC_MSG_COMPRESSION_MASK, KC_MSG_TIMESTAMP_TYPE
    size_t kc_message_header_size(uint8_t magic)
    uint32_t kc_message_checksum(const uint8_t *m, size_t size)
    void kc_message_seal(uint8_t *m, size_t size)
