"""The broker append path: every row of the LogValidator decision table and every error."""
import gzip
import struct
import zlib

import pytest

import kcodec
from kcodec.compression import CompressionType, TimestampType
from kcodec.log.validator import (
    ERRORS,
    RecordError,
    RecordValidationError,
    ValidatorConfig,
    magic_for_message_format_version,
    target_compression,
    validate_and_assign_offsets,
)
from kcodec.records import batch_header
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
from oracle_util import oracle_available, oracle_verify

T0 = 1_700_000_000_000
NOW = T0 + 10_000
PID = 4242


def v2(n=3, codec="none", level=None, base_offset=0, timestamps=None, keys=None, values=None, headers=None,
       offsets=None, **kw) -> bytes:
    b = kcodec.RecordBatchBuilder(magic=2, compression=codec, level=level, base_offset=base_offset, **kw)
    for i in range(n):
        ts = T0 + i if timestamps is None else timestamps[i]
        key = b"key-%d" % i if keys is None else keys[i]
        value = b"value-%d " % i * 8 if values is None else values[i]
        hdrs = () if headers is None else headers[i]
        b.append(key, value, timestamp=ts, headers=hdrs,
                 offset=None if offsets is None else offsets[i])
    return bytes(b.build())


def legacy(magic, n=3, codec="none", level=None, offsets=None, timestamp_type=TimestampType.CREATE_TIME,
           log_append_time=None, base_offset=0) -> bytes:
    b = LegacyRecordBatchBuilder(magic=magic, compression=codec, level=level, base_offset=base_offset,
                                 timestamp_type=timestamp_type, log_append_time=log_append_time)
    for i in range(n):
        b.append(b"key-%d" % i, b"value-%d" % i, timestamp=T0 + i,
                 offset=None if offsets is None else offsets[i])
    return bytes(b.build())


def legacy_at(magic, stamps) -> bytes:
    """Uncompressed v0/v1 messages with the given timestamps, in order."""
    b = LegacyRecordBatchBuilder(magic=magic)
    for i, ts in enumerate(stamps):
        b.append(b"key-%d" % i, b"value-%d" % i, timestamp=ts)
    return bytes(b.build())


def run(data, next_offset=100, origin="client", **cfg):
    return validate_and_assign_offsets(data, ValidatorConfig(**cfg), next_offset=next_offset, now_ms=NOW,
                                       origin=origin)


def batches(data):
    return list(kcodec.read_batches(data))


def recs(data):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for b in batches(data) for r in b]


def check_java(data):
    if oracle_available():
        rc, doc = oracle_verify(data)
        assert rc == 0, doc


def expect(code, fn, match=None):
    with pytest.raises(RecordValidationError) as info:
        fn()
    assert info.value.code == ERRORS[code], str(info.value)
    assert info.value.error_name == code
    if match:
        assert match in info.value.message, info.value.message
    return info.value


# --------------------------------------------------------------------------------------------
# configuration

def test_topic_compression_overrides_broker():
    cfg = ValidatorConfig(compression_type="zstd", compression_level=7, broker_compression_type="gzip",
                          broker_compression_level=9)
    assert target_compression(cfg, CompressionType.LZ4) == (CompressionType.ZSTD, 7)
    cfg = ValidatorConfig(broker_compression_type="gzip", broker_compression_level=9)
    assert target_compression(cfg, CompressionType.LZ4) == (CompressionType.GZIP, 9)
    assert target_compression(ValidatorConfig(), CompressionType.LZ4) == (CompressionType.LZ4, 9)
    assert target_compression(ValidatorConfig(compression_type="uncompressed"), CompressionType.GZIP) == \
        (CompressionType.NONE, None)


def test_from_kafka_properties():
    cfg = ValidatorConfig.from_kafka({"compression.type": "zstd", "compression.zstd.level": "5",
                                      "message.timestamp.type": "LogAppendTime", "cleanup.policy": "compact",
                                      "message.timestamp.difference.max.ms": "1000",
                                      "message.format.version": "0.10.2"},
                                     {"compression.type": "gzip"})
    assert (cfg.compression_type, cfg.compression_level, cfg.broker_compression_type) == ("zstd", 5, "gzip")
    assert cfg.timestamp_type == TimestampType.LOG_APPEND_TIME and cfg.compacted
    assert cfg.timestamp_before_max_ms == cfg.timestamp_after_max_ms == 1000
    assert cfg.to_magic == 1
    assert [magic_for_message_format_version(v) for v in ("0.9.0", "0.10.1-IV0", "0.11.0", "3.0")] == [0, 1, 2, 2]


# --------------------------------------------------------------------------------------------
# decision table

def test_a1_in_place_v2_changes_only_offset_and_epoch():
    src = v2(4)
    r = run(src, partition_leader_epoch=9)
    assert r.path == "A1"
    assert (r.first_offset, r.last_offset, r.next_offset) == (100, 103, 104)
    out = r.records
    assert len(out) == len(src)
    assert out[8:12] == src[8:12] and out[16:] == src[16:]  # maxTimestamp unchanged: no CRC change
    assert struct.unpack_from(">qii", out) == (100, len(src) - 12, 9)
    assert [o for o, *_ in recs(out)] == [100, 101, 102, 103]
    assert (r.first_offset, r.last_offset, r.max_timestamp, r.shallow_offset_of_max_timestamp) == (
        100, 103, T0 + 3, 103)
    assert not r.message_size_maybe_changed and r.records_converted == 0
    check_java(out)


def test_a1_log_append_time_rewrites_timestamp_and_crc_only():
    src = v2(3)
    r = run(src, timestamp_type=TimestampType.LOG_APPEND_TIME)
    out = r.records
    b = batches(out)[0]
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME and b.max_timestamp == NOW
    assert [x[1] for x in recs(out)] == [NOW] * 3
    assert out[23:35] == src[23:35] and out[43:] == src[43:]
    assert struct.unpack_from(">h", out, 21)[0] == 0x08
    assert b.is_valid()
    assert (r.max_timestamp, r.shallow_offset_of_max_timestamp) == (NOW, 102)
    check_java(out)


