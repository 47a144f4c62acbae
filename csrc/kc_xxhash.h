/* XXH32 (seed-parameterised 32-bit xxHash), as the LZ4 frame format uses it
 * for its descriptor and block checksums. */
#ifndef KC_XXHASH_H
#define KC_XXHASH_H
#include <stddef.h>
#include <stdint.h>

uint32_t kc_xxh32(const uint8_t *p, size_t len, uint32_t seed);

#endif
