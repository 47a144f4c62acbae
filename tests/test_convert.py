"""convert_magic: Kafka's down-conversion for old fetchers and up-conversion to v2."""
from __future__ import annotations

import pytest

import kcodec
from builders import T0, batch
from kcodec import CompressionType, TimestampType
from kcodec.errors import RecordBuilderError, UnsupportedCodecError
from kcodec.records import read_batches
from kcodec.records.convert import convert_magic
from kcodec.records.legacy_batch import LegacyRecordBatch
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
from oracle_util import assert_java_reads_as_kcodec, cases, load_case, oracle_available

DETERMINISTIC = ("none", "gzip")  # codecs whose output is Java's byte for byte (see test_legacy_oracle)
FAMILIES = ["single", "json100", "null_keys", "tombstones", "empty_kv", "nulls_mixed", "base_offset",
            "offset_gaps", "varint_sizes", "compacted", "log_append_time", "no_timestamp", "ts_unordered"]


def _has(name: str) -> bool:
    return name in _ALL


_ALL = set(cases())


def records_of(data):
    return [(r.offset, r.timestamp, r.key, r.value) for b in kcodec.read_batches(data) for r in b]


def legacy_records(data):
    return [(r.offset, r.timestamp, r.key, r.value) for b in read_batches(data, validate=False) for r in b]


def v2_batch(records, *, compression="none", base_offset=0, headers=(), **kw):
    return batch(base_offset, [(key, value, ts, headers) for key, value, ts in records], codec=compression, **kw)


# -- v1 -> v0 (needs only the legacy code) -----------------------------------------------
V1_CASES = [c for c in sorted(_ALL) if c.startswith("v1_") and "_lvl" not in c and "many_10k" not in c]


@pytest.mark.parametrize("name", V1_CASES)
def test_v1_to_v0(name):
    data, _, _ = load_case(name)
    out = convert_magic(list(read_batches(data, validate=False)), 0)
    src = legacy_records(data)
    assert legacy_records(out) == [(o, -1, k, v) for o, _t, k, v in src]
    assert {b.magic for b in read_batches(out, validate=False)} == {0}
    twin = name.replace("v1_", "v0_", 1)
    if _has(twin) and name.split("_")[1] in DETERMINISTIC:
        assert out == load_case(twin)[0]  # exactly what Java wrote for the same records


def test_copy_when_magic_is_already_low_enough():
    data, _, _ = load_case("v0_gzip_json100")
    assert convert_magic(list(read_batches(data, validate=False)), 1) == data
    assert convert_magic(list(read_batches(data, validate=False)), 0) == data
    data, _, _ = load_case("v1_snappy_json100")
    assert convert_magic(list(read_batches(data, validate=False)), 1) == data


def test_fetch_offset_drops_only_from_uncompressed_batches():
    plain = LegacyRecordBatchBuilder(1, base_offset=10)
    packed = LegacyRecordBatchBuilder(1, "gzip", base_offset=20)
    for i in range(5):
        plain.append(b"k", b"p%d" % i, T0 + i)
        packed.append(b"k", b"c%d" % i, T0 + i)
    data = plain.build() + packed.build()
    out = convert_magic(list(read_batches(data, validate=False)), 0, fetch_offset=22)
    assert [o for o, *_ in legacy_records(out)] == [20, 21, 22, 23, 24]
    out = convert_magic(list(read_batches(data, validate=False)), 0, fetch_offset=12)
    assert [o for o, *_ in legacy_records(out)] == [12, 13, 14, 20, 21, 22, 23, 24]


