"""``filter_batch``, the cleaner's rewrite of each batch, against Java's ``MemoryRecords.filterTo``
(the oracle's ``*_compacted`` vectors).

The oracle compacted 24 records (offsets 500-523, six keys ``ck-0``..``ck-5``,
three tombstones) with a filter keeping offsets 509, 513, 520, 521 and 522,
``DELETE_EMPTY`` batch retention, ``now = T0 + 1 h`` and
``delete.retention.ms = 1 day`` (``oracle/java/Gen.java``: ``compacted``).
The input batch is rebuilt here from the same records (the
``v2_none_delete_horizon`` vector carries them) with kcodec's builders.
"""
import base64
import json

import pytest

import kcodec
from builders import T0, batch, legacy_batch
from kcodec.compression import CompressionType, TimestampType
from kcodec.log.filter import (
    BatchRetention,
    BatchRetentionResult,
    FilterResult,
    RecordFilter,
    filter_batch,
)
from oracle_util import load_case, oracle_available, oracle_verify

KEEP = {509, 513, 520, 521, 522}
NOW = T0 + 3_600_000
RETENTION = 86_400_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
CASES = [(m, c) for m in (0, 1, 2) for c in CODECS if not (c == "zstd" and m < 2)]


def _compaction_records():
    """(offset, timestamp, key, value) of the 24 input records."""
    _, doc, _ = load_case("v2_none_delete_horizon")
    recs = doc["batches"][0]["records"]
    assert len(recs) == 24
    out = []
    for r in recs:
        key = base64.b64decode(r["key"])
        value = None if r["value"] is None else base64.b64decode(r["value"])
        out.append((r["offset"] - 100, r["timestamp"], key, value))
    return out


def _source(magic: int, codec: str) -> bytes:
    recs = _compaction_records()
    if magic >= 2:
        b = kcodec.RecordBatchBuilder(magic=2, compression=codec, base_offset=500)
    else:
        from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
        b = LegacyRecordBatchBuilder(magic=magic, compression=codec, base_offset=500)
    for off, ts, k, v in recs:
        b.append(k, v, timestamp=ts, offset=off)
    return bytes(b.build())


def filter_to(records, record_filter, *, output=None):
    """Every batch of ``records`` (bytes, or batch objects) through :func:`filter_batch` into
    ``output``, as the cleaner runs it over a segment and Java's ``filterTo`` over a buffer."""
    result = FilterResult(output=output if output is not None else bytearray())
    batches = kcodec.read_batches(records, validate=False) if isinstance(records, bytes) else records
    for b in batches:
        kept = filter_batch(b, record_filter, result)
        if kept is not None:
            result.output += kept
    return result


class KeepOffsets(RecordFilter):
    def __init__(self, keep, retention=BatchRetention.DELETE_EMPTY):
        super().__init__(NOW, RETENTION)
        self.keep = keep
        self.retention = retention

    def check_batch_retention(self, batch):
        return BatchRetentionResult(self.retention, False)

    def should_retain_record(self, batch, record):
        return record.offset in self.keep


def _payload(data: bytes, magic: int) -> bytes:
    if magic >= 2:
        return data[61:]
    return data[26 + (8 if magic == 1 else 0):]


def _codec_matches_java(golden: bytes, magic: int, codec: str) -> bool:
    """Whether kcodec's codec writes Java's bytes for the golden vector's payload."""
    if codec == "none":
        return True
    c = kcodec.get_codec(codec)
    payload = _payload(golden, magic)
    raw = bytes(c.decompress(payload, magic=magic))
    return bytes(c.compress(raw, magic=magic)) == payload


def _strip(doc):
    doc = json.loads(json.dumps(doc))
    for b in doc.get("batches", []):
        for k in ("checksum", "sizeInBytes", "position"):
            b.pop(k, None)
    for k in ("sizeInBytes", "validBytes"):
        doc.pop(k, None)
    return doc


