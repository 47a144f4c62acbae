"""RecordBatchBuilder and RecordBatch: more of MemoryRecordsBuilder's and DefaultRecordBatch's behaviours
(headers, codecs, lazy iteration, estimates, legacy delegation, the Record type, RecordIndex)."""
from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import CompressionType, RecordBatchBuilder, TimestampType, read_batches
from kcodec.errors import InvalidRecordError, RecordBuilderError, UnsupportedCodecError
from kcodec.records import ControlRecordType, EndTransactionMarker, Record, RecordBatch
from kcodec.records.batch_header import increment_sequence
from oracle_util import assert_java_reads_as_kcodec, oracle_available, oracle_verify

TS = 1_700_000_000_000


def build(records, **kw):
    b = RecordBatchBuilder(**kw)
    for r in records:
        b.append(*r)
    return bytes(b.build())


def one(data):
    batches = list(read_batches(data))
    assert len(batches) == 1
    return batches[0]


def test_offsets_with_gaps_and_header_fields():
    b = RecordBatchBuilder(base_offset=100, partition_leader_epoch=7, producer_id=42, producer_epoch=3,
                           base_sequence=10)
    assert b.append(b"a", b"1", TS) == 100
    assert b.append(b"b", b"2", TS + 5, offset=105) == 105
    assert b.append(b"c", b"3", TS - 5) == 106
    batch = one(b.build())
    assert [r.offset for r in batch] == [100, 105, 106]
    assert [r.sequence for r in batch] == [10, 15, 16]
    assert (batch.base_offset, batch.last_offset, batch.next_offset) == (100, 106, 107)
    assert batch.base_timestamp == TS and batch.max_timestamp == TS + 5
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence, batch.last_sequence) == (42, 3, 10, 16)
    assert batch.partition_leader_epoch == 7 and batch.record_count == 3
    assert batch.compression == CompressionType.NONE and batch.timestamp_type == TimestampType.CREATE_TIME
    assert not batch.is_transactional and not batch.is_control and batch.delete_horizon_ms is None
    assert batch.is_valid()
    assert len(batch.raw) == batch.size_in_bytes


def test_offset_delta_limit():
    b = RecordBatchBuilder(base_offset=0)
    with pytest.raises(RecordBuilderError):
        b.append(b"a", b"1", TS, offset=2**31)


def test_negative_timestamp_rejected_but_minus_one_allowed():
    b = RecordBatchBuilder()
    with pytest.raises(RecordBuilderError, match="Invalid negative timestamp -5"):
        b.append(b"a", b"1", -5)
    b.append(b"a", b"1", -1)
    assert one(b.build()).records()[0].timestamp == -1


def test_log_append_time_overrides_record_timestamps():
    b = RecordBatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=TS + 999)
    b.append(b"a", b"1", TS)
    b.append(b"b", b"2")
    batch = one(b.build())
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert batch.max_timestamp == TS + 999
    assert [r.timestamp for r in batch] == [TS + 999, TS + 999]
    assert all(r.timestamp_type == TimestampType.LOG_APPEND_TIME for r in batch)


def test_delete_horizon_base_timestamp_and_negative_deltas():
    horizon = TS + 86_400_000
    b = RecordBatchBuilder(delete_horizon_ms=horizon)
    b.append(b"a", b"1", TS)
    b.append(b"b", None, TS + 10)
    batch = one(b.build())
    assert batch.attributes & 0x40
    assert batch.delete_horizon_ms == horizon == batch.base_timestamp
    assert [r.timestamp for r in batch] == [TS, TS + 10]
    assert batch.max_timestamp == TS + 10


def test_headers_round_trip_order_repeats_null_utf8():
    headers = [("k", b"v"), ("k", None), ("", b""), ("ключ", b"\xff\x00")]
    batch = one(build([(b"x", b"y", TS, headers)]))
    assert batch.records()[0].headers == tuple(headers)


class _Key(str):
    pass


@pytest.mark.parametrize("key", ["ascii", "", "caf\u00e9", "\u043a\u043b\u044e\u0447", "\U0001f511key",
                                 _Key("sub"), _Key("s\u00fcb")])
def test_str_header_keys_are_written_as_utf8(key):
    # Every str kind (ASCII, latin-1, UCS-2, UCS-4, a subclass) gives the bytes of its UTF-8 encoding.
    as_str = build([(b"x", b"y", TS, [(key, b"v"), ("k2", None)])])
    as_bytes = build([(b"x", b"y", TS, [(str(key).encode("utf-8"), b"v"), (b"k2", None)])])
    assert as_str == as_bytes
    assert one(as_str).records()[0].headers == ((str(key), b"v"), ("k2", None))


@pytest.mark.skipif(not oracle_available(), reason="Java oracle not available")
def test_java_reads_every_str_header_key_kind():
    keys = ["ascii", "", "caf\u00e9", "\u043a\u043b\u044e\u0447", "\U0001f511key", _Key("sub"), _Key("s\u00fcb")]
    data = build([(b"k", b"v", TS + i, [(k, b"x"), ("n", None)]) for i, k in enumerate(keys)])
    rc, doc = oracle_verify(data)
    assert rc == 0, doc
    assert [[h[0] for h in r["headers"]] for r in doc["batches"][0]["records"]] == [[str(k), "n"] for k in keys]


def test_header_key_that_is_not_utf8_is_refused():
    b = RecordBatchBuilder()
    with pytest.raises(UnicodeEncodeError):
        b.append(b"x", b"y", TS, [("bad\ud800", b"v")])
    assert b.record_count == 0


