/* snappy's raw block compressor, choosing the same matches as libsnappy 1.1.10.
 *
 * Kafka's Java client compresses with snappy-java, which wraps libsnappy
 * 1.1.10 (built without SSE4.2, so with its multiplicative hash).  Any snappy
 * encoder's output decodes to the same bytes, but only one that scans, hashes
 * and skips exactly as that library does writes the same bytes, which is what
 * lets kcodec's snappy batches be compared with Java's byte for byte.  The
 * format is the public one (format_description.txt in the snappy sources); the
 * match search follows 1.1.10's: a 4-byte hash into a table of 16-bit
 * positions sized to the input, 16 positions tried one by one after each
 * literal start, then heuristic skipping (one more byte of stride every 32
 * probes without a match), and after every copy a probe at its end.
 */
#ifndef KC_SNAPPY_H
#define KC_SNAPPY_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define KC_SNAPPY_MAX_TABLE_BITS 14
#define KC_SNAPPY_MAX_TABLE (1u << KC_SNAPPY_MAX_TABLE_BITS)
#define KC_SNAPPY_MIN_TABLE 256u
/* libsnappy compresses its input in fragments of this size, each on its own. */
#define KC_SNAPPY_FRAGMENT 65536u

/* Positions in the fragment by hash, cleared for each fragment (only the part the fragment uses). */
typedef struct {
    uint16_t entry[KC_SNAPPY_MAX_TABLE];
} kc_snappy_table_t;

/* libsnappy's MaxCompressedLength, plus the five bytes of the length preamble. */
static inline size_t kc_snappy_bound(size_t n) { return 5 + 32 + n + n / 6; }

/* The format and the hash read words little-endian. */
static inline uint32_t kc_sn_load32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}

static inline uint64_t kc_sn_load64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static inline void kc_sn_store32(uint8_t *p, uint32_t v)
{
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}

/* A literal element.  `fast`: at least 16 bytes may be read from `lit` and the output has
 * room to spare (inside the bound, away from the input's end): short literals move as one
 * 16-byte copy, as most are short. */
static inline uint8_t *kc_sn_literal(uint8_t *op, const uint8_t *lit, size_t len, int fast)
{
    size_t n = len - 1;
    if (fast && len <= 16) {
        *op++ = (uint8_t)(n << 2);
        memcpy(op, lit, 16);
        return op + len;
    }
    if (n < 60) {
        *op++ = (uint8_t)(n << 2);
    } else {
        int count = 0;
        for (size_t v = n; v; v >>= 8) count++;
        *op++ = (uint8_t)((59 + count) << 2);
        kc_sn_store32(op, (uint32_t)n); /* a literal this long is followed by its bytes: room for 4 */
        op += count;
    }
    memcpy(op, lit, len);
    return op + len;
}

/* One copy element of 4..64 bytes at an offset below 65536, written as one 4-byte store (the
 * output keeps room to spare) whose unused byte the next element overwrites. */
static inline uint8_t *kc_sn_copy64(uint8_t *op, size_t offset, size_t len)
{
    if (len < 12) {
        int near = offset < 2048;
        uint32_t u = (uint32_t)((len << 2) + (offset << 8));
        u += near ? (uint32_t)(1 - 16 + ((offset >> 3) & 0xe0)) : (uint32_t)(2 - 4);
        kc_sn_store32(op, u);
        return op + (near ? 2 : 3);
    }
    kc_sn_store32(op, (uint32_t)(2 + ((len - 1) << 2) + (offset << 8)));
    return op + 3;
}

static inline uint8_t *kc_sn_copy(uint8_t *op, size_t offset, size_t len)
{
    /* 64-byte elements while at least 68 remain, so that the last one keeps 4 or more. */
    while (len >= 68) {
        op = kc_sn_copy64(op, offset, 64);
        len -= 64;
    }
    if (len > 64) {
        op = kc_sn_copy64(op, offset, 60);
        len -= 60;
    }
    return kc_sn_copy64(op, offset, len);
}

/* How many bytes at s1 equal those at s2, counting no further than s2_limit. */
static inline size_t kc_sn_match(const uint8_t *s1, const uint8_t *s2, const uint8_t *s2_limit)
{
    size_t matched = 0;
    while (s2 + matched + 8 <= s2_limit) {
        uint64_t x = kc_sn_load64(s1 + matched) ^ kc_sn_load64(s2 + matched);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        if (x) return matched + ((size_t)__builtin_clzll(x) >> 3);
#else
        if (x) return matched + ((size_t)__builtin_ctzll(x) >> 3);
#endif
        matched += 8;
    }
    while (s2 + matched < s2_limit && s1[matched] == s2[matched]) matched++;
    return matched;
}