def test_a1_legacy_v1_in_place():
    src = legacy(1, 3)
    r = run(src, to_magic=1)
    assert r.path == "A1" and len(r.batches) == 3
    assert [x[0] for x in recs(r.records)] == [100, 101, 102]
    for o, n in zip(r.batches, batches(src)):
        assert o[8:] == bytes(n.raw)[8:]
    # v1 uncompressed: the shallow offset of the max timestamp is that message's offset
    assert (r.max_timestamp, r.shallow_offset_of_max_timestamp) == (T0 + 2, 102)
    lat = run(src, to_magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert [x[1] for x in recs(lat.records)] == [NOW] * 3
    assert (lat.max_timestamp, lat.shallow_offset_of_max_timestamp) == (NOW, 100)
    check_java(lat.records)


def test_a1_v0_has_no_timestamps():
    r = run(legacy(0, 2), to_magic=0)
    assert r.path == "A1" and (r.max_timestamp, r.shallow_offset_of_max_timestamp) == (-1, -1)


def test_a2_conversion_uncompressed():
    src = legacy(1, 3)
    r = run(src)
    assert r.path == "A2" and len(r.batches) == 1
    b = batches(r.records)[0]
    assert (b.magic, b.base_offset, b.last_offset, b.record_count) == (2, 100, 102, 3)
    assert [(x[0], x[1], x[2]) for x in recs(r.records)] == [(100 + i, T0 + i, b"key-%d" % i) for i in range(3)]
    assert r.records_converted == 3 and r.temporary_memory_bytes == len(r.records)
    assert r.message_size_maybe_changed
    check_java(r.records)


def test_b_in_place_keeps_compressed_payload():
    src = v2(5, codec="gzip", level=1)
    r = run(src, partition_leader_epoch=3)
    assert r.path == "B-in"
    out = r.records
    assert out[61:] == src[61:] and out[16:] == src[16:]
    assert struct.unpack_from(">qi", out, 0)[0] == 100 and struct.unpack_from(">i", out, 12)[0] == 3
    assert (r.max_timestamp, r.shallow_offset_of_max_timestamp) == (T0 + 4, 104)
    assert r.records_converted == 0 and r.temporary_memory_bytes > 61
    check_java(out)


def test_temporary_memory_counts_the_uncompressed_records():
    """``temporaryMemoryBytes`` of a compressed append: the batch header plus each record's uncompressed size
    (``Record.sizeInBytes``), which for the same records written uncompressed is that batch's length."""
    hdrs = [(("h", b"1"),), (), (("hk", None), ("h2", b"xyz")), (), ()]
    nulls = {"keys": [None, b"", b"k", None, b"kk"], "values": [b"v", None, b"", b"x" * 300, None]}
    for kw in ({}, {"headers": hdrs}, nulls, {"timestamps": [T0 + 5, T0, T0 + 400, T0 - 3, T0 + 1]}):
        r = run(v2(5, codec="gzip", **kw))
        assert (r.path, r.temporary_memory_bytes) == ("B-in", len(v2(5, **kw))), kw
        r = run(v2(5, codec="gzip", **kw), compression_type="lz4")
        assert (r.path, r.temporary_memory_bytes) == ("B-re", len(v2(5, **kw))), kw
    # v0/v1: each inner message with its log overhead, after the wrapper's own header and overhead
    for magic, overhead in ((0, 12 + 14), (1, 12 + 22)):
        r = run(legacy(magic, 4, codec="gzip"), to_magic=magic, compression_type="gzip")
        assert r.temporary_memory_bytes == overhead + len(legacy(magic, 4)), magic
    r = run(legacy(1, 4, codec="gzip"), to_magic=0, compression_type="gzip")  # sized as read, headed as written
    assert (r.path, r.temporary_memory_bytes) == ("B-re", 12 + 14 + len(legacy(1, 4)))
    # uncompressed v0/v1 messages on their way into a wrapper: no header of their own, only each message
    for magic in (0, 1):
        r = run(legacy(magic, 4), to_magic=magic, compression_type="snappy")
        assert (r.path, r.temporary_memory_bytes) == ("B-re", len(legacy(magic, 4))), magic
    # offset deltas are counted as stored, relative to the batch's base offset (a coordinator's may be large)
    r = run(v2(5, codec="gzip", base_offset=1000), origin="coordinator")
    assert (r.path, r.temporary_memory_bytes) == ("B-re", len(v2(5)))
    # timestamp deltas too, as stored: a record without a timestamp (-1) in a batch whose base is set, or the
    # reverse, stores a delta of about the base's size
    for stamps in ([T0, -1, T0 + 3], [-1, T0, T0 + 1], [-1, -1, -1]):
        r = run(v2(3, codec="gzip", timestamps=stamps))
        assert (r.path, r.temporary_memory_bytes) == ("B-in", len(v2(3, timestamps=stamps))), stamps
    # a batch flagged LogAppendTime reads its records at its maxTimestamp; they still measure as they are stored
    stamps = [T0, T0 + 300_000, T0 + 1]
    lat = dict(timestamps=stamps, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW)
    for cfg, path in (({}, "B-in"), ({"compression_type": "lz4"}, "B-re")):
        r = run(v2(3, codec="gzip", **lat), **cfg)
        assert (r.path, r.temporary_memory_bytes) == (path, len(v2(3, **lat))), cfg
    # a v1 wrapper flagged LogAppendTime: its messages have no deltas, only their own length
    inner = legacy(1, 3)
    r = run(_v1_gzip_wrapper(inner, 2, attributes=0x09), to_magic=1)
    assert (r.path, r.temporary_memory_bytes) == ("B-in", 12 + 22 + len(inner))


def test_b_in_place_same_type_other_level():
    # only the codec type is compared: zstd level 1 on a zstd-level-19 topic stays as it is
    src = v2(5, codec="zstd", level=1)
    r = run(src, compression_type="zstd", compression_level=19)
    assert r.path == "B-in" and r.records[61:] == src[61:]


def test_b_rebuild_on_codec_change_keeps_producer_state():
    src = v2(4, codec="gzip", producer_id=PID, producer_epoch=3, base_sequence=17, is_transactional=True,
             headers=[(("h", b"1"),), (), (("h", None),), ()])
    r = run(src, compression_type="zstd", partition_leader_epoch=5)
    assert r.path == "B-re"
    b = batches(r.records)[0]
    assert CompressionType.of(b.compression) == CompressionType.ZSTD
    assert (b.producer_id, b.producer_epoch, b.base_sequence, b.is_transactional) == (PID, 3, 17, True)
    assert (b.base_offset, b.last_offset, b.partition_leader_epoch) == (100, 103, 5)
    assert [x[2:] for x in recs(r.records)] == [x[2:] for x in recs(src)]
    assert r.records_converted == 4 and r.message_size_maybe_changed
    check_java(r.records)


def test_b_rebuild_uncompressed_to_compressed_topic():
    r = run(v2(3), compression_type="lz4")
    assert r.path == "B-re" and CompressionType.of(batches(r.records)[0].compression) == CompressionType.LZ4


def test_producer_topic_rebuild_uses_default_level():
    # v1 gzip level 1 on a v2 topic: converted, and recompressed at gzip's default level
    src = legacy(1, 20, codec="gzip", level=1)
    r = run(src)
    assert r.path == "B-re"
    want = kcodec.RecordBatchBuilder(magic=2, compression="gzip", base_offset=100)
    for off, ts, k, v, _h in recs(src):
        want.append(k, v, timestamp=ts)
    assert r.records == bytes(want.build())


def test_b_a_to_magic_zero_always_rebuilds():
    src = legacy(0, 3, codec="gzip")
    r = run(src, to_magic=0)
    assert r.path == "B-re"
    assert [x[0] for x in recs(r.records)] == [100, 101, 102]
    check_java(r.records)


def test_b_b_uncompressed_control_batch_not_compressed():
    b = kcodec.RecordBatchBuilder(magic=2, compression="none", base_offset=0, producer_id=PID, producer_epoch=1,
                                  is_transactional=True, is_control=True)
    b.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 4), timestamp=T0)
    src = bytes(b.build())
    r = run(src, origin="coordinator", compression_type="gzip")
    assert r.path == "B-in"
    out = batches(r.records)[0]
    assert out.is_control and CompressionType.of(out.compression) == CompressionType.NONE
    assert r.records[61:] == src[61:]
    check_java(r.records)