def test_null_header_key_rejected():
    with pytest.raises(RecordBuilderError):
        build([(b"x", b"y", TS, [(None, b"v")])])


def test_sequence_wrap():
    b = RecordBatchBuilder(producer_id=1, producer_epoch=0, base_sequence=2**31 - 1)
    b.append(b"a", b"1", TS)
    b.append(b"b", b"2", TS)
    batch = one(b.build())
    assert [r.sequence for r in batch] == [2**31 - 1, 0]
    assert batch.last_sequence == 0
    assert increment_sequence(2**31 - 2, 3) == 1


def test_iteration_is_reentrant_and_lazy():
    batch = one(build([(b"a", bytes([i]), TS) for i in range(10)], compression="gzip"))
    first = list(batch)
    assert list(batch) == first == batch.records()
    it = iter(batch)
    assert next(it).value == b"\x00"


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_codecs_round_trip(codec):
    recs = [(b"k%d" % i, b"value-%d" % i * 5, TS + i, [("h", b"%d" % i)]) for i in range(200)]
    batch = one(build(recs, compression=codec))
    assert batch.compression == CompressionType.of(codec)
    got = [(r.key, r.value, r.timestamp, list(r.headers)) for r in batch]
    assert got == [(k, v, t, h) for k, v, t, h in recs]


def test_zstd_levels_and_validation():
    data = build([(b"k", b"v" * 1000, TS)], compression="zstd", level=10)
    assert one(data).records()[0].value == b"v" * 1000
    with pytest.raises((RecordBuilderError, UnsupportedCodecError, ValueError)):
        RecordBatchBuilder(compression="gzip", level=42)
    with pytest.raises(UnsupportedCodecError):
        kcodec.batch_builder(magic=1, compression="zstd")


def test_transactional_and_producer_state():
    b = RecordBatchBuilder(producer_id=9, producer_epoch=1, base_sequence=0, is_transactional=True)
    b.append(b"a", b"1", TS)
    batch = one(b.build())
    assert batch.is_transactional and batch.has_producer_id


def test_unknown_control_type_and_marker_codec():
    b = RecordBatchBuilder(is_control=True)
    b.append_control(key=b"\x00\x00\x00\x63", value=b"", timestamp=TS)
    rec = one(b.build()).records()[0]
    assert rec.control_type == ControlRecordType.UNKNOWN and rec.coordinator_epoch is None
    m = EndTransactionMarker(ControlRecordType.ABORT, 77)
    assert EndTransactionMarker.decode(ControlRecordType.ABORT, m.value()) == m
    with pytest.raises(InvalidRecordError, match="at least 6 bytes, but found only 5"):
        EndTransactionMarker.decode(ControlRecordType.ABORT, b"\x00" * 5)


def test_short_control_key_is_invalid():
    b = RecordBatchBuilder(is_control=True)
    b.append_control(key=b"\x00", value=b"", timestamp=TS)
    with pytest.raises(InvalidRecordError, match="Must have at least 4 bytes, but found only 1"):
        one(b.build()).records()


def test_write_limit_first_record_always_fits():
    b = RecordBatchBuilder(write_limit=10)
    assert b.has_room_for(b"k", b"v" * 100, timestamp=TS)
    b.append(b"k", b"v" * 100, TS)
    assert not b.has_room_for(b"k", b"v", timestamp=TS)
    assert b.is_full()


def test_write_limit_matches_batch_size():
    b = RecordBatchBuilder(write_limit=1000)
    n = 0
    while b.has_room_for(b"key", b"x" * 50, timestamp=TS):
        b.append(b"key", b"x" * 50, TS)
        n += 1
    data = bytes(b.build())
    assert len(data) <= 1000 and n > 1
    assert len(data) + 60 > 1000  # one more record would not have fitted


def test_estimated_compression_ratio_scales_the_estimate():
    b1 = RecordBatchBuilder(compression="gzip", estimated_compression_ratio=1.0)
    b2 = RecordBatchBuilder(compression="gzip", estimated_compression_ratio=0.25)
    for b in (b1, b2):
        b.append(b"k", b"v" * 1000, TS)
    assert b2.estimated_size < b1.estimated_size
    b1.build()
    assert 0 < b1.compression_ratio < 1


def test_append_many_and_build_once():
    b = RecordBatchBuilder()
    assert b.append_many([b"a", None], [b"1", b"2"], [TS, TS + 1]) == 2
    assert [r.key for r in one(b.build())] == [b"a", None]
    with pytest.raises(RecordBuilderError):
        b.append(b"x", b"y", TS)
    with pytest.raises(RecordBuilderError):
        b.build()


def test_empty_builder_refuses_to_build():
    with pytest.raises(RecordBuilderError):
        RecordBatchBuilder().build()


def test_magic_v1_builder_refuses_headers():
    b = kcodec.batch_builder(magic=1)
    with pytest.raises(RecordBuilderError, match="Magic v1 does not support record headers"):
        b.append(b"k", b"v", TS, [("h", b"v")])
    b.append(b"k", b"v", TS)
    batch = one(bytes(b.build()))
    assert batch.magic == 1 and batch.records()[0].value == b"v"
    with pytest.raises(RecordBuilderError):
        kcodec.batch_builder(magic=1, is_transactional=True)


