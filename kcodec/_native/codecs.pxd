# cython: language_level=3
# Declarations of kcodec._native.codecs: the C library only it calls (zlib, linked by setup.py).
from libc.stdint cimport uint8_t

cdef extern from "zlib.h" nogil:
    ctypedef struct z_stream:
        uint8_t *next_in
        unsigned int avail_in
        unsigned long total_in
        uint8_t *next_out
        unsigned int avail_out
        unsigned long total_out
        const char *msg
    int Z_OK, Z_STREAM_END, Z_BUF_ERROR, Z_NO_FLUSH, Z_FINISH, Z_DEFLATED, Z_DEFAULT_STRATEGY
    int deflateInit2(z_stream *s, int level, int method, int window_bits, int mem_level, int strategy)
    int deflate(z_stream *s, int flush)
    int deflateReset(z_stream *s)
    int deflateEnd(z_stream *s)
    int inflateInit2(z_stream *s, int window_bits)
    int inflate(z_stream *s, int flush)
    int inflateReset(z_stream *s)
    int inflateEnd(z_stream *s)
