# cython: language_level=3
# C-level declarations shared by kcodec's Cython modules (``cimport``): the csrc/ headers
# several modules read, each declared here once.  A header only one module reads is declared
# in that module's own .pxd (records.pxd), so the others do not include it.
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
    uint32_t kc_crc32_portable(uint32_t crc, const uint8_t *buf, size_t len)
    const char *kc_crc32_backend()
    uint32_t kc_crc32c_sse42(uint32_t crc, const uint8_t *buf, size_t len)
    int kc_crc32c_has_vpclmul()
    uint32_t kc_crc32c_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t len, int stream)
    uint32_t kc_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2)
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
    enum:  # compile-time constants (KC_BATCH_OVERHEAD sizes arrays)
        KC_BATCH_BASE_OFFSET, KC_BATCH_LENGTH, KC_BATCH_PARTITION_LEADER_EPOCH, KC_BATCH_MAGIC, KC_BATCH_CRC
        KC_BATCH_ATTRIBUTES, KC_BATCH_LAST_OFFSET_DELTA, KC_BATCH_BASE_TIMESTAMP, KC_BATCH_MAX_TIMESTAMP
        KC_BATCH_PRODUCER_ID, KC_BATCH_PRODUCER_EPOCH, KC_BATCH_BASE_SEQUENCE, KC_BATCH_RECORDS_COUNT
        KC_BATCH_OVERHEAD, KC_BATCH_LOG_OVERHEAD
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
    void kc_batch_seal_from(uint8_t *p, size_t size, uint32_t records_crc, size_t records_done)
    void kc_batch_write_fields(uint8_t *p, size_t size, int64_t base_offset, int32_t partition_leader_epoch,
                               int16_t attributes, int32_t last_offset_delta, int64_t base_timestamp,
                               int64_t max_timestamp, int64_t producer_id, int16_t producer_epoch,
                               int32_t base_sequence, int32_t records_count)
    void kc_batch_write(uint8_t *p, size_t size, int64_t base_offset, int32_t partition_leader_epoch,
                        int16_t attributes, int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                        int64_t producer_id, int16_t producer_epoch, int32_t base_sequence, int32_t records_count)

cdef extern from "kc_message.h" nogil:
    int KC_MSG_LOG_OVERHEAD, KC_MSG_CRC, KC_MSG_MAGIC, KC_MSG_ATTRIBUTES, KC_MSG_TIMESTAMP
    int KC_MSG_HEADER_SIZE_V0, KC_MSG_HEADER_SIZE_V1, KC_MSG_OVERHEAD_V0, KC_MSG_OVERHEAD_V1
    int KC_MSG_COMPRESSION_MASK, KC_MSG_TIMESTAMP_TYPE
    size_t kc_message_header_size(uint8_t magic)
    size_t kc_message_overhead(uint8_t magic)
    uint32_t kc_message_checksum(const uint8_t *m, size_t size)
    void kc_message_seal(uint8_t *m, size_t size)

cdef extern from "kc_walk.h" nogil:
    int KC_ENTRY_OFFSET, KC_ENTRY_SIZE, KC_ENTRY_MAGIC, KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC, KC_ENTRY_MIN_SIZE
    int KC_ENTRY_MAGIC_V2, KC_ENTRY_UNREAD
    ctypedef enum kc_entry_kind_t:
        KC_ENTRY_END, KC_ENTRY_PARTIAL, KC_ENTRY_BATCH, KC_ENTRY_MESSAGE, KC_ENTRY_BAD_SIZE, KC_ENTRY_BAD_MAGIC
    ctypedef struct kc_entry_t:
        int64_t pos
        int64_t remaining
        int64_t need
        int32_t size
        int64_t total
        int magic
        int64_t next
    int64_t kc_entry_total(const uint8_t *p)
    kc_entry_kind_t kc_walk_step(const uint8_t *buf, int64_t len, int64_t pos, kc_entry_t *e)
    int kc_walk_v2(const uint8_t *buf, int64_t len, int64_t pos, kc_entry_t *e)

cdef extern from "kc_record.h" nogil:
    int KC_REC_OK, KC_REC_STRUCTURE, KC_REC_SHORT, KC_REC_NEG_HEADERS, KC_REC_MANY_HEADERS
    int KC_REC_NEG_HKEY, KC_REC_SIZE_MISMATCH, KC_REC_EOF, KC_REC_STREAM_SHORT
    int KC_MIN_RECORD_SIZE
    int64_t kc_add_i64(int64_t a, int64_t b)
    ctypedef struct kc_record_t:
        int32_t length
        int32_t consumed
        int32_t header_count
        int32_t bad_value
        int8_t attributes
        int64_t timestamp_delta
        int32_t offset_delta
        int32_t key_len
        int32_t value_len
        const uint8_t *key
        const uint8_t *value
        const uint8_t *headers_start
        const uint8_t *end
    ctypedef struct kc_header_t:
        int32_t key_len
        int32_t value_len
        int32_t bad_value
        const uint8_t *key
        const uint8_t *value
    const char *kc_record_error_message(int code)
    int64_t kc_parse_record(const uint8_t *p, const uint8_t *end, kc_record_t *r)
    int64_t kc_parse_record_stream(const uint8_t *p, const uint8_t *end, kc_record_t *r)
    int64_t kc_parse_record_from(const uint8_t *p, const uint8_t *end, int stream, kc_record_t *r)
    int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h)
    int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta, int32_t key_len,
                                int32_t value_len, int32_t header_count, int64_t headers_size)
    int64_t kc_record_size(int64_t body_size)
    int64_t kc_header_size(int32_t key_len, int32_t value_len)
    int64_t kc_write_record_sized(uint8_t *p, int64_t body_size, int64_t timestamp_delta,
                                  int32_t offset_delta, const uint8_t *key, int32_t key_len,
                                  const uint8_t *value, int32_t value_len, int32_t header_count)
    int64_t kc_write_record_head(uint8_t *p, int64_t body_size, int64_t timestamp_delta,
                                 int32_t offset_delta, const uint8_t *key, int32_t key_len, int32_t value_len)
    int64_t kc_write_record(uint8_t *p, int64_t timestamp_delta, int32_t offset_delta,
                            const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len, int32_t header_count)
    int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len)

cdef extern from "kc_xxhash.h" nogil:
    uint32_t kc_xxh32(const uint8_t *p, size_t len, uint32_t seed)

cdef extern from "kc_gather.h" nogil:
    ctypedef struct kc_bincol_t:
        uint8_t *data
        int64_t len
        int32_t *offs
        uint8_t *nullmap
        int64_t nulls
    ctypedef struct kc_gather_t:
        kc_bincol_t col[4]
        int64_t *offset
        int64_t *timestamp
        int32_t *ts_type
        int32_t *hlist
        uint8_t *hnullmap
        int64_t hnulls
        int64_t n
        int64_t nh
        const uint8_t *vbase
        int32_t vindex
    int kc_gather_region(kc_gather_t *g, const uint8_t *p, const uint8_t *end, int32_t count, int stream,
                         int64_t base_off, int64_t base_ts, int64_t max_ts, int lat, int headers)
    int kc_gather_region_views(kc_gather_t *g, const uint8_t *p, const uint8_t *end, int32_t count, int stream,
                               int64_t base_off, int64_t base_ts, int64_t max_ts, int lat, int headers)
    void kc_view_put(uint8_t *dst, const uint8_t *src, int32_t ln, int32_t index, const uint8_t *base)
    void kc_nullmap_to_validity(uint8_t *map, int64_t n)