@pytest.mark.parametrize("magic", [0, 1])
def test_batch_builder_refuses_each_v2_only_argument_below_magic_2(magic):
    refused = [({"is_control": True}, f"Control records cannot be used with magic version {magic}"),
               ({"is_transactional": True}, f"Transactional records cannot be used with magic version {magic}"),
               ({"producer_id": 7}, f"Idempotent records cannot be used with magic version {magic}"),
               ({"producer_epoch": 0}, f"Idempotent records cannot be used with magic version {magic}"),
               ({"base_sequence": 0}, f"Idempotent records cannot be used with magic version {magic}"),
               ({"delete_horizon_ms": 5}, f"Delete horizon is only supported with magic version 2, not {magic}")]
    for kwargs, message in refused:
        with pytest.raises(RecordBuilderError) as info:
            kcodec.batch_builder(magic=magic, **kwargs)
        assert info.value.message == message
    # a v2-only argument at its default, or a negative (absent) delete horizon, is no v2 feature; the
    # partition leader epoch has no field before v2 and is left out, as Kafka's builder leaves it
    for kwargs in ({"is_control": False}, {"producer_id": -1}, {"delete_horizon_ms": None},
                   {"delete_horizon_ms": -1}, {"partition_leader_epoch": 3}):
        b = kcodec.batch_builder(magic=magic, **kwargs)
        b.append(b"k", b"v", TS)
        batch = one(bytes(b.build()))
        assert (batch.magic, batch.partition_leader_epoch, batch.is_control) == (magic, -1, False)


def test_batch_builder_selects_the_builder_for_the_magic():
    from kcodec.records.legacy_builder import LegacyRecordBatchBuilder

    for args, kwargs in [((), {}), ((2,), {}), ((), {"magic": 2}), ((2.0,), {}), ((), {"magic": True + 1})]:
        b = kcodec.batch_builder(*args, compression="gzip", **kwargs)
        assert type(b) is RecordBatchBuilder and b.compression_id == 1
        assert type(RecordBatchBuilder(*args, compression="gzip", **kwargs)) is RecordBatchBuilder
    for args, kwargs in [((0,), {}), ((1,), {}), ((), {"magic": 0}), ((), {"magic": 1.0})]:
        b = kcodec.batch_builder(*args, compression="gzip", **kwargs)
        assert isinstance(b, LegacyRecordBatchBuilder) and b.magic in (0, 1) and b.compression == 1
    for magic in (3, -1, 2 ** 70, "2", None, True):
        with pytest.raises(RecordBuilderError, match="unsupported magic"):
            kcodec.batch_builder(magic=magic)
    for magic in (0, 1, 3, None):
        with pytest.raises(RecordBuilderError, match="writes magic 2"):
            RecordBatchBuilder(magic=magic)
        with pytest.raises(RecordBuilderError, match="writes magic 2"):
            RecordBatchBuilder(magic)

    class Producer(RecordBatchBuilder):
        pass

    # A subclass always builds v2 (its __init__ refuses other magics).
    assert type(Producer(compression="lz4")) is Producer
    with pytest.raises(RecordBuilderError, match="writes magic 2"):
        Producer(magic=1)

    class Counting(RecordBatchBuilder):
        made = 0

        def __new__(cls, *args, **kwargs):
            cls.made += 1
            return super().__new__(cls, *args, **kwargs)

    b = Counting(compression="gzip", write_limit=100)
    assert type(b) is Counting and b.compression_id == 1 and b.write_limit == 100 and Counting.made == 1
    assert type(RecordBatchBuilder.__new__(RecordBatchBuilder, magic=1)) is RecordBatchBuilder  # no dispatch in __new__
    with pytest.raises(TypeError, match="not a subtype"):
        RecordBatchBuilder.__new__(int)


def test_headers_from_sequences_that_make_their_items():
    # A header pair that is not a tuple may hand out new objects on each
    # iteration: the key's bytes must outlive the scan (AddressSanitizer
    # builds catch a pointer into a freed key).
    class Pair:
        def __init__(self, i):
            self.i = i

        def __iter__(self):
            yield "key-%d-" % self.i + "x" * 600
            yield bytearray(b"value")

    b = RecordBatchBuilder()
    for i in range(20):
        assert b.has_room_for(b"k", b"v", [Pair(i)], TS)
        b.append(b"k", b"v", TS, [Pair(i), Pair(i + 1000), ("plain", b"v"), (b"raw", None)])
        ["y" * 600 for _ in range(20)]  # reuse freed memory
    for i, r in enumerate(one(bytes(b.build())).records()):
        assert list(r.headers) == [("key-%d-" % i + "x" * 600, b"value"),
                                   ("key-%d-" % (i + 1000) + "x" * 600, b"value"),
                                   ("plain", b"v"), ("raw", None)]


def test_headers_from_an_iterable_of_new_pairs():
    # Pairs that only the iterable's tuple holds (fresh keys and values each
    # time) must outlive the scan: AddressSanitizer builds catch a pointer
    # into a freed pair.
    def pairs(i):
        return (("key-%d-" % i + "x" * 600, bytes([i]) * 700) for _ in range(3))

    b = RecordBatchBuilder()
    for i in range(20):
        assert b.has_room_for(b"k", b"v", pairs(i), TS)
        b.append(b"k", b"v", TS, pairs(i))
        [bytes([255]) * 700 for _ in range(20)]  # reuse freed memory
    for i, r in enumerate(one(bytes(b.build())).records()):
        assert r.headers == (("key-%d-" % i + "x" * 600, bytes([i]) * 700),) * 3


