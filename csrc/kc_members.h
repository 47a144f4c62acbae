/* Read-only member descriptors over object fields (Record.key, .value, .timestamp_type). */
#ifndef KC_MEMBERS_H
#define KC_MEMBERS_H
#include <Python.h>
#include <structmember.h>
#ifndef Py_T_OBJECT_EX
#define Py_T_OBJECT_EX T_OBJECT_EX
#define Py_READONLY READONLY
#endif
/* Replaces a type's getset descriptor `name` by a read-only member
   descriptor over the object field at `offset`.  CPython's interpreter
   (3.11+) reads member descriptors of object fields inline, with no call,
   where getset descriptors cost a full attribute lookup and a call each:
   rec.key and rec.value are read for every record. */
static int kc_expose_object_field(PyTypeObject *type, const char *name, Py_ssize_t offset) {
    PyMemberDef *def = (PyMemberDef *)PyMem_Calloc(1, sizeof(PyMemberDef));
    PyObject *descr;
    int rc;
    if (def == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    /* The type keeps using the definition for as long as it lives: never freed. */
    def->name = name;
    def->type = Py_T_OBJECT_EX;
    def->offset = offset;
    def->flags = Py_READONLY;
    descr = PyDescr_NewMember(type, def);
    if (descr == NULL)
        return -1;
    rc = PyDict_SetItemString(type->tp_dict, name, descr);
    Py_DECREF(descr);
    PyType_Modified(type);
    return rc;
}
/* Expanded where used, after Cython has defined Record's struct; a
   renamed class or field fails to compile. */
#define KC_RECORD_FIELD(name) offsetof(struct __pyx_obj_6kcodec_7_native_7records_Record, name)
#define KC_RECORD_KEY KC_RECORD_FIELD(key)
#define KC_RECORD_VALUE KC_RECORD_FIELD(value)
#define KC_RECORD_TIMESTAMP_TYPE KC_RECORD_FIELD(timestamp_type)
#endif
