/* A cache of large memory blocks given back by one user and refilled by the next.
 *
 * Fresh pages cost a page fault per 4 KiB on first touch (about 1.3 GB/s on
 * small VMs, several times the cost of filling them), and memory that was
 * just used is still in the CPU's caches: a process that fills large buffers
 * one after another (Arrow columns in to_arrow, the records of a compressed
 * batch in the builder) runs faster on blocks it has filled before.  Each
 * user keeps its own kc_block_cache_t with its own limit. */
#ifndef KC_BLOCK_CACHE_H
#define KC_BLOCK_CACHE_H
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define KC_BLOCK_CACHE_SLOTS 64
typedef struct { void *p; size_t cap; } kc_block_t;
typedef struct {
    kc_block_t slot[KC_BLOCK_CACHE_SLOTS];
    size_t bytes, limit, min_block;
    pthread_mutex_t lock;
} kc_block_cache_t;

#define KC_BLOCK_CACHE_INIT(limit, min_block) {{{0, 0}}, 0, (limit), (min_block), PTHREAD_MUTEX_INITIALIZER}

/* The smallest cached block of at least `want` bytes and at most `max_ratio`
   times larger (0: any larger), or NULL. */
static void *kc_block_take(kc_block_cache_t *c, size_t want, size_t max_ratio, size_t *cap)
{
    void *p = NULL;
    int best = -1;
    if (want < c->min_block) return NULL;
    pthread_mutex_lock(&c->lock);
    for (int i = 0; i < KC_BLOCK_CACHE_SLOTS; i++)
        if (c->slot[i].p && c->slot[i].cap >= want && (max_ratio == 0 || c->slot[i].cap / max_ratio <= want)
                && (best < 0 || c->slot[i].cap < c->slot[best].cap))
            best = i;
    if (best >= 0) {
        p = c->slot[best].p;
        *cap = c->slot[best].cap;
        c->slot[best].p = NULL;
        c->bytes -= *cap;
    }
    pthread_mutex_unlock(&c->lock);
    return p;
}

/* Keep a block (malloc'd, `cap` bytes) for reuse, evicting smaller ones to make room, or free it. */
static void kc_block_give(kc_block_cache_t *c, void *p, size_t cap)
{
    void *evicted[KC_BLOCK_CACHE_SLOTS];
    int n_evicted = 0, slot = -1;
    if (p == NULL) return;
    if (cap >= c->min_block) {
        pthread_mutex_lock(&c->lock);
        while (cap <= c->limit) {
            int smallest = -1;
            slot = -1;
            for (int i = 0; i < KC_BLOCK_CACHE_SLOTS; i++) {
                if (!c->slot[i].p) { if (slot < 0) slot = i; }
                else if (smallest < 0 || c->slot[i].cap < c->slot[smallest].cap) smallest = i;
            }
            if (slot >= 0 && c->bytes + cap <= c->limit) break;
            slot = -1;
            if (smallest < 0 || c->slot[smallest].cap >= cap) break;
            evicted[n_evicted++] = c->slot[smallest].p;
            c->bytes -= c->slot[smallest].cap;
            c->slot[smallest].p = NULL;
        }
        if (slot >= 0) {
            c->slot[slot].p = p;
            c->slot[slot].cap = cap;
            c->bytes += cap;
            p = NULL;
        }
        pthread_mutex_unlock(&c->lock);
        for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    }
    free(p);
}

/* Set the limit (bytes) and the smallest block kept; blocks over the
   limit are freed now.  Returns the old limit. */
static size_t kc_block_set_limit(kc_block_cache_t *c, size_t limit, size_t min_block)
{
    void *evicted[KC_BLOCK_CACHE_SLOTS];
    int n_evicted = 0;
    size_t old;
    pthread_mutex_lock(&c->lock);
    old = c->limit;
    c->limit = limit;
    c->min_block = min_block;
    for (int i = 0; i < KC_BLOCK_CACHE_SLOTS && c->bytes > limit; i++)
        if (c->slot[i].p) {
            evicted[n_evicted++] = c->slot[i].p;
            c->bytes -= c->slot[i].cap;
            c->slot[i].p = NULL;
        }
    pthread_mutex_unlock(&c->lock);
    for (int i = 0; i < n_evicted; i++) free(evicted[i]);
    return old;
}

static void kc_block_state(kc_block_cache_t *c, size_t *limit, size_t *held, size_t *min_block)
{
    pthread_mutex_lock(&c->lock);
    *limit = c->limit;
    *held = c->bytes;
    *min_block = c->min_block;
    pthread_mutex_unlock(&c->lock);
}

/* A fork while another thread holds a cache's lock must not leave the child
   with a lock no thread will release (Spark's Python daemon forks its
   workers): each user registers handlers that hold it across fork and
   release it on both sides (KC_BLOCK_CACHE_FORK_HANDLERS). */
#define KC_BLOCK_CACHE_FORK_HANDLERS(name, cache) \
    static void name##_fork_prepare(void) { pthread_mutex_lock(&(cache).lock); } \
    static void name##_fork_release(void) { pthread_mutex_unlock(&(cache).lock); } \
    static int name##_init(void) \
    { return pthread_atfork(name##_fork_prepare, name##_fork_release, name##_fork_release); }
#endif
