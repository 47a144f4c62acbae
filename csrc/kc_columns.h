/* Arrow columns read by the encode loops of from_arrow: accessors and the per-batch fill. */
#ifndef KC_COLUMNS_H
#define KC_COLUMNS_H
#include <stdint.h>
#include "kc_gather.h"
#include "kc_batch.h"
/* Column accessors for the encode loops: forced inline, since GCC leaves
   them out of line in the large loop bodies and the per-record call costs ~10%. */
typedef struct {
    const uint8_t *valid;   /* Arrow validity bitmap or NULL */
    int64_t voff;           /* the array's offset into that bitmap */
    const int64_t *offs;    /* int64 value offsets (large binary), or NULL */
    const int32_t *offs32;  /* int32 value offsets (binary), or NULL */
    const uint8_t *data;
} kc_col_t;

static inline __attribute__((always_inline)) int kc_bit_valid(const uint8_t *bitmap, int64_t offset,
                                                              int64_t i) {
    if (bitmap == NULL) return 1;
    i += offset;
    return (bitmap[i >> 3] >> (i & 7)) & 1;
}

static inline __attribute__((always_inline)) int64_t kc_off(const kc_col_t *c, int64_t i) {
    return c->offs32 ? c->offs32[i] : c->offs[i];
}

static inline __attribute__((always_inline)) int32_t kc_col_len(const kc_col_t *c, int64_t i) {
    if (!kc_bit_valid(c->valid, c->voff, i)) return -1;
    return (int32_t)(kc_off(c, i + 1) - kc_off(c, i));
}

/* The same with `fast` (a constant in each instantiated loop): every
   column has int32 offsets and no validity bitmap, the usual layout of
   a table made by pyarrow, so the loop carries no per-field checks. */
static inline __attribute__((always_inline)) int64_t kc_off_f(const kc_col_t *c, int64_t i, int fast) {
    return fast ? c->offs32[i] : kc_off(c, i);
}

static inline __attribute__((always_inline)) int32_t kc_len_f(const kc_col_t *c, int64_t i, int fast) {
    return fast ? c->offs32[i + 1] - c->offs32[i] : kc_col_len(c, i);
}

static inline int kc_cols_fast(const kc_col_t *key, int has_key, const kc_col_t *value,
                               const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval) {
    const kc_col_t *cols[5] = {value, has_key ? key : NULL, has_h ? hlist : NULL, has_h ? hkey : NULL,
                               has_h ? hval : NULL};
    for (int c = 0; c < 5; c++)
        if (cols[c] && (cols[c]->valid != NULL || cols[c]->offs32 == NULL))
            return 0;
    return 1;
}

static inline __attribute__((always_inline)) uint8_t *kc_put_field(uint8_t *p, const uint8_t *data,
                                                                   int32_t len) {
    if (len < 0) {
        *p++ = 1;  /* varint -1: null */
        return p;
    }
    p += kc_write_varint(p, len);
    kc_copy(p, data, (size_t)len);
    return p + len;
}

/* Everything of row i's record after its length varint: attributes,
   deltas, key, value and the headers h0..h1 of the header columns. */
static inline __attribute__((always_inline)) uint8_t *kc_put_body(
        uint8_t *p, int64_t td, int32_t od, const kc_col_t *k, int32_t kl,
        const kc_col_t *v, int32_t vl, int64_t i, const kc_col_t *hk, const kc_col_t *hv,
        int64_t h0, int64_t h1, int fast) {
    *p++ = 0;
    p += kc_write_varlong(p, td);
    p += kc_write_varint(p, od);
    p = kc_put_field(p, kl >= 0 ? k->data + kc_off_f(k, i, fast) : NULL, kl);
    p = kc_put_field(p, vl >= 0 ? v->data + kc_off_f(v, i, fast) : NULL, vl);
    p += kc_write_varint(p, (int32_t)(h1 - h0));
    for (int64_t j = h0; j < h1; j++) {
        int32_t hkl = kc_len_f(hk, j, fast), hvl = kc_len_f(hv, j, fast);
        p = kc_put_field(p, hk->data + kc_off_f(hk, j, fast), hkl);
        p = kc_put_field(p, hvl >= 0 ? hv->data + kc_off_f(hv, j, fast) : NULL, hvl);
    }
    return p;
}