def test_v1_lat_wrapper_to_v0_and_compression_override():
    b = LegacyRecordBatchBuilder(1, "lz4", timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    b.append(b"a", b"b", 5)
    b.append(None, b"c", 6)
    data = b.build()
    out = convert_magic(list(read_batches(data, validate=False)), 0, compression="gzip", level=1)
    (w,) = read_batches(out, validate=False)
    assert (w.magic, w.compression, w.attributes) == (0, CompressionType.GZIP, 1)
    assert legacy_records(out) == [(0, -1, b"a", b"b"), (1, -1, None, b"c")]


def test_bad_arguments():
    with pytest.raises(RecordBuilderError):
        convert_magic(b"", 3)
    with pytest.raises(UnsupportedCodecError):
        convert_magic([], 1, compression="zstd")
    with pytest.raises(UnsupportedCodecError):
        convert_magic([], 1, compression="gzip", level=99)
    assert convert_magic([], 0) == b""


def test_zstd_legacy_attribute_is_refused_before_reading():
    b = LegacyRecordBatchBuilder(1)
    b.append(b"k", b"v", T0)
    raw = bytearray(b.build())
    raw[17] = 4
    batch = LegacyRecordBatch(bytes(raw), 0)
    with pytest.raises(UnsupportedCodecError, match="Down-conversion of zstandard-compressed batches is not supported"):
        convert_magic([batch], 0)


# -- v2 -> v0/v1 -----------------------------------------------------------------------------
V2_DOWN = [(c, m) for c in sorted(_ALL) if c.startswith("v2_") and "large_value" not in c
           and "many_10k" not in c and "_lvl" not in c for m in (0, 1)]


@pytest.mark.parametrize("name,magic", V2_DOWN)
def test_v2_down_conversion(name, magic):
    data, _, _ = load_case(name)
    src = list(kcodec.read_batches(data))
    if any(b.compression == CompressionType.ZSTD for b in src if not b.is_control):
        with pytest.raises(UnsupportedCodecError) as e:
            convert_magic(data, magic)
        assert e.value.message == "Down-conversion of zstandard-compressed batches is not supported"
        return
    out = convert_magic(data, magic)
    kept = [(r.offset, -1 if magic == 0 else r.timestamp, r.key, r.value)
            for b in src if not b.is_control for r in b]
    assert legacy_records(out) == kept
    for b in read_batches(out, validate=False):
        b.ensure_valid(deep=True)
        assert b.magic == magic
        assert b.compression == src[0].compression
        if magic == 1:
            assert b.timestamp_type == src[0].timestamp_type
    family = name.split("_", 2)[2]
    twin = f"v{magic}_{name.split('_')[1]}_{family}"
    if _has(twin) and name.split("_")[1] in DETERMINISTIC:
        assert out == load_case(twin)[0]


def test_v2_down_conversion_drops_control_batches_headers_and_producer_state():
    data, _, _ = load_case("v2_none_headers")
    out = convert_magic(data, 1)
    assert all(tuple(r.headers) == () for b in read_batches(out, validate=False) for r in b)
    assert [k for _o, _t, k, _v in legacy_records(out)] == [r.key for b in kcodec.read_batches(data) for r in b]
    data, _, _ = load_case("v2_none_control_commit")
    assert convert_magic(data, 1) == b""
    assert convert_magic(data, 2) == data
    data, _, _ = load_case("v2_gzip_transactional")
    out = convert_magic(data, 1)
    (w,) = read_batches(out, validate=False)
    assert (w.producer_id, w.is_transactional, w.partition_leader_epoch) == (-1, False, -1)


def test_v2_down_conversion_drops_the_delete_horizon_and_leader_epoch():
    data = v2_batch([(b"a", b"1", T0), (b"b", None, T0 + 1)], compression="gzip", base_offset=40,
                    delete_horizon_ms=T0 + 86_400_000, partition_leader_epoch=7,
                    producer_id=5, producer_epoch=1, base_sequence=3)
    (src,) = kcodec.read_batches(data)
    assert src.delete_horizon_ms == T0 + 86_400_000 and src.partition_leader_epoch == 7
    for magic in (0, 1):
        (w,) = read_batches(convert_magic(data, magic), validate=False)
        assert (w.delete_horizon_ms, w.partition_leader_epoch, w.producer_id, w.base_sequence) == (None, -1, -1, -1)
        assert [(r.offset, r.key, r.value) for r in w] == [(40, b"a", b"1"), (41, b"b", None)]


def test_v2_fetch_offset():
    data = v2_batch([(b"k%d" % i, b"v", T0 + i) for i in range(10)], base_offset=100)
    out = convert_magic(data, 1, fetch_offset=105)
    assert [o for o, *_ in legacy_records(out)] == [105, 106, 107, 108, 109]
    assert convert_magic(data, 1, fetch_offset=200) == b""
    packed = v2_batch([(b"k%d" % i, b"v", T0 + i) for i in range(10)], base_offset=100, compression="gzip")
    assert len(legacy_records(convert_magic(packed, 1, fetch_offset=105))) == 10
    assert len(records_of(convert_magic(data, 2, fetch_offset=105))) == 10  # v2 is copied


def test_v2_log_append_time_becomes_the_wrapper_time():
    data = v2_batch([(b"a", b"1", T0), (b"b", b"2", T0 + 5)], compression="snappy",
                    timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999)
    out = convert_magic(data, 1)
    (w,) = read_batches(out, validate=False)
    assert (w.timestamp_type, w.max_timestamp) == (TimestampType.LOG_APPEND_TIME, T0 + 999)
    assert [r.timestamp for r in w] == [T0 + 999] * 2
    out = convert_magic(data, 1, log_append_time=T0 + 1)
    assert [r.timestamp for r in next(read_batches(out, validate=False))] == [T0 + 1] * 2


def test_v2_no_timestamp_to_v1():
    data = v2_batch([(b"a", b"1", -1), (b"b", b"2", T0)])
    assert legacy_records(convert_magic(data, 1)) == [(0, -1, b"a", b"1"), (1, T0, b"b", b"2")]


# -- up-conversion ---------------------------------------------------------------------------
LEGACY_UP = [c for c in sorted(_ALL) if c.startswith(("v0_", "v1_")) and "_lvl" not in c and "many_10k" not in c]


@pytest.mark.parametrize("name", LEGACY_UP)
def test_up_conversion(name):
    data, _, _ = load_case(name)
    src = list(read_batches(data, validate=False))
    out = convert_magic(data, 2)
    got = list(kcodec.read_batches(out))
    for b in got:
        b.ensure_valid()
        assert b.magic == 2 and b.producer_id == -1 and not b.is_transactional
        assert b.compression == src[0].compression
    expected = [(o, -1 if name.startswith("v0") else t, k, v) for o, t, k, v in legacy_records(data)]
    assert records_of(out) == expected
    assert all(tuple(r.headers) == () for b in got for r in b)
    if src[0].compression == CompressionType.NONE and len(data) < 1_000_000:
        assert len(got) == 1  # consecutive plain messages gather into one batch
    elif src[0].compression != CompressionType.NONE:
        assert len(got) == len(src)
    lat = src[0].timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {b.timestamp_type for b in got} == {TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME}
    twin = name.replace(name[:2], "v2", 1)
    # v1 LogAppendTime messages keep only the append time, not the create times Java's v2 twin has.
    if name.startswith("v1_none") and _has(twin) and not name.endswith(("compacted", "log_append_time")):
        assert out == load_case(twin)[0]  # Java's v2 bytes for the same records


def test_up_conversion_groups_split_on_magic_and_timestamp_type():
    parts = []
    for magic, lat in ((0, False), (0, False), (1, False), (1, True), (1, True)):
        kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0) if lat else {}
        b = LegacyRecordBatchBuilder(magic, base_offset=len(parts), **kw)
        b.append(b"k", b"v", T0 + len(parts))
        parts.append(b.build())
    out = convert_magic(b"".join(parts), 2)
    got = list(kcodec.read_batches(out))
    assert [b.record_count for b in got] == [2, 1, 2]
    assert [b.timestamp_type for b in got] == [TimestampType.CREATE_TIME, TimestampType.CREATE_TIME,
                                               TimestampType.LOG_APPEND_TIME]
    assert records_of(out) == [(0, -1, b"k", b"v"), (1, -1, b"k", b"v"), (2, T0 + 2, b"k", b"v"),
                               (3, T0, b"k", b"v"), (4, T0, b"k", b"v")]


