/* Borrowed-reference reads of Python sequences and strings for the builder's header scan. */
#ifndef KC_PYSEQ_H
#define KC_PYSEQ_H
#include <Python.h>
/* Borrowed-reference reads for the builder's header scan. */
static inline PyObject *kc_seq_item(PyObject *seq, int is_list, Py_ssize_t i) {
    return is_list ? PyList_GET_ITEM(seq, i) : PyTuple_GET_ITEM(seq, i);
}
static inline int kc_is_pair(PyObject *o) { return PyTuple_CheckExact(o) && PyTuple_GET_SIZE(o) == 2; }
static inline PyObject *kc_tuple_item(PyObject *t, Py_ssize_t i) { return PyTuple_GET_ITEM(t, i); }
static inline int kc_is_bytes(PyObject *o) { return PyBytes_CheckExact(o); }
static inline int kc_is_str(PyObject *o) { return PyUnicode_CheckExact(o); }
static inline int kc_is_none(PyObject *o) { return o == Py_None; }
static inline const char *kc_bytes_data(PyObject *o) { return PyBytes_AS_STRING(o); }
static inline Py_ssize_t kc_bytes_len(PyObject *o) { return PyBytes_GET_SIZE(o); }
static inline int kc_is_seq(PyObject *o) { return PyList_CheckExact(o) || PyTuple_CheckExact(o); }
static inline Py_ssize_t kc_seq_size(PyObject *o) { return Py_SIZE(o); }
/* Header keys are nearly always ASCII str, whose characters are already UTF-8:
   read them in place instead of calling into the UTF-8 cache. */
static inline const char *kc_utf8(PyObject *o, Py_ssize_t *size) {
    if (PyUnicode_IS_COMPACT_ASCII(o)) {
        *size = PyUnicode_GET_LENGTH(o);
        return (const char *)(((PyASCIIObject *)o) + 1);
    }
    return PyUnicode_AsUTF8AndSize(o, size);
}
#endif
