/* Shrinking a bytes object that was allocated at a bound and then filled.
 * Needs Python.h; for the Cython modules' own new objects only. */
#ifndef KC_PYBYTES_H
#define KC_PYBYTES_H
#include <Python.h>

/* Shrink *b (a new bytes object, its only reference) to n bytes.  When
 * little would be returned the size field is set in place and the object
 * keeps its allocation: a realloc would split the block and leave the
 * allocator a small free chunk to sort, per batch. */
static inline int kc_bytes_shrink(PyObject **b, Py_ssize_t n)
{
    Py_ssize_t have = PyBytes_GET_SIZE(*b);
    if (n == have)
        return 0;
    if (have - n <= 1024 || have - n <= have / 32) {
        Py_SET_SIZE(*b, n);
        PyBytes_AS_STRING(*b)[n] = 0;
        return 0;
    }
    return _PyBytes_Resize(b, n);
}

#endif
