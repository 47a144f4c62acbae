/* CRC-32C (Castagnoli, used by record batch v2) and CRC-32 (IEEE, used by
 * message format v0/v1).  Pure functions over byte ranges; safe to call
 * without the GIL. */
#ifndef KC_CRC_H
#define KC_CRC_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Continue a CRC: pass 0 to start.  Returns the finished (xor-ed) value. */
uint32_t kc_crc32c(uint32_t crc, const uint8_t *buf, size_t len);
uint32_t kc_crc32c_portable(uint32_t crc, const uint8_t *buf, size_t len);
/* Copy len bytes to dst and continue crc over them.  With stream set, long
 * copies may bypass the cache (non-temporal stores): for data not read again
 * soon, such as the values of a batch far larger than the cache. */
uint32_t kc_crc32c_copy(uint32_t crc, uint8_t *dst, const uint8_t *src, size_t len, int stream);
/* The CRC-32C of A followed by B, from crc(A), crc(B) and len(B). */
uint32_t kc_crc32c_combine(uint32_t crc1, uint32_t crc2, size_t len2);
uint32_t kc_crc32(uint32_t crc, const uint8_t *buf, size_t len);
uint32_t kc_crc32_portable(uint32_t crc, const uint8_t *buf, size_t len);
/* "pclmulqdq" or "portable": what kc_crc32 uses for long inputs. */
const char *kc_crc32_backend(void);
/* The CRC instruction alone (the portable table without it), for tests and
 * benchmarks; kc_crc32c adds carry-less folding from 256 bytes when
 * kc_crc32c_has_vpclmul(). */
uint32_t kc_crc32c_sse42(uint32_t crc, const uint8_t *buf, size_t len);
int kc_crc32c_has_vpclmul(void);

/* "vpclmulqdq", "sse4.2", "armv8-crc" or "portable": the implementation
 * kc_crc32c uses for long inputs. */
const char *kc_crc32c_backend(void);

#ifdef __cplusplus
}
#endif
#endif