/* One whole record whose body size is known. */
static inline __attribute__((always_inline)) uint8_t *kc_put_record(
        uint8_t *p, int32_t body, int64_t td, int32_t od, const kc_col_t *k, int32_t kl,
        const kc_col_t *v, int32_t vl, int64_t i, const kc_col_t *hk, const kc_col_t *hv,
        int64_t h0, int64_t h1, int fast) {
    p += kc_write_varint(p, body);
    return kc_put_body(p, td, od, k, kl, v, vl, i, hk, hv, h0, h1, fast);
}

typedef struct {
    int64_t row_end;    /* first row not in the batch */
    int64_t written;    /* records region bytes */
    int64_t max_ts;
    int64_t last_off;
    int err;            /* 1: null header key, 2: offset delta overflow */
    int64_t err_row;
    uint32_t crc;       /* CRC-32C of the first crc_done bytes of the records region */
    int64_t crc_done;
} kc_batch_fill_t;

/* The most framing a record can take: length 5, attributes 1, timestamp
   delta 10, offset delta 5, key and value lengths 5 each, header count
   5; and a header: key and value lengths 5 each. */
#define KC_RECORD_FRAMING_MAX 36
#define KC_HEADER_FRAMING_MAX 10

/* Upper bound of the records region of rows [r0, n): their data bytes
   plus the most framing their records and headers can take. */
static int64_t kc_rows_bound(int64_t r0, int64_t n, const kc_col_t *key, int has_key, const kc_col_t *value,
                             const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval) {
    int64_t b = KC_RECORD_FRAMING_MAX * (n - r0) + (kc_off(value, n) - kc_off(value, r0));
    if (has_key) b += kc_off(key, n) - kc_off(key, r0);
    if (has_h) {
        int64_t h0 = kc_off(hlist, r0), h1 = kc_off(hlist, n);
        b += KC_HEADER_FRAMING_MAX * (h1 - h0) + (kc_off(hkey, h1) - kc_off(hkey, h0))
             + (kc_off(hval, h1) - kc_off(hval, h0));
    }
    return b;
}

/* kc_fill_batch takes the batch's CRC in steps of at least this many record bytes. */
#define KC_FILL_CRC_STEP 16384

/* kc_fill_batch's loop; `fast` is a constant in each of its two copies. */
static inline __attribute__((always_inline)) void kc_fill_batch_impl(
        uint8_t *dst, int64_t r0, int64_t n, int64_t write_limit,
        const kc_col_t *key, int has_key, const kc_col_t *value,
        const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
        const int64_t *ts, const int64_t *offsets, int64_t base_offset,
        kc_batch_fill_t *res, int fast) {
    const kc_col_t k = *key, v = *value, hl = *hlist, hk = *hkey, hv = *hval;
    const int64_t first_ts = ts[r0], first_off = offsets ? offsets[r0] : base_offset + r0;
    int64_t max_ts = -1, last_off = first_off, i;
    uint8_t *p = dst, *crc_from = dst;
    uint32_t crc = 0;
    res->err = 0;
    for (i = r0; i < n; i++) {
        /* The batch's CRC over what was just written, while it is in the cache: sealing a
           large batch then reads only its last bytes again. */
        if (p - crc_from >= KC_FILL_CRC_STEP) {
            crc = kc_crc32c(crc, crc_from, (size_t)(p - crc_from));
            crc_from = p;
        }
        int64_t off = offsets ? offsets[i] : base_offset + i;
        int64_t od = off - first_off, td = ts[i] - first_ts, hs = 0, h0 = 0, h1 = 0, body, size;
        int32_t kl = has_key ? kc_len_f(&k, i, fast) : -1, vl = kc_len_f(&v, i, fast);
        int has_hdrs = has_h && (fast || kc_bit_valid(hl.valid, hl.voff, i));
        if (od > 2147483647 || od < -2147483648LL) {
            res->err = 2;
            res->err_row = i;
            break;
        }
        if (has_hdrs) {
            h0 = kc_off_f(&hl, i, fast);
            h1 = kc_off_f(&hl, i + 1, fast);
        }
        if (fast) {
            /* Write first, size after: a bound of the body from the
               field lengths alone (the framing at its widest) says
               whether the record surely fits; the body is then written
               after room for its length varint at the bound's width and
               moved back in the rare case its own varint is narrower.
               Only when the bound does not fit is the record sized
               exactly, below.  No header key can be null here. */
            /* the body's bound: kc_rows_bound's share of this record, less its length varint */
            int64_t bound = KC_RECORD_FRAMING_MAX - 5 + (kl >= 0 ? kl : 0) + vl + KC_HEADER_FRAMING_MAX * (h1 - h0);
            if (h1 > h0)
                bound += (hk.offs32[h1] - hk.offs32[h0]) + (hv.offs32[h1] - hv.offs32[h0]);
            if (bound < 0x7fffff00 && (i == r0 || KC_BATCH_OVERHEAD + (p - dst) + 5 + bound <= write_limit)) {
                int g = kc_varint_size((int32_t)bound), a;
                uint8_t *end = kc_put_body(p + g, td, (int32_t)od, &k, kl, &v, vl, i, &hk, &hv, h0, h1, 1);
                body = end - (p + g);
                a = kc_varint_size((int32_t)body);
                if (a != g)
                    memmove(p + a, p + g, (size_t)body);
                kc_write_varint(p, (int32_t)body);
                p += a + body;
                if (ts[i] > max_ts) max_ts = ts[i];
                last_off = off;
                continue;
            }
        }
        if (has_hdrs) {
            for (int64_t j = h0; j < h1; j++) {
                int32_t hkl = kc_len_f(&hk, j, fast);
                if (hkl < 0) {
                    res->err = 1;
                    res->err_row = i;
                    goto done;
                }
                hs += kc_header_size(hkl, kc_len_f(&hv, j, fast));
            }
        }
        body = kc_record_body_size(td, (int32_t)od, kl, vl, (int32_t)(h1 - h0), hs);
        size = kc_varint_size((int32_t)body) + body;
        if (i > r0 && write_limit < KC_BATCH_OVERHEAD + (p - dst) + size)
            break;
        p = kc_put_record(p, (int32_t)body, td, (int32_t)od, &k, kl, &v, vl, i, &hk, &hv, h0, h1, fast);
        if (ts[i] > max_ts) max_ts = ts[i];
        last_off = off;
    }
done:
    res->crc = crc;
    res->crc_done = crc_from - dst;
    res->row_end = i;
    res->written = p - dst;
    res->max_ts = max_ts;
    res->last_off = last_off;
}

