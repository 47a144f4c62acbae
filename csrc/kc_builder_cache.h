/* The builder cache: the records of compressed batches are written in blocks
   kept here between builds (kc_block_cache.h), so that batch after batch of
   1 MiB fills memory that is mapped and in the CPU's caches, with no growth
   copies once a block of the batch's size is held. */
#ifndef KC_BUILDER_CACHE_H
#define KC_BUILDER_CACHE_H
#include "kc_block_cache.h"
static kc_block_cache_t kc_builder_cache = KC_BLOCK_CACHE_INIT((size_t)64 << 20, (size_t)1 << 20);
KC_BLOCK_CACHE_FORK_HANDLERS(kc_builder_cache, kc_builder_cache)
#endif