@pytest.mark.parametrize("magic,codec", CASES, ids=[f"v{m}_{c}" for m, c in CASES])
def test_compacted_matches_java(magic, codec):
    name = f"v{magic}_{codec}_compacted"
    golden, doc, _ = load_case(name)
    result = filter_to(_source(magic, codec), KeepOffsets(KEEP))
    out = bytes(result.output)
    assert result.messages_read == 24
    assert result.messages_retained == 5
    if _codec_matches_java(golden, magic, codec):
        assert out == golden
    else:
        # kcodec's compressor emits different (valid) bytes for this codec; the batch
        # itself must still be the one Java wrote, field for field and record for record.
        assert out != golden
    got = list(kcodec.read_batches(out))
    want = list(kcodec.read_batches(golden))
    assert len(got) == len(want) == doc["batchCount"]
    for g, w in zip(got, want):
        for attr in ("magic", "base_offset", "last_offset", "compression", "timestamp_type", "max_timestamp",
                     "base_timestamp", "delete_horizon_ms", "producer_id", "producer_epoch", "base_sequence",
                     "is_transactional", "is_control", "partition_leader_epoch", "record_count"):
            assert getattr(g, attr) == getattr(w, attr), attr
        assert [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in g] == \
               [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in w]
    if oracle_available():
        rc, got_doc = oracle_verify(out)
        assert rc == 0, got_doc
        assert _strip(got_doc) == _strip(doc)


def test_v2_horizon_and_last_offset_preserved():
    golden, doc, _ = load_case("v2_none_compacted")
    batch = next(iter(kcodec.read_batches(golden)))
    assert batch.last_offset == 523  # lastOffsetDelta kept though offset 523 is gone
    assert batch.delete_horizon_ms == NOW + RETENTION == batch.base_timestamp


def test_all_retained_copies_original_bytes():
    src = _source(2, "gzip")
    result = filter_to(src, KeepOffsets(set(range(500, 524)) - {509, 513, 520}))
    # tombstones removed, none left: rebuilt without a horizon
    b = next(iter(kcodec.read_batches(bytes(result.output))))
    assert b.delete_horizon_ms is None
    everything = filter_to(_source(2, "none"), KeepOffsets(set(range(500, 524))))
    # tombstones retained and no horizon yet: rebuilt to stamp it
    assert bytes(everything.output) != _source(2, "none")
    assert next(iter(kcodec.read_batches(bytes(everything.output)))).delete_horizon_ms == NOW + RETENTION


def test_all_retained_without_tombstones_is_a_copy():
    b = kcodec.RecordBatchBuilder(magic=2, compression="lz4", level=1, base_offset=7)
    for i in range(5):
        b.append(b"k%d" % i, b"v" * 50, timestamp=T0 + i)
    src = bytes(b.build())
    result = filter_to(src, KeepOffsets(set(range(7, 12))))
    assert bytes(result.output) == src  # producer's level and CRC untouched
    assert result.batches_rebuilt == 0
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.max_offset) == (T0 + 4, 11, 11)


def test_retain_empty_writes_java_header():
    golden, _doc, _ = load_case("v2_empty_batch_retained")
    b = next(iter(kcodec.read_batches(golden)))
    assert b.record_count == 0 and b.is_transactional
    # Java's empty_batch_retained input: 5 gzip transactional records at 700-704, epoch 7, baseSequence 77.
    builder = kcodec.RecordBatchBuilder(magic=2, compression="gzip", base_offset=700, producer_id=b.producer_id,
                                        producer_epoch=b.producer_epoch, base_sequence=77, is_transactional=True)
    for i in range(5):
        builder.append(b"k", b"v", timestamp=b.max_timestamp - 4 + i)
    result = filter_to(bytes(builder.build()), KeepOffsets(set(), BatchRetention.RETAIN_EMPTY))
    assert bytes(result.output) == golden
    assert result.batches_emptied == 1


def test_delete_drops_without_reading():
    class Drop(KeepOffsets):
        def should_retain_record(self, batch, record):
            raise AssertionError("DELETE must not look at records")
    result = filter_to(_source(2, "none"), Drop(set(), BatchRetention.DELETE))
    assert bytes(result.output) == b"" and result.messages_read == 0 and result.bytes_read > 0