def test_an_uncompressed_control_batch_stays_as_it_is_whatever_the_format():
    # a marker without producer state (as the coordinator may append one) is kept in place on a v0 or v1 topic
    # too; only a topic of v1 or later takes the max timestamp of its records, and only v0 leaves the batch's own
    b = kcodec.RecordBatchBuilder(magic=2, producer_id=PID, producer_epoch=1, is_transactional=True, is_control=True)
    b.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 4), timestamp=T0 + 7)
    src = bytearray(b.build())
    attributes = struct.unpack_from(">h", src, 21)[0]
    struct.pack_into(">h", src, 21, attributes & ~0x10)  # not transactional
    struct.pack_into(">qhi", src, 43, -1, -1, -1)  # no producer id, epoch or sequence
    batch_header.seal(src, 0, len(src))
    for magic, want in ((0, -1), (1, T0 + 7)):
        r = run(bytes(src), origin="coordinator", compression_type="gzip", to_magic=magic)
        assert (r.path, r.max_timestamp, r.shallow_offset_of_max_timestamp, r.last_offset) == ("B-in", want, 100, 100)
        out = batches(r.records)[0]
        assert (out.magic, out.is_control, out.max_timestamp, out.base_offset) == (2, True, T0 + 7, 100)
        assert r.records[8:] == bytes(src[8:])  # only the base offset moved
        check_java(r.records)


def test_b_c_wrong_inner_offsets_rebuilt():
    src = legacy(1, 3, codec="gzip", offsets=[0, 2, 3])
    r = run(src, to_magic=1)
    assert r.path == "B-re"
    assert [x[0] for x in recs(r.records)] == [100, 101, 102]
    consecutive = run(legacy(1, 3, codec="gzip"), to_magic=1)
    assert consecutive.path == "B-in"
    assert [x[0] for x in recs(consecutive.records)] == [100, 101, 102]


def test_b_c_v2_offset_gaps_rebuilt_for_coordinator():
    src = v2(2, codec="gzip", offsets=[0, 5])
    r = run(src, origin="coordinator")
    assert r.path == "B-re" and [x[0] for x in recs(r.records)] == [100, 101]


def test_legacy_uncompressed_set_to_compressed_topic_is_one_wrapper():
    r = run(legacy(1, 4), to_magic=1, compression_type="snappy")
    assert r.path == "B-re" and len(r.batches) == 1
    assert [x[0] for x in recs(r.records)] == [100, 101, 102, 103]
    check_java(r.records)


# --------------------------------------------------------------------------------------------
# errors

def test_client_base_offset_must_be_zero():
    expect("INVALID_RECORD", lambda: run(v2(2, base_offset=5)), "should be 0, but it is 5")
    assert run(v2(2, base_offset=5), origin="coordinator").first_offset == 100


def test_client_control_batch_rejected():
    b = kcodec.RecordBatchBuilder(magic=2, producer_id=PID, producer_epoch=1, is_transactional=True, is_control=True)
    b.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.ABORT, 1), timestamp=T0)
    expect("INVALID_RECORD", lambda: run(bytes(b.build())), "Clients are not allowed to write control records")


def test_idempotent_without_sequence():
    expect("INVALID_RECORD", lambda: run(v2(2, producer_id=PID, producer_epoch=0, base_sequence=-1)),
           "Invalid sequence number -1 in record batch with producerId 4242")
    # producer id 0 is a producer id (only -1 means none)
    e = expect("INVALID_RECORD", lambda: run(v2(2, producer_id=0, producer_epoch=0, base_sequence=-1)))
    assert e.message == "Invalid sequence number -1 in record batch with producerId 0 in topic partition topic-0."
    # the same checks hold for a compressed batch
    e = expect("INVALID_RECORD", lambda: run(v2(2, codec="gzip", producer_id=PID, producer_epoch=0, base_sequence=-1)))
    assert e.message == "Invalid sequence number -1 in record batch with producerId 4242 in topic partition topic-0."


def test_compacted_topic_needs_keys():
    e = expect("INVALID_RECORD", lambda: run(v2(3, keys=[b"a", None, b"c"]), compacted=True),
               "1 record errors in total")
    assert [x.batch_index for x in e.record_errors] == [1]
    assert "Compacted topic cannot accept message without key" in e.record_errors[0].message
    assert run(v2(2, keys=[b"", b"x"]), compacted=True).path == "A1"
    # the same when the messages are converted (A2)
    nokey = LegacyRecordBatchBuilder(magic=1)
    nokey.append(b"k", b"v", timestamp=T0)
    nokey.append(None, b"v", timestamp=T0)
    e = expect("INVALID_RECORD", lambda: run(bytes(nokey.build()), compacted=True))
    assert [(x.batch_index, x.message) for x in e.record_errors] == [
        (0, "Compacted topic cannot accept message without key in topic partition topic-0.")]


def test_timestamp_range():
    e = expect("INVALID_TIMESTAMP",
               lambda: run(v2(3, timestamps=[NOW - 5000, NOW, NOW + 5000]), timestamp_before_max_ms=1000,
                           timestamp_after_max_ms=1000),
               "One or more records have been rejected due to invalid timestamp")
    assert [x.batch_index for x in e.record_errors] == [0, 2]
    assert e.record_errors[0].message == (f"Timestamp {NOW - 5000} of message with offset 0 is out of range. "
                                          f"The timestamp should be within [{NOW - 1000}, {NOW + 1000}]")
    assert run(v2(2, timestamps=[-1, -1]), timestamp_before_max_ms=1000, timestamp_after_max_ms=1000).path == "A1"


def test_log_append_time_batch_from_producer():
    lat = v2(2, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW)
    expect("INVALID_TIMESTAMP", lambda: run(lat, timestamp_type=TimestampType.LOG_APPEND_TIME))
    # on a CreateTime topic a LAT-flagged batch passes while its maxTimestamp is in range
    assert run(lat).path == "A1"


def test_record_errors_show_first_three():
    e = expect("INVALID_RECORD", lambda: run(v2(5, keys=[None] * 5), compacted=True),
               "5 record errors in total, and only showing the first three errors at most: [RecordError(batchIndex=0")
    assert len(e.record_errors) == 5 and "batchIndex=3" not in e.message
    shown = ", ".join(f"RecordError(batchIndex={i}, message='Compacted topic cannot accept message without key in "
                      "topic partition topic-0.')" for i in range(3))
    assert e.message == ("One or more records have been rejected due to 5 record errors in total, and only showing "
                         f"the first three errors at most: [{shown}]")


def test_more_than_one_v2_batch():
    expect("INVALID_RECORD", lambda: run(v2(1) + v2(1)), "Compressed outer record has more than one batch")
    expect("INVALID_RECORD", lambda: run(legacy(1, 1, codec="gzip") + legacy(1, 1, codec="gzip"), to_magic=1),
           "Compressed outer record has more than one batch")


