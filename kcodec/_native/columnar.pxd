# cython: language_level=3
# C-level declarations of the columnar module's csrc/ headers (the shared ones are in primitives.pxd).
from libc.stdint cimport uint8_t, int32_t, int64_t


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