def test_accepts_any_buffer():
    data = build([(memoryview(b"key"), bytearray(b"value"), TS)])
    for buf in (data, bytearray(data), memoryview(data)):
        assert one(buf).records()[0].value == b"value"
    import numpy as np
    arr = np.frombuffer(data, dtype=np.uint8)
    assert one(arr).records()[0].key == b"key"


def test_record_object():
    r = Record(5, TS, TimestampType.CREATE_TIME, b"k", b"v", [("h", b"x")])
    assert r.headers == (("h", b"x"),) and r == Record(5, TS, TimestampType.CREATE_TIME, b"k", b"v", [("h", b"x")])
    import pickle
    assert pickle.loads(pickle.dumps(r)) == r
    with pytest.raises(AttributeError):
        r.value = b"other"


def test_record_key_value_and_timestamp_type_are_plain_read_only_fields():
    # Exposed as member descriptors (read inline by the interpreter) over the same fields
    # that native code fills: every way of making a record must show them.
    import types
    for name in ("key", "value", "timestamp_type"):
        assert isinstance(Record.__dict__[name], types.MemberDescriptorType)
    made = Record(5, TS, TimestampType.LOG_APPEND_TIME, b"k", None)
    read = next(iter(one(build([(b"k", None, TS)]))))
    bare = Record.__new__(Record)
    for r, ts_type in ((made, TimestampType.LOG_APPEND_TIME), (read, TimestampType.CREATE_TIME)):
        assert (r.key, r.value, r.timestamp_type) == (b"k", None, ts_type)
        for name in ("key", "value", "timestamp_type"):
            with pytest.raises(AttributeError):
                setattr(r, name, b"x")
            with pytest.raises(AttributeError):
                delattr(r, name)
    assert (bare.key, bare.value, bare.timestamp_type) == (None, None, None)
    for _ in range(100):  # the interpreter specialises the reads after some runs
        assert [(r.key, r.value) for r in (made, read, bare)] == [(b"k", None), (b"k", None), (None, None)]


records_st = st.lists(st.tuples(
    st.one_of(st.none(), st.binary(max_size=40)),
    st.one_of(st.none(), st.binary(max_size=200)),
    st.integers(min_value=0, max_value=2**41),
    st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=16))), max_size=3),
), min_size=1, max_size=30)


@settings(max_examples=60, deadline=None)
@given(records=records_st, codec=st.sampled_from(["none", "gzip", "snappy", "lz4", "zstd"]),
       base=st.integers(min_value=0, max_value=2**40), gap=st.integers(min_value=1, max_value=1000))
def test_round_trip_property(records, codec, base, gap):
    b = RecordBatchBuilder(compression=codec, base_offset=base)
    for i, (k, v, t, h) in enumerate(records):
        b.append(k, v, t, h, offset=base + i * gap)
    data = bytes(b.build())
    batch = one(data)
    got = [(r.offset, r.key, r.value, r.timestamp, list(r.headers)) for r in batch]
    assert got == [(base + i * gap, k, v, t, h) for i, (k, v, t, h) in enumerate(records)]
    assert batch.max_timestamp == max(t for _, _, t, _ in records)
    idx, region = batch.scan()
    assert list(idx.offset_delta) == [i * gap for i in range(len(records))]
    for i, (k, v, _, _) in enumerate(records):
        kl = idx.key_len[i]
        assert (None if kl < 0 else bytes(region[idx.key_pos[i]:idx.key_pos[i] + kl])) == k


# -- Kafka's hasRoomFor and the compression ratio estimate -------------------------------------------

def _record_size(offset_delta, ts_delta, key, value, headers=()):
    from kcodec._native.records import record_size
    return record_size(offset_delta, ts_delta, key, value, headers)


def test_has_room_for_does_not_scale_the_new_record():
    # Kafka: limit >= 61 + (int)(written * ratio * 1.05f) + the new record's full size.
    b = RecordBatchBuilder(compression="gzip", estimated_compression_ratio=0.5, write_limit=10_000)
    b.append(b"k", b"v" * 1000, TS)
    written = b.uncompressed_size - 61
    estimate = 61 + int(written * 0.5 * 1.05)
    assert b.estimated_size in (estimate, estimate - 1)  # float32 rounding
    size = _record_size(1, 0, b"k", b"w" * 2000)
    limit = b.estimated_size + size
    b2 = RecordBatchBuilder(compression="gzip", estimated_compression_ratio=0.5, write_limit=limit)
    b2.append(b"k", b"v" * 1000, TS)
    assert b2.has_room_for(b"k", b"w" * 2000, timestamp=TS)
    b3 = RecordBatchBuilder(compression="gzip", estimated_compression_ratio=0.5, write_limit=limit - 1)
    b3.append(b"k", b"v" * 1000, TS)
    assert not b3.has_room_for(b"k", b"w" * 2000, timestamp=TS)


def test_estimate_uses_java_float_arithmetic():
    # 100 record bytes: (int)(100 * 1.0f * 1.05f) is 104 in float (105 in double arithmetic).
    b = RecordBatchBuilder(compression="lz4")
    b.append(None, b"a" * 91, TS)
    assert b.uncompressed_size - 61 == 100
    assert b.estimated_size == 61 + 104


def test_has_room_for_sizes_the_delta_from_the_first_timestamp():
    # With a delete horizon the stored deltas are relative to it, but Kafka sizes the
    # candidate from the first record's timestamp; both choices are visible at varint edges.
    b = RecordBatchBuilder(delete_horizon_ms=TS - 10 ** 9, write_limit=1 << 20)
    b.append(b"k", b"v", TS)
    assert b.has_room_for(b"k", b"v", timestamp=TS)