def test_retain_empty_legacy_refused():
    with pytest.raises(kcodec.KcodecError, match="magic v2"):
        filter_to(_source(1, "gzip"), KeepOffsets(set(), BatchRetention.RETAIN_EMPTY))


def test_log_append_time_rebuild_keeps_append_time():
    b = kcodec.RecordBatchBuilder(magic=2, compression="none", base_offset=0,
                                  timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 99)
    for i in range(4):
        b.append(b"k%d" % i, b"v", timestamp=T0 + i)
    result = filter_to(bytes(b.build()), KeepOffsets({1, 2}))
    out = next(iter(kcodec.read_batches(bytes(result.output))))
    assert out.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert out.max_timestamp == T0 + 99
    assert [r.timestamp for r in out] == [T0 + 99, T0 + 99]
    assert (out.base_offset, out.last_offset) == (0, 3)
    assert CompressionType.of(out.compression) == CompressionType.NONE


# --------------------------------------------------------------------------------------------
# FilterResult's counters and the rebuilt batch's (maxTimestamp, shallow offset), case by case

def _batch(magic=2, codec="none", ts_type=TimestampType.CREATE_TIME, base=40, stamps=(5, 9, 7, 3), values=None,
           **kw):
    records = [(b"k%d" % i, b"v" if values is None else values[i], T0 + ts if ts >= 0 else -1)
               for i, ts in enumerate(stamps)]
    if magic >= 2:
        return batch(base, records, codec=codec, timestamp_type=ts_type, **kw)
    return legacy_batch(base, records, magic=magic, codec=codec, timestamp_type=ts_type, **kw)


@pytest.mark.parametrize("magic,codec,ts_type,want", [
    (2, "none", TimestampType.CREATE_TIME, (T0 + 9, 42)),           # v2: the last retained offset
    (2, "gzip", TimestampType.LOG_APPEND_TIME, (T0 + 99, 42)),
    (1, "none", TimestampType.CREATE_TIME, (T0 + 9, 41)),           # v1 uncompressed: the offset of the max
    (1, "gzip", TimestampType.CREATE_TIME, (T0 + 9, 42)),           # v1 compressed: the wrapper's offset
    (1, "none", TimestampType.LOG_APPEND_TIME, (T0 + 99, 40)),      # the first retained offset
    (1, "gzip", TimestampType.LOG_APPEND_TIME, (T0 + 99, 42)),
    (0, "none", TimestampType.CREATE_TIME, (-1, -1)),
])
def test_filtered_batch_max_timestamp_and_its_offset(magic, codec, ts_type, want):
    kw = {"log_append_time": T0 + 99} if ts_type == TimestampType.LOG_APPEND_TIME else {}
    src = _batch(magic, codec, ts_type, **kw)
    result = filter_to(src, KeepOffsets({40, 41, 42}))
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == want
    assert (result.max_offset, result.messages_read, result.messages_retained) == (42, 4, 3)
    assert (result.bytes_read, result.bytes_retained) == (len(src), len(result.output))
    # an uncompressed legacy entry is one record: kept ones are copied, the other deleted
    one_per_entry = magic < 2 and codec == "none"
    assert (result.batches_rebuilt, result.batches_emptied, result.batches_deleted) == \
        ((0, 0, 1) if one_per_entry else (1, 0, 0))


@pytest.mark.parametrize("magic,codec,ts_type,want", [
    (2, "none", TimestampType.CREATE_TIME, (T0 + 7, 43)),           # the retained max, at the last offset
    (1, "gzip", TimestampType.CREATE_TIME, (T0 + 7, 43)),
    (2, "none", TimestampType.LOG_APPEND_TIME, (T0 + 99, 43)),      # uncompressed v2: still the last offset
    (1, "gzip", TimestampType.LOG_APPEND_TIME, (T0 + 99, 43)),
    (0, "gzip", TimestampType.CREATE_TIME, (-1, -1)),
])
def test_the_dropped_record_held_the_max_timestamp(magic, codec, ts_type, want):
    kw = {"log_append_time": T0 + 99} if ts_type == TimestampType.LOG_APPEND_TIME else {}
    result = filter_to(_batch(magic, codec, ts_type, **kw), KeepOffsets({40, 42, 43}))
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == want
    assert (result.max_offset, result.batches_rebuilt) == (43, 1)