/* One fragment (at most KC_SNAPPY_FRAGMENT bytes) without the length preamble; returns the end of
 * the output. */
static uint8_t *kc_sn_fragment(const uint8_t *input, size_t n, uint8_t *op, kc_snappy_table_t *t)
{
    const uint8_t *ip = input, *ip_end = input + n, *base = input;
    uint16_t *tab = t->entry;
    uint32_t size = KC_SNAPPY_MIN_TABLE;
    while (size < KC_SNAPPY_MAX_TABLE && size < n) size <<= 1;
    const uint32_t mask = size - 1;
    memset(tab, 0, (size_t)size * 2);
    const uint32_t shift = 32 - 14; /* libsnappy shifts by 31 - 14 and drops the low bit */
#define KC_SN_SLOT(bytes) (&tab[(((uint32_t)(bytes) * 0x1e35a7bdu) >> shift) & mask])
    if (n >= 15) {
        const uint8_t *ip_limit = input + n - 15;
        for (;;) {
            const uint8_t *next_emit = ip++;
            const uint8_t *candidate;
            uint32_t skip = 32;
            if (ip_limit - ip >= 16) {
                uint32_t delta = (uint32_t)(ip - base);
                int i;
                for (i = 0; i < 16; i++) {
                    uint32_t dword = kc_sn_load32(ip + i);
                    uint16_t *slot = KC_SN_SLOT(dword);
                    candidate = base + *slot;
                    *slot = (uint16_t)(delta + (uint32_t)i);
                    if (kc_sn_load32(candidate) == dword) break;
                }
                if (i < 16) {
                    op = kc_sn_literal(op, next_emit, (size_t)i + 1, 1);
                    ip += i;
                    goto emit_match;
                }
                ip += 16;
                skip += 16;
            }
            for (;;) {
                uint32_t data = kc_sn_load32(ip);
                uint16_t *slot = KC_SN_SLOT(data);
                uint32_t stride = skip >> 5;
                const uint8_t *next_ip = ip + stride;
                skip += stride;
                if (next_ip > ip_limit) {
                    ip = next_emit;
                    goto emit_remainder;
                }
                candidate = base + *slot;
                *slot = (uint16_t)(ip - base);
                if (kc_sn_load32(candidate) == data) break;
                ip = next_ip;
            }
            op = kc_sn_literal(op, next_emit, (size_t)(ip - next_emit), 1);
        emit_match:
            for (;;) {
                const uint8_t *start = ip;
                size_t matched = 4 + kc_sn_match(candidate + 4, ip + 4, ip_end);
                ip += matched;
                op = kc_sn_copy(op, (size_t)(start - candidate), matched);
                if (ip >= ip_limit) goto emit_remainder;
                *KC_SN_SLOT(kc_sn_load32(ip - 1)) = (uint16_t)(ip - base - 1);
                uint32_t data = kc_sn_load32(ip);
                uint16_t *slot = KC_SN_SLOT(data);
                candidate = base + *slot;
                *slot = (uint16_t)(ip - base);
                if (kc_sn_load32(candidate) != data) break;
            }
        }
    }
emit_remainder:
    if (ip < ip_end) op = kc_sn_literal(op, ip, (size_t)(ip_end - ip), 0);
    return op;
#undef KC_SN_SLOT
}

/* A raw snappy block of src[0:n] (length preamble included) into dst, which has room for
 * kc_snappy_bound(n) bytes; returns the bytes written.  n must fit 32 bits. */
static size_t kc_snappy_compress(const uint8_t *src, size_t n, uint8_t *dst, kc_snappy_table_t *t)
{
    uint8_t *op = dst;
    uint32_t v = (uint32_t)n;
    while (v >= 0x80) {
        *op++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *op++ = (uint8_t)v;
    for (size_t pos = 0; pos < n; pos += KC_SNAPPY_FRAGMENT) {
        size_t len = n - pos < KC_SNAPPY_FRAGMENT ? n - pos : KC_SNAPPY_FRAGMENT;
        op = kc_sn_fragment(src + pos, len, op, t);
    }
    return (size_t)(op - dst);
}
#endif