def test_compression_ratio_estimator_follows_kafka():
    from kcodec.records.builder import CompressionRatioEstimator
    est = CompressionRatioEstimator()
    assert est.estimation("t", "gzip") == 1.0
    # better than estimated: 0.005 per batch
    assert est.update("t", "gzip", 0.3) == pytest.approx(0.995, abs=1e-6)
    assert est.update("t", CompressionType.GZIP, 0.3) == pytest.approx(0.99, abs=1e-6)
    # worse than estimated: at once, by at least 0.05
    assert est.update("t", 1, 0.995) == pytest.approx(1.04, abs=1e-6)
    assert est.update("t", "gzip", 1.5) == pytest.approx(1.5, abs=1e-6)
    assert est.estimation("t", "zstd") == 1.0 and est.estimation("u", "gzip") == 1.0
    est.reset("t")
    assert est.estimation("t", "gzip") == 1.0


def test_builder_feeds_the_estimator():
    from kcodec.records.builder import CompressionRatioEstimator
    est = CompressionRatioEstimator()
    for _ in range(3):
        b = RecordBatchBuilder(compression="zstd", write_limit=4096,
                               estimated_compression_ratio=est.estimation("t", "zstd"))
        while b.has_room_for(b"key", b"abc" * 50, timestamp=TS):
            b.append(b"key", b"abc" * 50, TS)
        b.build()
        est.update("t", "zstd", b.compression_ratio)
    assert est.estimation("t", "zstd") < 1.0


def test_estimated_compression_ratio_must_be_positive():
    with pytest.raises(RecordBuilderError):
        RecordBatchBuilder(compression="gzip", estimated_compression_ratio=0)


# -- the builder's buffer -------------------------------------------------------------------------

def test_build_hands_over_a_bytes_object_of_exact_size():
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS)
    out = b.build()
    assert type(out) is bytes and len(out) == 61 + (b.uncompressed_size - 61)
    assert one(out).is_valid()


def test_buffer_grows_past_its_initial_size():
    for limit in (None, 0, 300):
        b = RecordBatchBuilder(write_limit=limit)
        values = [bytes([i % 251]) * (3000 + i) for i in range(40)]
        for i, v in enumerate(values):
            b.append(b"k%d" % i, v, TS + i)
        assert [r.value for r in one(b.build())] == values


def test_compressed_output_larger_than_the_records_fits():
    import os
    data = os.urandom(5000)  # incompressible: the codec's framing makes it larger
    for codec in ("gzip", "lz4", "zstd", "snappy"):
        b = RecordBatchBuilder(compression=codec, write_limit=200)
        b.append(None, data, TS)
        out = b.build()
        assert len(out) > 61 + 5000 - 100
        assert [r.value for r in one(out)] == [data]


def test_header_keys_and_values_of_any_buffer_type():
    import numpy as np
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS, [("s", b"1"), (b"b", bytearray(b"2")), (memoryview(b"m"), "text"),
                              ("n", None), ("é", np.frombuffer(b"xy", np.uint8))])
    rec = one(b.build()).records()[0]
    assert rec.headers == (("s", b"1"), ("b", b"2"), ("m", b"text"), ("n", None), ("é", b"xy"))
    with pytest.raises(TypeError):
        RecordBatchBuilder().append(b"k", b"v", TS, [(5, b"x")])
    with pytest.raises(RecordBuilderError):
        RecordBatchBuilder().append(b"k", b"v", TS, [(None, b"x")])


def test_failed_append_leaves_the_batch_unchanged():
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS)
    with pytest.raises(TypeError):
        b.append(b"k", 12345, TS)
    with pytest.raises(RecordBuilderError):
        b.append(b"k", b"v", -5)
    b.append(b"k2", b"v2", TS)
    assert [(r.offset, r.key) for r in one(b.build())] == [(0, b"k"), (1, b"k2")]


def test_builder_state_after_build():
    b = RecordBatchBuilder(write_limit=1000)
    b.append(b"k", b"v", TS)
    b.build()
    assert b.is_full() and not b.has_room_for(b"k", b"v")
    assert b.record_count == 1 and b.last_offset == 0 and b.next_offset == 1
    with pytest.raises(RecordBuilderError):
        b.append(b"k", b"v", TS)
    with pytest.raises(RecordBuilderError):
        b.build()
    with pytest.raises(BufferError):
        memoryview(b)


@pytest.mark.parametrize("pooled", [False, True])
@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_builder_views_outlive_build_safely(codec, pooled):
    # A memoryview of the builder (the records so far, as codecs read them) keeps
    # the builder's memory alive: build() then assembles the batch apart, and
    # starting over or growing is refused while the view lives.
    from kcodec.records import BufferPool
    pool = BufferPool() if pooled else None
    b = RecordBatchBuilder(compression=codec, pool=pool)
    ref = RecordBatchBuilder(compression=codec)
    for _ in range(3):
        b.append(b"k", b"v" * 100, TS)
        ref.append(b"k", b"v" * 100, TS)
    view = memoryview(b)
    size = len(view)
    records = bytes(view)
    with pytest.raises(BufferError):
        b.__init__()
    b.append(b"k", b"v", TS)  # room left: appending is fine, the view keeps its length
    ref.append(b"k", b"v", TS)
    assert len(view) == size and view.shape == (size,)
    grown = RecordBatchBuilder(compression=codec)
    grown.append(b"k", b"v", TS)
    held = memoryview(grown)
    with pytest.raises(BufferError):
        for _ in range(200):  # growing would move the memory
            grown.append(b"k", b"v" * 1000, TS)
    held.release()
    out = b.build()
    expected = ref.build()
    assert bytes(out) == expected
    if codec == "none":
        assert bytes(view) == records
    with pytest.raises(BufferError):
        memoryview(b)
    del b, out
    assert len(bytes(view)) == size  # still readable after the batch and the builder are dropped
    view.release()


