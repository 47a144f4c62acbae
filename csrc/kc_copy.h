/* Short copies inlined: keys, values and header fields are mostly tens of
 * bytes, where a call to memcpy costs more than the copy. */
#ifndef KC_COPY_H
#define KC_COPY_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Overlapping word moves up to 128 bytes, memcpy beyond. */
static inline __attribute__((always_inline)) void kc_copy(uint8_t *d, const uint8_t *s, size_t n)
{
    if (n <= 16) {
        if (n >= 8) {
            uint64_t a, b;
            memcpy(&a, s, 8);
            memcpy(&b, s + n - 8, 8);
            memcpy(d, &a, 8);
            memcpy(d + n - 8, &b, 8);
        } else if (n >= 4) {
            uint32_t a, b;
            memcpy(&a, s, 4);
            memcpy(&b, s + n - 4, 4);
            memcpy(d, &a, 4);
            memcpy(d + n - 4, &b, 4);
        } else if (n) {
            uint8_t a = s[0], b = s[n >> 1], c = s[n - 1];
            d[0] = a;
            d[n >> 1] = b;
            d[n - 1] = c;
        }
        return;
    }
    if (n <= 32) {
        uint8_t a[16], b[16];
        memcpy(a, s, 16);
        memcpy(b, s + n - 16, 16);
        memcpy(d, a, 16);
        memcpy(d + n - 16, b, 16);
        return;
    }
    if (n <= 128) {
        /* 32-byte moves; the last one overlaps the one before. */
        uint8_t t[32];
        size_t i = 0;
        for (; i + 32 < n; i += 32) {
            memcpy(t, s + i, 32);
            memcpy(d + i, t, 32);
        }
        memcpy(t, s + n - 32, 32);
        memcpy(d + n - 32, t, 32);
        return;
    }
    memcpy(d, s, n);
}

#endif