/* Write records from row r0 into one batch's records region at dst, in a
   single pass: each record is sized, checked against Kafka's batch.size
   rule for an uncompressed batch (the first record always fits, then
   61 + bytes so far + record <= write_limit) and written.  dst must hold
   max(write_limit - 61, first record) bytes, or every remaining row, at
   kc_rows_bound's count; a record written before its exact size is
   known stays within its share of that count. */
static void kc_fill_batch(uint8_t *dst, int64_t r0, int64_t n, int64_t write_limit,
                          const kc_col_t *key, int has_key, const kc_col_t *value,
                          const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                          const int64_t *ts, const int64_t *offsets, int64_t base_offset,
                          kc_batch_fill_t *res) {
    if (kc_cols_fast(key, has_key, value, hlist, has_h, hkey, hval))
        kc_fill_batch_impl(dst, r0, n, write_limit, key, has_key, value, hlist, has_h, hkey, hval, ts,
                           offsets, base_offset, res, 1);
    else
        kc_fill_batch_impl(dst, r0, n, write_limit, key, has_key, value, hlist, has_h, hkey, hval, ts,
                           offsets, base_offset, res, 0);
}

/* The records of rows [r0, r1) at dst, one batch's records region, with
   each row's body size from the sizing pass.  The columns are copied
   into locals: stores through uint8_t pointers may alias anything, and
   fields read through a pointer would be reloaded after every copy.
   Returns the bytes written. */
static int64_t kc_encode_rows(uint8_t *dst, int64_t r0, int64_t r1, const int32_t *bodies,
                              const kc_col_t *key, int has_key, const kc_col_t *value,
                              const kc_col_t *hlist, int has_h, const kc_col_t *hkey, const kc_col_t *hval,
                              const int64_t *ts, int64_t first_ts, const int64_t *offsets,
                              int64_t base_offset, int64_t first_off) {
    const kc_col_t k = *key, v = *value, hl = *hlist, hk = *hkey, hv = *hval;
    uint8_t *p = dst;
    for (int64_t i = r0; i < r1; i++) {
        int64_t off = offsets ? offsets[i] : base_offset + i;
        int32_t kl = has_key ? kc_col_len(&k, i) : -1, vl = kc_col_len(&v, i);
        int64_t h0 = 0, h1 = 0;
        if (has_h && kc_bit_valid(hl.valid, hl.voff, i)) {
            h0 = kc_off(&hl, i);
            h1 = kc_off(&hl, i + 1);
        }
        p = kc_put_record(p, bodies[i], ts[i] - first_ts, (int32_t)(off - first_off), &k, kl, &v, vl, i,
                          &hk, &hv, h0, h1, 0);
    }
    return p - dst;
}
#endif
