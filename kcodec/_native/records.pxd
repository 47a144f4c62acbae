# cython: language_level=3
# C-level API of kcodec._native.records for other Cython modules (``cimport``):
# the v2 record codec of csrc/kc_record.h and the record classes.
from libc.stdint cimport uint8_t, int8_t, int32_t, int64_t

cdef extern from "kc_record.h" nogil:
    int KC_REC_OK, KC_REC_STRUCTURE, KC_REC_SHORT, KC_REC_NEG_HEADERS, KC_REC_MANY_HEADERS
    int KC_REC_NEG_HKEY, KC_REC_SIZE_MISMATCH, KC_REC_EOF, KC_REC_STREAM_SHORT
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
    int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h)
    int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta, int32_t key_len,
                                int32_t value_len, int32_t header_count, int64_t headers_size)
    int64_t kc_record_size(int64_t body_size)
    int64_t kc_header_size(int32_t key_len, int32_t value_len)
    int64_t kc_write_record_sized(uint8_t *p, int64_t body_size, int64_t timestamp_delta,
                                  int32_t offset_delta, const uint8_t *key, int32_t key_len,
                                  const uint8_t *value, int32_t value_len, int32_t header_count)
    int64_t kc_write_record(uint8_t *p, int64_t timestamp_delta, int32_t offset_delta,
                            const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len, int32_t header_count)
    int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len, const uint8_t *value,
                            int32_t value_len)


cdef class Record:
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object timestamp_type
    cdef readonly object key
    cdef readonly object value
    cdef readonly tuple headers
    cdef readonly int32_t sequence
    cdef readonly bint is_control
    cdef readonly object control_type
    cdef readonly object coordinator_epoch


cdef class RecordIndex:
    cdef readonly object offset_delta, timestamp_delta, key_pos, key_len, value_pos, value_len
    cdef readonly object header_start, hkey_pos, hkey_len, hval_pos, hval_len
    cdef readonly Py_ssize_t size


cdef class RecordsWriter:
    cdef uint8_t *buf
    cdef Py_ssize_t cap
    cdef readonly Py_ssize_t size
    cdef readonly int32_t count
    cdef int exports
    # batch bookkeeping (MemoryRecordsBuilder's fields)
    cdef readonly int64_t base_offset
    cdef readonly int64_t last_offset
    cdef readonly int64_t first_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly bint has_records
    cdef int64_t delete_horizon
    cdef bint has_delete_horizon
    cdef bint log_append
    cdef int64_t log_append_time
    cdef public bint is_control
    cdef public bint closed
    cdef int _reserve(self, Py_ssize_t extra) except -1
    cdef int64_t _add(self, key, value, timestamp, headers, offset) except? -9223372036854775807