def test_up_conversion_with_compression_and_log_append_time():
    data, _, _ = load_case("v0_none_json100")
    out = convert_magic(data, 2, compression="zstd", level=1, log_append_time=T0)
    (b,) = kcodec.read_batches(out)
    assert b.compression == CompressionType.ZSTD and b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert {r.timestamp for r in b} == {T0}
    assert [r.value for r in b] == [v for _o, _t, _k, v in legacy_records(data)]


def test_round_trip_through_v0_and_back():
    data, _, _ = load_case("v1_gzip_json100")
    there = convert_magic(data, 0)
    back = convert_magic(there, 1)
    assert back == there  # v0 data is already readable by a v1 fetcher: copied
    up = convert_magic(there, 2)
    assert [(o, k, v) for o, _t, k, v in records_of(up)] == [(o, k, v) for o, _t, k, v in legacy_records(data)]


def test_segment_mixed_down_and_up():
    data, _, _ = load_case("segment_mixed")
    src = list(kcodec.read_batches(data))
    zstd = any(b.compression == CompressionType.ZSTD and not b.is_control for b in src)
    if zstd:
        with pytest.raises(UnsupportedCodecError):
            convert_magic(data, 1)
        kept = [b for b in src if b.compression != CompressionType.ZSTD]
    else:
        kept = src
    down = convert_magic(kept, 1)
    assert [(o, k, v) for o, _t, k, v in legacy_records(down)] == [
        (r.offset, r.key, r.value) for b in kept if not b.is_control for r in b]
    up = convert_magic(data, 2)
    assert [(o, k, v) for o, _t, k, v in records_of(up)] == [
        (r.offset, r.key, r.value) for b in src for r in b]