def test_a_v0_wrapper_of_v1_messages_is_rewritten_without_timestamps():
    from test_legacy import message, wrapper
    src = wrapper(1, message(0, b"k0", b"v0", ts=T0 + 5) + message(1, b"k1", b"v1", ts=T0 + 9), codec=1, magic=0)
    result = filter_to(src, KeepOffsets({0, 1}))
    (out,) = kcodec.read_batches(bytes(result.output))
    assert (out.magic, out.inner_magics, [(r.offset, r.timestamp) for r in out]) == (0, {0}, [(0, -1), (1, -1)])
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.batches_rebuilt) == (-1, -1, 1)


def test_rebuilt_legacy_batch_without_timestamps():
    result = filter_to(_batch(1, "gzip", stamps=(-1, -1, -1)), KeepOffsets({40, 41}))
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.max_offset) == (-1, -1, 41)


def test_counters_over_several_batches():
    keep_all, drop_some, drop_all = _batch(base=0, stamps=(4, 4)), _batch(base=2, stamps=(4, 2)), \
        _batch(base=4, stamps=(8,))
    out = bytearray(b"prefix")
    result = filter_to(keep_all + drop_some + drop_all, KeepOffsets({0, 1, 2}), output=out)
    assert result.output is out and bytes(out[:6]) == b"prefix"
    assert bytes(out[6:6 + len(keep_all)]) == keep_all
    # equal max timestamps: the first batch's shallow offset stays; a later, larger offset still counts
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp, result.max_offset) == (T0 + 4, 1, 2)
    assert (result.messages_read, result.messages_retained) == (5, 3)
    assert result.bytes_read == len(keep_all) + len(drop_some) + len(drop_all)
    assert result.bytes_retained == len(out) - 6
    assert (result.batches_rebuilt, result.batches_emptied, result.batches_deleted) == (1, 0, 1)
    emptied = filter_to(list(kcodec.read_batches(drop_all)), KeepOffsets(set(), BatchRetention.RETAIN_EMPTY))
    assert (emptied.batches_emptied, emptied.bytes_retained, len(emptied.output)) == (1, 61, 61)
    assert (emptied.messages_read, emptied.messages_retained) == (1, 0)
    assert (emptied.max_timestamp, emptied.shallow_offset_of_max_timestamp, emptied.max_offset) == (T0 + 8, 4, 4)


def test_a_bare_batch_retention_is_accepted():
    class Bare(KeepOffsets):
        def check_batch_retention(self, batch):
            return BatchRetention.DELETE
    result = filter_to(_batch(), Bare(set()))
    assert (bytes(result.output), result.batches_deleted, result.messages_read) == (b"", 1, 0)
    class BareKeep(KeepOffsets):  # a bare retention carries no transaction marker: the batch is copied
        def check_batch_retention(self, batch):
            return BatchRetention.DELETE_EMPTY
    assert bytes(filter_to(_batch(), BareKeep({40, 41, 42, 43})).output) == _batch()
    # nothing retained: the counters keep Java's initial values
    assert (result.max_offset, result.max_timestamp, result.shallow_offset_of_max_timestamp) == (-1, -1, -1)
    assert (result.messages_retained, result.bytes_retained, result.batches_rebuilt, result.batches_emptied) == \
        (0, 0, 0, 0)