def test_offset_range_and_count():
    src = bytearray(v2(3))
    struct.pack_into(">i", src, 23, 5)  # lastOffsetDelta 5 with 3 records
    batch_header.seal(src, 0, len(src))
    expect("INVALID_RECORD", lambda: run(bytes(src)), "Inconsistent batch offset range [0, 5] and count of records 3")
    struct.pack_into(">i", src, 23, -3)
    batch_header.seal(src, 0, len(src))
    expect("INVALID_RECORD", lambda: run(bytes(src)), "Batch has an invalid offset range: [0, -3]")
    struct.pack_into(">i", src, 23, -1)  # a range of no offsets at all: refused for its range, before its count
    batch_header.seal(src, 0, len(src))
    e = expect("INVALID_RECORD", lambda: run(bytes(src)))
    assert e.message == "Batch has an invalid offset range: [0, -1] in topic partition topic-0."
    empty = batch_header.empty_header(batches(v2(1))[0])
    expect("INVALID_RECORD", lambda: run(empty), "Invalid reported count for record batch: 0")


def test_magic_mismatch_between_batches():
    expect("INVALID_RECORD", lambda: run(legacy(0, 1) + legacy(1, 1)),
           "Batch magic 1 is not the same as the first batch's magic byte 0")
    # only the first batch decides whether more than one may follow: after a v1 message, a v2 batch is refused
    # for its magic
    e = expect("INVALID_RECORD", lambda: run(legacy(1, 1) + v2(1)))
    assert e.message == "Batch magic 2 is not the same as the first batch's magic byte 1 in topic partition topic-0"


def test_transactional_and_idempotent_need_v2():
    expect("UNSUPPORTED_FOR_MESSAGE_FORMAT",
           lambda: run(v2(1, producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True), to_magic=1),
           "Transactional records cannot be used with magic version 1")
    expect("UNSUPPORTED_FOR_MESSAGE_FORMAT",
           lambda: run(v2(1, producer_id=PID, producer_epoch=0, base_sequence=0), to_magic=1),
           "Idempotent records cannot be used with magic version 1")
    e = expect("UNSUPPORTED_FOR_MESSAGE_FORMAT",
               lambda: run(v2(1, producer_id=0, producer_epoch=0, base_sequence=0), to_magic=1))
    assert e.message == "Idempotent records cannot be used with magic version 1"


def test_corrupt_crc():
    src = bytearray(v2(2))
    src[-1] ^= 0xFF
    expect("CORRUPT_MESSAGE", lambda: run(bytes(src)), "Record is corrupt (stored crc = ")


def test_corrupt_inner_crc_of_compressed_legacy():
    src = legacy(1, 2)
    bad = bytearray(src)
    bad[12 + 4 + 2 + 8 + 4 + 2] ^= 0x01  # a key byte of the first message: its CRC no longer matches
    wrapper = LegacyRecordBatchBuilder(magic=1, compression="gzip")
    # write the corrupt messages as the payload of a wrapper by hand
    payload = kcodec.get_codec("gzip").compress(bytes(bad), magic=1)
    head = struct.pack(">qiIbbq", 1, 22 + len(payload), 0, 1, 1, T0 + 1) + struct.pack(">i", -1) + \
        struct.pack(">i", len(payload)) + payload
    msg = bytearray(head)
    from kcodec._native.primitives import crc32
    struct.pack_into(">I", msg, 12, crc32(bytes(msg[16:])))
    assert wrapper  # the builder refuses to write corrupt data; this one is made by hand
    expect("CORRUPT_MESSAGE", lambda: run(bytes(msg), to_magic=1), "in topic partition topic-0.")


def test_message_too_large():
    expect("MESSAGE_TOO_LARGE", lambda: run(v2(3), max_message_bytes=100),
           "exceeds the maximum configured value of 100")
    # rebuilt output is checked again
    big = legacy(1, 50)
    expect("MESSAGE_TOO_LARGE", lambda: run(big, max_message_bytes=300), "Message batch size is")


def test_record_list_too_large():
    expect("RECORD_LIST_TOO_LARGE", lambda: run(v2(3), segment_bytes=100), "maximum configured segment size of 100")


def test_raft_leader_epoch():
    expect("INVALID_RECORD", lambda: run(v2(1, partition_leader_epoch=3), origin="raft_leader",
                                         partition_leader_epoch=4),
           "Append from Raft leader did not set the batch epoch correctly")
    assert run(v2(1, partition_leader_epoch=4), origin="raft_leader", partition_leader_epoch=4).path == "A1"


def test_no_batches():
    expect("INVALID_RECORD", lambda: run(b""), "Record batch has no batches at all")
    expect("INVALID_RECORD", lambda: run(v2(1)[:40]), "Record batch has no batches at all")


def test_trailing_bytes_trimmed():
    src = v2(2) + b"\x00" * 5
    r = run(src)
    assert r.trimmed_bytes == 5 and r.valid_bytes == len(src) - 5


def test_framing_errors_are_corrupt_message():
    expect("CORRUPT_MESSAGE", lambda: run(b"\x00" * 12), "less than the minimum record overhead")
    bad = bytearray(v2(1))
    bad[16] = 3
    e = expect("CORRUPT_MESSAGE", lambda: run(bytes(bad)))
    assert (e.message, e.position) == ("Invalid magic found in record: 3", 0)


def test_a_v1_wrapper_that_cannot_be_read_is_named_by_its_own_offset():
    # checks made before the messages are read (size, CRC, codec) do not decompress the wrapper to name it
    src = bytearray(legacy(1, 3, codec="gzip"))
    src[-2] ^= 0xFF  # the gzip trailer: the CRC-32 of the message no longer matches, nor does the payload read
    crc = struct.unpack_from(">I", src, 12)[0]
    e = expect("CORRUPT_MESSAGE", lambda: run(bytes(src), to_magic=1))
    assert (e.message, e.batch_offset, e.position) == (
        f"Record is corrupt (stored crc = {crc}) in topic partition topic-0.", 2, 0)
    e = expect("MESSAGE_TOO_LARGE", lambda: run(bytes(src), to_magic=1, max_message_bytes=50))
    assert (e.message, e.batch_offset) == (
        f"The record batch size in the append to topic-0 is {len(src)} bytes which exceeds the maximum configured "
        "value of 50.", 2)
    unknown = bytearray(legacy(1, 3, codec="gzip"))
    unknown[17] = 0x07  # codec id 7, CRC-32 made to match
    struct.pack_into(">I", unknown, 12, zlib.crc32(bytes(unknown[16:])))
    e = expect("UNSUPPORTED_COMPRESSION_TYPE", lambda: run(bytes(unknown), to_magic=1))
    assert e.message.startswith("Unknown compression type id: 7; valid ids are 0 (none), 1 (gzip)")
    assert e.batch_offset == 2


