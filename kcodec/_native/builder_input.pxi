# What the builder accepts from Python, turned into pointers and sizes: keys and
# values of any buffer, header pairs, append_many's parallel sequences, the
# clock; and record_size (Kafka's DefaultRecord.sizeInBytes).
# Part of kcodec._native.records (included by records.pyx).

cdef inline bint _list_or_tuple(obj):
    return type(obj) is list or type(obj) is tuple


cdef object _item_of(seq, Py_ssize_t i, str name):
    if i >= PySequence_Fast_GET_SIZE(seq):
        raise RecordBuilderError(f"append_many: {name} has only {i} items, fewer than keys and values")
    return <object>PySequence_Fast_GET_ITEM(seq, i)


cdef object _next_of(it, Py_ssize_t i, str name):
    for item in it:
        return item
    raise RecordBuilderError(f"append_many: {name} has only {i} items, fewer than keys and values")


cdef inline int64_t _now_ms():
    cdef timespec ts
    clock_gettime(CLOCK_REALTIME, &ts)
    return <int64_t>ts.tv_sec * 1000 + ts.tv_nsec // 1000000


cdef inline bint _is_none_codec(compression):
    # Codec NONE needs no codec object at all: skip the registry lookup per batch.
    if type(compression) is int or isinstance(compression, int):
        return not isinstance(compression, bool) and compression == 0
    if type(compression) is str:
        return (<str>compression) == "none"
    return False


cdef inline int _key_value(obj, Py_buffer *buf, bint *have, const uint8_t **ptr, int32_t *length) except -1:
    if obj is None:
        length[0] = -1
        ptr[0] = NULL
    elif type(obj) is bytes:
        ptr[0] = <const uint8_t *>PyBytes_AS_STRING(obj)
        if PyBytes_GET_SIZE(obj) > INT32_MAX_ - 5:
            raise RecordBuilderError("key or value of more than 2 GiB")
        length[0] = <int32_t>PyBytes_GET_SIZE(obj)
    else:
        PyObject_GetBuffer(obj, buf, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        have[0] = True
        if buf.len > INT32_MAX_ - 5:
            raise RecordBuilderError("key or value of more than 2 GiB")
        ptr[0] = <const uint8_t *>buf.buf
        length[0] = <int32_t>buf.len
    return 0


cdef list _header_slow(h, const char **kp, Py_ssize_t *kl, const char **vp, Py_ssize_t *vl, list keep):
    # Any other header: a 2-sequence, a key of any buffer, a value of any buffer.  Every
    # object a pointer points into is kept, since h may hand out new objects.
    if type(h) is tuple and PyTuple_GET_SIZE(h) == 2:
        hk = (<tuple>h)[0]
        hv = (<tuple>h)[1]
    else:
        hk, hv = h
    if hk is None:
        raise RecordBuilderError("Invalid null header key found in headers")
    if keep is None:
        keep = []
    if isinstance(hk, str):
        kp[0] = PyUnicode_AsUTF8AndSize(hk, kl)
        keep.append(hk)
    else:
        b = hk if type(hk) is bytes else bytes(memoryview(hk))
        keep.append(b)
        kp[0] = PyBytes_AS_STRING(b)
        kl[0] = PyBytes_GET_SIZE(b)
    if hv is None:
        vp[0] = NULL
        vl[0] = -1
    else:
        b = _to_bytes(hv)
        keep.append(b)
        vp[0] = PyBytes_AS_STRING(b)
        vl[0] = PyBytes_GET_SIZE(b)
    return keep


def record_size(int32_t offset_delta, int64_t timestamp_delta, key, value, headers=()) -> int:
    """Encoded size of a record (Kafka's DefaultRecord.sizeInBytes)."""
    cdef int64_t hsize = 0
    cdef int32_t hcount = 0
    cdef int32_t klen = -1 if key is None else len(memoryview(key).cast("B"))
    cdef int32_t vlen = -1 if value is None else len(memoryview(value).cast("B"))
    for hk, hv in headers:
        hkb = hk.encode("utf-8") if isinstance(hk, str) else bytes(memoryview(hk))
        hvb = _to_bytes(hv)
        hsize += kc_header_size(len(hkb), -1 if hvb is None else len(hvb))
        hcount += 1
    cdef int64_t body = kc_record_body_size(timestamp_delta, offset_delta, klen, vlen, hcount, hsize)
    return kc_record_size(body)