# -- Java reads the converted bytes --------------------------------------------------------
def converted_cases() -> bytes:
    out = b""
    for name in ("v2_gzip_json100", "v2_lz4_log_append_time", "v2_snappy_headers", "v2_none_transactional",
                 "v2_none_control_commit", "v2_gzip_compacted"):
        data, _, _ = load_case(name)
        out += convert_magic(data, 1) + convert_magic(data, 0)
    for name in ("v0_none_nulls_mixed", "v1_lz4_log_append_time", "v0_snappy_offset_gaps", "v1_gzip_compacted"):
        data, _, _ = load_case(name)
        out += convert_magic(data, 2)
    return out


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_java_reads_converted_sets():
    assert_java_reads_as_kcodec(converted_cases())


# -- property: v0/v1 -> v2 -> back is the identity ----------------------------------------
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

_blobs = st.one_of(st.none(), st.binary(max_size=200))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(magic=st.sampled_from([0, 1]), codec=st.sampled_from(["none", "gzip", "snappy", "lz4"]),
       records=st.lists(st.tuples(_blobs, _blobs, st.one_of(st.just(-1), st.integers(0, 2**50))),
                        min_size=1, max_size=20),
       base=st.integers(0, 2**40), lat=st.booleans())
def test_property_up_and_down_again(magic, codec, records, base, lat):
    kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0) if lat else {}
    b = LegacyRecordBatchBuilder(magic, codec, base_offset=base, **kw)
    for key, value, ts in records:
        b.append(key, value, ts)
    original = b.build()
    up = convert_magic(original, 2)
    assert [(o, k, v) for o, _t, k, v in records_of(up)] == [(o, k, v) for o, _t, k, v in legacy_records(original)]
    assert convert_magic(up, magic) == original


def _v2(base_offset: int, records: int, compression: str = "gzip") -> bytes:
    return batch(base_offset, [(b"k", b"v%d" % i) for i in range(records)], ts=1000, codec=compression)


@pytest.mark.parametrize("base", [-5, -2, -1])
def test_negative_offsets_refused_for_a_compressed_v1_wrapper(base):
    """A v1 wrapper stores its last offset and relative inner ones; Kafka reads no negative base back
    (a wrapper below the last inner offset is invalid, one of 0 means absolute inner offsets)."""
    data = _v2(base, 3)
    assert [r.offset for b in kcodec.read_batches(data) for r in b] == [base, base + 1, base + 2]
    with pytest.raises(RecordBuilderError, match="negative offset") as info:
        convert_magic(data, 1)
    assert info.value.batch_offset == base and info.value.position == 0
    with pytest.raises(RecordBuilderError, match="negative offset"):
        LegacyRecordBatchBuilder(1, "lz4", base_offset=base)


@pytest.mark.parametrize("to_magic, compression", [(1, "none"), (0, "gzip"), (0, None)])
def test_negative_offsets_kept_where_the_format_holds_them(to_magic, compression):
    """Uncompressed messages and v0 inner messages carry absolute offsets: read back as written."""
    data = _v2(-5, 3)
    out = convert_magic(data, to_magic, compression=compression)
    assert [r.offset for b in kcodec.read_batches(out) for r in b] == [-5, -4, -3]


def test_offset_zero_and_up_still_convert():
    for base, n in ((0, 1), (0, 3), (7, 3)):
        out = convert_magic(_v2(base, n), 1)
        assert [r.offset for b in kcodec.read_batches(out) for r in b] == list(range(base, base + n))