def test_an_unknown_codec_id_is_unsupported():
    src = bytearray(v2(2, base_offset=7))
    struct.pack_into(">h", src, 21, 7)  # codec id 7: no codec is registered for it
    batch_header.seal(src, 0, len(src))
    e = expect("UNSUPPORTED_COMPRESSION_TYPE", lambda: run(bytes(src), origin="coordinator"))
    assert e.message.startswith("Unknown compression type id: 7; valid ids are 0 (none), 1 (gzip)")
    assert e.batch_offset == 7


def test_zstd_needs_v2():
    # refused before any batch is read or rebuilt, whether the topic or the producer asks for zstd
    for magic in (0, 1):
        expect("UNSUPPORTED_COMPRESSION_TYPE", lambda: run(legacy(magic, 1), to_magic=magic, compression_type="zstd"),
               f"zstd compression requires message format v2, the topic writes v{magic}")
        expect("UNSUPPORTED_COMPRESSION_TYPE", lambda: run(v2(2, codec="zstd"), to_magic=magic),
               f"zstd compression requires message format v2, the topic writes v{magic}")
    for codec in ("gzip", "snappy", "lz4"):  # the other codecs have a v0/v1 framing
        assert run(legacy(1, 2), to_magic=1, compression_type=codec).target_compression == CompressionType.of(codec)


def test_v1_headers_cannot_be_down_converted():
    e = expect("UNKNOWN_SERVER_ERROR", lambda: run(v2(1, headers=[(("a", b"b"),)]), to_magic=1,
                                                   compression_type="gzip"))
    assert "header" in e.message


def test_error_is_a_kcodec_error_and_pickles():
    import pickle
    e = expect("INVALID_RECORD", lambda: run(v2(2, keys=[None, None]), compacted=True))
    assert isinstance(e, kcodec.KcodecError)
    again = pickle.loads(pickle.dumps(e))
    assert (again.code, again.error_name, again.record_errors) == (e.code, e.error_name, e.record_errors)


# --------------------------------------------------------------------------------------------
# configuration and errors, value by value

def test_message_format_versions():
    cases = {"0.8.2": 0, "0.9.0.1": 0, "0": 0, "0.10": 1, "0.10.0-IV1": 1, "0.10.2": 1, "0.11.0": 2,
             "1.0": 2, "1": 2, "2.8-IV0": 2, "3.0": 2, 0: 0, 1: 1, 2: 2}
    assert {v: magic_for_message_format_version(v) for v in cases} == cases
    for bad, message in ((3, "magic must be 0, 1 or 2, got 3"), (-1, "magic must be 0, 1 or 2, got -1"),
                         ("x.y", "invalid message.format.version 'x.y'"), ("", "invalid message.format.version ''"),
                         ("0.x", "invalid message.format.version '0.x'"),
                         ("0.10a", "invalid message.format.version '0.10a'"),
                         ("0.8.x-IV0", "invalid message.format.version '0.8.x-IV0'")):
        with pytest.raises(ValueError) as e:
            magic_for_message_format_version(bad)
        assert str(e.value) == message


def test_from_kafka_defaults_levels_and_timestamp_bounds():
    assert ValidatorConfig.from_kafka() == ValidatorConfig()
    cfg = ValidatorConfig.from_kafka({"compression.type": "gzip", "message.timestamp.type": "CreateTime",
                                      "cleanup.policy": "delete", "max.message.bytes": "2000",
                                      "segment.bytes": "4096"},
                                     {"compression.type": "lz4", "compression.gzip.level": "3",
                                      "compression.lz4.level": "11"})
    assert (cfg.compression_type, cfg.compression_level, cfg.broker_compression_type) == ("gzip", None, "lz4")
    assert cfg.broker_compression_level == 3  # the level of the codec in effect: the topic's gzip
    assert (cfg.timestamp_type, cfg.compacted, cfg.max_message_bytes, cfg.segment_bytes) == (
        TimestampType.CREATE_TIME, False, 2000, 4096)
    broker_only = ValidatorConfig.from_kafka({}, {"compression.type": "zstd", "compression.zstd.level": "-2"})
    assert (broker_only.compression_type, broker_only.broker_compression_level) == (None, -2)
    assert ValidatorConfig.from_kafka({}, {"compression.type": "snappy", "compression.gzip.level": "3"}) \
        .broker_compression_level is None
    # KIP-937: the new bounds win unless left at their default, where the deprecated one still applies
    both = {"message.timestamp.difference.max.ms": "1000", "message.timestamp.before.max.ms": "50",
            "message.timestamp.after.max.ms": str(2 ** 63 - 1)}
    cfg = ValidatorConfig.from_kafka(both)
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms) == (50, 1000)
    cfg = ValidatorConfig.from_kafka({"message.timestamp.after.max.ms": "70"}, to_magic=1)
    assert (cfg.timestamp_before_max_ms, cfg.timestamp_after_max_ms, cfg.to_magic) == (2 ** 63 - 1, 70, 1)


def test_target_compression_rules():
    assert target_compression(ValidatorConfig(), CompressionType.NONE) == (CompressionType.NONE, None)
    # a level means nothing to a topic that stores its batches uncompressed, under either name
    for name in ("uncompressed", "none"):
        assert target_compression(ValidatorConfig(compression_type=name, compression_level=3),
                                  CompressionType.LZ4) == (CompressionType.NONE, None)
    assert target_compression(ValidatorConfig(), CompressionType.GZIP) == (CompressionType.GZIP, -1)
    assert target_compression(ValidatorConfig(compression_type="GZIP"), CompressionType.LZ4) == (
        CompressionType.GZIP, -1)
    # a topic codec takes the topic's level (its default when unset), never the broker's
    cfg = ValidatorConfig(compression_type="gzip", broker_compression_level=1)
    assert target_compression(cfg, CompressionType.NONE) == (CompressionType.GZIP, -1)
    cfg = ValidatorConfig(broker_compression_type="uncompressed", broker_compression_level=1)
    assert target_compression(cfg, CompressionType.ZSTD) == (CompressionType.NONE, None)
    cfg = ValidatorConfig(compression_type="none")
    assert target_compression(cfg, CompressionType.ZSTD) == (CompressionType.NONE, None)


def test_error_codes_names_and_text():
    e = RecordValidationError(87, "bad", [RecordError(1, None), RecordError(2, "why")], batch_offset=4)
    assert (e.code, e.error_name, e.batch_offset) == (87, "INVALID_RECORD", 4)
    assert str(e) == "INVALID_RECORD (87): bad (in the batch with base offset 4)"
    assert [str(r) for r in e.record_errors] == ["RecordError(batchIndex=1, message=null)",
                                                 "RecordError(batchIndex=2, message='why')"]
    odd = RecordValidationError(99, "?")
    assert (odd.code, odd.error_name) == (99, "UNKNOWN_SERVER_ERROR")
    assert RecordValidationError("CORRUPT_MESSAGE", "x").code == 2


