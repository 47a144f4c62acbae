/* Whether each value of a string column is valid UTF-8, as Arrow requires of its string type. */
#ifndef KC_UTF8_H
#define KC_UTF8_H
#include <stdint.h>

/* Whether p[0..n) is well-formed UTF-8 (RFC 3629: no overlong forms, no
   surrogates, nothing above U+10FFFF). */
static int kc_utf8_valid(const uint8_t *p, int64_t n)
{
    int64_t i = 0;
    while (i < n) {
        uint8_t c = p[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        int64_t need;
        uint8_t lo = 0x80, hi = 0xBF;  /* the range of the byte after the lead */
        if (c >= 0xC2 && c <= 0xDF) need = 1;
        else if (c == 0xE0) { need = 2; lo = 0xA0; }
        else if (c == 0xED) { need = 2; hi = 0x9F; }
        else if (c >= 0xE1 && c <= 0xEF) need = 2;
        else if (c == 0xF0) { need = 3; lo = 0x90; }
        else if (c == 0xF4) { need = 3; hi = 0x8F; }
        else if (c >= 0xF1 && c <= 0xF3) need = 3;
        else return 0;
        if (n - i <= need || p[i + 1] < lo || p[i + 1] > hi)
            return 0;
        for (int64_t k = 2; k <= need; k++)
            if ((p[i + k] & 0xC0) != 0x80)
                return 0;
        i += need + 1;
    }
    return 1;
}

/* The first of `n` values (int32 end offsets, offs[0] the start) that is not valid UTF-8, or -1. */
static int64_t kc_utf8_first_invalid(const uint8_t *data, const int32_t *offs, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        if (!kc_utf8_valid(data + offs[i], (int64_t)offs[i + 1] - offs[i]))
            return i;
    return -1;
}
#endif
