# Kafka's default partitioner: murmur2 of the key, per buffer or per Arrow key column.


cdef inline int32_t _murmur2(const uint8_t *data, int64_t length) noexcept nogil:
    # Kafka's Utils.murmur2: seed 0x9747b28c, little-endian 4-byte blocks, Java int arithmetic.
    cdef uint32_t m = 0x5bd1e995
    cdef int r = 24
    cdef uint32_t seed = 0x9747b28c
    cdef uint32_t h = seed ^ <uint32_t>length
    cdef int64_t i, nblocks = length // 4
    cdef uint32_t k
    for i in range(nblocks):
        k = (<uint32_t>data[4 * i]) | (<uint32_t>data[4 * i + 1] << 8) | \
            (<uint32_t>data[4 * i + 2] << 16) | (<uint32_t>data[4 * i + 3] << 24)
        k *= m
        k ^= k >> r
        k *= m
        h *= m
        h ^= k
    cdef int64_t tail = nblocks * 4
    cdef int rem = length % 4
    if rem == 3:
        h ^= (<uint32_t>data[tail + 2]) << 16
    if rem >= 2:
        h ^= (<uint32_t>data[tail + 1]) << 8
    if rem >= 1:
        h ^= data[tail]
        h *= m
    h ^= h >> 13
    h *= m
    h ^= h >> 15
    return <int32_t>h


def murmur2_bytes(data) -> int:
    """Kafka's murmur2 hash of a buffer (signed 32-bit)."""
    cdef Py_buffer view
    PyObject_GetBuffer(data, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
    try:
        return _murmur2(<const uint8_t *>view.buf, view.len)
    finally:
        PyBuffer_Release(&view)


def partition_column(valid, Py_ssize_t voff, offsets, data, Py_ssize_t n, int32_t num_partitions):
    """``toPositive(murmur2(key)) % num_partitions`` per row of an Arrow large-binary column; null -> -1."""
    cdef _Col c
    cdef list keep = []
    _col_from((valid, voff, offsets, data), &c, keep)
    cdef cnp.ndarray[int32_t] out = np.empty(n, np.int32)
    cdef int32_t *o = <int32_t *>out.data
    cdef Py_ssize_t i
    cdef int32_t ln
    with nogil:
        for i in range(n):
            ln = kc_col_len(&c, i)
            if ln < 0:
                o[i] = -1
            else:
                o[i] = (_murmur2(c.data + kc_off(&c, i), ln) & 0x7fffffff) % num_partitions
    return out