def test_reader_errors_map_to_kafkas_codes():
    # a bad CRC inside a v2 record set, a record whose length runs past the batch, a corrupt gzip stream
    src = bytearray(v2(2, codec="gzip"))
    src[len(src) - 12] ^= 0xFF  # inside the deflate stream, before gzip's CRC-32 and size
    batch_header.seal(src, 0, len(src))
    expect("UNKNOWN_SERVER_ERROR", lambda: run(bytes(src)), "gzip: Corrupt GZIP trailer")
    at7 = bytearray(v2(2, codec="gzip", base_offset=7))
    at7[len(at7) - 12] ^= 0xFF
    batch_header.seal(at7, 0, len(at7))
    e = expect("UNKNOWN_SERVER_ERROR", lambda: run(bytes(at7), origin="coordinator"), "gzip: Corrupt GZIP trailer")
    assert e.batch_offset == 7  # the reader's context is kept: which batch failed
    short = bytearray(v2(1))
    short[61] = 0x7E  # the record's length varint: 63 bytes, so its fields are read out of place
    batch_header.seal(short, 0, len(short))
    expect("INVALID_RECORD", lambda: run(bytes(short)), "Invalid negative header key size -23")


def test_legacy_records_are_shown_as_kafka_prints_them():
    lat = legacy(1, 2, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    e = expect("INVALID_TIMESTAMP", lambda: run(lat, to_magic=1, timestamp_type=TimestampType.LOG_APPEND_TIME))
    # the message's own attributes (LogAppendTime's bit) and stored CRC-32, as LegacyRecord.toString prints them
    size = struct.unpack_from(">i", lat, 8)[0] + 12
    crc = zlib.crc32(lat[16:size])
    assert struct.unpack_from(">I", lat, 12)[0] == crc
    assert e.record_errors[0].message == (
        "Invalid timestamp type in message LegacyRecordBatch(offset=0, Record(magic=1, attributes=8, "
        f"compression=NONE, crc={crc}, LogAppendTime=1700000000000, key=5 bytes, value=7 bytes)). "
        "Producer should not set timestamp type to LogAppendTime.")
    # inner messages of a LogAppendTime wrapper take its type and time, whatever their own attributes say
    inner = LegacyRecordBatchBuilder(magic=1, base_offset=0)
    inner.append(b"k0", b"value-0", T0)
    v1_message = bytes(inner.build())
    wrapped = _v1_gzip_wrapper(v1_message, 0, attributes=0x09)
    e = expect("INVALID_TIMESTAMP", lambda: run(wrapped, to_magic=1, compression_type="producer",
                                                timestamp_type=TimestampType.LOG_APPEND_TIME))
    crc = struct.unpack_from(">I", v1_message, 12)[0]
    assert e.record_errors[0].message == (
        f"Invalid timestamp type in message LegacyRecordBatch(offset=0, Record(magic=1, attributes=0, "
        f"compression=NONE, crc={crc}, LogAppendTime={T0 + 5}, key=2 bytes, value=7 bytes)). "
        "Producer should not set timestamp type to LogAppendTime.")
    v2lat = v2(1, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=NOW, keys=[None])
    e = expect("INVALID_TIMESTAMP", lambda: run(v2lat, timestamp_type=TimestampType.LOG_APPEND_TIME))
    assert e.record_errors[0].message == (
        f"Invalid timestamp type in message DefaultRecord(offset=0, timestamp={NOW}, key=0 bytes, value=64 bytes). "
        "Producer should not set timestamp type to LogAppendTime.")


def _v1_gzip_wrapper(inner: bytes, last_offset: int, magic: int = 1, attributes: int = 1) -> bytes:
    """A gzip wrapper message around ``inner`` (v1: messages with relative offsets), as old producers wrote."""
    value = gzip.compress(inner)
    head = struct.pack(">bbqi", magic, attributes, T0 + 5, -1) if magic else struct.pack(">bbi", 0, attributes, -1)
    body = head + struct.pack(">i", len(value)) + value
    return struct.pack(">qiI", last_offset, len(body) + 4, zlib.crc32(body)) + body


def test_an_inner_message_of_another_magic_is_refused():
    # LogValidator.validateRecord: an inner message whose magic is not its wrapper's is INVALID_RECORD,
    # printed with that message's own magic, attributes and CRC (a v0 message has no timestamp to print).
    first = LegacyRecordBatchBuilder(magic=1, base_offset=0)
    first.append(b"k0", b"value-0", T0)
    second = LegacyRecordBatchBuilder(magic=0, base_offset=1)
    second.append(b"key-1", None)
    v0_message = bytes(second.build())
    data = _v1_gzip_wrapper(bytes(first.build()) + v0_message, 1)
    assert [r.offset for r in batches(data)[0]] == [0, 1]  # it reads
    e = expect("INVALID_RECORD", lambda: run(data, to_magic=1, compression_type="producer"))
    crc = struct.unpack_from(">I", v0_message, 12)[0]
    assert [(r.batch_index, r.message) for r in e.record_errors] == [(1, (
        f"Record LegacyRecordBatch(offset=1, Record(magic=0, attributes=0, compression=NONE, crc={crc}, "
        "key=5 bytes, value=0 bytes))'s magic does not match outer magic 1 in topic partition topic-0."))]
    # a v1 message in a v0 wrapper prints its own (CreateTime) timestamp
    inner = LegacyRecordBatchBuilder(magic=1, base_offset=0)
    inner.append(b"k0", b"value-0", T0)
    v1_message = bytes(inner.build())
    e = expect("INVALID_RECORD", lambda: run(_v1_gzip_wrapper(v1_message, 0, magic=0), to_magic=0,
                                             compression_type="producer"))
    crc = struct.unpack_from(">I", v1_message, 12)[0]
    assert e.record_errors[0].message == (
        f"Record LegacyRecordBatch(offset=0, Record(magic=1, attributes=0, compression=NONE, crc={crc}, "
        f"CreateTime={T0}, key=2 bytes, value=7 bytes))'s magic does not match outer magic 0 in topic partition "
        "topic-0.")
    # the same messages, all v1, are accepted
    both = LegacyRecordBatchBuilder(magic=1, base_offset=0)
    both.append(b"k0", b"value-0", T0)
    both.append(b"key-1", b"value-1", T0)
    accepted = run(_v1_gzip_wrapper(bytes(both.build()), 1), to_magic=1, compression_type="producer")
    assert accepted.record_count == 2 and accepted.last_offset == 101


def test_a_v1_wrapper_kept_in_place_takes_the_max_timestamp_of_its_messages():
    # the wrapper says T0 + 5; its messages T0 + 3 and T0 + 1: Kafka sets the wrapper's to their maximum
    inner = LegacyRecordBatchBuilder(magic=1, base_offset=0)
    inner.append(b"k0", b"value-0", T0 + 3)
    inner.append(b"k1", b"value-1", T0 + 1)
    wrapped = _v1_gzip_wrapper(bytes(inner.build()), 1)
    for lat, want in ((False, T0 + 3), (True, NOW)):
        extra = {"timestamp_type": TimestampType.LOG_APPEND_TIME} if lat else {}
        r = run(wrapped, to_magic=1, **extra)
        assert (r.path, r.max_timestamp, r.shallow_offset_of_max_timestamp) == ("B-in", want, 101)
        out = batches(r.records)[0]
        assert (out.last_offset, out.max_timestamp, out.timestamp_type, out.is_valid()) == (
            101, want, TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME, True)
        assert r.records[34:] == wrapped[34:]  # the compressed messages themselves are kept
        check_java(r.records)


def test_timestamp_bounds_at_their_edges():
    edge = dict(timestamp_before_max_ms=1000, timestamp_after_max_ms=500)
    assert run(v2(2, timestamps=[NOW - 1000, NOW + 500]), **edge).path == "A1"
    e = expect("INVALID_TIMESTAMP", lambda: run(v2(2, timestamps=[NOW - 1001, NOW + 501]), **edge))
    assert [x.batch_index for x in e.record_errors] == [0, 1]
    assert e.record_errors[1].message == (f"Timestamp {NOW + 501} of message with offset 1 is out of range. "
                                          f"The timestamp should be within [{NOW - 1000}, {NOW + 500}]")
    # Java's long arithmetic wraps: a bound of Long.MAX_VALUE admits every timestamp
    assert run(v2(1, timestamps=[0])).path == "A1"
    far = dict(timestamp_before_max_ms=2 ** 63 - 1, timestamp_after_max_ms=2 ** 63 - 1)
    assert run(v2(2, timestamps=[0, 2 ** 62]), **far).path == "A1"


def test_max_timestamp_and_its_offset_of_every_path():
    # MemoryRecordsBuilder.info(): LogAppendTime reports the append time even for v0, whose messages hold none
    stamps = [T0 + 5, T0 + 9, T0 + 1]
    got = {}
    for name, data, cfg in (
            ("A1 v2", v2(3, timestamps=stamps), {}),
            ("A1 v1", legacy(1, 3), {"to_magic": 1}),
            ("A1 v1 ties", legacy_at(1, [T0 + 5, T0 + 9, T0 + 9, T0 + 1]), {"to_magic": 1}),
            ("A2 up", legacy_at(1, stamps), {}),
            ("A2 ties", v2(3, timestamps=[T0 + 9, T0 + 9, T0 + 1]), {"to_magic": 1}),
            ("A2 down", v2(3, timestamps=stamps), {"to_magic": 1}),
            ("A2 to v0", v2(3, timestamps=stamps), {"to_magic": 0}),
            ("B-re v1", v2(3, timestamps=stamps), {"to_magic": 1, "compression_type": "gzip"}),
            ("B-re v2", v2(3, timestamps=stamps, codec="lz4"), {"compression_type": "gzip"}),
            ("B-in v1", legacy(1, 3, codec="gzip"), {"to_magic": 1}),
            ("B-re v0", legacy(1, 3, codec="gzip"), {"to_magic": 0})):
        for lat in (False, True):
            extra = {"timestamp_type": TimestampType.LOG_APPEND_TIME} if lat else {}
            r = run(data, **cfg, **extra)
            got[name, lat] = (r.path, r.max_timestamp, r.shallow_offset_of_max_timestamp, r.last_offset)
    assert got == {
        ("A1 v2", False): ("A1", T0 + 9, 102, 102), ("A1 v2", True): ("A1", NOW, 102, 102),
        ("A1 v1", False): ("A1", T0 + 2, 102, 102), ("A1 v1", True): ("A1", NOW, 100, 102),
        # each v1 message is a batch of its own: the first of equal maxima is the one reported
        ("A1 v1 ties", False): ("A1", T0 + 9, 101, 103), ("A1 v1 ties", True): ("A1", NOW, 100, 103),
        # a v2 batch reports its last offset, whichever record holds the maximum
        ("A2 up", False): ("A2", T0 + 9, 102, 102), ("A2 up", True): ("A2", NOW, 102, 102),
        ("A2 ties", False): ("A2", T0 + 9, 100, 102), ("A2 ties", True): ("A2", NOW, 100, 102),
        ("A2 down", False): ("A2", T0 + 9, 101, 102), ("A2 down", True): ("A2", NOW, 100, 102),
        ("A2 to v0", False): ("A2", -1, -1, 102), ("A2 to v0", True): ("A2", NOW, 100, 102),
        ("B-re v1", False): ("B-re", T0 + 9, 102, 102), ("B-re v1", True): ("B-re", NOW, 102, 102),
        ("B-re v2", False): ("B-re", T0 + 9, 102, 102), ("B-re v2", True): ("B-re", NOW, 102, 102),
        ("B-in v1", False): ("B-in", T0 + 2, 102, 102), ("B-in v1", True): ("B-in", NOW, 102, 102),
        ("B-re v0", False): ("B-re", -1, -1, 102), ("B-re v0", True): ("B-re", NOW, 102, 102),
    }


def test_validation_statistics_of_every_path():
    # RecordValidationStats: in place, nothing is converted and no time is spent converting; A1 holds no
    # records in memory besides the request's own
    import time

    a1 = run(v2(3) + b"\x00" * 4)
    assert (a1.path, a1.records_converted, a1.temporary_memory_bytes, a1.conversion_time_ns) == ("A1", 0, 0, 0)
    assert (a1.message_size_maybe_changed, a1.valid_bytes, a1.trimmed_bytes) == (False, len(v2(3)), 4)
    b_in = run(v2(3, codec="gzip"))
    assert (b_in.path, b_in.records_converted, b_in.temporary_memory_bytes, b_in.conversion_time_ns) == (
        "B-in", 0, len(v2(3)), 0)
    assert (b_in.message_size_maybe_changed, b_in.valid_bytes) == (False, len(v2(3, codec="gzip")))
    # a rebuild reports the bytes of the request it read, and the time it took, within what the call took
    for src, cfg, path in ((legacy(1, 3), {}, "A2"), (v2(3, codec="gzip"), {"compression_type": "lz4"}, "B-re")):
        before = time.perf_counter_ns()
        r = run(src + b"\x00" * 3, **cfg)
        spent = time.perf_counter_ns() - before
        assert (r.path, r.records_converted, r.message_size_maybe_changed) == (path, 3, True)
        assert (r.valid_bytes, r.trimmed_bytes) == (len(src), 3)
        assert 0 <= r.conversion_time_ns <= spent


def test_now_defaults_to_the_wall_clock():
    import time

    before = int(time.time() * 1000)
    r = validate_and_assign_offsets(v2(2), ValidatorConfig(timestamp_type=TimestampType.LOG_APPEND_TIME),
                                    next_offset=0)
    after = int(time.time() * 1000)
    assert before <= r.log_append_time_ms <= after
    assert r.max_timestamp == r.log_append_time_ms == batches(r.records)[0].max_timestamp


def test_a_sequence_of_batch_buffers_is_one_record_set():
    parts = [legacy(1, 2), bytearray(legacy(1, 1)), memoryview(legacy(1, 1))]
    for given in (parts, tuple(parts)):
        r = validate_and_assign_offsets(given, ValidatorConfig(to_magic=1), next_offset=5, now_ms=NOW)
        assert (r.path, r.first_offset, r.last_offset, r.valid_bytes) == ("A1", 5, 8, 2 * len(legacy(1, 2)))
        assert [o for o, *_ in recs(r.records)] == [5, 6, 7, 8]


def test_timestamp_bounds_wrap_as_java_longs():
    e = expect("INVALID_TIMESTAMP", lambda: run(v2(1, timestamps=[NOW - 5000]), timestamp_before_max_ms=1000))
    # the upper bound, now + Long.MAX_VALUE, wraps past the top of a long, as Java prints it
    assert e.record_errors[0].message == (f"Timestamp {NOW - 5000} of message with offset 0 is out of range. "
                                          f"The timestamp should be within [{NOW - 1000}, {NOW - 2 ** 63 - 1}]")


def test_size_limits_at_their_edges():
    src = v2(3)
    assert run(src, max_message_bytes=len(src), segment_bytes=len(src)).path == "A1"
    e = expect("MESSAGE_TOO_LARGE", lambda: run(src, max_message_bytes=len(src) - 1))
    assert e.message == (f"The record batch size in the append to topic-0 is {len(src)} bytes which exceeds the "
                         f"maximum configured value of {len(src) - 1}.")
    assert e.batch_offset == 0  # a v2 batch is named by its base offset, not its last (2)
    e = expect("RECORD_LIST_TOO_LARGE", lambda: run(src, segment_bytes=len(src) - 1))
    assert e.message == (f"Message batch size is {len(src)} bytes in append to partition topic-0, which exceeds "
                         f"the maximum configured segment size of {len(src) - 1}.")
    # a rebuilt batch is measured again: v1 messages gathered into one v2 batch
    src = legacy(1, 3)
    out = run(src).records
    assert run(src, max_message_bytes=len(out)).path == "A2"
    e = expect("MESSAGE_TOO_LARGE", lambda: run(src, max_message_bytes=len(out) - 1))
    assert e.message == (f"Message batch size is {len(out)} bytes in append to partition topic-0 which exceeds the "
                         f"maximum configured size of {len(out) - 1}.")


def test_a1_v0_offsets_and_log_append_time():
    r = run(legacy(0, 3), to_magic=0)
    assert (r.path, r.max_timestamp, r.shallow_offset_of_max_timestamp, r.record_count) == ("A1", -1, -1, 3)
    assert [o for o, *_ in recs(r.records)] == [100, 101, 102]
    lat = run(legacy(0, 3), to_magic=0, timestamp_type=TimestampType.LOG_APPEND_TIME)
    assert (lat.max_timestamp, lat.shallow_offset_of_max_timestamp) == (NOW, 100)
    assert lat.records == r.records  # v0 messages have no timestamp to stamp


def test_only_clients_are_held_to_the_client_rules():
    b = kcodec.RecordBatchBuilder(magic=2, producer_id=PID, producer_epoch=1, is_transactional=True, is_control=True)
    b.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 1), timestamp=T0)
    marker = bytes(b.build())
    r = run(marker, origin="coordinator")
    assert (r.path, r.first_offset, r.last_offset) == ("A1", 100, 100) and batches(r.records)[0].is_control
    unsequenced = v2(2, producer_id=PID, producer_epoch=0, base_sequence=-1)
    assert run(unsequenced, origin="coordinator").path == "A1"
    assert run(legacy(1, 2, base_offset=7), to_magic=1).first_offset == 100  # only v2 needs base offset 0
    e = expect("INVALID_RECORD", lambda: run(v2(1, partition_leader_epoch=3), origin="raft_leader",
                                             partition_leader_epoch=4))
    assert e.batch_offset == 0
    with pytest.raises(ValueError) as info:
        run(v2(1), origin="broker")
    assert str(info.value) == "origin must be 'client', 'coordinator' or 'raft_leader', got 'broker'"


