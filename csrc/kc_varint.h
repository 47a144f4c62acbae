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

/* The unsigned varint of at most max_bytes bytes at p (5 for a varint, 10 for
 * a varlong), as ByteUtils.readVarint and readVarlong read it: the last byte
 * may not carry a continuation bit and is taken whole, so its bits beyond the
 * type's width fall off in the caller's cast, as they fall off Java's int and
 * long.  Returns the number of bytes consumed, or a negative KC_VARINT_*. */
static inline int kc_read_uvarint(const uint8_t *p, const uint8_t *end, int max_bytes, uint64_t *out)
{
    uint64_t raw = 0;
    for (int i = 0; i < max_bytes; i++) {
        if (p + i >= end)
            return KC_VARINT_TRUNCATED;
        uint64_t b = p[i];
        if (i == max_bytes - 1) {
            if (b & 0x80)
                return KC_VARINT_TOO_LONG;
            *out = raw | (b << (7 * i));
            return max_bytes;
        }
        raw |= (b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = raw;
            return i + 1;
        }
    }
    return KC_VARINT_TOO_LONG; /* unreachable */
}

/* Returns the number of bytes consumed (1..5), or a negative KC_VARINT_*. */
static inline int kc_read_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    uint64_t raw;
    int n = kc_read_uvarint(p, end, 5, &raw);
    if (n > 0) {
        uint32_t z = (uint32_t)raw;
        *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
    }
    return n;
}

/* Returns the number of bytes consumed (1..10), or a negative KC_VARINT_*. */
static inline int kc_read_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    uint64_t raw;
    int n = kc_read_uvarint(p, end, 10, &raw);
    if (n > 0)
        *out = (int64_t)((raw >> 1) ^ (~(raw & 1) + 1));
    return n;
}

#endif
