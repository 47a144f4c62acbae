/* Kafka's v0/v1 message (LegacyRecord): field offsets from the start of the
 * message (after the 12-byte log overhead offset:int64 size:int32), and its CRC-32.
 *
 *   crc uint32 | magic int8 | attributes int8 | [timestamp int64, v1] |
 *   key length int32 | key | value length int32 | value
 *
 * The CRC-32 covers everything from the magic to the end of the message.
 */
#ifndef KC_MESSAGE_H
#define KC_MESSAGE_H
#include <stdint.h>
#include <stddef.h>
#include "kc_endian.h"
#include "kc_crc.h"

#define KC_MSG_LOG_OVERHEAD 12    /* offset + size, in front of every message */
#define KC_MSG_CRC 0
#define KC_MSG_MAGIC 4
#define KC_MSG_ATTRIBUTES 5
#define KC_MSG_TIMESTAMP 6        /* v1 only */
#define KC_MSG_HEADER_SIZE_V0 6   /* crc, magic, attributes: the key length follows */
#define KC_MSG_HEADER_SIZE_V1 14  /* + timestamp */
#define KC_MSG_OVERHEAD_V0 14     /* + key and value lengths: the smallest message */
#define KC_MSG_OVERHEAD_V1 22     /* + key and value lengths, after the timestamp */
#define KC_MSG_COMPRESSION_MASK 0x07
#define KC_MSG_TIMESTAMP_TYPE 0x08 /* LogAppendTime (v1) */

/* Where the key length is, for a message of this magic (Kafka reads every magic but 0 as v1). */
static inline size_t kc_message_header_size(uint8_t magic)
{
    return magic == 0 ? KC_MSG_HEADER_SIZE_V0 : KC_MSG_HEADER_SIZE_V1;
}

#if KC_MSG_OVERHEAD_V0 != KC_MSG_HEADER_SIZE_V0 + 8 || KC_MSG_OVERHEAD_V1 != KC_MSG_HEADER_SIZE_V1 + 8
#error "a message's overhead is its header and the two 4-byte length fields"
#endif

/* A message's size without its key and value bytes (LegacyRecord.recordOverhead). */
static inline size_t kc_message_overhead(uint8_t magic)
{
    return magic == 0 ? KC_MSG_OVERHEAD_V0 : KC_MSG_OVERHEAD_V1;
}

/* CRC-32 of the message of `size` bytes at m (size >= KC_MSG_MAGIC). */
static inline uint32_t kc_message_checksum(const uint8_t *m, size_t size)
{
    return kc_crc32(0, m + KC_MSG_MAGIC, size - KC_MSG_MAGIC);
}

static inline void kc_message_seal(uint8_t *m, size_t size)
{
    kc_store_be32(m + KC_MSG_CRC, kc_message_checksum(m, size));
}
#endif