# -- Kafka's numbers, and how a reader's error becomes the broker's answer ---------------------------
def test_error_codes_and_defaults_are_kafkas():
    # org.apache.kafka.common.protocol.Errors, and LogConfig's max.message.bytes and segment.bytes
    assert ERRORS == {"UNKNOWN_SERVER_ERROR": -1, "CORRUPT_MESSAGE": 2, "MESSAGE_TOO_LARGE": 10,
                      "RECORD_LIST_TOO_LARGE": 18, "INVALID_TIMESTAMP": 32, "UNSUPPORTED_FOR_MESSAGE_FORMAT": 43,
                      "UNSUPPORTED_COMPRESSION_TYPE": 76, "INVALID_RECORD": 87}
    for name, code in ERRORS.items():
        for given in (name, code):
            e = RecordValidationError(given, "m")
            assert (e.code, e.error_name, str(e)) == (code, name, f"{name} ({code}): m")
    assert RecordValidationError(99, "m").error_name == "UNKNOWN_SERVER_ERROR"
    config = ValidatorConfig()
    assert (config.max_message_bytes, config.segment_bytes) == (1048588, 1073741824)


def test_java_long_arithmetic_wraps():
    from kcodec.log.validator import _wrap64

    top = (1 << 63) - 1
    assert [_wrap64(v) for v in (top, top + 1, -1, 1 << 64, (1 << 64) + 5, -(1 << 63) - 1, 3 << 63)] == [
        top, -(1 << 63), -1, 0, 5, top, -(1 << 63)]


