# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Hot loops of the v0/v1 message format: framing of a decompressed wrapper set,
one message's fields, and CRC-32 checks.  The rules (and error texts) are
Kafka's; kcodec/records/legacy_batch.py documents them."""
from cpython.bytearray cimport PyByteArray_Resize, PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from libc.stdint cimport int8_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t

from libc.string cimport memcpy

from kcodec._native.primitives cimport kc_load_be32, kc_load_be64, kc_store_be32, kc_store_be64
from kcodec._native.primitives cimport (KC_MSG_LOG_OVERHEAD, KC_MSG_CRC, KC_MSG_MAGIC, KC_MSG_ATTRIBUTES,
                                        KC_MSG_TIMESTAMP, KC_MSG_OVERHEAD_V0, kc_message_header_size,
                                        kc_message_overhead, kc_message_checksum, kc_message_seal)


from kcodec.errors import CorruptRecordError, InvalidRecordError

cdef inline int8_t _i8(uint8_t b) noexcept nogil:
    return <int8_t>b


def scan_inner(const uint8_t[::1] data, bint strict=False):
    """Framing of a decompressed wrapper value: ``([(offset, start, end, magic, attributes), ...], stop)``.

    ``stop`` is where the scan ended (``len(data)`` when every byte belongs
    to a message).  Kafka's reader ends the set silently at fewer than 12
    bytes or a message whose size runs past the end; with ``strict`` such a
    message raises CorruptRecordError, and so does an inner message whose
    CRC-32 is wrong (the consumer's ``check.crcs``).  An inner size below 14
    raises CorruptRecordError either way.  Positions in the messages are
    bytes of ``data``; errors carry none (``data`` is not the caller's buffer).
    """
    cdef Py_ssize_t n = data.shape[0], pos = 0, start, end
    cdef int64_t offset
    cdef int32_t size
    cdef uint32_t stored, computed
    cdef list out = []
    cdef const uint8_t *p = &data[0] if n > 0 else NULL
    while n - pos >= KC_MSG_LOG_OVERHEAD:
        offset = <int64_t>kc_load_be64(p + pos)
        size = <int32_t>kc_load_be32(p + pos + 8)
        if size < KC_MSG_OVERHEAD_V0:
            raise CorruptRecordError("Record size is less than the minimum record overhead (14)")
        start = pos + KC_MSG_LOG_OVERHEAD
        if size > n - start:
            if strict:
                raise CorruptRecordError(
                    f"Inner message at byte {pos} of the decompressed wrapper has size {size}, "
                    f"but only {n - start} bytes follow")
            break
        end = start + size
        if strict:
            stored = kc_load_be32(p + start + KC_MSG_CRC)
            with nogil:
                computed = kc_message_checksum(p + start, <size_t>size)
            if stored != computed:
                raise CorruptRecordError(
                    f"Record is corrupt (stored crc = {stored}, computed crc = {computed})")
        out.append((offset, start, end, _i8(p[start + KC_MSG_MAGIC]), _i8(p[start + KC_MSG_ATTRIBUTES])))
        pos = end
    return out, pos


cdef int32_t _span(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, str what) except -2:
    """Length of the ``what`` field whose length is at ``pos`` (-1 = null), checked against ``end``."""
    cdef int32_t length
    if end - pos < 4:
        raise InvalidRecordError(
            f"Found invalid record structure: the {what} length field at byte {pos} "
            f"runs past the end of the message", position=pos)
    length = <int32_t>kc_load_be32(p + pos)
    if length < 0:
        return -1
    if length > end - pos - 4:
        raise InvalidRecordError(
            f"Found invalid record structure: {what} length {length} exceeds the "
            f"{end - pos - 4} bytes left in the message", position=pos)
    return length


cdef object _sized(const uint8_t *p, Py_ssize_t pos, Py_ssize_t end, str what, Py_ssize_t *after):
    cdef int32_t length = _span(p, pos, end, what)
    pos += 4
    if length < 0:
        after[0] = pos
        return None
    after[0] = pos + length
    return (<const char *>(p + pos))[:length]


cdef int _check_message_span(Py_ssize_t buffer_size, Py_ssize_t start, Py_ssize_t end) except -1:
    """Raise LegacyRecord.ensureValid's error unless ``[start, end)`` lies in the buffer and holds a CRC."""
    if start < 0 or end > buffer_size or end - start < KC_MSG_OVERHEAD_V0:
        raise CorruptRecordError(
            "Record is corrupt (crc could not be retrieved as the record is too small, "
            f"size = {end - start})", position=start)
    return 0


