/* Big-endian loads and stores (Kafka's byte order) on unaligned pointers. */
#ifndef KC_ENDIAN_H
#define KC_ENDIAN_H
#include <stdint.h>
#include <string.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
#define KC_BE(x, bits) (x)
#else
#define KC_BE(x, bits) __builtin_bswap##bits(x)
#endif

static inline uint16_t kc_load_be16(const uint8_t *p) { return (uint16_t)((p[0] << 8) | p[1]); }
static inline uint32_t kc_load_be32(const uint8_t *p)
{
    uint32_t v; memcpy(&v, p, 4); return KC_BE(v, 32);
}
static inline uint64_t kc_load_be64(const uint8_t *p)
{
    uint64_t v; memcpy(&v, p, 8); return KC_BE(v, 64);
}
static inline void kc_store_be16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void kc_store_be32(uint8_t *p, uint32_t v) { v = KC_BE(v, 32); memcpy(p, &v, 4); }
static inline void kc_store_be64(uint8_t *p, uint64_t v) { v = KC_BE(v, 64); memcpy(p, &v, 8); }
static inline uint32_t kc_load_le32(const uint8_t *p)
{
    uint32_t v; memcpy(&v, p, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    return v;
}
static inline void kc_store_le32(uint8_t *p, uint32_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
    v = __builtin_bswap32(v);
#endif
    memcpy(p, &v, 4);
}
#endif
