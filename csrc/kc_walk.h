/* The walk over a buffer of log entries, as Kafka's ByteBufferLogInputStream.nextBatch (with
 * nextBatchSize) takes it: from one entry to the next, and what each entry is.  Every native pass,
 * EntryWalker, BatchReader and split_batches step through a buffer with kc_walk_step; nothing else
 * in the native core reads an entry's size or magic to find where it ends.  (The messages inside a
 * decompressed wrapper follow rules of their own, those of Kafka's
 * AbstractLegacyRecordBatch.DeepRecordsIterator: scan_inner in legacy.pyx.)
 *
 * An entry is a v2 batch (kc_batch.h) or a v0/v1 message (kc_message.h).  Both begin with
 * offset int64 | size int32 (Records.LOG_OVERHEAD), and both keep their magic at byte 16
 * (Records.MAGIC_OFFSET): the batch's magic field, and the message's after its 4-byte CRC.
 */
#ifndef KC_WALK_H
#define KC_WALK_H
#include <stdint.h>
#include "kc_endian.h"
#include "kc_batch.h"
#include "kc_message.h"

#define KC_ENTRY_OFFSET KC_BATCH_BASE_OFFSET               /* Records.OFFSET_OFFSET */
#define KC_ENTRY_SIZE KC_BATCH_LENGTH                     /* Records.SIZE_OFFSET */
#define KC_ENTRY_MAGIC KC_BATCH_MAGIC                     /* Records.MAGIC_OFFSET */
#define KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC (KC_BATCH_MAGIC + 1)  /* Records.HEADER_SIZE_UP_TO_MAGIC */
#define KC_ENTRY_MIN_SIZE KC_MSG_OVERHEAD_V0              /* LegacyRecord.RECORD_OVERHEAD_V0: the smallest size */
#define KC_ENTRY_MAGIC_V2 2                               /* RecordBatch.MAGIC_VALUE_V2, the current one */
#define KC_ENTRY_UNREAD (-0x100)                          /* kc_entry_t.magic before the byte is read */

#if KC_BATCH_LOG_OVERHEAD != KC_MSG_LOG_OVERHEAD || KC_MSG_LOG_OVERHEAD + KC_MSG_MAGIC != KC_BATCH_MAGIC
#error "a v2 batch and a v0/v1 message must share the log overhead and the magic's position"
#endif

typedef enum kc_entry_kind {
    KC_ENTRY_END = 0,      /* no bytes left: the walk ends */
    KC_ENTRY_PARTIAL,      /* bytes left, but fewer than the entry needs (need): the walk ends */
    KC_ENTRY_BATCH,        /* a complete magic-2 batch of `total` bytes */
    KC_ENTRY_MESSAGE,      /* a complete magic-0/1 message (a wrapper, maybe) of `total` bytes */
    KC_ENTRY_BAD_SIZE,     /* corrupt: a size field below KC_ENTRY_MIN_SIZE (in `size`) */
    KC_ENTRY_BAD_MAGIC     /* corrupt: a magic outside 0..2 (in `magic`) */
} kc_entry_kind_t;

/* One step of the walk.  The fields are filled as far as the bytes at pos allow. */
typedef struct kc_entry {
    int64_t pos;        /* where the entry starts: the byte a fault, or trailing bytes, are reported at */
    int64_t remaining;  /* bytes from pos to the end of the buffer (negative past it) */
    int64_t need;       /* bytes the entry needs from pos: the log overhead, then up to the magic, then total */
    int32_t size;       /* the size field (need > the log overhead) */
    int64_t total;      /* size + the log overhead: the whole entry (need > the log overhead) */
    int magic;          /* the magic byte, signed as Java reads it; KC_ENTRY_UNREAD before it is read */
    int64_t next;       /* pos + total: where the next entry starts (a complete entry) */
} kc_entry_t;

/* The bytes of the entry at p, from its size field (p must hold the log overhead). */
static inline int64_t kc_entry_total(const uint8_t *p)
{
    return (int64_t)(int32_t)kc_load_be32(p + KC_ENTRY_SIZE) + KC_BATCH_LOG_OVERHEAD;
}

/* The entry of buf[0:len] at pos, classified in nextBatchSize's order: too few bytes for the size
 * ends the walk; a size below 14 is corrupt; too few bytes for the magic end the walk; a magic
 * outside 0..2 is corrupt; an entry that runs past the end ends the walk.  No Python API. */
static inline kc_entry_kind_t kc_walk_step(const uint8_t *buf, int64_t len, int64_t pos, kc_entry_t *e)
{
    const uint8_t *p;
    e->pos = pos;
    e->remaining = len - pos;
    e->need = KC_BATCH_LOG_OVERHEAD;
    e->magic = KC_ENTRY_UNREAD;
    if (e->remaining < e->need)
        return e->remaining > 0 ? KC_ENTRY_PARTIAL : KC_ENTRY_END;
    p = buf + pos;
    e->size = (int32_t)kc_load_be32(p + KC_ENTRY_SIZE);
    e->total = kc_entry_total(p);
    if (e->size < KC_ENTRY_MIN_SIZE)
        return KC_ENTRY_BAD_SIZE;
    e->need = KC_ENTRY_HEADER_SIZE_UP_TO_MAGIC;
    if (e->remaining < e->need)
        return KC_ENTRY_PARTIAL;
    e->magic = (int8_t)p[KC_ENTRY_MAGIC];
    if (e->magic < 0 || e->magic > KC_ENTRY_MAGIC_V2)
        return KC_ENTRY_BAD_MAGIC;
    e->need = e->total;
    if (e->remaining < e->need)
        return KC_ENTRY_PARTIAL;
    e->next = pos + e->total;
    return e->magic == KC_ENTRY_MAGIC_V2 ? KC_ENTRY_BATCH : KC_ENTRY_MESSAGE;
}

/* kc_walk_step for the native passes, which take v2 batches only: 1 when a complete v2 batch with a
 * whole header starts at pos; 0 where the walk ends (nothing left, or the start of a v2 batch);
 * -1 for whatever the general path must judge: a corrupt entry, a legacy message (complete or not),
 * a batch too short for its header. */
static inline int kc_walk_v2(const uint8_t *buf, int64_t len, int64_t pos, kc_entry_t *e)
{
    switch (kc_walk_step(buf, len, pos, e)) {
    case KC_ENTRY_BATCH:
        return e->total >= KC_BATCH_OVERHEAD ? 1 : -1;
    case KC_ENTRY_END:
        return 0;
    case KC_ENTRY_PARTIAL:
        return e->magic == KC_ENTRY_UNREAD || e->magic == KC_ENTRY_MAGIC_V2 ? 0 : -1;
    default:
        return -1;
    }
}
#endif
