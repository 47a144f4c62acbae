/* Gathering the records of a v2 records region into Arrow column buffers.
 *
 * The hot loop of to_arrow.  Everything it writes goes through local cursors
 * rather than through the accumulator struct: stores through uint8_t
 * pointers may alias any memory, so cursors kept in a struct would be
 * reloaded after every copied key or value.  Nulls are recorded as set bits
 * in a zero-filled null map (inverted into Arrow's validity bitmap once, at
 * the end), so the common null-free column costs nothing per row. */
#ifndef KC_GATHER_H
#define KC_GATHER_H
#include <stdint.h>
#include <string.h>
#include "kc_copy.h"
#include "kc_record.h"

/* One binary column: data, int32 end offsets (entry 0 is the leading 0),
 * null map, and how much of each is used. */
typedef struct {
    uint8_t *data;
    int64_t len;      /* data bytes */
    int32_t *offs;    /* offs[row + 1] = end of row */
    uint8_t *nullmap; /* bit row set = null */
    int64_t nulls;
} kc_bincol_t;

typedef struct {
    kc_bincol_t col[4];   /* key, value, header key, header value */
    int64_t *offset;      /* per record */
    int64_t *timestamp;   /* per record, ms */
    int32_t *ts_type;     /* per record */
    int32_t *hlist;       /* header list offsets: hlist[row + 1] = headers so far */
    uint8_t *hnullmap;    /* bit row set = record without headers */
    int64_t hnulls;
    int64_t n;            /* records so far */
    int64_t nh;           /* headers so far */
    /* Views mode (kc_gather_region_views): key and value data hold Arrow's
     * 16-byte views, and a value longer than 12 bytes references the region
     * in place, as an offset from vbase in variadic buffer vindex. */
    const uint8_t *vbase;
    int32_t vindex;
} kc_gather_t;

/* One Arrow binary_view entry: the length, then either the value itself
 * (12 bytes at most, zero-padded) or its first 4 bytes, the variadic buffer
 * index and the offset in it.  A null (ln < 0) is an all-zero entry. */
static inline void kc_view_put(uint8_t *dst, const uint8_t *src, int32_t ln, int32_t index,
                               const uint8_t *base)
{
    if (ln <= 12) {
        uint8_t v[16] = {0};
        if (ln > 0) {
            memcpy(v, &ln, 4);
            memcpy(v + 4, src, (size_t)ln);
        }
        memcpy(dst, v, 16);
    } else {
        int32_t off = (int32_t)(src - base);
        memcpy(dst, &ln, 4);
        memcpy(dst + 4, src, 4);
        memcpy(dst + 8, &index, 4);
        memcpy(dst + 12, &off, 4);
    }
}

/* The fast path's varints (see kc_gather_region_as).  Both read q[0] and
 * q[1] without an end check (the caller leaves room) and set *longer for a
 * varint of more than two bytes, which the full parse decides: Kafka's
 * rules for long and over-long encodings live there.
 *
 * A record's key, value and header fields form a chain of loads, each
 * field's position coming from the length before it, and that chain is
 * what the loop waits on.  Both decoders branch on the varint's size rather
 * than computing it: the branch predicts well and keeps the size off the
 * chain (a branch-free decode measured 1.5x slower on W1). */
static inline __attribute__((always_inline)) const uint8_t *
kc_fast_varint(const uint8_t *q, int32_t *out, uint32_t *longer)
{
    uint32_t z = q[0];
    if (__builtin_expect(z >= 0x80, 0)) {
        uint32_t b = q[1];
        *longer |= b >> 7;
        z = (z & 0x7f) | ((b & 0x7f) << 7);
        *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
        return q + 2;
    }
    *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
    return q + 1;
}

/* A length field, as *len (any negative length reads as -1, null, as Kafka
 * reads it) and as *skip, the bytes it covers.  The skip is the link of the
 * chain, so it is a shift of the bytes read (zigzag's sign bit, tested by a
 * predicted branch, stays off the chain) rather than a decoded value. */
