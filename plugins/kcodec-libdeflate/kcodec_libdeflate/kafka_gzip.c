#include "kafka_gzip.h"

#include <libdeflate.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* What every JDK 16+ GZIPOutputStream writes: no flags, MTIME 0, XFL 0, OS 255.
 * libdeflate's own gzip header sets XFL by level, so the member is framed here
 * around raw deflate. */
static const uint8_t JAVA_GZIP_HEADER[10] = {0x1f, 0x8b, 0x08, 0x00, 0, 0, 0, 0, 0x00, 0xff};
#define HEADER_SIZE 10
#define TRAILER_SIZE 8
#define MAX_LEVEL 9 /* Kafka's gzip levels are 1-9 (and -1, zlib's default 6) */

#define FHCRC 0x02
#define FEXTRA 0x04
#define FNAME 0x08
#define FCOMMENT 0x10

const char *const kgz_capsule_name = KCODEC_CODEC_CAPSULE_NAME;
const char *const kgz_libdeflate_version = LIBDEFLATE_VERSION_STRING;

/* libdeflate's compressors and decompressors may not be shared between
 * threads: each thread keeps its own, freed when the thread ends. */
typedef struct {
    struct libdeflate_compressor *compressor[MAX_LEVEL + 1];
    struct libdeflate_decompressor *decompressor;
} kgz_thread_state;

static pthread_key_t state_key;
static pthread_once_t state_once = PTHREAD_ONCE_INIT;
static int state_key_ok = 0;

static void free_thread_state(void *p)
{
    kgz_thread_state *s = p;
    for (int i = 0; i <= MAX_LEVEL; i++)
        if (s->compressor[i] != NULL) libdeflate_free_compressor(s->compressor[i]);
    if (s->decompressor != NULL) libdeflate_free_decompressor(s->decompressor);
    free(s);
}

static void make_state_key(void)
{
    state_key_ok = pthread_key_create(&state_key, free_thread_state) == 0;
}

static kgz_thread_state *thread_state(void)
{
    kgz_thread_state *s;
    pthread_once(&state_once, make_state_key);
    if (!state_key_ok) return NULL;
    s = pthread_getspecific(state_key);
    if (s == NULL) {
        s = calloc(1, sizeof(*s));
        if (s == NULL) return NULL;
        if (pthread_setspecific(state_key, s) != 0) {
            free(s);
            return NULL;
        }
    }
    return s;
}

static int64_t fail(int64_t code, char *err, size_t err_cap, const char *fmt, ...)
{
    if (err != NULL && err_cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, err_cap, fmt, ap);
        va_end(ap);
    }
    return code;
}

static void store_le32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

int64_t kgz_compress_bound(void *state, int64_t src_len, int level, int magic)
{
    (void)state, (void)level, (void)magic;
    if (src_len < 0) return KCODEC_CODEC_ERROR;
    return HEADER_SIZE + (int64_t)libdeflate_deflate_compress_bound(NULL, (size_t)src_len) + TRAILER_SIZE;
}

int64_t kgz_compress(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                     int level, int magic, char *err, size_t err_cap)
{
    kgz_thread_state *s;
    size_t body;
    (void)state;
    if (magic < 0 || magic > 2)
        return fail(KCODEC_CODEC_BAD_MAGIC, err, err_cap, "gzip: no framing for magic %d", magic);
    if (level == -1) level = 6;
    if (level < 1 || level > MAX_LEVEL)
        return fail(KCODEC_CODEC_BAD_LEVEL, err, err_cap, "gzip: invalid level %d: must be between 1 and 9 "
                    "or equal to -1", level);
    if (src_len < 0) return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: negative input size");
    if (dst_cap < HEADER_SIZE + TRAILER_SIZE)
        return fail(KCODEC_CODEC_DST_TOO_SMALL, err, err_cap, "gzip: output buffer too small");
    s = thread_state();
    if (s == NULL) return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: out of memory");
    if (s->compressor[level] == NULL && (s->compressor[level] = libdeflate_alloc_compressor(level)) == NULL)
        return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot allocate a libdeflate compressor");
    memcpy(dst, JAVA_GZIP_HEADER, HEADER_SIZE);
    body = libdeflate_deflate_compress(s->compressor[level], src, (size_t)src_len, dst + HEADER_SIZE,
                                       (size_t)(dst_cap - HEADER_SIZE - TRAILER_SIZE));
    if (body == 0) return fail(KCODEC_CODEC_DST_TOO_SMALL, err, err_cap, "gzip: output buffer too small");
    store_le32(dst + HEADER_SIZE + body, libdeflate_crc32(0, src, (size_t)src_len));
    store_le32(dst + HEADER_SIZE + body + 4, (uint32_t)src_len);
    return HEADER_SIZE + (int64_t)body + TRAILER_SIZE;
}

