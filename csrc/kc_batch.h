/* Kafka's v2 record batch header (DefaultRecordBatch): field offsets, attribute
 * bits, the header writer and the CRC-32C span, in one place for kcodec's C code.
 *
 *   baseOffset int64 | batchLength int32 | partitionLeaderEpoch int32 | magic int8 |
 *   crc uint32 | attributes int16 | lastOffsetDelta int32 | baseTimestamp int64 |
 *   maxTimestamp int64 | producerId int64 | producerEpoch int16 | baseSequence int32 |
 *   recordsCount int32 | records...
 *
 * The CRC-32C covers everything from the attributes to the end of the batch.
 */
#ifndef KC_BATCH_H
#define KC_BATCH_H
#include <stdint.h>
#include <stddef.h>
#include "kc_endian.h"
#include "kc_crc.h"

#define KC_BATCH_BASE_OFFSET 0
#define KC_BATCH_LENGTH 8
#define KC_BATCH_PARTITION_LEADER_EPOCH 12
#define KC_BATCH_MAGIC 16
#define KC_BATCH_CRC 17
#define KC_BATCH_ATTRIBUTES 21
#define KC_BATCH_LAST_OFFSET_DELTA 23
#define KC_BATCH_BASE_TIMESTAMP 27
#define KC_BATCH_MAX_TIMESTAMP 35
#define KC_BATCH_PRODUCER_ID 43
#define KC_BATCH_PRODUCER_EPOCH 51
#define KC_BATCH_BASE_SEQUENCE 53
#define KC_BATCH_RECORDS_COUNT 57
#define KC_BATCH_OVERHEAD 61          /* the header; the records follow */
#define KC_BATCH_LOG_OVERHEAD 12      /* baseOffset + batchLength: batchLength counts the rest */

/* attributes */
#define KC_BATCH_COMPRESSION_MASK 0x07
#define KC_BATCH_TIMESTAMP_TYPE 0x08   /* LogAppendTime */
#define KC_BATCH_TRANSACTIONAL 0x10
#define KC_BATCH_CONTROL 0x20
#define KC_BATCH_DELETE_HORIZON 0x40   /* baseTimestamp is the delete horizon */

typedef struct kc_batch_header {
    int64_t base_offset;
    int32_t length;                 /* batchLength: the batch size minus 12 */
    int32_t partition_leader_epoch;
    int8_t magic;
    uint32_t crc;
    int16_t attributes;
    int32_t last_offset_delta;
    int64_t base_timestamp;
    int64_t max_timestamp;
    int64_t producer_id;
    int16_t producer_epoch;
    int32_t base_sequence;
    int32_t records_count;
} kc_batch_header_t;

/* The 61 header bytes at p (p must hold them). */
static inline void kc_batch_read(const uint8_t *p, kc_batch_header_t *h)
{
    h->base_offset = (int64_t)kc_load_be64(p + KC_BATCH_BASE_OFFSET);
    h->length = (int32_t)kc_load_be32(p + KC_BATCH_LENGTH);
    h->partition_leader_epoch = (int32_t)kc_load_be32(p + KC_BATCH_PARTITION_LEADER_EPOCH);
    h->magic = (int8_t)p[KC_BATCH_MAGIC];
    h->crc = kc_load_be32(p + KC_BATCH_CRC);
    h->attributes = (int16_t)kc_load_be16(p + KC_BATCH_ATTRIBUTES);
    h->last_offset_delta = (int32_t)kc_load_be32(p + KC_BATCH_LAST_OFFSET_DELTA);
    h->base_timestamp = (int64_t)kc_load_be64(p + KC_BATCH_BASE_TIMESTAMP);
    h->max_timestamp = (int64_t)kc_load_be64(p + KC_BATCH_MAX_TIMESTAMP);
    h->producer_id = (int64_t)kc_load_be64(p + KC_BATCH_PRODUCER_ID);
    h->producer_epoch = (int16_t)kc_load_be16(p + KC_BATCH_PRODUCER_EPOCH);
    h->base_sequence = (int32_t)kc_load_be32(p + KC_BATCH_BASE_SEQUENCE);
    h->records_count = (int32_t)kc_load_be32(p + KC_BATCH_RECORDS_COUNT);
}

