#include "kc_xxhash.h"

#include "kc_endian.h"

#define P1 0x9E3779B1u
#define P2 0x85EBCA77u
#define P3 0xC2B2AE3Du
#define P4 0x27D4EB2Fu
#define P5 0x165667B1u

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t round32(uint32_t acc, uint32_t lane)
{
    acc += lane * P2;
    acc = rotl32(acc, 13);
    return acc * P1;
}

uint32_t kc_xxh32(const uint8_t *p, size_t len, uint32_t seed)
{
    const uint8_t *end = p + len;
    uint32_t h;

    if (len >= 16) {
        /* Four independent lanes over 16-byte stripes keep the multiplier
         * pipeline busy; they are merged once at the end. */
        const uint8_t *limit = end - 16;
        uint32_t v1 = seed + P1 + P2;
        uint32_t v2 = seed + P2;
        uint32_t v3 = seed;
        uint32_t v4 = seed - P1;
        do {
            v1 = round32(v1, kc_load_le32(p));
            v2 = round32(v2, kc_load_le32(p + 4));
            v3 = round32(v3, kc_load_le32(p + 8));
            v4 = round32(v4, kc_load_le32(p + 12));
            p += 16;
        } while (p <= limit);
        h = rotl32(v1, 1) + rotl32(v2, 7) + rotl32(v3, 12) + rotl32(v4, 18);
    } else {
        h = seed + P5;
    }
    /* The length is mixed in modulo 2^32, as the reference does. */
    h += (uint32_t)len;

    while (p + 4 <= end) {
        h += kc_load_le32(p) * P3;
        h = rotl32(h, 17) * P4;
        p += 4;
    }
    while (p < end) {
        h += (*p) * P5;
        h = rotl32(h, 11) * P1;
        p++;
    }
    h ^= h >> 15;
    h *= P2;
    h ^= h >> 13;
    h *= P3;
    h ^= h >> 16;
    return h;
}
