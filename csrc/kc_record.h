/* Magic v2 records (DefaultRecord.java): size, write and bounds-checked parse.
 * Static inline so the Cython modules that share it inline it in their loops.
 *
 * Kafka reads records two ways and the error texts differ between them:
 *  - uncompressed batches (readFrom(ByteBuffer)): key, value and header
 *    lengths are bounded only by the end of the batch, and the declared
 *    record length is compared with what was consumed afterwards;
 *  - compressed batches (readFrom(InputStream)): the record's `length` bytes
 *    are read first, so the fields are bounded by the record itself, and a
 *    bad length prefix reads as "premature EOF".
 * kc_parse_record does the first, kc_parse_record_stream the second. */
#ifndef KC_RECORD_H
#define KC_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kc_copy.h"
#include "kc_varint.h"

#define KC_REC_OK 0
#define KC_REC_STRUCTURE (-1)      /* "Found invalid record structure" */
#define KC_REC_SHORT (-2)          /* length > remaining bytes of the batch */
#define KC_REC_NEG_HEADERS (-3)    /* headersCount < 0 */
#define KC_REC_MANY_HEADERS (-4)   /* headersCount > remaining */
#define KC_REC_NEG_HKEY (-5)       /* header key length < 0 */
#define KC_REC_SIZE_MISMATCH (-6)  /* consumed != declared length */
#define KC_REC_EOF (-7)            /* the batch ended where a record should start */
#define KC_REC_STREAM_SHORT (-8)   /* compressed stream ended inside a record */
#define KC_REC_ERROR_COUNT 9

/* The smallest record that parses: a one-byte length, then attributes and five
 * one-byte varints (timestamp delta, offset delta, key length, value length,
 * header count).  Readers bound record counts read from a batch with it. */
#define KC_MIN_RECORD_SIZE 7

/* Java's long addition, which the record fields' offsets and timestamps are
 * computed with (base + delta): it wraps where C's signed overflow is undefined. */
static inline int64_t kc_add_i64(int64_t a, int64_t b)
{
    return (int64_t)((uint64_t)a + (uint64_t)b);
}

/* Kafka's InvalidRecordException texts; %d is kc_record_t.length for
 * KC_REC_SHORT/KC_REC_SIZE_MISMATCH/KC_REC_STREAM_SHORT, then bad_value (or consumed). */
static const char *const kc_record_error_formats[KC_REC_ERROR_COUNT] = {
    "",
    "Found invalid record structure",
    "Invalid record size: expected %d bytes in record payload, but instead the buffer has only %d remaining bytes.",
    "Found invalid number of record headers %d",
    "Found invalid number of record headers. %d is larger than the remaining size of the buffer",
    "Invalid negative header key size %d",
    "Invalid record size: expected to read %d bytes in record payload, but instead read %d",
    "Incorrect declared batch size, premature EOF reached",
    "Invalid record size: expected %d bytes in record payload, but the record payload reached EOF.",
};

/* printf format of the message for an error code (see kc_record_error_formats). */
static inline const char *kc_record_error_message(int code)
{
    if (code >= 0 || -code >= KC_REC_ERROR_COUNT) return kc_record_error_formats[1];
    return kc_record_error_formats[-code];
}

typedef struct {
    int32_t length;          /* declared body length */
    int32_t consumed;        /* body bytes actually parsed */
    int32_t header_count;
    int32_t bad_value;       /* the offending value for error messages */
    int8_t attributes;       /* unused by Kafka; kept for tools that show it */
    int64_t timestamp_delta;
    int32_t offset_delta;
    int32_t key_len;         /* -1 = null (any negative length on the wire) */
    int32_t value_len;       /* -1 = null */
    const uint8_t *key;
    const uint8_t *value;
    const uint8_t *headers_start; /* first header byte; walk with kc_parse_header */
    const uint8_t *end;      /* one past the record */
} kc_record_t;

typedef struct {
    int32_t key_len;
    int32_t value_len;       /* -1 = null */
    int32_t bad_value;
    const uint8_t *key;
    const uint8_t *value;
} kc_header_t;

/* Record fields are mostly one- or two-byte varints (deltas, lengths, header
 * counts): decode those inline and leave the rest to kc_varint.h, which
 * applies Kafka's rules for longer encodings. */
static inline int kc_rec_varint(const uint8_t *p, const uint8_t *end, int32_t *out)
{
    if (p < end && p[0] < 0x80) {
        uint32_t z = p[0];
        *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
        return 1;
    }
    /* two bytes: lengths of 64 to 8191 bytes, the usual key, value and record */
    if (end - p >= 2 && p[1] < 0x80) {
        uint32_t z = (p[0] & 0x7fu) | ((uint32_t)p[1] << 7);
        *out = (int32_t)((z >> 1) ^ (~(z & 1) + 1));
        return 2;
    }
    return kc_read_varint(p, end, out);
}

static inline int kc_rec_varlong(const uint8_t *p, const uint8_t *end, int64_t *out)
{
    if (p < end && p[0] < 0x80) {
        uint64_t z = p[0];
        *out = (int64_t)((z >> 1) ^ (~(z & 1) + 1));
        return 1;
    }
    return kc_read_varlong(p, end, out);
}