def test_a_codec_that_returns_a_view_of_its_input():
    from kcodec.compression import Codec, register_codec, unregister_codec

    class Identity(Codec):
        id = 7
        name = "identity-view"

        def compress(self, data, level=None, magic=2):
            return memoryview(data)

        def decompress(self, data, magic=2, max_size=None):
            return bytes(data)

    register_codec(Identity())
    try:
        b = RecordBatchBuilder(compression="identity-view")
        b.append(b"k", b"v" * 100, TS)
        out = b.build()
        plain = RecordBatchBuilder()
        plain.append(b"k", b"v" * 100, TS)
        assert out[61:] == plain.build()[61:]
    finally:
        unregister_codec("identity-view")


# -- records of bytes buffers decode their headers on first access -----------------------------

def test_lazy_headers_from_bytes_and_eager_from_mutable_buffers():
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS, [("a", b"1"), ("a", None), ("ключ", b"")])
    data = b.build()
    expected = (("a", b"1"), ("a", None), ("ключ", b""))
    from_bytes = one(data).records()[0]
    assert from_bytes.headers == expected and from_bytes.headers is from_bytes.headers
    ba = bytearray(data)
    rec = next(iter(one(ba)))
    ba[-2] ^= 0xFF  # the record owns its headers: changing the buffer afterwards changes nothing
    assert rec.headers == expected
    import pickle
    assert pickle.loads(pickle.dumps(from_bytes)) == from_bytes


def test_records_outlive_their_batch_and_buffer():
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS, [("h", b"x" * 100)])
    data = b.build()
    recs = [r for batch in read_batches(data) for r in batch]
    del data, b
    import gc
    gc.collect()
    assert recs[0].headers == (("h", b"x" * 100),)


# -- RecordBatch over buffers that do not hold the batch ----------------------------------------

def test_batch_outside_the_buffer_is_corrupt():
    from kcodec.errors import CorruptRecordError
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS)
    data = b.build()
    with pytest.raises(CorruptRecordError):
        RecordBatch(data, 0, len(data) + 1)
    with pytest.raises(CorruptRecordError):
        RecordBatch(data, len(data) + 5)
    with pytest.raises(CorruptRecordError):
        RecordBatch(data[:10])
    ba = bytearray(data)
    batch = RecordBatch(ba)
    del ba[40:]
    with pytest.raises(CorruptRecordError):
        batch.ensure_valid()
    with pytest.raises(CorruptRecordError):
        list(batch)


@pytest.mark.parametrize("codec", ["lz4", "snappy", "zstd", "gzip"])
def test_compressed_build_while_the_records_are_exported(codec):
    # With a view of the records held, the builder cannot swap its buffer for the codec's
    # output and copies the payload instead; both ways give the same batch.
    records = [(b"k%d" % i, b"value %d " % i * 20, TS + i) for i in range(200)]
    plain = RecordBatchBuilder(compression=codec)
    held = RecordBatchBuilder(compression=codec)
    for k, v, ts in records:
        plain.append(k, v, ts)
        held.append(k, v, ts)
    view = memoryview(held)
    expected = bytes(plain.build())
    assert bytes(held.build()) == expected
    view.release()
    batch = one(expected)
    assert batch.is_valid() and [(r.key, r.value, r.timestamp) for r in batch.records()] == records


def test_headers_list_changed_by_a_pair_that_runs_python_code():
    # Unpacking a pair that is not a tuple runs Python code, which may change the
    # headers list and drop the pairs already read: the builder must then read a
    # snapshot, not pointers into freed keys and values.
    headers = []

    class Replacing:
        def __iter__(self):
            headers[0] = ("x", b"y")
            return iter(("k2", b"v2"))

    class Clearing:
        def __iter__(self):
            headers.clear()
            return iter(("k2", b"v2"))

    for evil in (Replacing, Clearing):
        headers[:] = [("key-" + str(12345), bytes(bytearray(b"V" * 4000))), evil(), ("k3", b"v3")]
        b = RecordBatchBuilder()
        b.append(b"k", b"v", TS, headers=headers)
        (rec,) = next(iter(read_batches(b.build()))).records()
        assert rec.headers == (("key-12345", b"V" * 4000), ("k2", b"v2"), ("k3", b"v3"))


