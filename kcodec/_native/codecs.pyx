# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The framing of Kafka's compressed payloads, and each built-in codec's kcodec/codec.h capsule.

The compression libraries do the (de)compression; these functions walk the
framing around it (LZ4 frame blocks, snappy-java chunks, zstd frames) in C
with the GIL released, check every length against the buffer before it is
used, and return where each block lies.  The Python codecs then hand exactly
those slices to the library, so a hostile length can neither read past the
input nor make anything allocate before the size limits are checked.

The capsules (``*_native_codec``) give the builder and the readers each
codec's whole frame, written and read in C without the GIL.  Errors carry
Kafka's (Java) messages where Kafka has one.
"""
from cpython.buffer cimport (PyObject_GetBuffer, PyBuffer_Release, PyBUF_SIMPLE, PyBUF_ANY_CONTIGUOUS, PyBUF_READ,
                             PyBUF_WRITE)
from cpython.bytes cimport PyBytes_FromStringAndSize, PyBytes_AS_STRING
from cpython.memoryview cimport PyMemoryView_FromMemory
from cpython.object cimport PyObject
from cpython.pycapsule cimport PyCapsule_New, PyCapsule_GetPointer, PyCapsule_Destructor
from cpython.ref cimport Py_DECREF, Py_INCREF, Py_XDECREF
from libc.stdint cimport uint8_t, uint32_t, uint64_t, int64_t, INT64_MAX
from libc.stdlib cimport malloc, calloc, realloc, free
from libc.string cimport memcpy, memset
from libc.stdio cimport snprintf

from kcodec._native.primitives cimport _raw_bytes, _raw_bytes_data, kc_load_be32, kc_load_le32, kc_store_be32
from kcodec._native.primitives cimport kc_bytes_shrink, kc_crc32, kc_store_le32, kc_xxh32
from kcodec._native.native_codec cimport (kcodec_codec_v1, KCODEC_CODEC_CAPSULE_NAME, KCODEC_CODEC_ABI_VERSION,
                                          KCODEC_CODEC_THREAD_SAFE, KCODEC_CODEC_ERROR, KCODEC_CODEC_CORRUPT,
                                          KCODEC_CODEC_DST_TOO_SMALL, KCODEC_CODEC_BAD_LEVEL,
                                          KCODEC_CODEC_BAD_MAGIC, PyThread_type_lock,
                                          PyThread_allocate_lock, PyThread_free_lock, PyThread_acquire_lock,
                                          PyThread_release_lock, WAIT_LOCK)

from kcodec.errors import CorruptCompressedDataError, LimitExceededError

# One file per codec's framing, compiled as this one module:
include "codec_common.pxi"    # XXH32, alloc_bytes, block tables, errors, capsule plumbing
include "lz4_frame.pxi"       # Kafka's LZ4 frame; the lz4 capsule
include "snappy_xerial.pxi"   # snappy-java's stream and raw blocks; the snappy capsule
include "zstd_frame.pxi"      # zstd frame checks
include "zstd_native.pxi"     # libzstd contexts; the zstd capsule
include "gzip_zlib.pxi"       # gzip through zlib; the gzip capsule
