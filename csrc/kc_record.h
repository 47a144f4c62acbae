/* Magic v2 records (DefaultRecord.java): size, write and bounds-checked parse.
 * Static inline so the Cython modules that share it inline it in their loops.
 * Parsing follows Kafka's ByteBuffer reader: key, value and header lengths are
 * bounded by the end of the batch region, and the declared record length is
 * compared with what was consumed afterwards. */
#ifndef KC_RECORD_H
#define KC_RECORD_H
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "kc_varint.h"

#define KC_REC_OK 0
#define KC_REC_STRUCTURE (-1)      /* "Found invalid record structure" */
#define KC_REC_SHORT (-2)          /* length > remaining bytes */
#define KC_REC_NEG_HEADERS (-3)    /* headersCount < 0 */
#define KC_REC_MANY_HEADERS (-4)   /* headersCount > remaining */
#define KC_REC_NEG_HKEY (-5)       /* header key length < 0 */
#define KC_REC_SIZE_MISMATCH (-6)  /* consumed != declared length */
#define KC_REC_EOF (-7)            /* no bytes left where a record should start */

typedef struct {
    int32_t length;          /* declared body length */
    int32_t consumed;        /* body bytes actually parsed */
    int32_t header_count;
    int32_t bad_value;       /* the offending value for error messages */
    int64_t timestamp_delta;
    int32_t offset_delta;
    int32_t key_len;         /* -1 = null */
    int32_t value_len;       /* -1 = null */
    const uint8_t *key;
    const uint8_t *value;
    const uint8_t *headers;  /* first header byte */
    const uint8_t *end;      /* one past the record */
} kc_record_t;

typedef struct {
    int32_t key_len;
    int32_t value_len;       /* -1 = null */
    const uint8_t *key;
    const uint8_t *value;
} kc_header_t;

static inline int kc_bytes_field_size(int32_t len)
{
    return len < 0 ? kc_varint_size(-1) : kc_varint_size(len) + len;
}

/* Body size of a record (everything after the length varint). */
static inline int64_t kc_record_body_size(int64_t timestamp_delta, int32_t offset_delta,
                                          int32_t key_len, int32_t value_len,
                                          int32_t header_count, int64_t headers_size)
{
    return 1 + kc_varlong_size(timestamp_delta) + kc_varint_size(offset_delta)
        + kc_bytes_field_size(key_len) + kc_bytes_field_size(value_len)
        + kc_varint_size(header_count) + headers_size;
}

static inline int64_t kc_header_size(int32_t key_len, int32_t value_len)
{
    return kc_bytes_field_size(key_len) + kc_bytes_field_size(value_len);
}

/* Writes length, attributes, deltas, key, value and the header count; the
 * caller then writes header_count headers with kc_write_header.  Returns bytes written. */
static inline int64_t kc_write_record(uint8_t *p, int32_t body_size, int64_t timestamp_delta,
                                      int32_t offset_delta, const uint8_t *key, int32_t key_len,
                                      const uint8_t *value, int32_t value_len, int32_t header_count)
{
    uint8_t *start = p;
    p += kc_write_varint(p, body_size);
    *p++ = 0;
    p += kc_write_varlong(p, timestamp_delta);
    p += kc_write_varint(p, offset_delta);
    if (key_len < 0) {
        p += kc_write_varint(p, -1);
    } else {
        p += kc_write_varint(p, key_len);
        if (key_len) memcpy(p, key, (size_t)key_len);
        p += key_len;
    }
    if (value_len < 0) {
        p += kc_write_varint(p, -1);
    } else {
        p += kc_write_varint(p, value_len);
        if (value_len) memcpy(p, value, (size_t)value_len);
        p += value_len;
    }
    p += kc_write_varint(p, header_count);
    return p - start;
}

static inline int64_t kc_write_header(uint8_t *p, const uint8_t *key, int32_t key_len,
                                      const uint8_t *value, int32_t value_len)
{
    uint8_t *start = p;
    p += kc_write_varint(p, key_len);
    if (key_len) memcpy(p, key, (size_t)key_len);
    p += key_len;
    if (value_len < 0) {
        p += kc_write_varint(p, -1);
    } else {
        p += kc_write_varint(p, value_len);
        if (value_len) memcpy(p, value, (size_t)value_len);
        p += value_len;
    }
    return p - start;
}

static inline int kc_parse_header(const uint8_t *p, const uint8_t *end, kc_header_t *h,
                                  const uint8_t **next, int32_t *bad)
{
    int n = kc_read_varint(p, end, &h->key_len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (h->key_len < 0) { *bad = h->key_len; return KC_REC_NEG_HKEY; }
    if (end - p < h->key_len) return KC_REC_STRUCTURE;
    h->key = p;
    p += h->key_len;
    n = kc_read_varint(p, end, &h->value_len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (h->value_len < 0) {
        h->value_len = -1;
        h->value = NULL;
    } else {
        if (end - p < h->value_len) return KC_REC_STRUCTURE;
        h->value = p;
        p += h->value_len;
    }
    *next = p;
    return KC_REC_OK;
}

/* Parse one record at p (batch region ends at end).  With walk_headers the
 * headers are validated and skipped; the caller may re-walk them from r->headers. */
static inline int kc_parse_record(const uint8_t *p, const uint8_t *end, kc_record_t *r)
{
    const uint8_t *body;
    int n;
    if (p >= end) return KC_REC_EOF;
    n = kc_read_varint(p, end, &r->length);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (r->length > end - p) { r->bad_value = (int32_t)(end - p); return KC_REC_SHORT; }
    body = p;
    if (p >= end) return KC_REC_STRUCTURE;
    p++; /* attributes: unused, ignored */
    n = kc_read_varlong(p, end, &r->timestamp_delta);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    n = kc_read_varint(p, end, &r->offset_delta);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    n = kc_read_varint(p, end, &r->key_len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (r->key_len < 0) {
        r->key_len = -1;
        r->key = NULL;
    } else {
        if (end - p < r->key_len) return KC_REC_STRUCTURE;
        r->key = p;
        p += r->key_len;
    }
    n = kc_read_varint(p, end, &r->value_len);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (r->value_len < 0) {
        r->value_len = -1;
        r->value = NULL;
    } else {
        if (end - p < r->value_len) return KC_REC_STRUCTURE;
        r->value = p;
        p += r->value_len;
    }
    n = kc_read_varint(p, end, &r->header_count);
    if (n < 0) return KC_REC_STRUCTURE;
    p += n;
    if (r->header_count < 0) { r->bad_value = r->header_count; return KC_REC_NEG_HEADERS; }
    if (r->header_count > end - p) { r->bad_value = r->header_count; return KC_REC_MANY_HEADERS; }
    r->headers = p;
    for (int32_t i = 0; i < r->header_count; i++) {
        kc_header_t h;
        int rc = kc_parse_header(p, end, &h, &p, &r->bad_value);
        if (rc < 0) return rc;
    }
    r->consumed = (int32_t)(p - body);
    r->end = p;
    if (r->consumed != r->length) return KC_REC_SIZE_MISMATCH;
    return KC_REC_OK;
}

#endif