static inline int kc_bytes_field_size(int32_t len)
{
    return len < 0 ? 1 : kc_varint_size(len) + len;
}

/* Body size of a record (everything after the length varint);
 * headers_size is the sum of kc_header_size over its headers. */
static inline int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta,
                                          int32_t key_len, int32_t value_len,
                                          int32_t header_count, int64_t headers_size)
{
    return 1 + kc_varlong_size(timestamp_delta) + kc_varint_size(offset_delta)
        + kc_bytes_field_size(key_len) + kc_bytes_field_size(value_len)
        + kc_varint_size(header_count) + headers_size;
}

/* Whole record size including the length prefix (DefaultRecord.sizeInBytes). */
static inline int64_t kc_record_size(int64_t body_size)
{
    return kc_varint_size((int32_t)body_size) + body_size;
}

static inline int64_t kc_header_size(int32_t key_len, int32_t value_len)
{
    return kc_bytes_field_size(key_len) + kc_bytes_field_size(value_len);
}

static inline uint8_t *kc_write_bytes_field(uint8_t *p, const uint8_t *data, int32_t len)
{
    if (len < 0) return p + kc_write_varint(p, -1);
    p += kc_write_varint(p, len);
    kc_copy(p, data, (size_t)len);
    return p + len;
}

/* Writes length, attributes, deltas, key, value and the header count with an
 * explicit body size (from kc_record_body_size); the caller then writes the
 * header_count headers with kc_write_header.  Returns bytes written. */
static inline int64_t kc_write_record_sized(uint8_t *p, int64_t body_size, int64_t timestamp_delta,
                                            int32_t offset_delta, const uint8_t *key, int32_t key_len,
                                            const uint8_t *value, int32_t value_len, int32_t header_count)
{
    uint8_t *start = p;
    p += kc_write_varint(p, (int32_t)body_size);
    *p++ = 0;
    p += kc_write_varlong(p, timestamp_delta);
    p += kc_write_varint(p, offset_delta);
    p = kc_write_bytes_field(p, key, key_len);
    p = kc_write_bytes_field(p, value, value_len);
    p += kc_write_varint(p, header_count);
    return p - start;
}

/* The start of a record, up to its value's bytes: kc_write_record_sized
 * without the value's copy, for a caller that copies it (value_len >= 0). */
static inline int64_t kc_write_record_head(uint8_t *p, int64_t body_size, int64_t timestamp_delta,
                                           int32_t offset_delta, const uint8_t *key, int32_t key_len,
                                           int32_t value_len)
{
    uint8_t *start = p;
    p += kc_write_varint(p, (int32_t)body_size);
    *p++ = 0;
    p += kc_write_varlong(p, timestamp_delta);
    p += kc_write_varint(p, offset_delta);
    p = kc_write_bytes_field(p, key, key_len);
    p += kc_write_varint(p, value_len);
    return p - start;
}

/* A record without headers (header_count 0), or the start of one whose
 * headers_size is 0.  Records with headers use kc_write_record_sized because
 * the length prefix counts the header bytes.  Returns bytes written. */
static inline int64_t kc_write_record(uint8_t *p, int64_t timestamp_delta, int32_t offset_delta,
                                      const uint8_t *key, int32_t key_len, const uint8_t *value,
                                      int32_t value_len, int32_t header_count)
{
    int64_t body = kc_record_body_size(timestamp_delta, offset_delta, key_len, value_len, header_count, 0);
    return kc_write_record_sized(p, body, timestamp_delta, offset_delta, key, key_len, value, value_len,
                                 header_count);
}

/* Header key must be non-null (key_len >= 0); value_len -1 = null. */
static inline int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len,
                                      const uint8_t *value, int32_t value_len)
{
    uint8_t *start = p;
    p = kc_write_bytes_field(p, key, key_len);
    p = kc_write_bytes_field(p, value, value_len);
    return p - start;
}

/* A nullable bytes field (the key, the value, a header's value) as
 * DefaultRecord.readFrom reads it: a varint length, any negative one read as
 * null (stored as -1), then that many bytes, bounded by end.  Advances *pp
 * past it; returns KC_REC_OK or KC_REC_STRUCTURE. */