int64_t kgz_decompressed_size(void *state, const uint8_t *src, int64_t src_len, int magic)
{
    /* ISIZE of a single member ending the input (Java writes one per batch);
     * only a first guess for the output buffer. */
    (void)state, (void)magic;
    if (src_len < HEADER_SIZE + TRAILER_SIZE) return -1;
    return (int64_t)load_le32(src + src_len - 4);
}

/* Position after the member header at src[pos] (GZIPInputStream.readHeader),
 * or -1 with the message and the byte it is about. */
static int64_t header_end(const uint8_t *src, int64_t n, int64_t pos, const char **msg, int64_t *where)
{
    int64_t start = pos;
    uint8_t flags;
    *msg = "Unexpected end of ZLIB input stream";
    *where = n;
    if (n - pos < 2) return -1;
    if (src[pos] != 0x1f || src[pos + 1] != 0x8b) {
        *msg = "Not in GZIP format";
        *where = pos;
        return -1;
    }
    if (n - pos < HEADER_SIZE) return -1;
    if (src[pos + 2] != 8) {
        *msg = "Unsupported compression method";
        *where = pos + 2;
        return -1;
    }
    flags = src[pos + 3];
    pos += HEADER_SIZE;
    if (flags & FEXTRA) {
        if (n - pos < 2) return -1;
        pos += 2 + (src[pos] | (src[pos + 1] << 8));
        if (pos > n) return -1;
    }
    for (int field = FNAME; field <= FCOMMENT; field <<= 1) {
        if (!(flags & field)) continue;
        while (pos < n && src[pos] != 0) pos++;
        if (pos >= n) return -1;
        pos++;
    }
    if (flags & FHCRC) {
        if (n - pos < 2) return -1;
        if ((src[pos] | (src[pos + 1] << 8)) != (int)(libdeflate_crc32(0, src + start, (size_t)(pos - start)) & 0xffff)) {
            *msg = "Corrupt GZIP header";
            *where = pos;
            return -1;
        }
        pos += 2;
    }
    return pos;
}

int64_t kgz_gunzip(const uint8_t *src, int64_t n, uint8_t *dst, int64_t dst_cap,
                   char *err, size_t err_cap, int64_t *where)
{
    kgz_thread_state *s = thread_state();
    const char *msg;
    int64_t pos, total = 0;
    *where = 0;
    if (s == NULL) return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: out of memory");
    if (s->decompressor == NULL && (s->decompressor = libdeflate_alloc_decompressor()) == NULL)
        return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: cannot allocate a libdeflate decompressor");
    pos = header_end(src, n, 0, &msg, where);
    if (pos < 0) return fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: %s", msg);
    for (;;) {
        size_t used = 0, out = 0;
        int64_t end;
        enum libdeflate_result r = libdeflate_deflate_decompress_ex(
            s->decompressor, src + pos, (size_t)(n - pos), dst + total, (size_t)(dst_cap - total), &used, &out);
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
            *where = pos;
            return fail(KCODEC_CODEC_DST_TOO_SMALL, err, err_cap,
                        "gzip: the data decompresses to more than %lld bytes", (long long)dst_cap);
        }
        if (r != LIBDEFLATE_SUCCESS) {
            *where = pos;
            /* libdeflate does not tell a cut stream from a damaged one */
            return fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: invalid or truncated deflate data");
        }
        end = pos + (int64_t)used;
        if (n - end < TRAILER_SIZE) {
            *where = n;
            return fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: Unexpected end of ZLIB input stream (trailer)");
        }
        if (load_le32(src + end) != libdeflate_crc32(0, dst + total, out) || load_le32(src + end + 4) != (uint32_t)out) {
            *where = end;
            return fail(KCODEC_CODEC_CORRUPT, err, err_cap, "gzip: Corrupt GZIP trailer");
        }
        total += (int64_t)out;
        pos = end + TRAILER_SIZE;
        if (pos >= n) break;
        pos = header_end(src, n, pos, &msg, where);
        if (pos < 0) break; /* the JDK ignores whatever follows a member unless it is another member */
    }
    *where = 0;
    return total;
}

int64_t kgz_decompress(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                       int magic, char *err, size_t err_cap)
{
    int64_t where;
    (void)state;
    if (magic < 0 || magic > 2)
        return fail(KCODEC_CODEC_BAD_MAGIC, err, err_cap, "gzip: no framing for magic %d", magic);
    if (src_len < 0 || dst_cap < 0) return fail(KCODEC_CODEC_ERROR, err, err_cap, "gzip: negative size");
    return kgz_gunzip(src, src_len, dst, dst_cap, err, err_cap, &where);
}

static const kcodec_codec_v1 codec = {
    KCODEC_CODEC_ABI_VERSION,
    KCODEC_CODEC_THREAD_SAFE, /* per-thread libdeflate objects, no other state */
    NULL,
    kgz_compress_bound,
    kgz_compress,
    kgz_decompressed_size,
    kgz_decompress,
};

const kcodec_codec_v1 *kgz_codec(void)
{
    return &codec;
}