def test_a_readers_error_becomes_the_code_the_broker_answers_with():
    from kcodec.errors import (
        CorruptCompressedDataError,
        CorruptRecordError,
        InvalidRecordError,
        KcodecError,
        UnsupportedCodecError,
    )
    from kcodec.log.validator import _from_reader_error

    given = RecordValidationError("INVALID_TIMESTAMP", "late")
    assert _from_reader_error(given, "t-0") is given
    cases = [(CorruptRecordError("crc", position=7, batch_offset=3), "CORRUPT_MESSAGE", "crc"),
             (InvalidRecordError("shape", position=7, batch_offset=3), "INVALID_RECORD", "shape"),
             (UnsupportedCodecError("id 7", position=7, batch_offset=3), "UNSUPPORTED_COMPRESSION_TYPE", "id 7"),
             (CorruptCompressedDataError("gzip", position=7, batch_offset=3), "UNKNOWN_SERVER_ERROR", "gzip"),
             (KcodecError("other", position=7, batch_offset=3), "UNKNOWN_SERVER_ERROR", "other")]
    for exc, name, message in cases:
        got = _from_reader_error(exc, "t-0")
        assert (got.error_name, got.message, got.position, got.batch_offset) == (name, message, 7, 3)
        # what the caller knows wins over what the reader said
        assert _from_reader_error(exc, "t-0", position=99).position == 99
    got = _from_reader_error(ValueError("bad"), "t-0", batch_offset=5)
    assert (got.error_name, got.message, got.position, got.batch_offset) == (
        "UNKNOWN_SERVER_ERROR", "ValueError: bad", None, 5)

    class Quiet(KcodecError):
        """An error whose message attribute is empty: its text is the one said."""

        def __str__(self) -> str:
            return "said"

    quiet = Quiet("")
    quiet.message = ""
    assert _from_reader_error(quiet, "t-0").message == "said"