def _plain_v1(sizes, offsets=None, timestamp=T0) -> bytes:
    """Uncompressed v1 messages with null keys and values of these sizes, each its own entry."""
    out = b""
    for i, n in enumerate(sizes):
        b = LegacyRecordBatchBuilder(1, base_offset=i if offsets is None else offsets[i])
        b.append(None, b"x" * n, timestamp)
        out += bytes(b.build())
    return out


def test_up_conversion_fills_a_batch_to_exactly_its_write_limit():
    from kcodec.records.convert import UP_CONVERSION_BATCH_BYTES
    from kcodec.records.record import record_size

    assert UP_CONVERSION_BATCH_BYTES == 1024 * 1024 + 12  # Kafka's default max.message.bytes
    sizes = [65_000] * 15
    used = 61 + sum(record_size(i, 0, None, b"x" * n, ()) for i, n in enumerate(sizes))
    last = UP_CONVERSION_BATCH_BYTES - used - 20  # a record's own fields take less than 20 bytes
    while 61 + sum(record_size(i, 0, None, b"x" * n, ()) for i, n in enumerate(sizes + [last])) \
            < UP_CONVERSION_BATCH_BYTES:
        last += 1
    exact = convert_magic(_plain_v1(sizes + [last]), 2)
    assert [b.size_in_bytes for b in read_batches(exact)] == [UP_CONVERSION_BATCH_BYTES]
    over = convert_magic(_plain_v1(sizes + [last + 1]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(over)] == [(0, 15), (15, 1)]


def test_up_conversion_splits_where_an_offset_delta_would_not_fit_an_int32():
    # v2 stores each record's offset as an int32 delta from the batch's base offset
    near = convert_magic(_plain_v1([1, 1], offsets=[0, 2 ** 31 - 2]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(near)] == [(0, 2)]
    far = convert_magic(_plain_v1([1, 1], offsets=[0, 2 ** 31 - 1]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(far)] == [(0, 1), (2 ** 31 - 1, 1)]
    # the delta counts from the batch's base offset, not from the message before
    within = convert_magic(_plain_v1([1, 1, 1], offsets=[0, 2 ** 30, 2 ** 31 - 2]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(within)] == [(0, 3)]
    past = convert_magic(_plain_v1([1, 1, 1], offsets=[0, 2 ** 30, 2 ** 31 - 1]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(past)] == [(0, 2), (2 ** 31 - 1, 1)]
    # a run is cut where the offset does not grow (a v2 batch's offsets must), and kept as it is
    same = convert_magic(_plain_v1([1, 2, 3], offsets=[5, 5, 6]), 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(same)] == [(5, 1), (5, 2)]
    assert [r.offset for b in read_batches(same) for r in b] == [5, 5, 6]
    back = convert_magic(_plain_v1([1, 2, 3], offsets=[5, 7, 6]), 2)  # compared with the run's last offset
    assert [(b.base_offset, b.record_count) for b in read_batches(back)] == [(5, 2), (6, 1)]


def test_up_conversion_copies_v2_control_and_zstd_batches():
    commit = load_case("v2_none_control_commit")[0]
    zstd = v2_batch([(b"k", b"v", T0)], compression="zstd", base_offset=3)
    data = commit + zstd
    assert convert_magic(data, 2) == data
    with pytest.raises(UnsupportedCodecError, match="Down-conversion of zstandard"):
        convert_magic(zstd, 1)
    assert convert_magic(commit, 1) == b""  # control batches have no place in v0/v1


def test_up_conversion_keeps_the_order_of_gathered_messages_and_v2_batches():
    plain = _plain_v1([3, 4])  # offsets 0 and 1, gathered into one v2 batch
    v2 = v2_batch([(b"k", b"v", T0)], base_offset=2)
    later = _plain_v1([5], offsets=[3])
    out = convert_magic(plain + v2 + later, 2)
    assert [(b.base_offset, b.record_count) for b in read_batches(out)] == [(0, 2), (2, 1), (3, 1)]
    assert v2 in out  # the v2 batch copied as it is


def test_up_conversion_of_a_wrapper_starts_its_batch_at_the_first_inner_offset():
    b = LegacyRecordBatchBuilder(1, "gzip", base_offset=10)
    for i in range(3):
        b.append(b"k", b"v%d" % i, T0 + i)
    (batch,) = read_batches(convert_magic(bytes(b.build()), 2))
    assert (batch.base_offset, batch.last_offset, batch.record_count) == (10, 12, 3)
    assert [r.offset for r in batch] == [10, 11, 12]
