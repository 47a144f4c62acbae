/* Kafka's gzip (compression id 1) on libdeflate: one gzip member framed as
 * java.util.zip.GZIPOutputStream frames it, read as GZIPInputStream reads
 * (concatenated members, whatever follows a member that is not a gzip header
 * ignored).  The functions fill kcodec's native codec interface
 * (kcodec/codec.h); kgz_gunzip also reports where an error is. */
#ifndef KCODEC_LIBDEFLATE_KAFKA_GZIP_H
#define KCODEC_LIBDEFLATE_KAFKA_GZIP_H
#include <stddef.h>
#include <stdint.h>
#include <kcodec/codec.h>

int64_t kgz_compress_bound(void *state, int64_t src_len, int level, int magic);
int64_t kgz_compress(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                     int level, int magic, char *err, size_t err_cap);
int64_t kgz_decompressed_size(void *state, const uint8_t *src, int64_t src_len, int magic);
int64_t kgz_decompress(void *state, const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                       int magic, char *err, size_t err_cap);
/* kgz_decompress with the byte of src an error is about in *where. */
int64_t kgz_gunzip(const uint8_t *src, int64_t src_len, uint8_t *dst, int64_t dst_cap,
                   char *err, size_t err_cap, int64_t *where);
/* The interface struct (static: valid for the life of the process) and the capsule name. */
const kcodec_codec_v1 *kgz_codec(void);
extern const char *const kgz_capsule_name;
extern const char *const kgz_libdeflate_version;
#endif
