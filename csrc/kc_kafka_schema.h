/* The Arrow schema of decoded records: Spark's Kafka source columns, then any batch fields asked for. */
#ifndef KC_KAFKA_SCHEMA_H
#define KC_KAFKA_SCHEMA_H
#include "kc_arrow_export.h"

/* Per-record copies of batch header fields, in the order of kcodec.arrow.BATCH_FIELDS. */
#define KC_BATCH_FIELD_COUNT 10
static const char *const kc_batch_field_names[KC_BATCH_FIELD_COUNT] = {
    "base_offset", "last_offset", "producer_id", "producer_epoch", "base_sequence", "is_transactional",
    "partition_leader_epoch", "compression", "magic", "batch_position"};
static const char *const kc_batch_field_formats[KC_BATCH_FIELD_COUNT] = {
    "l", "l", "l", "s", "i", "b", "i", "c", "c", "l"};

#define KC_RECORD_COLUMNS 7
static const char *const kc_record_names[KC_RECORD_COLUMNS] = {
    "key", "value", "topic", "partition", "offset", "timestamp", "timestampType"};
/* binary, binary, string, int32, int64, timestamp[us, tz=UTC], int32 */
static const char *const kc_record_formats[KC_RECORD_COLUMNS] = {"z", "z", "u", "i", "l", "tsu:UTC", "i"};

/* The schema as a struct (a record batch's form): the record columns (key
   and value binary_view when `views`), the headers
   list<struct<key: string, value: binary>> when `headers`, then the batch
   fields `fields` (indices into the tables above).  0, or -1 without memory
   (`s` is then released). */
static int kc_kafka_schema(struct ArrowSchema *s, int headers, const int *fields, int nfields, int views)
{
    int base = KC_RECORD_COLUMNS + (headers ? 1 : 0);
    if (kc_schema_init(s, "+s", "", 0, base + nfields) < 0)
        return -1;
    for (int i = 0; i < KC_RECORD_COLUMNS; i++)
        if (kc_schema_init(s->children[i], views && i < 2 ? "vz" : kc_record_formats[i], kc_record_names[i],
                           ARROW_FLAG_NULLABLE, 0) < 0)
            goto fail;
    if (headers) {
        struct ArrowSchema *list = s->children[KC_RECORD_COLUMNS], *item;
        if (kc_schema_init(list, "+l", "headers", ARROW_FLAG_NULLABLE, 1) < 0)
            goto fail;
        item = list->children[0];
        if (kc_schema_init(item, "+s", "item", ARROW_FLAG_NULLABLE, 2) < 0
                || kc_schema_init(item->children[0], "u", "key", ARROW_FLAG_NULLABLE, 0) < 0
                || kc_schema_init(item->children[1], "z", "value", ARROW_FLAG_NULLABLE, 0) < 0)
            goto fail;
    }
    for (int j = 0; j < nfields; j++)
        if (kc_schema_init(s->children[base + j], kc_batch_field_formats[fields[j]], kc_batch_field_names[fields[j]],
                           ARROW_FLAG_NULLABLE, 0) < 0)
            goto fail;
    return 0;
fail:
    s->release(s);
    return -1;
}
#endif
