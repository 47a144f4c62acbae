/* The column cache: memory Arrow gives back, reused by the next conversion. */
#ifndef KC_COLUMN_CACHE_H
#define KC_COLUMN_CACHE_H
#include "kc_block_cache.h"
/* Column memory handed to Arrow comes back here when Arrow lets it go, and
   the next conversion reuses it: large tables converted one after another
   would otherwise spend most of their time faulting in fresh pages. */
static kc_block_cache_t kc_column_cache = KC_BLOCK_CACHE_INIT((size_t)256 << 20, (size_t)1 << 20);
KC_BLOCK_CACHE_FORK_HANDLERS(kc_cache, kc_column_cache)

/* The smallest cached block of at least `want` bytes (and not over 4x larger), or NULL. */
static void *kc_cache_take(size_t want, size_t *cap) { return kc_block_take(&kc_column_cache, want, 4, cap); }
static void kc_cache_give(void *p, size_t cap) { kc_block_give(&kc_column_cache, p, cap); }
static size_t kc_cache_set_limit(size_t limit, size_t min_block)
{
    return kc_block_set_limit(&kc_column_cache, limit, min_block);
}
static void kc_cache_state(size_t *limit, size_t *held, size_t *min_block)
{
    kc_block_state(&kc_column_cache, limit, held, min_block);
}
#endif
