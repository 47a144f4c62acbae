# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Magic v2 records: decoding into Record objects or offset/length arrays, and encoding.

The loops run over raw pointers into the caller's buffer through
``csrc/kc_record.h``; the array scan releases the GIL.
"""
cimport cython
from cpython.buffer cimport PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_WRITABLE
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE, _PyBytes_Resize
from cpython.bytearray cimport PyByteArray_AS_STRING, PyByteArray_GET_SIZE
from cpython.object cimport PyObject, PyTypeObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_SIZE
from cpython.list cimport PyList_AsTuple
from cpython.sequence cimport PySequence_Fast_GET_SIZE, PySequence_Fast_GET_ITEM
from cpython.unicode cimport PyUnicode_DecodeUTF8, PyUnicode_AsUTF8AndSize
from libc.stdint cimport uint8_t, int8_t, int16_t, int32_t, int64_t, uint16_t, uint32_t, uint64_t, INT64_MIN
from libc.stdlib cimport malloc, realloc, free
from libc.string cimport memcpy, memset
from posix.time cimport clock_gettime, timespec, CLOCK_REALTIME

import numpy as np
cimport numpy as cnp

from kcodec._native.primitives cimport kc_load_be32, kc_load_be64, kc_varint_size, kc_bytes_shrink
from kcodec._native.primitives cimport (kc_batch_header_t, kc_batch_read, kc_batch_write, kc_batch_checksum,
                                        KC_BATCH_BASE_OFFSET, KC_BATCH_LENGTH, KC_BATCH_PARTITION_LEADER_EPOCH,
                                        KC_BATCH_MAGIC, KC_BATCH_CRC, KC_BATCH_ATTRIBUTES,
                                        KC_BATCH_LAST_OFFSET_DELTA, KC_BATCH_BASE_TIMESTAMP,
                                        KC_BATCH_MAX_TIMESTAMP, KC_BATCH_PRODUCER_ID, KC_BATCH_PRODUCER_EPOCH,
                                        KC_BATCH_BASE_SEQUENCE, KC_BATCH_RECORDS_COUNT, KC_BATCH_OVERHEAD,
                                        KC_BATCH_LOG_OVERHEAD, KC_BATCH_COMPRESSION_MASK, KC_BATCH_TIMESTAMP_TYPE,
                                        KC_BATCH_TRANSACTIONAL, KC_BATCH_CONTROL, KC_BATCH_DELETE_HORIZON,
                                        KC_MSG_CRC, KC_MSG_MAGIC, KC_MSG_ATTRIBUTES, KC_MSG_TIMESTAMP,
                                        KC_MSG_COMPRESSION_MASK, KC_MSG_TIMESTAMP_TYPE, KC_MSG_HEADER_SIZE_V0,
                                        KC_MSG_HEADER_SIZE_V1, KC_MSG_OVERHEAD_V0, KC_MSG_OVERHEAD_V1)
from kcodec._native.primitives cimport (kc_entry_t, kc_entry_kind_t, kc_entry_total, kc_walk_step,
                                        KC_ENTRY_END, KC_ENTRY_PARTIAL, KC_ENTRY_BATCH, KC_ENTRY_MESSAGE,
                                        KC_ENTRY_BAD_SIZE, KC_ENTRY_BAD_MAGIC, KC_ENTRY_OFFSET, KC_ENTRY_SIZE,
                                        KC_ENTRY_MAGIC,
                                        KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC, KC_ENTRY_MIN_SIZE, KC_ENTRY_MAGIC_V2)
from kcodec._native.native_codec cimport NativeCodec, native_of
from kcodec._java_utf8 import decode as _java_utf8_decode
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType, get_codec
from kcodec.errors import (BufferReleasedError, CorruptRecordError, InvalidRecordError, KcodecError,
                           RecordBuilderError)

cnp.import_array()

cdef enum:
    INT32_MAX_ = 2147483647
cdef int64_t NO_TIMESTAMP = -1
cdef int64_t _NO_LAST = INT64_MIN

#: The layout of csrc/kc_batch.h, kc_message.h and kc_walk.h by their C names: the one source of
#: kcodec.records.framing's, batch_header's and message_header's constants.
LAYOUT = {
    "KC_BATCH_BASE_OFFSET": KC_BATCH_BASE_OFFSET, "KC_BATCH_LENGTH": KC_BATCH_LENGTH,
    "KC_BATCH_PARTITION_LEADER_EPOCH": KC_BATCH_PARTITION_LEADER_EPOCH, "KC_BATCH_MAGIC": KC_BATCH_MAGIC,
    "KC_BATCH_CRC": KC_BATCH_CRC, "KC_BATCH_ATTRIBUTES": KC_BATCH_ATTRIBUTES,
    "KC_BATCH_LAST_OFFSET_DELTA": KC_BATCH_LAST_OFFSET_DELTA, "KC_BATCH_BASE_TIMESTAMP": KC_BATCH_BASE_TIMESTAMP,
    "KC_BATCH_MAX_TIMESTAMP": KC_BATCH_MAX_TIMESTAMP, "KC_BATCH_PRODUCER_ID": KC_BATCH_PRODUCER_ID,
    "KC_BATCH_PRODUCER_EPOCH": KC_BATCH_PRODUCER_EPOCH, "KC_BATCH_BASE_SEQUENCE": KC_BATCH_BASE_SEQUENCE,
    "KC_BATCH_RECORDS_COUNT": KC_BATCH_RECORDS_COUNT, "KC_BATCH_OVERHEAD": KC_BATCH_OVERHEAD,
    "KC_BATCH_LOG_OVERHEAD": KC_BATCH_LOG_OVERHEAD, "KC_BATCH_COMPRESSION_MASK": KC_BATCH_COMPRESSION_MASK,
    "KC_BATCH_TIMESTAMP_TYPE": KC_BATCH_TIMESTAMP_TYPE, "KC_BATCH_TRANSACTIONAL": KC_BATCH_TRANSACTIONAL,
    "KC_BATCH_CONTROL": KC_BATCH_CONTROL, "KC_BATCH_DELETE_HORIZON": KC_BATCH_DELETE_HORIZON,
    "KC_MSG_CRC": KC_MSG_CRC, "KC_MSG_MAGIC": KC_MSG_MAGIC, "KC_MSG_ATTRIBUTES": KC_MSG_ATTRIBUTES,
    "KC_MSG_TIMESTAMP": KC_MSG_TIMESTAMP, "KC_MSG_COMPRESSION_MASK": KC_MSG_COMPRESSION_MASK,
    "KC_MSG_TIMESTAMP_TYPE": KC_MSG_TIMESTAMP_TYPE, "KC_MSG_HEADER_SIZE_V0": KC_MSG_HEADER_SIZE_V0,
    "KC_MSG_HEADER_SIZE_V1": KC_MSG_HEADER_SIZE_V1, "KC_MSG_OVERHEAD_V0": KC_MSG_OVERHEAD_V0,
    "KC_MSG_OVERHEAD_V1": KC_MSG_OVERHEAD_V1, "KC_ENTRY_OFFSET": KC_ENTRY_OFFSET,
    "KC_ENTRY_SIZE": KC_ENTRY_SIZE, "KC_ENTRY_MAGIC": KC_ENTRY_MAGIC,
    "KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC": KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC, "KC_ENTRY_MIN_SIZE": KC_ENTRY_MIN_SIZE,
}


# One file per concept, compiled as this one module (the names are shared, and
# calls between the parts stay direct C calls):
include "record.pxi"          # Record, decode_records, RecordIterator
include "record_scan.pxi"     # RecordIndex, scan_v2_records
include "builder_input.pxi"   # keys, values and headers from Python; record_size
include "builder_buffer.pxi"  # BuilderBuffer: the buffer a batch is built in
include "batch_builder.pxi"   # BatchBuilderCore (MemoryRecordsBuilder)
include "record_batch.pxi"    # RecordBatchBase; v2 header write/read/assemble
include "pooled_buffer.pxi"   # PooledBuffer
include "batch_reader.pxi"    # EntryWalker, BatchReader