def test_a_builder_called_again_from_code_it_runs_refuses():
    # A pair that is not a tuple is unpacked by running its __iter__, and a pool's
    # get() is Python too; calling the same builder from there would reuse the
    # header scratch space, the offsets of the record being appended, or a store
    # that is between two buffers.
    from kcodec.records import BufferPool
    b = RecordBatchBuilder()

    class Reenter:
        def __init__(self, action):
            self.action = action

        def __iter__(self):
            self.action()
            return iter(("k2", b"v2"))

    big = [("n%d" % i, bytes(bytearray(b"N" * 3000))) for i in range(3)]
    for action in (lambda: b.append(b"x", b"y", TS, headers=big), lambda: b.__init__(),
                   lambda: b.has_room_for(b"k", b"v", headers=big), lambda: b.build()):
        with pytest.raises(RecordBuilderError, match="called again from Python code it was running"):
            b.append(b"k", b"v", TS, headers=[("outer", b"O" * 10), Reenter(action)])
    b.append(b"k", b"v", TS, headers=[("fine", b"1")])  # the builder is usable afterwards
    (rec,) = next(iter(read_batches(b.build()))).records()
    assert rec.headers == (("fine", b"1"),)

    real = BufferPool()
    armed = []

    class CallingPool:
        def get(self, n):
            if armed:
                armed.pop()()
            return real.get(n)

        def put(self, buf):
            real.put(buf)

        _give_back = put

    views = []
    for action in (lambda: pb.build(), lambda: pb.has_room_for(b"k", b"v", headers=big),
                   lambda: views.append(memoryview(pb))):
        pb = RecordBatchBuilder(pool=CallingPool(), write_limit=1000)
        pb.append(b"k", b"v", TS)
        armed.append(action)
        with pytest.raises((RecordBuilderError, BufferError)):
            pb.append(b"k", b"v" * 50000, TS)  # grows: pool.get() runs the action
        for view in views:
            assert bytes(view) == bytes(memoryview(pb))  # the old store, still whole
            view.release()
        views.clear()
        pb.append(b"k", b"v" * 50000, TS)
        with pb.build() as out:
            assert [len(r.value) for r in next(iter(read_batches(bytes(out))))] == [1, 50000]


def test_column_accumulator_does_all_python_work_before_writing():
    from kcodec._native.columnar import ColumnAccumulator
    acc = ColumnAccumulator(True)

    class Headers:
        def __iter__(self):
            acc.result()  # would free the buffers mid-write
            return iter([("a", b"1")])

    acc.add_record(5, TS, 0, b"k", b"v", Headers())
    import pyarrow as pa

    from kcodec._native.columnar import record_columns
    table = pa.table(record_columns([acc.result()], None, None, True, ()))
    assert table.column("offset").to_pylist() == [5]
    assert table.column("headers").to_pylist() == [[{"key": "a", "value": b"1"}]]




def _large_value_records(seed):
    # Values on both sides of the size from which the CRC is taken while copying (1024),
    # enough of them to pass the size from which the copy bypasses the cache (256 KiB),
    # with keys, null values and headers between them.
    import random
    rnd = random.Random(seed)
    out = []
    for i in range(160):
        n = rnd.choice([None, 0, 3, 1023, 1024, 1025, 4096, 4097, rnd.randrange(1, 9000)])
        value = None if n is None else rnd.randbytes(n)
        key = rnd.choice([None, b"", rnd.randbytes(rnd.randrange(1, 2000))])
        headers = rnd.choice([(), [("h", rnd.randbytes(rnd.randrange(0, 1500)))], [("a", None), ("b", b"x")]])
        out.append((key, value, TS + rnd.randrange(-5, 50), headers))
    if seed % 2:
        # More than 64 KiB of short records after the last long value: the rest of the CRC
        # is then taken without the GIL when the batch is sealed.
        out += [(b"k", rnd.randbytes(60), TS + i, ()) for i in range(1500)]
    return out


@pytest.mark.parametrize("seed", range(4))
def test_a_batch_of_large_values_has_the_crc_of_its_bytes(seed):
    from kcodec import BufferPool
    from kcodec._native import primitives
    records = _large_value_records(seed)
    plain = build(records, base_offset=seed)
    assert len(plain) > 300_000
    assert len(records) == 160 + 1500 * (seed % 2)
    stored = int.from_bytes(plain[17:21], "big")
    assert stored == primitives.crc32c_portable(plain[21:])
    assert [(r.key, r.value, r.timestamp, [tuple(h) for h in r.headers]) for r in one(plain)] == \
        [(k, v, ts, [tuple(h) for h in hs]) for k, v, ts, hs in records]
    # The same bytes from a pooled buffer, and from a builder whose records are exported
    # when it builds (the batch is then assembled in a separate buffer).
    pool = BufferPool()
    b = RecordBatchBuilder(base_offset=seed, pool=pool)
    for r in records:
        b.append(*r)
    pooled = b.build()
    assert bytes(pooled) == plain
    pooled.release()
    b = RecordBatchBuilder(base_offset=seed)
    for r in records:
        b.append(*r)
    view = memoryview(b)
    assert bytes(b.build()) == plain
    view.release()


@pytest.mark.skipif(not oracle_available(), reason="Java oracle not available")
def test_java_reads_a_batch_of_large_values():
    assert_java_reads_as_kcodec(build(_large_value_records(9), base_offset=42))
    assert_java_reads_as_kcodec(build(_large_value_records(8), base_offset=0))


def test_control_records_have_kafkas_key_and_value_bytes():
    b = RecordBatchBuilder(base_offset=40, producer_id=7, producer_epoch=2, is_transactional=True, is_control=True)
    assert b.append_control(ControlRecordType.LEADER_CHANGE, b"\x00\x01", timestamp=TS) == 40
    # an EndTransactionMarker brings its own value: version 0, then the coordinator epoch
    assert b.append_control(EndTransactionMarker(ControlRecordType.ABORT, 9), timestamp=TS + 1) == 41
    assert b.append_end_txn_marker(ControlRecordType.COMMIT, 258, timestamp=TS + 2, offset=45) == 45
    got = [(r.offset, r.timestamp, r.key, r.value) for r in one(b.build())]
    assert got == [(40, TS, b"\x00\x00\x00\x02", b"\x00\x01"),
                   (41, TS + 1, b"\x00\x00\x00\x00", b"\x00\x00\x00\x00\x00\x09"),
                   (45, TS + 2, b"\x00\x00\x00\x01", b"\x00\x00\x00\x00\x01\x02")]


