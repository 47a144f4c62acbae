/* The column cache: memory Arrow gives back, reused by the next conversion. */
#ifndef KC_COLUMN_CACHE_H
#define KC_COLUMN_CACHE_H
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
/* Column memory handed to Arrow comes back here when Arrow lets it go,
   and the next conversion reuses it.  Fresh pages cost a page fault per
   4 KiB on first touch (about 1.3 GB/s on small VMs, several times the
   cost of filling them), so large tables converted one after another
   would otherwise spend most of their time faulting. */
#define KC_CACHE_SLOTS 64
typedef struct { void *p; size_t cap; } kc_block_t;
static kc_block_t kc_cache[KC_CACHE_SLOTS];
static size_t kc_cache_bytes = 0, kc_cache_limit = (size_t)256 << 20, kc_cache_min = (size_t)1 << 20;
static pthread_mutex_t kc_cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* The smallest cached block of at least `want` bytes (and not over 4x
   larger), or NULL. */
static void *kc_cache_take(size_t want, size_t *cap)
{
    void *p = NULL;
    int best = -1;
    if (want < kc_cache_min) return NULL;
    pthread_mutex_lock(&kc_cache_lock);
    for (int i = 0; i < KC_CACHE_SLOTS; i++)
        if (kc_cache[i].p && kc_cache[i].cap >= want && kc_cache[i].cap / 4 <= want
                && (best < 0 || kc_cache[i].cap < kc_cache[best].cap))
            best = i;
    if (best >= 0) {
        p = kc_cache[best].p;
        *cap = kc_cache[best].cap;
        kc_cache[best].p = NULL;
        kc_cache_bytes -= *cap;
    }
    pthread_mutex_unlock(&kc_cache_lock);
    return p;
}

/* Keep a block for reuse, evicting smaller ones to make room, or free it. */
static void kc_cache_give(void *p, size_t cap)
{
    void *evicted[KC_CACHE_SLOTS];
    int n_evicted = 0, slot = -1;
    if (p == NULL) return;
    if (cap >= kc_cache_min) {
        pthread_mutex_lock(&kc_cache_lock);
        while (cap <= kc_cache_limit) {
            int smallest = -1;
            slot = -1;
            for (int i = 0; i < KC_CACHE_SLOTS; i++) {
                if (!kc_cache[i].p) { if (slot < 0) slot = i; }
                else if (smallest < 0 || kc_cache[i].cap < kc_cache[smallest].cap) smallest = i;
            }
            if (slot >= 0 && kc_cache_bytes + cap <= kc_cache_limit) break;
            slot = -1;
            if (smallest < 0 || kc_cache[smallest].cap >= cap) break;
            evicted[n_evicted++] = kc_cache[smallest].p;
            kc_cache_bytes -= kc_cache[smallest].cap;
            kc_cache[smallest].p = NULL;
        }
        if (slot >= 0) {
            kc_cache[slot].p = p;
            kc_cache[slot].cap = cap;
            kc_cache_bytes += cap;
            p = NULL;
        }
        pthread_mutex_unlock(&kc_cache_lock);
        for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    }
    free(p);
}

/* Set the limit (bytes) and the smallest block kept; blocks over the
   limit are freed now.  Returns the old limit. */
static size_t kc_cache_set_limit(size_t limit, size_t min_block)
{
    void *evicted[KC_CACHE_SLOTS];
    int n_evicted = 0;
    size_t old;
    pthread_mutex_lock(&kc_cache_lock);
    old = kc_cache_limit;
    kc_cache_limit = limit;
    kc_cache_min = min_block;
    for (int i = 0; i < KC_CACHE_SLOTS && kc_cache_bytes > limit; i++)
        if (kc_cache[i].p) {
            evicted[n_evicted++] = kc_cache[i].p;
            kc_cache_bytes -= kc_cache[i].cap;
            kc_cache[i].p = NULL;
        }
    pthread_mutex_unlock(&kc_cache_lock);
    for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    return old;
}

/* A fork while another thread holds the lock must not leave the child
   with a lock no thread will release (Spark's Python daemon forks its
   workers): hold it across fork and release it on both sides. */
static void kc_cache_fork_prepare(void) { pthread_mutex_lock(&kc_cache_lock); }
static void kc_cache_fork_release(void) { pthread_mutex_unlock(&kc_cache_lock); }
static int kc_cache_init(void)
{
    return pthread_atfork(kc_cache_fork_prepare, kc_cache_fork_release, kc_cache_fork_release);
}

static void kc_cache_state(size_t *limit, size_t *held, size_t *min_block)
{
    pthread_mutex_lock(&kc_cache_lock);
    *limit = kc_cache_limit;
    *held = kc_cache_bytes;
    *min_block = kc_cache_min;
    pthread_mutex_unlock(&kc_cache_lock);
}
#endif
