# cython: language_level=3
# C-level API of kcodec._native.records for other Cython modules (``cimport``): the record
# classes; and the csrc/ headers only this module reads (kc_record.h's v2 record codec,
# which others read too, is declared in primitives.pxd).
from cpython.object cimport PyObject, PyTypeObject
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint32_t

from kcodec._native.primitives cimport (KC_REC_OK, KC_REC_STRUCTURE, KC_REC_SHORT, KC_REC_NEG_HEADERS,
                                        KC_REC_MANY_HEADERS, KC_REC_NEG_HKEY, KC_REC_SIZE_MISMATCH, KC_REC_EOF,
                                        KC_REC_STREAM_SHORT, KC_MIN_RECORD_SIZE, kc_add_i64, kc_record_t,
                                        kc_header_t, kc_record_error_message, kc_parse_record_from,
                                        kc_parse_header, kc_record_body_size, kc_record_size, kc_header_size,
                                        kc_write_record_sized, kc_write_record, kc_write_header,
                                        kc_write_record_head, kc_write_varint, kc_crc32c,
                                        kc_crc32c_copy, kc_batch_write_fields, kc_batch_seal_from)

cdef extern from "kc_members.h":
    int kc_expose_object_field(PyTypeObject *type, const char *name, Py_ssize_t offset) except -1
    Py_ssize_t KC_RECORD_KEY, KC_RECORD_VALUE, KC_RECORD_TIMESTAMP_TYPE

cdef extern from "kc_pyseq.h":
    PyObject *kc_seq_item(PyObject *seq, bint is_list, Py_ssize_t i)
    bint kc_is_pair(PyObject *o)
    PyObject *kc_tuple_item(PyObject *t, Py_ssize_t i)
    bint kc_is_bytes(PyObject *o)
    bint kc_is_str(PyObject *o)
    bint kc_is_none(PyObject *o)
    const char *kc_bytes_data(PyObject *o)
    Py_ssize_t kc_bytes_len(PyObject *o)
    bint kc_is_seq(PyObject *o)
    Py_ssize_t kc_seq_size(PyObject *o)
    const char *kc_utf8(PyObject *o, Py_ssize_t *size) except NULL

cdef extern from "kc_builder_cache.h":
    ctypedef struct kc_block_cache_t:
        pass
    kc_block_cache_t kc_builder_cache
    void *kc_block_take(kc_block_cache_t *c, size_t want, size_t max_ratio, size_t *cap) nogil
    void kc_block_give(kc_block_cache_t *c, void *p, size_t cap) nogil
    size_t kc_block_set_limit(kc_block_cache_t *c, size_t limit, size_t min_block) nogil
    void kc_block_state(kc_block_cache_t *c, size_t *limit, size_t *held, size_t *min_block) nogil
    int kc_builder_cache_init()

cdef extern from "kc_tp_new.h":
    object _tp_new "kc_tp_new"(object type, object args, PyObject *kwds)

cdef extern from *:
    # the compiler's (GCC, Clang): a cache hint that never faults
    void __builtin_prefetch(const void *p) nogil


cdef class Record:
    cdef readonly int64_t offset
    cdef readonly int64_t timestamp
    cdef readonly object timestamp_type
    cdef readonly object key
    cdef readonly object value
    # headers: decoded (_headers) or, for records of a bytes buffer, where to decode them from
    cdef tuple _headers
    cdef object _hsrc
    cdef const uint8_t *_hp
    cdef const uint8_t *_hend
    cdef int32_t _hcount
    cdef readonly int32_t sequence
    cdef readonly bint is_control
    cdef readonly object control_type
    cdef readonly object coordinator_epoch


cdef class RecordIndex:
    cdef readonly object offset_delta, timestamp_delta, key_pos, key_len, value_pos, value_len
    cdef readonly object header_start, hkey_pos, hkey_len, hval_pos, hval_len
    cdef readonly Py_ssize_t size


cdef struct _HeaderSlots:
    # pointers and lengths of one record's header keys and values (key, value pairs), reused
    const char **ptr
    Py_ssize_t *len
    Py_ssize_t cap


cdef class BuilderBuffer:
    # the batch buffer: header gap + records (bytes owned here, a pooled bytearray, or,
    # _block, a block of the builder cache at _buf)
    cdef PyObject *_store
    cdef bint _block
    cdef bint _use_block
    cdef uint8_t *_buf
    cdef Py_ssize_t _cap
    cdef Py_ssize_t _size            # record bytes written after the header gap
    cdef int _exports
    cdef bint _built
    cdef readonly object pool
    cdef int _new_store(self, Py_ssize_t cap) except -1
    cdef int _new_block(self, Py_ssize_t cap) except -1
    cdef int _grow_block(self, Py_ssize_t cap, bint keep) except -1
    cdef object _pool_get(self, Py_ssize_t cap)
    cdef void _adopt(self, object store)
    cdef void _drop_store(self)
    cdef int _grow(self, Py_ssize_t need, bint keep) except -1
    cdef object _detached(self, Py_ssize_t size)


cdef class BatchBuilderCore(BuilderBuffer):
    cdef int32_t _count
    # MemoryRecordsBuilder's bookkeeping
    cdef int64_t _last_offset
    cdef int64_t _first_ts
    cdef int64_t _max_ts
    cdef bint _has_records
    cdef bint _has_dh
    cdef int64_t _delete_horizon
    cdef bint _lat
    cdef int64_t _log_append_time
    cdef int64_t _write_limit        # -1: none
    cdef float _ratio
    cdef uint32_t _crc               # CRC-32C of the first _crc_done record bytes, taken as
    cdef Py_ssize_t _crc_done        # large values were copied (uncompressed batches only)
    cdef bint _has_override
    cdef int64_t _last_override
    cdef object _codec
    cdef object _compression
    cdef readonly int compression_id
    cdef readonly object level
    cdef readonly object compression_ratio
    cdef readonly int64_t base_offset
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly bint is_transactional
    cdef readonly bint is_control
    cdef readonly int32_t partition_leader_epoch
    cdef _HeaderSlots _slots         # the headers of the record being appended
    cdef bint _busy                  # in _add() or build(): Python code they run may not re-enter
    cdef bint _compress_native(self) except -1
    cdef int64_t _estimated(self)
    cdef object _build(self)
    cdef int64_t _add(self, key, value, timestamp, headers, offset) except? -9223372036854775807


cdef class RecordBatchBase:
    cdef object _src                 # the buffer holding the batch (not copied)
    cdef object _pool
    cdef object _max_size
    cdef int8_t _magic
    cdef readonly Py_ssize_t position
    cdef readonly Py_ssize_t size_in_bytes
    cdef readonly int64_t base_offset
    cdef readonly int32_t batch_length
    cdef readonly int32_t partition_leader_epoch
    cdef readonly uint32_t crc
    cdef readonly uint8_t attributes
    cdef readonly int32_t last_offset_delta
    cdef readonly int64_t base_timestamp
    cdef readonly int64_t max_timestamp
    cdef readonly int64_t producer_id
    cdef readonly int16_t producer_epoch
    cdef readonly int32_t base_sequence
    cdef readonly int32_t record_count
    cdef int _acquire(self, Py_buffer *view) except -1
    cdef void _fill(self, object buf, const uint8_t *p, Py_ssize_t position, Py_ssize_t total,
                    object max_decompressed_size, object pool)
    cdef uint32_t _checksum_at(self, const uint8_t *batch) noexcept
    cdef int _ensure_valid_at(self, const uint8_t *batch) except -1
    cdef object _records_data(self)
