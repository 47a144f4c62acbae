/* Whether a byte range is all ASCII, eight bytes at a time. */
#ifndef KC_ASCII_H
#define KC_ASCII_H
#include <stdint.h>
#include <string.h>
#include <Python.h>
static int kc_all_ascii(const uint8_t *p, Py_ssize_t n)
{
    uint64_t acc = 0, w;
    Py_ssize_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        acc |= w;
    }
    for (; i < n; i++)
        acc |= p[i];
    return (acc & 0x8080808080808080ull) == 0;
}
#endif