def parse_message(const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t end):
    """``(crc, magic, attributes, timestamp, key, value)`` of the message in ``data[start:end]``.

    Key and value are copied into ``bytes`` (None when the length is negative).
    Kafka reads every magic other than 0 with the v1 layout; v0 reports
    timestamp -1.  Lengths that run past the message raise InvalidRecordError.
    """
    cdef Py_ssize_t pos
    cdef const uint8_t *p
    cdef int8_t magic
    cdef int64_t timestamp
    _check_message_span(data.shape[0], start, end)
    p = &data[0]
    magic = _i8(p[start + KC_MSG_MAGIC])
    timestamp = -1 if magic == 0 else <int64_t>kc_load_be64(p + start + KC_MSG_TIMESTAMP)
    pos = start + kc_message_header_size(<uint8_t>magic)
    key = _sized(p, pos, end, "key", &pos)
    value = _sized(p, pos, end, "value", &pos)
    return kc_load_be32(p + start + KC_MSG_CRC), magic, _i8(p[start + KC_MSG_ATTRIBUTES]), timestamp, key, value


def check_crc(const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t end):
    """``None`` if the message in ``data[start:end]`` has a valid CRC-32, else ``(stored, computed)``.

    Messages shorter than 14 bytes raise CorruptRecordError (Kafka's text).
    """
    cdef Py_ssize_t size = end - start
    cdef uint32_t stored, computed
    _check_message_span(data.shape[0], start, end)
    with nogil:
        stored = kc_load_be32(&data[start] + KC_MSG_CRC)
        computed = kc_message_checksum(&data[start], <size_t>size)
    if stored == computed:
        return None
    return stored, computed


def value_span(const uint8_t[::1] data, Py_ssize_t start, Py_ssize_t end):
    """``(position, length)`` of the value of the message in ``data[start:end]``; length -1 = null.

    Lets a wrapper's compressed value be decompressed straight from the source
    buffer, without copying it first.
    """
    cdef Py_ssize_t pos
    cdef const uint8_t *p
    cdef int32_t length
    _check_message_span(data.shape[0], start, end)
    p = &data[0]
    pos = start + kc_message_header_size(p[start + KC_MSG_MAGIC])
    length = _span(p, pos, end, "key")
    pos += 4 + (length if length > 0 else 0)
    length = _span(p, pos, end, "value")
    return pos + 4, length


def append_message(bytearray buf, int64_t offset, int magic, int attributes, int64_t timestamp,
                   key, value):
    """Append one message (``offset, size, crc, magic, attributes, [timestamp], key, value``) to ``buf``.

    ``key``/``value`` are None or any contiguous buffer.  Returns the message
    size (after the 12-byte log overhead).  The CRC-32 covers magic to end, as
    ``LegacyRecord.write`` computes it.
    """
    cdef const uint8_t[::1] k
    cdef const uint8_t[::1] v
    cdef Py_ssize_t klen = -1, vlen = -1, size, old, pos
    cdef uint8_t *p
    cdef uint8_t *m
    if key is not None:
        k = memoryview(key).cast("B") if not isinstance(key, bytes) else key
        klen = k.shape[0]
    if value is not None:
        v = memoryview(value).cast("B") if not isinstance(value, bytes) else value
        vlen = v.shape[0]
    size = kc_message_overhead(<uint8_t>magic) + \
        (klen if klen > 0 else 0) + (vlen if vlen > 0 else 0)
    if size > 0x7FFFFFFF - KC_MSG_LOG_OVERHEAD:
        raise OverflowError(f"a message of {size} bytes does not fit a 32-bit size field")
    old = PyByteArray_GET_SIZE(buf)
    PyByteArray_Resize(buf, old + KC_MSG_LOG_OVERHEAD + size)
    p = <uint8_t *>PyByteArray_AS_STRING(buf) + old
    with nogil:
        kc_store_be64(p, <uint64_t>offset)
        kc_store_be32(p + 8, <uint32_t>size)
        m = p + KC_MSG_LOG_OVERHEAD
        m[KC_MSG_MAGIC] = <uint8_t>magic
        m[KC_MSG_ATTRIBUTES] = <uint8_t>attributes
        if magic != 0:
            kc_store_be64(m + KC_MSG_TIMESTAMP, <uint64_t>timestamp)
        pos = KC_MSG_LOG_OVERHEAD + kc_message_header_size(<uint8_t>magic)
        kc_store_be32(p + pos, <uint32_t><int32_t>klen)
        pos += 4
        if klen > 0:
            memcpy(p + pos, &k[0], klen)
            pos += klen
        kc_store_be32(p + pos, <uint32_t><int32_t>vlen)
        pos += 4
        if vlen > 0:
            memcpy(p + pos, &v[0], vlen)
        kc_message_seal(m, <size_t>size)
    return size