static inline int kc_parse_nullable_bytes(const uint8_t **pp, const uint8_t *end, const uint8_t **data,
                                          int32_t *len)
{
    const uint8_t *p = *pp;
    int n = kc_rec_varint(p, end, len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (*len < 0) {
        *len = -1;
        *data = NULL;
    } else {
        if (end - p < *len) return KC_REC_STRUCTURE;
        *data = p;
        p += *len;
    }
    *pp = p;
    return KC_REC_OK;
}

/* Parse one header at p.  Returns bytes consumed or a negative KC_REC_*. */
static inline int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h)
{
    const uint8_t *start = p;
    int n;
    h->bad_value = 0;
    n = kc_rec_varint(p, end, &h->key_len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (h->key_len < 0) { h->bad_value = h->key_len; return KC_REC_NEG_HKEY; }
    if (end - p < h->key_len) return KC_REC_STRUCTURE;
    h->key = p;
    p += h->key_len;
    if (kc_parse_nullable_bytes(&p, end, &h->value, &h->value_len) < 0) return KC_REC_STRUCTURE;
    return (int)(p - start);
}

/* The record body from `body` (attributes onwards) up to and including the
 * header count, fields bounded by end; r->headers_start is then the first
 * header byte.  Returns KC_REC_OK or a negative KC_REC_*. */
static inline int kc_parse_record_fields(const uint8_t *body, const uint8_t *end, kc_record_t *r)
{
    const uint8_t *p = body;
    int n;
    if (p >= end) return KC_REC_STRUCTURE;
    r->attributes = (int8_t)*p++;
    n = kc_rec_varlong(p, end, &r->timestamp_delta);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    n = kc_rec_varint(p, end, &r->offset_delta);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (kc_parse_nullable_bytes(&p, end, &r->key, &r->key_len) < 0) return KC_REC_STRUCTURE;
    if (kc_parse_nullable_bytes(&p, end, &r->value, &r->value_len) < 0) return KC_REC_STRUCTURE;
    n = kc_rec_varint(p, end, &r->header_count);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (r->header_count < 0) { r->bad_value = r->header_count; return KC_REC_NEG_HEADERS; }
    if (r->header_count > end - p) { r->bad_value = r->header_count; return KC_REC_MANY_HEADERS; }
    r->headers_start = p;
    return KC_REC_OK;
}

/* The record body from `body` (attributes onwards), fields bounded by end. */
static inline int kc_parse_record_body(const uint8_t *body, const uint8_t *end, kc_record_t *r)
{
    const uint8_t *p;
    int rc = kc_parse_record_fields(body, end, r);
    if (rc < 0) return rc;
    p = r->headers_start;
    for (int32_t i = 0; i < r->header_count; i++) {
        kc_header_t h;
        rc = kc_parse_header(p, end, &h);
        if (rc < 0) { r->bad_value = h.bad_value; return rc; }
        p += rc;
    }
    r->consumed = (int32_t)(p - body);
    r->end = p;
    if (r->consumed != r->length) { r->bad_value = r->consumed; return KC_REC_SIZE_MISMATCH; }
    return KC_REC_OK;
}

/* The length prefix at p, read as Kafka reads an uncompressed batch
 * (stream 0) or a decompressed stream (stream 1): returns the prefix's size
 * and sets *bound, the end the body's fields are bounded by, or returns a
 * negative KC_REC_*. */
static inline int kc_parse_record_length(const uint8_t *p, const uint8_t *end, int stream, kc_record_t *r,
                                         const uint8_t **bound)
{
    int n;
    if (p >= end) return KC_REC_EOF;
    n = kc_rec_varint(p, end, &r->length);
    if (stream) {
        /* EOF reads as 0xFF bytes in Kafka, so a cut prefix becomes "Varint is too long",
         * and a negative length fails ByteBuffer.allocate: both are "premature EOF". */
        if (n < 0 || r->length < 0) return KC_REC_EOF;
        if (r->length > end - (p + n)) return KC_REC_STREAM_SHORT;
        *bound = p + n + r->length;
    } else {
        /* Kafka: BufferUnderflowException on the length prefix is "premature EOF";
         * an over-long prefix escapes Kafka as IllegalArgumentException, reported here as structure. */
        if (n == KC_VARINT_TRUNCATED) return KC_REC_EOF;
        if (n < 0) return KC_REC_STRUCTURE;
        if (r->length > end - (p + n)) { r->bad_value = (int32_t)(end - (p + n)); return KC_REC_SHORT; }
        *bound = end;
    }
    return n;
}

/* Parse one record at p whose records region ends at end, read as Kafka reads
 * an uncompressed batch (stream 0) or a decompressed stream (stream 1, see
 * kc_parse_record_length).  Returns bytes consumed (> 0) or a negative KC_REC_*. */
static inline int64_t kc_parse_record_from(const uint8_t *p, const uint8_t *end, int stream, kc_record_t *r)
{
    const uint8_t *bound;
    int rc, n;
    /* the callers format every error's message with both (kc_record_error_message) */
    r->length = 0;
    r->bad_value = 0;
    n = kc_parse_record_length(p, end, stream, r, &bound);
    if (n < 0) return n;
    rc = kc_parse_record_body(p + n, bound, r);
    if (rc < 0) return rc;
    return r->end - p;
}

/* One record of an uncompressed batch (Kafka's readFrom(ByteBuffer)). */
static inline int64_t kc_parse_record(const uint8_t *p, const uint8_t *end, kc_record_t *r)
{
    return kc_parse_record_from(p, end, 0, r);
}

/* One record of a decompressed stream (Kafka's readFrom(InputStream)). */
static inline int64_t kc_parse_record_stream(const uint8_t *p, const uint8_t *end, kc_record_t *r)
{
    return kc_parse_record_from(p, end, 1, r);
}

#endif
