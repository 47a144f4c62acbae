/* Zigzag varint/varlong as Kafka writes and reads them (ByteUtils.java).
 * Header-only so that Cython modules inline these in their loops.
 * Reading follows Kafka's leniency: over-long encodings are accepted, the
 * 5th varint byte contributes only its low 4 bits and the 10th varlong byte
 * only its low bit; a continuation bit on those bytes is an error. */
#ifndef KC_VARINT_H
#define KC_VARINT_H
#include <stddef.h>
#include <stdint.h>

#define KC_VARINT_TRUNCATED (-1)
#define KC_VARINT_TOO_LONG (-2)

/* Sizes from the number of significant bits b, without a loop or a
 * division: ceil(b / 7) == (9b + 64) / 64 for every b in 1..64 (a multiply
 * by 9 is one lea; these run several times per record). */
static inline int kc_varint_size(int32_t v)
{
    uint32_t z = ((uint32_t)v << 1) ^ (uint32_t)(v >> 31);
    unsigned bits = 32 - (unsigned)__builtin_clz(z | 1);
    return (int)((bits * 9 + 64) >> 6);
}

static inline int kc_varlong_size(int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    unsigned bits = 64 - (unsigned)__builtin_clzll(z | 1);
    return (int)((bits * 9 + 64) >> 6);
}

static inline int kc_write_uvarint(uint8_t *p, uint32_t z)
{
    int n = 0;
    while (z >= 0x80) { p[n++] = (uint8_t)(z | 0x80); z >>= 7; }
    p[n++] = (uint8_t)z;
    return n;
}

static inline int kc_write_varint(uint8_t *p, int32_t v)
{
    return kc_write_uvarint(p, ((uint32_t)v << 1) ^ (uint32_t)(v >> 31));
}

static inline int kc_write_varlong(uint8_t *p, int64_t v)
{
    uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    int n = 0;
    while (z >= 0x80) { p[n++] = (uint8_t)(z | 0x80); z >>= 7; }
    p[n++] = (uint8_t)z;
    return n;
}

/* Returns the number of bytes consumed (1..5), or a negative KC_VARINT_*. */
static inline int kc_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    uint32_t raw = 0;
    for (int i = 0; i < 5; i++) {
        if (p + i >= end)
            return KC_VARINT_TRUNCATED;
        uint32_t b = p[i];
        if (i == 4) {
            if (b & 0x80)
                return KC_VARINT_TOO_LONG;
            raw |= b << 28; /* bits 4-6 fall off the int, as in Java */
            *out = (int32_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 5;
        }
        raw |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int32_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return i + 1;
        }
    }
    return KC_VARINT_TOO_LONG; /* unreachable */
}

static inline int kc_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    uint64_t raw = 0;
    for (int i = 0; i < 10; i++) {
        if (p + i >= end)
            return KC_VARINT_TRUNCATED;
        uint64_t b = p[i];
        if (i == 9) {
            if (b & 0x80)
                return KC_VARINT_TOO_LONG;
            raw |= b << 63;
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return 10;
        }
        raw |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
            return i + 1;
        }
    }
    return KC_VARINT_TOO_LONG;
}

#endif
