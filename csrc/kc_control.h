/* Control records of v2 control batches: the checks Kafka's readers make
 * (ControlRecordType.parseTypeId, EndTransactionMarker.deserializeValue).
 * kcodec/records/control.py holds the same rules with Kafka's error texts;
 * these return yes or no for native passes, which leave the reporting to it. */
#ifndef KC_CONTROL_H
#define KC_CONTROL_H
#include <stdint.h>
#include "kc_endian.h"
#include "kc_record.h"

#define KC_CONTROL_KEY_SIZE 4      /* version int16, type int16 */
#define KC_END_TXN_VALUE_SIZE 6    /* version int16, coordinator epoch int32 */

/* A key of at least 4 bytes with a version >= 0 (newer versions read as 0,
 * unknown types as UNKNOWN); for ABORT (0) and COMMIT (1) a value of at
 * least 6 bytes with a version >= 0.  A null key or value fails. */
static inline int kc_control_record_ok(const kc_record_t *r)
{
    int16_t type;
    if (r->key_len < KC_CONTROL_KEY_SIZE || (int16_t)kc_load_be16(r->key) < 0) return 0;
    type = (int16_t)kc_load_be16(r->key + 2);
    if (type == 0 || type == 1)
        return r->value_len >= KC_END_TXN_VALUE_SIZE && (int16_t)kc_load_be16(r->value) >= 0;
    return 1;
}

/* Whether the `count` records of an uncompressed control batch's records
 * region [p, end) all parse and pass kc_control_record_ok. */
static inline int kc_control_region_ok(const uint8_t *p, const uint8_t *end, int32_t count)
{
    kc_record_t r;
    for (int32_t i = 0; i < count; i++) {
        int64_t n = kc_parse_record(p, end, &r);
        if (n < 0 || !kc_control_record_ok(&r)) return 0;
        p += n;
    }
    return 1;
}

#endif
