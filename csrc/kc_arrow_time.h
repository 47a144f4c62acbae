/* Kafka's millisecond timestamps as Arrow's microseconds. */
#ifndef KC_ARROW_TIME_H
#define KC_ARROW_TIME_H
#include <stdint.h>
#include <Python.h>
/* Kafka's millisecond timestamps as Arrow's microseconds, in place.  Returns
   -1, or the index of the first one that a 64-bit microsecond count cannot
   hold (all are then left in milliseconds). */
static Py_ssize_t kc_ms_to_us(int64_t *ts, Py_ssize_t n)
{
    /* Two branch-free passes, which the compiler vectorises: the range check, then the product. */
    int bad = 0;
    for (Py_ssize_t i = 0; i < n; i++)
        bad |= (ts[i] > INT64_MAX / 1000) | (ts[i] < INT64_MIN / 1000);
    if (bad) {
        for (Py_ssize_t i = 0; i < n; i++)
            if (ts[i] > INT64_MAX / 1000 || ts[i] < INT64_MIN / 1000)
                return i;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        ts[i] *= 1000;
    return -1;
}
#endif
