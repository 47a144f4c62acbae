# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""Columnar record paths: gather record fields into Arrow buffers, and encode
records straight from Arrow buffers.  Python touches only per-batch objects;
every per-record step is a C loop without the GIL.

The parts are included by concept: Arrow in, the partitioner, the accumulator's cuts, column memory, Arrow out
(gathering), and Arrow C out (the Arrow C data interface over the gathered columns).
"""
cimport cython
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS,
                             PyBUF_FORMAT, PyBUF_ND, PyBUF_WRITABLE, PyBuffer_FillInfo)
from cpython.bytearray cimport PyByteArray_FromStringAndSize
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING, PyBytes_GET_SIZE
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer
from cpython.ref cimport Py_DECREF, Py_INCREF
from cpython.mem cimport PyMem_RawMalloc, PyMem_RawRealloc, PyMem_RawFree
from libc.stdint cimport uint8_t, uint16_t, uint32_t, uint64_t, int16_t, int32_t, int64_t, INT64_MAX
from libc.string cimport memcpy, memset
from libc.stdlib cimport malloc, calloc, realloc, free
from posix.time cimport clock_gettime, timespec, CLOCK_MONOTONIC, CLOCK_THREAD_CPUTIME_ID

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_bytes_shrink
from kcodec._native.primitives cimport kc_load_be32, kc_varint_size
from kcodec._native.primitives cimport (KC_MIN_RECORD_SIZE, kc_record_body_size, kc_header_size,
                                        kc_write_record_sized, kc_write_header, kc_record_t, kc_header_t,
                                        kc_parse_record, kc_parse_header, kc_parse_record_stream, kc_bincol_t,
                                        kc_gather_t, kc_gather_region, kc_gather_region_views,
                                        kc_view_put, kc_nullmap_to_validity)
from kcodec._native.primitives cimport (kc_batch_header_t, kc_batch_read, kc_batch_write, kc_batch_checksum,
                                        kc_batch_write_fields, kc_batch_seal_from,
                                        KC_BATCH_OVERHEAD, KC_BATCH_LOG_OVERHEAD, KC_BATCH_ATTRIBUTES,
                                        KC_BATCH_RECORDS_COUNT, KC_BATCH_COMPRESSION_MASK,
                                        KC_BATCH_CONTROL, KC_BATCH_TIMESTAMP_TYPE)
from kcodec._native.primitives cimport (kc_entry_t, kc_entry_kind_t, kc_walk_step, kc_walk_v2, KC_ENTRY_END,
                                        KC_ENTRY_PARTIAL, KC_ENTRY_BATCH, KC_ENTRY_MESSAGE)
from kcodec._native.native_codec cimport (NativeCodec, KCODEC_CODEC_ERROR, KCODEC_CODEC_DST_TOO_SMALL)

import numpy as np
cimport numpy as cnp

from kcodec._java_utf8 import decode as java_utf8_decode
from kcodec.errors import LimitExceededError, RecordBuilderError

cnp.import_array()

include "arrow_in.pxi"
include "partitioner.pxi"
include "accumulator.pxi"
include "column_cache.pxi"
include "arrow_out.pxi"
include "arrow_out_compressed.pxi"
include "arrow_c.pxi"
