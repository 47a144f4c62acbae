# What the builder accepts from Python, turned into pointers and sizes: keys and
# values of any buffer, header pairs (scanned into a builder's slots), append_many's
# parallel sequences, the clock; and record_size (Kafka's DefaultRecord.sizeInBytes).
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


cdef list _scan_headers(_HeaderSlots *slots, headers, int32_t *count, int64_t *size):
    # Pointers and lengths of every header key and value into `slots` (a builder's);
    # returns the temporaries those pointers need alive (None when there are none).
    # The pairs of a list or a tuple are read through borrowed references (the
    # caller's sequence keeps them alive, and no Python code runs while exact
    # (str | bytes, bytes | None) tuples are read); any other iterable, or a list
    # with a pair that needs the slow path, is made a tuple first, which is
    # kept with the temporaries.
    cdef list keep = None
    cdef bint is_list
    cdef Py_ssize_t n, i
    cdef Py_ssize_t kl = 0, vl = 0
    cdef const char *kp
    cdef const char *vp = NULL
    cdef int64_t total = 0
    cdef PyObject *h
    cdef PyObject *hk
    cdef PyObject *hv
    count[0] = 0
    size[0] = 0
    if not kc_is_seq(<PyObject *>headers):
        if not headers:
            return None
        headers = tuple(headers)
        keep = [headers]
    n = kc_seq_size(<PyObject *>headers)
    if n == 0:
        return keep
    is_list = type(headers) is list
    if n > INT32_MAX_:
        raise RecordBuilderError("too many headers")
    if n > slots.cap:
        slots.ptr = <const char **>realloc(slots.ptr, 2 * n * sizeof(char *))
        slots.len = <Py_ssize_t *>realloc(slots.len, 2 * n * sizeof(Py_ssize_t))
        if slots.ptr == NULL or slots.len == NULL:
            slots.cap = 0
            raise MemoryError()
        slots.cap = n
    i = 0
    while i < n:
        h = kc_seq_item(<PyObject *>headers, is_list, i)
        kp = NULL
        if kc_is_pair(h):
            hk = kc_tuple_item(h, 0)
            hv = kc_tuple_item(h, 1)
            if kc_is_bytes(hv) or kc_is_none(hv):
                if kc_is_str(hk):
                    kp = kc_utf8(hk, &kl)
                elif kc_is_bytes(hk):
                    kp = kc_bytes_data(hk)
                    kl = kc_bytes_len(hk)
            if kp != NULL:
                if kc_is_none(hv):
                    vp = NULL
                    vl = -1
                else:
                    vp = kc_bytes_data(hv)
                    vl = kc_bytes_len(hv)
        if kp == NULL:
            if is_list:
                # The slow path runs Python code (unpacking, buffer exports) that could
                # change the list and free the pairs read so far: scan a snapshot
                # from the start instead.
                headers = PyList_AsTuple(headers)
                keep = [headers]
                is_list = False
                total = 0
                i = 0
                continue
            keep = _header_slow(<object>h, &kp, &kl, &vp, &vl, keep)
        if kl > INT32_MAX_ - 5 or vl > INT32_MAX_ - 5:
            raise RecordBuilderError("header of more than 2 GiB")
        slots.ptr[2 * i] = kp
        slots.len[2 * i] = kl
        slots.ptr[2 * i + 1] = vp
        slots.len[2 * i + 1] = vl
        total += kc_header_size(<int32_t>kl, <int32_t>vl)
        i += 1
    count[0] = <int32_t>n
    size[0] = total
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