static inline __attribute__((always_inline)) const uint8_t *
kc_fast_length(const uint8_t *q, int32_t *len, int32_t *skip, uint32_t *longer)
{
    uint32_t z = q[0], s;
    if (__builtin_expect(z >= 0x80, 0)) {
        uint32_t b = q[1];
        *longer |= b >> 7;
        s = ((z >> 1) & 0x3f) | ((b & 0x7f) << 6);
        q++;
    } else {
        s = z >> 1;
    }
    if (__builtin_expect(z & 1, 0)) {
        *len = -1;
        *skip = 0;
    } else {
        *len = *skip = (int32_t)s;
    }
    return q + 1;
}

#define KC_PUT(c, row, src, ln)                                         \
    do {                                                                \
        if ((ln) >= 0) {                                                \
            kc_copy(c##_data + c##_len, (src), (size_t)(ln));           \
            c##_len += (ln);                                            \
        } else {                                                        \
            c##_nullmap[(row) >> 3] |= (uint8_t)(1u << ((row) & 7));    \
            c##_nulls++;                                                \
        }                                                               \
        c##_offs[(row) + 1] = (int32_t)c##_len;                         \
    } while (0)

/* KC_PUT for a header key or value in the fast path: one of at most 16
 * bytes (header keys and values mostly are) is moved as 16 bytes, without
 * kc_copy's branches on the size.  The source has 16 readable bytes when
 * the region holds them; the destination's extra bytes are room the column
 * keeps (see _reserve_batch) and are overwritten by the next value. */
#define KC_PUT_SHORT(c, row, src, ln)                                   \
    do {                                                                \
        if ((uint32_t)(ln) <= 16 && end - (src) >= 16) {                \
            uint8_t t16[16];                                            \
            memcpy(t16, (src), 16);                                     \
            memcpy(c##_data + c##_len, t16, 16);                        \
            c##_len += (ln);                                            \
            c##_offs[(row) + 1] = (int32_t)c##_len;                     \
        } else {                                                        \
            KC_PUT(c, row, src, ln);                                    \
        }                                                               \
    } while (0)

#define KC_VIEW(c, row, src, ln)                                        \
    do {                                                                \
        kc_view_put(c##_data + c##_len, (src), (ln), vindex, vbase);   \
        c##_len += 16;                                                  \
        if ((ln) < 0) {                                                 \
            c##_nullmap[(row) >> 3] |= (uint8_t)(1u << ((row) & 7));    \
            c##_nulls++;                                                \
        }                                                               \
    } while (0)

/* Undo what the current record put in the header columns (its headers
 * start at row nh0; the values saved before it are restored). */
#define KC_TAKE_BACK_HEADERS()                                          \
    do {                                                                \
        for (int64_t x = nh0; x < nh; x++)                              \
            hv_nullmap[x >> 3] &= (uint8_t)~(1u << (x & 7));            \
        nh = nh0;                                                       \
        hk_len = hk_len0;                                               \
        hv_len = hv_len0;                                               \
        hv_nulls = hv_nulls0;                                           \
    } while (0)

#define KC_LOAD(c, k)                        \
    uint8_t *c##_data = g->col[k].data;      \
    int64_t c##_len = g->col[k].len;         \
    int32_t *c##_offs = g->col[k].offs;      \
    uint8_t *c##_nullmap = g->col[k].nullmap; \
    int64_t c##_nulls = g->col[k].nulls

#define KC_STORE(c, k)               \
    g->col[k].len = c##_len;         \
    g->col[k].nulls = c##_nulls

/* Append the count records of one records region (the caller reserved room
 * for all of it).  stream selects Kafka's compressed-stream parsing rules;
 * views, Arrow views for key and value instead of copies (a constant in
 * each caller below, so each gets its own loop).  Returns 0, or 1 when the
 * region does not parse as exactly count records (the caller then reports
 * Kafka's error through the object path); the cursors are then left at the
 * last complete record. */
static inline __attribute__((always_inline)) int
kc_gather_region_as(kc_gather_t *g, const uint8_t *p, const uint8_t *end, int32_t count, int stream,
                    int64_t base_off, int64_t base_ts, int64_t max_ts, int lat, int headers, int views)
{
    const uint8_t *vbase = g->vbase;
    const int32_t vindex = g->vindex;
    KC_LOAD(k, 0);
    KC_LOAD(v, 1);
    KC_LOAD(hk, 2);
    KC_LOAD(hv, 3);
    int64_t *o_off = g->offset, *o_ts = g->timestamp;
    int32_t *o_ty = g->ts_type, *o_hl = g->hlist;
    uint8_t *hnm = g->hnullmap;
    int64_t hnulls = g->hnulls, n = g->n, nh = g->nh;
    int rc = 0;
    /* The bytes after this region (in a log buffer, the next batch, which
       the caller CRC-checks next) are prefetched a few lines per record, so
       that pass reads from cache instead of waiting on DRAM.  Prefetches
       never fault, even past the end of the buffer. */
    const uint8_t *pf = end, *pf_end = stream ? end : end + (end - p < 262144 ? end - p : 262144);
    for (int32_t j = 0; j < count; j++) {
        kc_record_t r;
        const uint8_t *bound, *body, *hp, *rend;
        const int64_t nh0 = nh, hk_len0 = hk_len, hv_len0 = hv_len, hv_nulls0 = hv_nulls;
        uint32_t longer = 0;
        int32_t skip;
        /* Fast path, for a record with 8 readable bytes after it (all but a
           region's last): fields bounded by the record's own declared end,
           read with kc_fast_varint / kc_fast_length, whose two-byte reads
           then need no end check (the first three fields are read before
           any check, and a check stops the walk once it is past the
           record's end, so no read reaches 8 bytes past it).  It only
           accepts: a record it accepts has every field inside its declared
           length and consumes exactly that length, so Kafka reads it with
           the same values whether its fields are bounded by the batch
           (uncompressed) or by the record (compressed).  Anything else (a
           varint over two bytes, a field past the record's end, a negative
           length or header key length, a length mismatch) takes back this
           record's headers and goes through the full parse below, which
           decides as Kafka does. */
        if (__builtin_expect(end - p < 2, 0)) goto full;
        /* the length prefix too: the next record's start waits on it */
        body = kc_fast_length(p, &r.length, &skip, &longer);
        rend = body + skip;
        if (__builtin_expect(!longer & (r.length >= 0) & (end - rend >= 8), 1)) {
            const uint8_t *q = body + 1; /* attributes are not read */
            int32_t ts_delta, hkl, hvl;
            q = kc_fast_varint(q, &ts_delta, &longer);
            r.timestamp_delta = ts_delta;
            q = kc_fast_varint(q, &r.offset_delta, &longer);
            q = kc_fast_length(q, &r.key_len, &skip, &longer);
            if (__builtin_expect(longer | (skip > rend - q), 0)) goto full;
            r.key = q;
            q = kc_fast_length(q + skip, &r.value_len, &skip, &longer);
            if (__builtin_expect(longer | (skip > rend - q), 0)) goto full;
            r.value = q;
            q = kc_fast_varint(q + skip, &r.header_count, &longer);
            if (__builtin_expect(longer | (r.header_count < 0), 0)) goto full;
            /* each header takes at least two bytes: a bad count runs out of record */
            for (int32_t h = 0; h < r.header_count; h++) {
                q = kc_fast_length(q, &hkl, &skip, &longer);
                if (__builtin_expect(longer | (hkl < 0) | (skip > rend - q), 0)) goto undo;
                const uint8_t *hkey = q;
                q = kc_fast_length(q + skip, &hvl, &skip, &longer);
                if (__builtin_expect(longer | (skip > rend - q), 0)) goto undo;
                if (headers) {
                    KC_PUT_SHORT(hk, nh, hkey, hkl);
                    KC_PUT_SHORT(hv, nh, q, hvl);
                    nh++;
                }
                q += skip;
            }
            if (__builtin_expect(q == rend, 1)) goto gathered;
        undo:
            KC_TAKE_BACK_HEADERS();
        }
    full:;
        int len_n = kc_parse_record_length(p, end, stream, &r, &bound);
        if (len_n < 0 || kc_parse_record_fields(body = p + len_n, bound, &r) < 0) {
            rc = 1;
            break;
        }
        /* Headers are checked (and, with headers, gathered) in one walk;
           a bad one takes back what this record put in the header columns. */
        hp = r.headers_start;
        for (int32_t h = 0; h < r.header_count; h++) {
            kc_header_t hd;
            int used = kc_parse_header(hp, bound, &hd);
            if (used < 0) {
                rc = 1;
                break;
            }
            hp += used;
            if (headers) {
                KC_PUT(hk, nh, hd.key, hd.key_len);
                KC_PUT(hv, nh, hd.value, hd.value_len);
                nh++;
            }
        }
        if (rc == 0 && hp - body != r.length)
            rc = 1;
        if (rc) {
            KC_TAKE_BACK_HEADERS();
            break;
        }
    gathered:
        if (headers) {
            if (r.header_count == 0) {
                hnm[n >> 3] |= (uint8_t)(1u << (n & 7));
                hnulls++;
            }
            o_hl[n + 1] = (int32_t)nh;
        }
        o_off[n] = kc_add_i64(base_off, r.offset_delta);
        o_ts[n] = lat ? max_ts : kc_add_i64(base_ts, r.timestamp_delta);
        o_ty[n] = lat ? 1 : 0;
        if (views) {
            KC_VIEW(k, n, r.key, r.key_len);
            KC_VIEW(v, n, r.value, r.value_len);
        } else {
            KC_PUT(k, n, r.key, r.key_len);
            KC_PUT(v, n, r.value, r.value_len);
        }
        n++;
        /* equal to hp (checked above); taken from the length prefix, the next record
           does not wait for this one's fields and headers to be walked */
        p = body + r.length;
        if (pf < pf_end) {
            __builtin_prefetch(pf);
            __builtin_prefetch(pf + 64);
            __builtin_prefetch(pf + 128);
            pf += 192;
        }
    }
    KC_STORE(k, 0);
    KC_STORE(v, 1);
    KC_STORE(hk, 2);
    KC_STORE(hv, 3);
    g->hnulls = hnulls;
    g->n = n;
    g->nh = nh;
    /* Kafka: bytes after the last record are "records still remaining" */
    if (rc == 0 && p != end) rc = 1;
    return rc;
}

static inline int kc_gather_region(kc_gather_t *g, const uint8_t *p, const uint8_t *end, int32_t count,
                                   int stream, int64_t base_off, int64_t base_ts, int64_t max_ts, int lat,
                                   int headers)
{
    return kc_gather_region_as(g, p, end, count, stream, base_off, base_ts, max_ts, lat, headers, 0);
}

static inline int kc_gather_region_views(kc_gather_t *g, const uint8_t *p, const uint8_t *end, int32_t count,
                                         int stream, int64_t base_off, int64_t base_ts, int64_t max_ts, int lat,
                                         int headers)
{
    return kc_gather_region_as(g, p, end, count, stream, base_off, base_ts, max_ts, lat, headers, 1);
}

#undef KC_PUT
#undef KC_VIEW
#undef KC_PUT_SHORT
#undef KC_TAKE_BACK_HEADERS
#undef KC_LOAD
#undef KC_STORE

/* Turn a null map of n rows into an Arrow validity bitmap in place. */
static inline void kc_nullmap_to_validity(uint8_t *map, int64_t n)
{
    int64_t bytes = (n + 7) >> 3;
    for (int64_t i = 0; i < bytes; i++) map[i] = (uint8_t)~map[i];
    if (n & 7) map[bytes - 1] &= (uint8_t)((1u << (n & 7)) - 1);
}

#endif