/* CRC-32C of a batch of `size` bytes at p: the span from the attributes to the end. */
static inline uint32_t kc_batch_checksum(const uint8_t *p, size_t size)
{
    return size <= KC_BATCH_ATTRIBUTES ? 0 : kc_crc32c(0, p + KC_BATCH_ATTRIBUTES, size - KC_BATCH_ATTRIBUTES);
}

/* Store the CRC-32C of a batch of `size` bytes (after any change to its header or records). */
static inline void kc_batch_seal(uint8_t *p, size_t size)
{
    kc_store_be32(p + KC_BATCH_CRC, kc_batch_checksum(p, size));
}

/* DefaultRecordBatch.writeHeader: the header of a magic-2 batch of `size` bytes whose
 * records are in place at p + 61 (kc_batch_write adds its CRC). */
static inline void kc_batch_write_fields(uint8_t *p, size_t size, int64_t base_offset,
                                         int32_t partition_leader_epoch, int16_t attributes,
                                         int32_t last_offset_delta, int64_t base_timestamp, int64_t max_timestamp,
                                         int64_t producer_id, int16_t producer_epoch, int32_t base_sequence,
                                         int32_t records_count)
{
    kc_store_be64(p + KC_BATCH_BASE_OFFSET, (uint64_t)base_offset);
    kc_store_be32(p + KC_BATCH_LENGTH, (uint32_t)(size - KC_BATCH_LOG_OVERHEAD));
    kc_store_be32(p + KC_BATCH_PARTITION_LEADER_EPOCH, (uint32_t)partition_leader_epoch);
    p[KC_BATCH_MAGIC] = 2;
    kc_store_be16(p + KC_BATCH_ATTRIBUTES, (uint16_t)attributes);
    kc_store_be32(p + KC_BATCH_LAST_OFFSET_DELTA, (uint32_t)last_offset_delta);
    kc_store_be64(p + KC_BATCH_BASE_TIMESTAMP, (uint64_t)base_timestamp);
    kc_store_be64(p + KC_BATCH_MAX_TIMESTAMP, (uint64_t)max_timestamp);
    kc_store_be64(p + KC_BATCH_PRODUCER_ID, (uint64_t)producer_id);
    kc_store_be16(p + KC_BATCH_PRODUCER_EPOCH, (uint16_t)producer_epoch);
    kc_store_be32(p + KC_BATCH_BASE_SEQUENCE, (uint32_t)base_sequence);
    kc_store_be32(p + KC_BATCH_RECORDS_COUNT, (uint32_t)records_count);
}

static inline void kc_batch_write(uint8_t *p, size_t size, int64_t base_offset, int32_t partition_leader_epoch,
                                  int16_t attributes, int32_t last_offset_delta, int64_t base_timestamp,
                                  int64_t max_timestamp, int64_t producer_id, int16_t producer_epoch,
                                  int32_t base_sequence, int32_t records_count)
{
    kc_batch_write_fields(p, size, base_offset, partition_leader_epoch, attributes, last_offset_delta,
                          base_timestamp, max_timestamp, producer_id, producer_epoch, base_sequence,
                          records_count);
    kc_batch_seal(p, size);
}

/* Seal a batch whose first records_done record bytes (from p + 61) have the
 * CRC-32C records_crc already, taken while they were written: only the
 * header fields and the records after them are read again.  With none done
 * it is kc_batch_seal: joining two CRCs costs more than a small batch's CRC. */
static inline void kc_batch_seal_from(uint8_t *p, size_t size, uint32_t records_crc, size_t records_done)
{
    size_t records = size - KC_BATCH_OVERHEAD;
    if (records_done == 0) {
        kc_batch_seal(p, size);
        return;
    }
    uint32_t head = kc_crc32c(0, p + KC_BATCH_ATTRIBUTES, KC_BATCH_OVERHEAD - KC_BATCH_ATTRIBUTES);
    uint32_t tail = kc_crc32c(records_crc, p + KC_BATCH_OVERHEAD + records_done, records - records_done);
    kc_store_be32(p + KC_BATCH_CRC, kc_crc32c_combine(head, tail, records));
}
#endif
