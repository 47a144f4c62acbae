/* A type's own tp_new, called from Cython. */
#ifndef KC_TP_NEW_H
#define KC_TP_NEW_H
#include <Python.h>
static PyObject *kc_tp_new(PyObject *type, PyObject *args, PyObject *kwds) {
    return ((PyTypeObject *)type)->tp_new((PyTypeObject *)type, args, kwds);
}
#endif
