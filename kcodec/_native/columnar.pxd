# cython: language_level=3
# C-level declarations of the columnar module's csrc/ headers (the shared ones are in primitives.pxd).
from libc.stdint cimport uint8_t, int32_t, int64_t, uint32_t


cdef extern from "kc_columns.h":
    ctypedef struct kc_col_t:
        const uint8_t *valid
        int64_t voff
        const int64_t *offs
        const int32_t *offs32
        const uint8_t *data
    int64_t kc_off(const kc_col_t *c, int64_t i) nogil
    bint kc_bit_valid(const uint8_t *bitmap, int64_t offset, int64_t i) nogil
    int32_t kc_col_len(const kc_col_t *c, int64_t i) nogil
    ctypedef struct kc_batch_fill_t:
        int64_t row_end
        int64_t written
        int64_t max_ts
        int64_t last_off
        int err
        int64_t err_row
        uint32_t crc
        int64_t crc_done
    int64_t kc_rows_bound(int64_t r0, int64_t n, const kc_col_t *key, int has_key, const kc_col_t *value,
                          const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval) nogil
    void kc_fill_batch(uint8_t *dst, int64_t r0, int64_t n, int64_t write_limit,
                       const kc_col_t *key, int has_key, const kc_col_t *value,
                       const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                       const int64_t *ts, const int64_t *offsets, int64_t base_offset,
                       kc_batch_fill_t *res) nogil
    int64_t kc_encode_rows(uint8_t *dst, int64_t r0, int64_t r1, const int32_t *bodies,
                           const kc_col_t *key, int has_key, const kc_col_t *value,
                           const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                           const int64_t *ts, int64_t first_ts, const int64_t *offsets,
                           int64_t base_offset, int64_t first_off) nogil


cdef extern from "kc_control.h" nogil:
    int kc_control_region_ok(const uint8_t *p, const uint8_t *end, int32_t count)


cdef extern from "kc_column_cache.h":
    void *kc_cache_take(size_t want, size_t *cap) nogil
    void kc_cache_give(void *p, size_t cap) nogil
    size_t kc_cache_set_limit(size_t limit, size_t min_block) nogil
    void kc_cache_state(size_t *limit, size_t *held, size_t *min_block) nogil
    int kc_cache_init()


cdef extern from "kc_arrow_time.h":
    Py_ssize_t kc_ms_to_us(int64_t *ts, Py_ssize_t n) nogil


cdef extern from "kc_ascii.h":
    int kc_all_ascii(const uint8_t *p, Py_ssize_t n) nogil


cdef extern from "kc_utf8.h" nogil:
    int64_t kc_utf8_first_invalid(const uint8_t *data, const int32_t *offs, int64_t n)


cdef extern from "kc_arrow_c.h" nogil:
    struct ArrowSchema:
        const char *format
        const char *name
        const char *metadata
        int64_t flags
        int64_t n_children
        ArrowSchema **children
        ArrowSchema *dictionary
        void (*release)(ArrowSchema *)
        void *private_data
    struct ArrowArray:
        int64_t length
        int64_t null_count
        int64_t offset
        int64_t n_buffers
        int64_t n_children
        const void **buffers
        ArrowArray **children
        ArrowArray *dictionary
        void (*release)(ArrowArray *)
        void *private_data
    struct ArrowArrayStream:
        void (*release)(ArrowArrayStream *)


cdef extern from "kc_arrow_export.h" nogil:
    ctypedef struct kc_arrow_owner_t:
        int64_t refs
        void (*destroy)(kc_arrow_owner_t *)
    void kc_owner_unref(kc_arrow_owner_t *o)
    int kc_array_init(ArrowArray *a, kc_arrow_owner_t *owner, int64_t length, int64_t null_count, int n_buffers,
                      const void *b0, const void *b1, const void *b2, int n_children)
    int kc_stream_init(ArrowArrayStream *s, ArrowSchema *schema, ArrowArray *arrays, int64_t count)


cdef extern from "kc_kafka_schema.h" nogil:
    int KC_BATCH_FIELD_COUNT
    const char *kc_batch_field_names[]
    const char *kc_batch_field_formats[]
    int kc_kafka_schema(ArrowSchema *s, int headers, const int *fields, int nfields, int views)