def test_control_records_refused_with_kafkas_messages():
    txn = dict(producer_id=7, producer_epoch=2, is_transactional=True)
    with pytest.raises(RecordBuilderError, match="^Control records can only be appended to control batches$"):
        RecordBatchBuilder(**txn).append_control(EndTransactionMarker(ControlRecordType.COMMIT, 1), timestamp=TS)
    with pytest.raises(RecordBuilderError, match="^Control records can only be appended to control batches$"):
        RecordBatchBuilder(**txn).append_control(key=b"\x00\x00\x00\x01", value=b"", timestamp=TS)
    b = RecordBatchBuilder(is_control=True, **txn)
    with pytest.raises(RecordBuilderError, match="^append_control needs a control_type or a key$"):
        b.append_control(timestamp=TS)
    with pytest.raises(RecordBuilderError, match="^Cannot append record with unknown control record type$"):
        b.append_control(ControlRecordType.UNKNOWN, b"", timestamp=TS)
    with pytest.raises(RecordBuilderError, match="^LEADER_CHANGE is not an end transaction marker type$"):
        b.append_end_txn_marker(ControlRecordType.LEADER_CHANGE, 1, timestamp=TS)
    with pytest.raises(RecordBuilderError, match="^End transaction marker requires a valid producerId$"):
        RecordBatchBuilder(is_control=True, is_transactional=True).append_control(
            EndTransactionMarker(ControlRecordType.ABORT, 1), timestamp=TS)
    with pytest.raises(RecordBuilderError, match="^End transaction marker depends on batch transactional flag"):
        RecordBatchBuilder(is_control=True, producer_id=7).append_end_txn_marker(ControlRecordType.COMMIT, 1)
    # nothing refused was written
    b.append_control(ControlRecordType.SNAPSHOT_HEADER, b"", timestamp=TS)
    assert [(r.offset, r.key) for r in one(b.build())] == [(0, b"\x00\x00\x00\x03")]


def test_override_last_offset_keeps_a_compacted_batchs_last_offset():
    b = RecordBatchBuilder(base_offset=10, producer_id=3, producer_epoch=0, base_sequence=100)
    b.append(b"k", b"v", TS)
    b.append(b"k", b"w", TS, offset=12)
    b.override_last_offset(20)
    batch = one(b.build())
    assert (batch.base_offset, batch.last_offset, batch.last_offset_delta, batch.record_count) == (10, 20, 10, 2)
    assert [r.offset for r in batch] == [10, 12]


@pytest.mark.parametrize("magic", [0, 1])
def test_legacy_builders_refuse_each_v2_only_argument_with_kafkas_message(magic):
    refused = [({"producer_id": 5}, "Idempotent records"), ({"producer_epoch": 0}, "Idempotent records"),
               ({"base_sequence": 0}, "Idempotent records"), ({"is_transactional": True}, "Transactional records"),
               ({"is_control": True}, "Control records"),
               ({"delete_horizon_ms": 0}, f"Delete horizon is only supported with magic version 2, not {magic}$")]
    for kwargs, message in refused:
        with pytest.raises(RecordBuilderError, match=(
                message if message.endswith("$") else f"^{message} cannot be used with magic version {magic}$")):
            kcodec.batch_builder(magic=magic, **kwargs)
    # the v2 defaults, and a negative delete horizon (none), are what an old batch has anyway; a leader
    # epoch has no field there and is dropped, as MemoryRecordsBuilder drops it
    b = kcodec.batch_builder(magic=magic, producer_id=-1, producer_epoch=-1, base_sequence=-1, is_transactional=False,
                             is_control=False, partition_leader_epoch=4, delete_horizon_ms=-1, base_offset=3)
    b.append(b"k", b"v", TS)
    assert [(x.magic, x.base_offset) for x in read_batches(bytes(b.build()))] == [(magic, 3)]
    kcodec.batch_builder(magic=magic, delete_horizon_ms=None)


def test_compression_ratio_estimator_rounds_to_java_floats_and_resets_one_topic():
    import numpy as np

    from kcodec.records.builder import CompressionRatioEstimator

    est = CompressionRatioEstimator()
    f32 = lambda x: float(np.float32(x))  # noqa: E731
    # a worse ratio above estimate + 0.05 is taken as the float Java holds
    assert est.update("t", "lz4", 1.3) == f32(1.3) != 1.3
    assert est.update("t", 3, f32(1.3)) == f32(1.3)  # the same ratio again leaves it
    assert est.update("t", "lz4", 1.31) == f32(f32(1.3) + f32(0.05))
    assert est.update("t", "lz4", 0.1) == f32(f32(f32(1.3) + f32(0.05)) - f32(0.005))
    est.update("u", "lz4", 0.5)
    est.update("t", "gzip", 0.5)
    est.reset("t")
    assert (est.estimation("t", "lz4"), est.estimation("t", 1)) == (1.0, 1.0)
    assert est.estimation("u", CompressionType.LZ4) == f32(1 - f32(0.005))


def test_a_builder_has_no_attributes_beyond_its_own():
    # __slots__: no per-instance dict, so a misspelt setting fails instead of being kept silently
    b = kcodec.batch_builder(magic=2)
    with pytest.raises(AttributeError):
        b.write_limt = 10
    assert not hasattr(b, "__dict__")