def test_delete_horizon_rules():
    # a removable marker's batch (containsMarkerForEmptyTxn) gets a horizon, though nothing was dropped
    class Marker(KeepOffsets):
        def check_batch_retention(self, batch):
            return BatchRetentionResult(BatchRetention.DELETE_EMPTY, True)
    src = _batch()
    out = next(iter(kcodec.read_batches(bytes(filter_to(src, Marker({40, 41, 42, 43})).output))))
    assert out.delete_horizon_ms == NOW + RETENTION and out.last_offset == 43
    # a horizon stamped by an earlier clean is kept when records go
    stamped = bytes(filter_to(_batch(values=[b"v", None, b"v", b"v"]), KeepOffsets({40, 41, 42, 43})).output)
    assert next(iter(kcodec.read_batches(stamped))).delete_horizon_ms == NOW + RETENTION
    again = bytes(filter_to(stamped, KeepOffsets({41, 43})).output)
    assert next(iter(kcodec.read_batches(again))).delete_horizon_ms == NOW + RETENTION
    # a record dropped, no tombstone: rebuilt without a horizon
    plain = bytes(filter_to(src, KeepOffsets({40})).output)
    assert next(iter(kcodec.read_batches(plain))).delete_horizon_ms is None
    # legacy batches carry no horizon: tombstones kept, bytes copied
    legacy = _batch(1, "none", values=[b"v", None, b"v", b"v"])
    assert bytes(filter_to(legacy, KeepOffsets({40, 41, 42, 43})).output) == legacy
    wrapped = _batch(1, "gzip", values=[b"v", None, b"v", b"v"], level=1)
    result = filter_to(wrapped, KeepOffsets({40, 41, 42, 43}))
    assert (bytes(result.output), result.batches_rebuilt) == (wrapped, 0)


def test_errors_name_the_batch():
    with pytest.raises(kcodec.KcodecError, match="Empty batches are only supported for magic v2") as e:
        filter_to(_batch(1, "none", base=70) + _batch(1, "none", base=80), KeepOffsets({70, 71, 72, 73},
                                                                                     BatchRetention.RETAIN_EMPTY))
    assert e.value.batch_offset == 80


def test_a_wrapper_holding_records_of_another_magic_is_rewritten():
    # KAFKA-4298 left v1 wrappers with v0 inner messages in logs: filterTo rewrites them, all records kept.
    from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
    from test_legacy import message, wrapper
    src = wrapper(1, message(0, b"k0", b"v0", magic=0) + message(1, b"k1", None, magic=0), codec=1, magic=1)
    assert next(iter(kcodec.read_batches(src))).inner_magics == {0}
    result = filter_to(src, RecordFilter(NOW, RETENTION))
    want = LegacyRecordBatchBuilder(magic=1, compression="gzip", base_offset=0)
    want.append(b"k0", b"v0", timestamp=-1)
    want.append(b"k1", None, timestamp=-1)
    assert bytes(result.output) == bytes(want.build())
    assert next(iter(kcodec.read_batches(bytes(result.output)))).inner_magics == {1}
    assert (result.batches_rebuilt, result.messages_retained, result.max_offset) == (1, 2, 1)
    assert (result.max_timestamp, result.shallow_offset_of_max_timestamp) == (-1, -1)
    # a wrapper of its own magic is copied
    same = wrapper(1, message(0, b"k0", b"v0") + message(1, b"k1", b"v1"), codec=1, magic=1)
    assert bytes(filter_to(same, RecordFilter(NOW, RETENTION)).output) == same


def test_the_base_filter_keeps_every_record_and_marks_no_transaction():
    src = _batch()
    base = RecordFilter(NOW, RETENTION)
    result = filter_to(src, base)
    assert bytes(result.output) == src and result.batches_rebuilt == 0
    batch = next(iter(kcodec.read_batches(src)))
    assert base.check_batch_retention(batch) == (BatchRetention.DELETE_EMPTY, False)

    class Plain(RecordFilter):  # a retention result without the marker flag
        def check_batch_retention(self, batch):
            return BatchRetentionResult(BatchRetention.DELETE_EMPTY)
    assert bytes(filter_to(src, Plain(NOW, RETENTION)).output) == src


def test_bytes_are_read_without_checking_the_crc():
    # filterTo reads batches as the log holds them (no ensureValid): a kept batch is copied as it is,
    # a rebuilt one gets its own CRC.
    src = bytearray(_batch())
    src[17] ^= 0xFF  # the CRC field (bytes 17-20 of a v2 batch)
    assert bytes(filter_to(bytes(src), KeepOffsets({40, 41, 42, 43})).output) == bytes(src)
    out = bytes(filter_to(bytes(src), KeepOffsets({40})).output)
    (b,) = kcodec.read_batches(out)
    b.ensure_valid()
    assert [r.offset for r in b] == [40]
