/* RecordBatchBuilder's tp_new: magic 2 to the native builder, other magics to a Python factory. */
#ifndef KC_BUILDER_NEW_H
#define KC_BUILDER_NEW_H
#include <Python.h>
/* RecordBatchBuilder's tp_new.  Magic 2, the default and once per batch,
   goes straight to BatchBuilderCore's tp_new (a __new__ written in
   Python costs a third of a microsecond per batch); any other magic to a
   Python function that makes a legacy builder, refuses the magic, or
   returns None for a v2 builder after all. */
static newfunc kc_core_new = NULL;
static PyTypeObject *kc_builder_type = NULL;
static PyObject *kc_other_magic = NULL;
static PyObject *kc_magic_name = NULL;  /* interned "magic" */

static PyObject *kc_builder_tp_new(PyTypeObject *t, PyObject *args, PyObject *kwds) {
    if (t == kc_builder_type) {
        PyObject *magic = NULL;
        int overflow = 0;
        if (args && PyTuple_GET_SIZE(args) > 0)
            magic = PyTuple_GET_ITEM(args, 0);
        else if (kwds && PyDict_GET_SIZE(kwds))
            magic = PyDict_GetItem(kwds, kc_magic_name);  /* borrowed; never raises */
        if (magic && !(PyLong_CheckExact(magic) && PyLong_AsLongAndOverflow(magic, &overflow) == 2)) {
            PyObject *head = PyTuple_Pack(1, (PyObject *)t), *all, *out;
            if (head == NULL)
                return NULL;
            all = args ? PySequence_Concat(head, args) : (Py_INCREF(head), head);
            Py_DECREF(head);
            if (all == NULL)
                return NULL;
            out = PyObject_Call(kc_other_magic, all, kwds);
            Py_DECREF(all);
            if (out != Py_None)
                return out;  /* a legacy builder, or NULL with the error */
            Py_DECREF(out);  /* a magic equal to 2 that is not the int 2 */
        }
    }
    return kc_core_new(t, args, kwds);
}

/* RecordBatchBuilder.__new__ as Python sees it (super().__new__ in a
   subclass, copy protocols): the same dispatch for any subclass. */
static PyObject *kc_builder_new_wrapper(PyObject *self, PyObject *args, PyObject *kwds) {
    PyObject *sub, *rest, *out;
    if (PyTuple_GET_SIZE(args) < 1) {
        PyErr_SetString(PyExc_TypeError, "RecordBatchBuilder.__new__(): not enough arguments");
        return NULL;
    }
    sub = PyTuple_GET_ITEM(args, 0);
    if (!PyType_Check(sub) || !PyType_IsSubtype((PyTypeObject *)sub, kc_builder_type)) {
        PyErr_Format(PyExc_TypeError, "RecordBatchBuilder.__new__(%R): not a subtype of RecordBatchBuilder", sub);
        return NULL;
    }
    rest = PyTuple_GetSlice(args, 1, PyTuple_GET_SIZE(args));
    if (rest == NULL)
        return NULL;
    out = kc_builder_tp_new((PyTypeObject *)sub, rest, kwds);
    Py_DECREF(rest);
    return out;
}

static PyMethodDef kc_builder_new_def = {
    "__new__", (PyCFunction)(void (*)(void))kc_builder_new_wrapper, METH_VARARGS | METH_KEYWORDS,
    "Create and return a new builder: RecordBatchBuilder for magic 2, a legacy builder for 0 and 1."};

static int kc_install_builder_new(PyObject *cls, PyObject *core, PyObject *other_magic) {
    PyObject *wrapper;
    if (kc_magic_name == NULL && (kc_magic_name = PyUnicode_InternFromString("magic")) == NULL)
        return -1;
    Py_INCREF(other_magic);
    Py_XSETREF(kc_other_magic, other_magic);
    Py_INCREF(cls);
    Py_XSETREF(kc_builder_type, (PyTypeObject *)cls);
    kc_core_new = ((PyTypeObject *)core)->tp_new;
    ((PyTypeObject *)cls)->tp_new = kc_builder_tp_new;
    /* Set in the type's dict directly: setting the attribute would make
       the slot call __new__ through Python again. */
    wrapper = PyCFunction_NewEx(&kc_builder_new_def, cls, NULL);
    if (wrapper == NULL)
        return -1;
    if (PyDict_SetItemString(((PyTypeObject *)cls)->tp_dict, "__new__", wrapper) < 0) {
        Py_DECREF(wrapper);
        return -1;
    }
    Py_DECREF(wrapper);
    PyType_Modified((PyTypeObject *)cls);
    return 0;
}
#endif
