"""Columnar in and out: to_arrow / from_arrow against Java's vectors and the object API."""
from __future__ import annotations

import base64
import hashlib

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import read_batches
from oracle_util import cases, load_case, oracle_available, oracle_verify

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000


def _b(v):
    return None if v is None else base64.b64decode(v)


def test_schema_matches_spark_rules():
    s = kcodec.kafka_schema()
    assert s.names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    assert s.field("key").type == pa.binary() and s.field("partition").type == pa.int32()
    assert s.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert s.field("headers").type == pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))
    t = kcodec.to_arrow(b"", topic="t", partition=1, batch_fields=("base_offset", "producer_id"))
    assert t.num_rows == 0 and t.schema.names[-2:] == ["base_offset", "producer_id"]


def _expect(raw, is_digest: bool):
    """A record field of the oracle document as to_arrow's value (or its digest for large fixtures)."""
    if raw is None or is_digest:
        return raw
    return base64.b64decode(raw)


def _got(value, is_digest: bool):
    if value is None or not is_digest:
        return value
    return "sha256:" + hashlib.sha256(value).hexdigest()


@pytest.mark.parametrize("case", cases())
def test_every_golden_vector(case):
    data, doc, is_digest = load_case(case)
    table = kcodec.to_arrow(data, topic="golden", partition=3)
    assert table.schema == kcodec.kafka_schema()
    expected = [(b, r) for b in doc["batches"] if not b["isControlBatch"] for r in b["records"]]
    assert table.num_rows == len(expected)
    tmap = {"CREATE_TIME": 0, "LOG_APPEND_TIME": 1, "NO_TIMESTAMP_TYPE": -1}
    for row, (batch, rec) in zip(table.to_pylist(), expected):
        assert row["offset"] == rec["offset"]
        assert _got(row["key"], is_digest) == _expect(rec["key"], is_digest)
        assert _got(row["value"], is_digest) == _expect(rec["value"], is_digest)
        assert int(row["timestamp"].timestamp() * 1000) == rec["timestamp"]
        assert row["timestampType"] == tmap[batch["timestampType"]]
        assert row["topic"] == "golden" and row["partition"] == 3
        if rec["headers"]:
            assert [(h["key"], _got(h["value"], is_digest)) for h in row["headers"]] == [
                (k, _expect(v, is_digest)) for k, v in rec["headers"]]
        else:
            assert row["headers"] is None


def test_segment_mixed_equals_object_api():
    data, _, _ = load_case("segment_mixed")
    table = kcodec.to_arrow(data, include_control=True)
    recs = [r for b in read_batches(data) for r in b]
    assert [(r["offset"], r["key"], r["value"], r["headers"]) for r in table.to_pylist()] == [
        (r.offset, r.key, r.value, [{"key": k, "value": v} for k, v in r.headers] or None) for r in recs]


def test_control_records_on_request():
    data, doc, _ = load_case("segment_v2_txn")
    all_records = sum(len(b["records"]) for b in doc["batches"])
    data_records = sum(len(b["records"]) for b in doc["batches"] if not b["isControlBatch"])
    assert kcodec.to_arrow(data).num_rows == data_records
    assert kcodec.to_arrow(data, include_control=True).num_rows == all_records


def test_batch_fields():
    data, doc, _ = load_case("v2_none_transactional")
    t = kcodec.to_arrow(data, batch_fields=("base_offset", "producer_id", "is_transactional", "compression",
                                            "magic"))
    b = doc["batches"][0]
    assert set(t.column("producer_id").to_pylist()) == {b["producerId"]}
    assert set(t.column("is_transactional").to_pylist()) == {True}
    assert set(t.column("magic").to_pylist()) == {2}


def test_every_batch_field_of_v2_control_and_legacy_batches():
    from kcodec.arrow import BATCH_FIELDS
    from kcodec.records import ControlRecordType

    gz = kcodec.RecordBatchBuilder(compression="gzip", base_offset=100, producer_id=7, producer_epoch=2,
                                   base_sequence=5, partition_leader_epoch=9)
    for i in range(3):
        gz.append(b"k", b"v%d" % i, T0 + i)
    txn = kcodec.RecordBatchBuilder(base_offset=103, producer_id=8, producer_epoch=1, base_sequence=0,
                                    is_transactional=True, partition_leader_epoch=4)
    txn.append(None, b"w", T0)
    marker = kcodec.RecordBatchBuilder(base_offset=104, producer_id=8, producer_epoch=1, is_transactional=True,
                                       is_control=True)
    marker.append_end_txn_marker(ControlRecordType.COMMIT, 3, timestamp=T0)
    v1 = kcodec.LegacyRecordBatchBuilder(magic=1, base_offset=105, compression="gzip")
    v1.append(b"x", b"y", T0)
    v1.append(b"x", b"z", T0)
    v0 = kcodec.LegacyRecordBatchBuilder(magic=0, base_offset=107)
    v0.append(None, b"q", None)
    data = b"".join(bytes(b.build()) for b in (gz, txn, marker, v1, v0))  # at bytes 0, 105, 174, 252 and 341
    expected = {
        "base_offset": [100, 100, 100, 103, 105, 105, 107], "last_offset": [102, 102, 102, 103, 106, 106, 107],
        "producer_id": [7, 7, 7, 8, -1, -1, -1], "producer_epoch": [2, 2, 2, 1, -1, -1, -1],
        "base_sequence": [5, 5, 5, 0, -1, -1, -1],
        "is_transactional": [False, False, False, True, False, False, False],
        "partition_leader_epoch": [9, 9, 9, 4, -1, -1, -1], "compression": [1, 1, 1, 0, 1, 1, 0],
        "magic": [2, 2, 2, 2, 1, 1, 0], "batch_position": [0, 0, 0, 105, 252, 252, 341]}
    table = kcodec.to_arrow(data, batch_fields=BATCH_FIELDS)
    assert table["offset"].to_pylist() == [100, 101, 102, 103, 105, 106, 107]
    assert {name: table[name].to_pylist() for name in BATCH_FIELDS} == expected
    with_control = kcodec.to_arrow(data, batch_fields=["compression", "batch_position"], include_control=True)
    assert with_control["compression"].to_pylist() == [1, 1, 1, 0, 0, 1, 1, 0]
    assert with_control["batch_position"].to_pylist() == [0, 0, 0, 105, 174, 252, 252, 341]


def _records_of(batches):
    return [(r.offset, r.timestamp, r.key, r.value, r.headers) for b in batches for r in read_batches(b)
            for r in r]


def test_from_arrow_equals_builder_for_uncompressed():
    data, doc, _ = load_case("v2_none_headers")
    table = kcodec.to_arrow(data)
    ours = kcodec.from_arrow(table, max_batch_bytes=600)
    recs = [r for b in read_batches(data) for r in b]
    expected, builder = [], None
    for r in recs:
        if builder is not None and not builder.has_room_for(r.key, r.value, r.headers, r.timestamp):
            expected.append(bytes(builder.build()))
            builder = None
        if builder is None:
            builder = kcodec.RecordBatchBuilder(base_offset=r.offset, write_limit=600)
        builder.append(r.key, r.value, r.timestamp, r.headers, offset=r.offset)
    expected.append(bytes(builder.build()))
    assert len(ours) > 1 and ours == expected


def _table(rows):
    """rows: (key, value, timestamp ms, headers list or None)."""
    return pa.table({
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
        "timestamp": pa.array([r[2] for r in rows], pa.int64()),
        "headers": pa.array([None if r[3] is None else [{"key": k, "value": v} for k, v in r[3]] for r in rows],
                            kcodec.kafka_schema().field("headers").type),
    })


def _rows(n, seed=3):
    rng = np.random.default_rng(seed)
    out = []
    for i in range(n):
        hdrs = [("h", bytes(rng.integers(0, 256, int(rng.integers(0, 9)), np.uint8)))] if i % 3 else None
        key = None if i % 5 == 0 else f"key-{i}".encode()
        out.append((key, b"v" * int(rng.integers(0, 300)) + bytes([i % 251]), T0 + int(rng.integers(0, 5000)), hdrs))
    return out


@pytest.mark.parametrize("codec", CODECS)
def test_from_arrow_bit_identical_to_builder(codec):
    rows = _rows(150)
    options = dict(base_offset=77, producer_id=9000, producer_epoch=3, base_sequence=11, is_transactional=True,
                   partition_leader_epoch=5)
    (ours,) = kcodec.from_arrow(_table(rows), compression=codec, level=None, **options)
    b = kcodec.RecordBatchBuilder(compression=codec, **options)
    for key, value, ts, hdrs in rows:
        b.append(key, value, ts, hdrs or ())
    assert ours == bytes(b.build())


def test_from_arrow_log_append_time_equals_builder():
    rows = _rows(20)
    (ours,) = kcodec.from_arrow(_table(rows), compression="zstd", timestamp_type=kcodec.TimestampType.LOG_APPEND_TIME,
                                log_append_time=T0 + 99_999)
    b = kcodec.RecordBatchBuilder(compression="zstd", timestamp_type=kcodec.TimestampType.LOG_APPEND_TIME,
                                  log_append_time=T0 + 99_999)
    for key, value, ts, hdrs in rows:
        b.append(key, value, ts, hdrs or ())
    assert ours == bytes(b.build())
    back = kcodec.to_arrow(ours)
    assert set(back.column("timestampType").to_pylist()) == {1}
    assert {int(t.timestamp() * 1000) for t in back.column("timestamp").to_pylist()} == {T0 + 99_999}


def _varint_size(v: int) -> int:
    z = (v << 1) ^ (v >> 63)
    n = 1
    while z >= 0x80:
        z >>= 7
        n += 1
    return n


def _record_size(offset_delta: int, value_len: int) -> int:
    """DefaultRecord.sizeInBytes for a record with timestamp delta 0, null key, no headers."""
    body = 1 + 1 + _varint_size(offset_delta) + 1 + _varint_size(value_len) + value_len + 1
    return _varint_size(body) + body


def _kafka_cuts(value_lens, limit, ratio, compressed):
    """Records per batch by MemoryRecordsBuilder.hasRoomFor/isFull, in Java's int and float arithmetic."""
    counts, written, n = [], 0, 0
    for length in value_lens:
        if n:
            est = 61 + (int(np.float32(np.float32(written) * np.float32(ratio)) * np.float32(1.05))
                        if compressed else written)
            if limit <= est or limit < est + _record_size(n, length):
                counts.append(n)
                written = n = 0
        written += _record_size(n, length)
        n += 1
    counts.append(n)
    return counts


@pytest.mark.parametrize("codec,ratio", [("none", 1.0), ("lz4", 1.0), ("gzip", 0.37), ("zstd", 0.5),
                                         ("snappy", 0.9137)])
def test_batch_cuts_follow_kafka_batch_size_rule(codec, ratio):
    lens = [int(n) for n in np.random.default_rng(8).integers(0, 900, 2000)]
    table = pa.table({"value": pa.array([b"x" * n for n in lens], pa.binary()),
                      "timestamp": pa.array([T0] * len(lens), pa.int64())})
    for limit in (0, 1000, 4096, 16_384, 16_385, 20_000):
        batches = kcodec.from_arrow(table, compression=codec, max_batch_bytes=limit,
                                    estimated_compression_ratio=ratio)
        counts = [b.record_count for blob in batches for b in read_batches(blob)]
        assert counts == _kafka_cuts(lens, limit, ratio, codec != "none"), limit


def test_compressed_estimate_uses_java_float_arithmetic():
    # 100 bytes written: (int)(100 * 1.0f * 1.05f) = 104 in Java's float arithmetic (105 in double).
    # With a 17-byte second record, a limit of 61 + 104 + 17 = 182 still takes it.
    assert _record_size(0, 91) == 100 and _record_size(1, 10) == 17
    table = pa.table({"value": [b"a" * 91, b"b" * 10], "timestamp": pa.array([T0, T0], pa.int64())})
    assert len(kcodec.from_arrow(table, compression="lz4", max_batch_bytes=182)) == 1
    assert len(kcodec.from_arrow(table, compression="lz4", max_batch_bytes=181)) == 2


def test_null_and_empty_are_distinct():
    rows = [(None, None, T0, None), (b"", b"", T0, []), (b"k", b"v", T0, [("a", None), ("", b"")])]
    (blob,) = kcodec.from_arrow(_table(rows))
    recs = list(next(read_batches(blob)))
    assert [(r.key, r.value, r.headers) for r in recs] == [
        (None, None, ()), (b"", b"", ()), (b"k", b"v", (("a", None), ("", b"")))]
    back = kcodec.to_arrow(blob).to_pylist()
    assert [(r["key"], r["value"]) for r in back] == [(None, None), (b"", b""), (b"k", b"v")]
    # Kafka stores a header count, not a null list: no headers and an empty list both read back as null.
    assert [r["headers"] for r in back] == [None, None, [{"key": "a", "value": None}, {"key": "", "value": b""}]]
    with pytest.raises(kcodec.RecordBuilderError, match="header keys must not be null"):
        kcodec.from_arrow(pa.table({"value": [b"v"], "headers": pa.array(
            [[{"key": None, "value": b"x"}]], kcodec.kafka_schema().field("headers").type)}))


def test_a_null_header_entry_is_refused():
    # A null struct in the headers list still has child slots underneath; writing
    # them would invent a header ("", b""), so from_arrow refuses it as it refuses
    # a null key.  Nulls outside the rows' slice of the children do not count.
    ht = kcodec.kafka_schema().field("headers").type
    hdrs = pa.array([[{"key": "a", "value": b"1"}, None]], ht)
    for codec in ("none", "zstd"):
        with pytest.raises(kcodec.RecordBuilderError, match="null header"):
            kcodec.from_arrow(pa.table({"value": [b"v"], "headers": hdrs}), compression=codec)
    hdrs = pa.array([[None], [{"key": "a", "value": b"1"}]], ht)
    t = pa.table({"value": [b"v", b"w"], "headers": hdrs}).slice(1)
    (blob,) = kcodec.from_arrow(t)
    assert [r.headers for r in next(read_batches(blob))] == [(("a", b"1"),)]


def test_from_arrow_accepts_plain_columns():
    t = pa.table({"value": pa.array(["a", "bb", None]), "key": pa.array([b"k", None, b""], pa.large_binary()),
                  "timestamp": pa.array([T0, T0 + 1, T0 + 2], pa.int64())})
    (batch,) = kcodec.from_arrow(t, compression="lz4", base_offset=42)
    recs = list(next(read_batches(batch)))
    assert [(r.offset, r.key, r.value, r.timestamp) for r in recs] == [
        (42, b"k", b"a", T0), (43, None, b"bb", T0 + 1), (44, b"", None, T0 + 2)]
    with pytest.raises(kcodec.RecordBuilderError):
        kcodec.from_arrow(pa.table({"key": [b"x"]}))


headers_st = st.one_of(st.none(), st.lists(st.fixed_dictionaries(
    {"key": st.text(max_size=6), "value": st.one_of(st.none(), st.binary(max_size=10))}), max_size=3))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(st.one_of(st.none(), st.binary(max_size=20)), st.one_of(st.none(), st.binary(max_size=200)),
                          st.integers(0, 2 ** 42), headers_st, st.integers(1, 100)), min_size=1, max_size=40),
       st.sampled_from(CODECS), st.integers(100, 5000))
def test_property_roundtrip(rows, codec, limit):
    offsets, off = [], 1000
    for *_, gap in rows:
        offsets.append(off)
        off += gap
    table = pa.table({
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
        "timestamp": pa.array([r[2] * 1000 for r in rows], pa.timestamp("us", tz="UTC")),
        "headers": pa.array([r[3] if r[3] else None for r in rows], kcodec.kafka_schema().field("headers").type),
        "offset": pa.array(offsets, pa.int64()),
    })
    batches = kcodec.from_arrow(table, compression=codec, max_batch_bytes=limit)
    back = kcodec.to_arrow(b"".join(batches))
    cols = ["key", "value", "offset", "timestamp", "headers"]
    assert back.select(cols).equals(table.select(cols))


@pytest.mark.skipif(not oracle_available(), reason="Java oracle not available")
def test_java_reads_from_arrow_batches():
    data, doc, _ = load_case("segment_mixed")
    table = kcodec.to_arrow(data)
    blobs = []
    for codec in CODECS:
        blobs.extend(kcodec.from_arrow(table, compression=codec, max_batch_bytes=2048))
    rc, java = oracle_verify(b"".join(blobs))
    assert rc == 0, java
    assert [b["compression"] for b in java["batches"]] != []
    got = [(r["offset"], r["timestamp"], _b(r["key"]), _b(r["value"]), [(k, _b(v)) for k, v in r["headers"]])
           for b in java["batches"] for r in b["records"]]
    rows = table.to_pylist()
    one = [(r["offset"], int(r["timestamp"].timestamp() * 1000), r["key"], r["value"],
            [(h["key"], h["value"]) for h in r["headers"] or ()]) for r in rows]
    assert got == one * len(CODECS)


@pytest.mark.parametrize("case", [c for c in cases() if c.startswith("v2_none_") or c == "segment_v2_txn"])
def test_native_fast_path_equals_general_path(case):
    data, _, _ = load_case(case)
    fast = kcodec.to_arrow(data, topic="t", partition=1, include_control=True)
    general = kcodec.to_arrow(read_batches(data), topic="t", partition=1, include_control=True)
    assert fast.equals(general)


def test_fast_path_falls_back_on_damage():
    data = bytearray(load_case("v2_none_json100")[0])
    data[100] ^= 1
    with pytest.raises(kcodec.CorruptRecordError, match="Record is corrupt"):
        kcodec.to_arrow(bytes(data))
    assert kcodec.to_arrow(bytes(data), validate=False).num_rows == 100
    assert kcodec.to_arrow(load_case("v2_none_json100")[0] + b"\0" * 5).num_rows == 100


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_sequences_and_batches_equal_builder_across_batches(codec):
    rows = _rows(120, seed=11)
    start = 2 ** 31 - 50  # the sequence wraps inside the run
    ours = kcodec.from_arrow(_table(rows), compression=codec, max_batch_bytes=3000, base_offset=500,
                             producer_id=77, producer_epoch=1, base_sequence=start)
    assert len(ours) > 3
    expected, builder = [], None
    for i, (key, value, ts, hdrs) in enumerate(rows):
        if builder is not None and not builder.has_room_for(key, value, hdrs or (), ts):
            expected.append(bytes(builder.build()))
            builder = None
        if builder is None:
            builder = kcodec.RecordBatchBuilder(compression=codec, base_offset=500 + i, write_limit=3000,
                                                producer_id=77, producer_epoch=1, base_sequence=(start + i) % 2 ** 31)
        builder.append(key, value, ts, hdrs or ())
    expected.append(bytes(builder.build()))
    assert ours == expected
    got = [next(read_batches(b)) for b in ours]
    firsts = np.cumsum([0] + [b.record_count for b in got])[:-1]
    assert [b.base_sequence for b in got] == [(start + int(f)) % 2 ** 31 for f in firsts]
    assert [r.offset for b in got for r in b] == list(range(500, 620))


def test_mmap_slice_and_error_positions(tmp_path):
    import mmap
    data = load_case("v2_none_json100")[0]
    path = tmp_path / "seg.log"
    path.write_bytes(b"\0" * 100 + data + data)
    with open(path, "r+b") as f:
        mm = mmap.mmap(f.fileno(), 0)
        view = memoryview(mm)[100:]
        assert kcodec.to_arrow(view).num_rows == 200
        mm[100 + len(data) + 70] ^= 0xFF  # inside the second batch's records
        position = None
        try:
            kcodec.to_arrow(view)
        except kcodec.CorruptRecordError as e:
            position = e.position
    # relative to the slice that was passed in
    assert position == len(data)


def test_partial_trailing_batch_is_ignored_like_kafka():
    data = load_case("v2_none_json100")[0]
    table = kcodec.to_arrow(data + data[:40])
    assert table.num_rows == 100
    assert table.equals(kcodec.to_arrow(read_batches(data + data[:40])))


@pytest.fixture
def small_column_cache():
    # Cache every block so reuse is exercised by small tables too.
    from kcodec.arrow import column_cache
    limit, _held, min_block = column_cache(limit=64 << 20, min_block=1)
    yield column_cache
    column_cache(limit=limit, min_block=min_block)


def _records_table(n, seed, null_every):
    rng = np.random.default_rng(seed)
    keys = [None if i % null_every == 0 else rng.bytes(int(rng.integers(0, 40))) for i in range(n)]
    values = [None if i % (null_every + 1) == 0 else rng.bytes(int(rng.integers(0, 300))) for i in range(n)]
    headers = [[("h%d" % j, None if (i + j) % 5 == 0 else rng.bytes(3)) for j in range(i % 3)] for i in range(n)]
    return keys, values, headers


def test_reused_column_memory_gives_the_same_tables(small_column_cache):
    """Blocks released by one table are refilled by the next; validity bits must start clear."""
    expected = []
    blobs = []
    for seed, null_every in ((1, 10**9), (2, 2), (3, 7), (4, 3)):
        keys, values, headers = _records_table(3000, seed, null_every)
        b = kcodec.RecordBatchBuilder(write_limit=1 << 30)
        for i in range(len(keys)):
            b.append(keys[i], values[i], 1_700_000_000_000 + i, headers[i])
        blobs.append(bytes(b.build()))
        expected.append((keys, values, [h or None for h in headers]))
    fresh = [kcodec.to_arrow(blob).to_pylist() for blob in blobs]
    for _ in range(2):
        for blob, (keys, values, headers), first in zip(blobs, expected, fresh):
            table = kcodec.to_arrow(blob)
            assert small_column_cache()[1] >= 0
            assert table.column("key").to_pylist() == keys
            assert table.column("value").to_pylist() == values
            got_headers = [None if h is None else [(x["key"], x["value"]) for x in h]
                           for h in table.column("headers").to_pylist()]
            assert got_headers == headers
            assert table.to_pylist() == first
            del table
    assert small_column_cache()[1] > 0


def test_column_cache_limits(small_column_cache):
    from kcodec.arrow import column_cache
    kcodec.to_arrow(b"".join(kcodec.from_arrow(pa.table({"value": [b"x" * 100] * 1000}))))
    assert column_cache()[1] > 0
    assert column_cache(limit=0)[0] == 64 << 20
    assert column_cache()[:2] == (0, 0)
    table = kcodec.to_arrow(b"".join(kcodec.from_arrow(pa.table({"value": [b"x" * 100] * 1000}))))
    del table
    assert column_cache()[1] == 0
    with pytest.raises(ValueError):
        column_cache(limit=-1)
    with pytest.raises(ValueError):
        column_cache(min_block=0)


def _builder_batches(rows, limit, base_offset=0, offsets=None):
    out, b = [], None
    for i, (key, value, ts, hdrs) in enumerate(rows):
        off = base_offset + i if offsets is None else offsets[i]
        if b is not None and not b.has_room_for(key, value, hdrs or (), ts):
            out.append(bytes(b.build()))
            b = None
        if b is None:
            b = kcodec.RecordBatchBuilder(base_offset=off, write_limit=limit)
        b.append(key, value, ts, hdrs or (), offset=off)
    out.append(bytes(b.build()))
    return out


@pytest.mark.parametrize("limit", [0, 100, 300, 700, 9000, 40000, 1 << 30])
def test_from_arrow_without_nulls_equals_builder(limit):
    """No nulls and int32 offsets, the usual pyarrow layout: records are written before they are
    sized exactly, with the length varint at a bound's width, moved back when narrower."""
    rng = np.random.default_rng(5)
    widths = [0, 1, 40, 50, 55, 60, 63, 64, 65, 100, 8100, 8150, 8180, 8191, 8192, 8200, 16383, 16384]
    rows = []
    for i in range(300):
        vlen = widths[i % len(widths)] if i % 2 else int(rng.integers(0, 400))
        hdrs = [(f"h{j}", bytes(rng.integers(0, 256, int(rng.integers(0, 30)), np.uint8))) for j in range(i % 4)]
        rows.append((b"k%d" % i, bytes(rng.integers(0, 256, vlen, np.uint8)), T0 + 7 * i, hdrs))
    table = pa.table({
        "key": pa.array([r[0] for r in rows], pa.binary()),
        "value": pa.array([r[1] for r in rows], pa.binary()),
        "timestamp": pa.array([r[2] for r in rows], pa.int64()),
        "headers": pa.array([[{"key": k, "value": v} for k, v in r[3]] for r in rows],
                            kcodec.kafka_schema().field("headers").type),
    })
    assert all(table[c].null_count == 0 for c in table.column_names)
    ours = kcodec.from_arrow(table, max_batch_bytes=limit)
    assert ours == _builder_batches(rows, limit)
    assert [(o, ts, k, v, list(h)) for o, ts, k, v, h in _records_of(ours)] == [
        (i, ts, k, v, h) for i, (k, v, ts, h) in enumerate(rows)]


@pytest.mark.parametrize("limit", [0, 100, 700, 5000, 1 << 30])
@pytest.mark.parametrize("kind", ["binary", "large_binary", "string", "sliced"])
def test_from_arrow_uncompressed_cuts_and_column_types(limit, kind):
    """One pass over the columns: Kafka's cuts, any offset width, sliced arrays, a huge limit."""
    rows = _rows(120, seed=11)
    table = _table(rows)
    if kind == "large_binary":
        table = table.cast(pa.schema([pa.field("key", pa.large_binary()), pa.field("value", pa.large_binary()),
                                      pa.field("timestamp", pa.int64()),
                                      pa.field("headers",
                                               pa.large_list(table.schema.field("headers").type.value_type))]))
    elif kind == "string":
        rows = [(k, v.decode("latin-1").encode(), ts, h) for k, v, ts, h in rows]
        table = table.set_column(1, "value", pa.array([v.decode() for _, v, _, _ in rows], pa.string()))
    elif kind == "sliced":
        # every array starts 7 rows into its buffers
        table = _table(_rows(7, seed=2) + rows).slice(7)
        assert table.column("value").chunk(0).offset == 7
    ours = kcodec.from_arrow(table, max_batch_bytes=limit, base_offset=40)
    assert ours == _builder_batches(rows, limit, base_offset=40)
    if limit == 0:
        assert len(ours) == len(rows)
    if limit == 1 << 30:
        assert len(ours) == 1


def test_from_arrow_offsets_column_and_errors():
    rows = _rows(30, seed=5)
    offsets = [1000 + 3 * i for i in range(30)]
    table = _table(rows).append_column("offset", pa.array(offsets, pa.int64()))
    assert kcodec.from_arrow(table, max_batch_bytes=900) == _builder_batches(rows, 900, offsets=offsets)
    far = _table(rows[:2]).append_column("offset", pa.array([0, 1 << 40], pa.int64()))
    with pytest.raises(kcodec.RecordBuilderError, match="row 1: offset too far"):
        kcodec.from_arrow(far, max_batch_bytes=1 << 20)
    bad = pa.table({"value": [b"a", b"b"],
                    "headers": pa.array([[{"key": "k", "value": b"x"}], [{"key": None, "value": b"y"}]],
                                        kcodec.kafka_schema().field("headers").type)})
    with pytest.raises(kcodec.RecordBuilderError, match="row 1: header keys must not be null"):
        kcodec.from_arrow(bad)


def test_to_arrow_from_threads_shares_the_column_cache(small_column_cache):
    """The gather runs without the GIL and the cache is shared: concurrent conversions stay exact."""
    import threading

    blobs, expected = [], []
    for seed in range(4):
        keys, values, headers = _records_table(1500, seed, 3 + seed)
        b = kcodec.RecordBatchBuilder(write_limit=4096)
        out = []
        for i in range(len(keys)):
            if not b.has_room_for(keys[i], values[i], headers[i], T0 + i):
                out.append(bytes(b.build()))
                b = kcodec.RecordBatchBuilder(base_offset=i, write_limit=4096)
            b.append(keys[i], values[i], T0 + i, headers[i])
        out.append(bytes(b.build()))
        blobs.append(b"".join(out))
        expected.append(kcodec.to_arrow(blobs[-1]).to_pylist())
    errors = []

    def work(k):
        try:
            for _ in range(5):
                assert kcodec.to_arrow(blobs[k]).to_pylist() == expected[k]
        except Exception as exc:  # reported below, in the main thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(k % 4,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_to_arrow_after_fork(small_column_cache):
    """A child forked while the column cache holds blocks converts and frees normally."""
    import os

    blob = b"".join(kcodec.from_arrow(pa.table({"value": [b"v" * 50] * 5000})))
    kcodec.to_arrow(blob)  # dropped at once: its blocks go to the cache
    assert small_column_cache()[1] > 0
    pid = os.fork()
    if pid == 0:  # child: exit status says whether the conversion was right
        ok = kcodec.to_arrow(blob).column("value").to_pylist() == [b"v" * 50] * 5000
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


def _object_outcome(data):
    try:
        return [(r.offset, r.timestamp, r.key, r.value,
                 [(k.encode("utf-8", "surrogateescape"), v) for k, v in r.headers])
                for b in read_batches(data, validate=False) for r in b]
    except kcodec.KcodecError as exc:
        return (type(exc), str(exc))


def _arrow_outcome(data, headers=True):
    try:
        t = kcodec.to_arrow(data, validate=False, headers=headers)
    except kcodec.KcodecError as exc:
        return (type(exc), str(exc))
    try:
        hs = t.column("headers").to_pylist() if headers else [None] * t.num_rows
    except UnicodeDecodeError:  # a header key of invalid UTF-8 in Arrow's string column
        return "undecodable header key"
    return [(o, ts.timestamp() * 1000 // 1, k, v, [(h["key"].encode("utf-8", "surrogateescape"), h["value"])
                                                     for h in (hl or [])])
            for o, ts, k, v, hl in zip(t.column("offset").to_pylist(), t.column("timestamp").to_pylist(),
                                       t.column("key").to_pylist(), t.column("value").to_pylist(), hs)]


@pytest.mark.parametrize("headers", [True, False])
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_damaged_records_give_the_object_paths_outcome(codec, headers):
    """Every byte of the records flipped, checksums off: to_arrow's one-walk gather of records and
    headers either yields what the object path yields or raises the object path's error."""
    b = kcodec.RecordBatchBuilder(compression=codec)
    for i in range(5):
        b.append(None if i == 2 else b"k%d" % i, b"v" * (i * 7), T0 + i,
                 [("a", b"x"), ("bb", None)] if i % 2 else [("c", b"yz")])
    good = bytes(b.build())
    if codec == "none":
        positions, mutate = range(61, len(good)), lambda d, i, x: d.__setitem__(i, d[i] ^ x)
        cases = []
        for i in positions:
            for x in (0x01, 0x40, 0x80, 0xFF):
                d = bytearray(good)
                mutate(d, i, x)
                cases.append(bytes(d))
    else:
        # Damage the decompressed records, then compress them again under a fresh header.
        region = kcodec.get_codec("gzip").decompress(good[61:])
        cases = []
        for i in range(len(region)):
            for x in (0x01, 0x80, 0xFF):
                r = bytearray(region)
                r[i] ^= x
                payload = kcodec.get_codec("gzip").compress(bytes(r))
                d = bytearray(good[:61] + payload)
                d[8:12] = (len(d) - 12).to_bytes(4, "big")
                cases.append(bytes(d))
    differing, intact = 0, _object_outcome(good)
    for data in cases:
        obj, arr = _object_outcome(data), _arrow_outcome(data, headers)
        if arr == "undecodable header key":
            continue
        differing += obj != intact
        if not headers and isinstance(obj, list):
            obj = [(o, ts, k, v, []) for o, ts, k, v, _ in obj]
        assert arr == obj
    assert differing > len(cases) // 4  # the damage mostly matters


@pytest.mark.parametrize("codec", CODECS)
def test_timestamps_beyond_microsecond_range_are_reported(codec):
    # Kafka takes any non-negative long of milliseconds; Arrow's timestamp("us")
    # holds up to 2^63 / 1000 of them.  Past that the column would wrap, so
    # to_arrow says which record does not fit instead.
    b = kcodec.RecordBatchBuilder(base_offset=5, compression=codec)
    b.append(b"k", b"v", T0)
    b.append(b"k", b"v", (2 ** 63 - 1) // 1000)  # the largest that fits
    b.append(b"k", b"v", (2 ** 63 - 1) // 1000 + 1)
    data = b.build()
    with pytest.raises(kcodec.LimitExceededError, match=r"offset 7 has timestamp 9223372036854776 ms"):
        kcodec.to_arrow(data)
    b = kcodec.RecordBatchBuilder(base_offset=5, compression=codec)
    b.append(b"k", b"v", (2 ** 63 - 1) // 1000)
    assert kcodec.to_arrow(b.build()).column("timestamp").cast(pa.int64()).to_pylist() == \
        [(2 ** 63 - 1) // 1000 * 1000]


def test_from_arrow_second_timestamps_that_overflow_milliseconds():
    table = pa.table({"key": [b"a"], "value": [b"b"], "timestamp": pa.array([2 ** 62], pa.timestamp("s"))})
    with pytest.raises(kcodec.LimitExceededError, match="timestamp\\('s'\\)"):
        kcodec.from_arrow(table)
    table = pa.table({"key": [b"a"], "value": [b"b"], "timestamp": pa.array([T0 // 1000], pa.timestamp("s"))})
    assert kcodec.to_arrow(kcodec.from_arrow(table)[0]).column("timestamp").cast(pa.int64()).to_pylist() == \
        [T0 // 1000 * 1_000_000]


def test_from_arrow_header_columns_it_cannot_read_are_refused():
    one_field = pa.array([[{"key": "a"}]], pa.list_(pa.struct([("key", pa.string())])))
    as_map = pa.array([[("a", b"1")]], pa.map_(pa.string(), pa.binary()))
    for hdrs in (one_field, as_map, pa.array([b"x"])):
        with pytest.raises(kcodec.RecordBuilderError, match="headers column must be list<struct"):
            kcodec.from_arrow(pa.table({"value": [b"v"], "headers": hdrs}))
    swapped = pa.array([[{"value": b"1", "key": "a"}]], pa.list_(pa.struct([("value", pa.binary()),
                                                                             ("key", pa.string())])))
    (blob,) = kcodec.from_arrow(pa.table({"value": [b"v"], "headers": swapped}))
    assert [r.headers for r in next(read_batches(blob))] == [(("a", b"1"),)]
    (blob,) = kcodec.from_arrow(pa.table({"value": [b"v"], "headers": pa.nulls(1)}))
    assert [r.headers for r in next(read_batches(blob))] == [()]


def test_from_arrow_offsets_must_increase_without_wrapping():
    t = pa.table({"value": [b"a", b"b"], "offset": pa.array([2 ** 63 - 1, -2 ** 63], pa.int64())})
    for codec in ("none", "lz4"):
        with pytest.raises(kcodec.RecordBuilderError, match="must increase strictly"):
            kcodec.from_arrow(t, compression=codec)


@pytest.mark.parametrize("magic", [0, 1])
def test_from_arrow_legacy_reads_columns_like_v2(magic):
    # String columns are UTF-8 bytes and timestamp columns exact milliseconds, as for magic 2.
    t = pa.table({"value": pa.array(["v1", "v2"]), "key": pa.array(["k", None]),
                  "timestamp": pa.array([1700000000123, 1700000000999], pa.timestamp("ms"))})
    got = [(r.key, r.value, r.timestamp) for raw in kcodec.from_arrow(t, magic=magic, compression="gzip")
           for b in read_batches(raw) for r in b]
    stamps = [1700000000123, 1700000000999] if magic == 1 else [-1, -1]
    assert got == [(b"k", b"v1", stamps[0]), (None, b"v2", stamps[1])]


@pytest.fixture
def threaded_parts(monkeypatch):
    """to_arrow(use_threads=True) cutting small buffers into up to four parts."""
    from kcodec.arrow import threads

    monkeypatch.setattr(threads, "MIN_THREAD_PART", 2048)
    monkeypatch.setattr(threads, "MIN_THREAD_MEAN_BATCH", 1024)
    before = pa.cpu_count()
    pa.set_cpu_count(4)
    yield
    pa.set_cpu_count(before)


def _many_batches(n=3000, limit=4096, seed=5, compression="none"):
    keys, values, headers = _records_table(n, seed, 3)
    return b"".join(kcodec.from_arrow(pa.table({
        "key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
        "timestamp": pa.array([T0 + i for i in range(n)], pa.int64()),
        "headers": pa.array([[{"key": k, "value": v} for k, v in h] or None for h in headers],
                            kcodec.kafka_schema().field("headers").type)}), max_batch_bytes=limit,
        compression=compression))


def test_split_batches_cuts_at_batch_boundaries():
    from kcodec._native.columnar import split_batches

    blob = _many_batches()
    starts = [b.position for b in read_batches(blob)] + [len(blob)]
    cuts = split_batches(blob, 4, 2048)
    assert cuts[0] == 0 and cuts[-1] == len(blob) and len(cuts) == 5
    assert set(cuts) <= set(starts) and cuts == sorted(set(cuts))
    assert all(b - a >= 2048 for a, b in zip(cuts, cuts[1:]))
    assert split_batches(blob, 1, 2048) == [0, len(blob)]
    assert split_batches(blob, 4, len(blob)) == [0, len(blob)]  # too small to share
    assert split_batches(blob[:-3], 4, 2048)[-1] == len(blob) - 3  # a partial tail stays in the last part
    mean = len(blob) // (len(starts) - 1)
    assert len(split_batches(blob, 4, 2048, mean)) == 5
    assert split_batches(blob, 4, 2048, mean + 1) == [0, len(blob)]  # batches too small on average
    damaged = bytearray(blob)
    damaged[starts[3] + 8:starts[3] + 12] = (2 ** 30).to_bytes(4, "big")  # a length past the end
    assert split_batches(bytes(damaged), 4, 2048) == [0, len(blob)]
    # The cut search is Kafka's entry walk: a corrupt entry gives the buffer whole (its pass reports it).
    for at, value in ((8, (13).to_bytes(4, "big")), (16, b"\x03"), (16, b"\xff")):
        damaged = bytearray(blob)
        damaged[starts[3] + at:starts[3] + at + len(value)] = value
        assert split_batches(bytes(damaged), 4, 2048) == [0, len(blob)]
    # A tail too short for a size field stays in the last part, as the walk ends there.
    assert split_batches(blob + b"\0" * 11, 4, 2048) == cuts[:-1] + [len(blob) + 11]
    assert split_batches(blob + b"\0" * 12, 4, 2048) == [0, len(blob) + 12]


def test_split_batches_steps_over_legacy_messages():
    from kcodec._native.columnar import split_batches

    blob = b""
    for i in range(40):
        builder = kcodec.LegacyRecordBatchBuilder(magic=i % 2, base_offset=i)
        builder.append(b"k", b"v" * 200, 1000 + i)
        blob += builder.build()
    starts = [b.position for b in read_batches(blob)]
    cuts = split_batches(blob, 4, 1024)
    assert len(cuts) == 5 and set(cuts[:-1]) <= set(starts) and cuts[-1] == len(blob)


def test_fast_pass_over_a_part_of_the_buffer():
    from kcodec._native.columnar import columns_uncompressed_v2

    blob = _many_batches()
    with pytest.raises(ValueError, match="outside the buffer"):
        columns_uncompressed_v2(blob, True, False, True, 10, len(blob) + 1)
    with pytest.raises(ValueError, match="outside the buffer"):
        columns_uncompressed_v2(blob, True, False, True, 20, 10)
    assert columns_uncompressed_v2(blob, True, False, True, 1, len(blob)) is None  # not a batch boundary


def test_threaded_to_arrow_equals_one_thread(threaded_parts):
    blob = _many_batches()
    one = kcodec.to_arrow(blob, topic="t", partition=3, use_threads=False)
    many = kcodec.to_arrow(blob, topic="t", partition=3)
    assert one.column("value").num_chunks == 1
    assert many.column("value").num_chunks == 4
    assert many.schema == one.schema and many.equals(one)
    for source in (bytearray(blob), memoryview(blob), np.frombuffer(blob, np.uint8)):
        assert kcodec.to_arrow(source, topic="t", partition=3).equals(one)


def test_threaded_to_arrow_reports_damage_like_one_thread(threaded_parts):
    blob = bytearray(_many_batches())
    last = [b.position for b in read_batches(bytes(blob))][-2]
    blob[last + 70] ^= 0xFF  # records of a batch in the last part
    errors = []
    for use_threads in (True, False):
        with pytest.raises(kcodec.CorruptRecordError) as info:
            kcodec.to_arrow(bytes(blob), use_threads=use_threads)
        errors.append((str(info.value), info.value.position))
    assert errors[0] == errors[1] and errors[0][1] == last
    # the general path handles what the fast pass does not, whichever part holds it
    gz = kcodec.from_arrow(pa.table({"value": [b"z" * 100] * 50}), compression="gzip", base_offset=3000)
    mixed = _many_batches() + b"".join(gz)
    assert kcodec.to_arrow(mixed).equals(kcodec.to_arrow(mixed, use_threads=False))


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_threaded_to_arrow_after_fork(threaded_parts):
    """A forked child has none of the parent's pool threads: it must start its own, not wait forever."""
    import os
    import time

    blob = _many_batches()
    expected = kcodec.to_arrow(blob).to_pylist()
    for _ in range(3):
        kcodec.to_arrow(blob)
    time.sleep(0.2)  # the parent's pool threads all idle: a stale pool in the child would start none
    pid = os.fork()
    if pid == 0:
        import signal
        signal.alarm(60)  # a hang fails the test instead of stalling it
        ok = kcodec.to_arrow(blob).to_pylist() == expected
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("codec", ["gzip", "zstd", "lz4"])
def test_threaded_to_arrow_of_compressed_batches(threaded_parts, codec):
    blob = _many_batches(limit=8192, compression=codec)
    one = kcodec.to_arrow(blob, topic="t", use_threads=False)
    many = kcodec.to_arrow(blob, topic="t")
    assert many.column("value").num_chunks > 1 and many.equals(one)
    # a part that fails is converted again in one piece, so the error is positioned in the whole buffer
    data = bytearray(blob)
    positions = [b.position for b in read_batches(blob)]
    data[positions[-2] + 70] ^= 0xFF  # the compressed payload of a batch in the last part
    outcomes = []
    for use_threads in (True, False):
        for validate in (True, False):
            try:
                outcomes.append(kcodec.to_arrow(bytes(data), validate=validate, use_threads=use_threads).num_rows)
            except kcodec.KcodecError as exc:
                outcomes.append((type(exc), str(exc), exc.position))
    assert outcomes[:2] == outcomes[2:]
    assert outcomes[0][2] == positions[-2]


def test_small_compressed_batches_use_threads_on_the_native_pass_only(threaded_parts, monkeypatch):
    from kcodec.arrow import cascade, threads

    monkeypatch.setattr(threads, "MIN_THREAD_MEAN_BATCH", 1 << 20)
    blob = _many_batches(limit=8192, compression="gzip")
    assert kcodec.to_arrow(blob).column("value").num_chunks > 1  # the native pass: no GIL held per batch
    monkeypatch.setattr(cascade, "native_codecs", lambda *a, **k: None)  # the general path
    assert kcodec.to_arrow(blob).column("value").num_chunks == 1


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_threaded_to_arrow_lets_go_of_an_mmap(threaded_parts, tmp_path, codec):
    """Once to_arrow returns, no part still holds the buffer: the map can be closed."""
    import mmap

    blob = _many_batches(limit=8192, compression=codec)
    path = tmp_path / "seg.log"
    path.write_bytes(blob)
    with open(path, "rb") as f:
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        table = kcodec.to_arrow(mm)
        assert table.column("value").num_chunks > 1
        mm.close()  # BufferError if a view of it were still alive
    assert table.equals(kcodec.to_arrow(blob, use_threads=False))


def test_threads_take_parts_of_4_mib_and_general_batches_of_64_kib():
    """The documented thresholds: MIN_THREAD_PART and MIN_THREAD_MEAN_BATCH, at their edges."""
    table = pa.table({"value": [bytes([i % 251]) * 65000 for i in range(200)]})
    blob = b"".join(kcodec.from_arrow(table, max_batch_bytes=1 << 16))  # 12.4 MiB
    assert 12 << 20 < len(blob) < 13 << 20

    def legacy(mean, count=130):  # v1 messages of ``mean`` bytes each, 8.1 to 8.2 MiB in all
        messages = []
        for i in range(count):
            builder = kcodec.LegacyRecordBatchBuilder(magic=1, base_offset=i)
            builder.append(None, b"x" * (mean - 34), T0 + i)
            messages.append(builder.build())
        assert {len(m) for m in messages} == {mean}
        return b"".join(messages)

    above, below = legacy(65600), legacy(65000)  # mean batches just over and under 64 KiB
    before = pa.cpu_count()
    pa.set_cpu_count(4)
    try:
        assert kcodec.to_arrow(blob).column("value").num_chunks == 3  # 12.4 MiB: three parts of 4 MiB or more
        assert kcodec.to_arrow(above).column("value").num_chunks == 2
        assert kcodec.to_arrow(below).column("value").num_chunks == 1
    finally:
        pa.set_cpu_count(before)
    assert kcodec.to_arrow(above).equals(kcodec.to_arrow(above, use_threads=False))


def test_a_buffer_of_twice_the_least_part_is_cut_in_two(monkeypatch):
    from kcodec.arrow import threads

    first = kcodec.from_arrow(pa.table({"value": [b"v%d" % i for i in range(30)]}), base_offset=0)[0]
    data = first + kcodec.from_arrow(pa.table({"value": [b"w%d" % i for i in range(30)]}), base_offset=30)[0]
    assert len(data) == 2 * len(first)
    monkeypatch.setattr(threads, "thread_count", lambda: 4)
    monkeypatch.setattr(threads, "MIN_THREAD_PART", len(first))
    assert kcodec.to_arrow(data).column("offset").num_chunks == 2
    monkeypatch.setattr(threads, "MIN_THREAD_PART", len(first) + 1)
    assert kcodec.to_arrow(data).column("offset").num_chunks == 1


def test_the_general_path_on_threads_takes_any_buffer_layout(monkeypatch):
    from kcodec.arrow import threads

    monkeypatch.setattr(threads, "MIN_THREAD_PART", 4096)
    monkeypatch.setattr(threads, "MIN_THREAD_MEAN_BATCH", 64)
    monkeypatch.setattr(threads, "thread_count", lambda: 4)
    messages = []
    for i in range(100):
        builder = kcodec.LegacyRecordBatchBuilder(magic=i % 2, base_offset=i)
        builder.append(b"k%03d" % i, b"v" * (200 + i % 7 * 2), T0 + i)
        messages.append(bytes(builder.build()))
    data = b"".join(messages)
    assert len(data) % 2 == 0
    one = kcodec.to_arrow(data, use_threads=False)
    assert one.column("value").num_chunks == 1 and one["offset"].to_pylist() == list(range(100))
    # Parts are cut in bytes, whatever the items of the buffer.
    for source in (data, np.frombuffer(data, np.uint16), np.frombuffer(data, np.uint8).reshape(-1, 2)):
        many = kcodec.to_arrow(source)
        assert many.column("value").num_chunks == 4 and many.equals(one)
    # Batch fields are positions in the whole buffer: gathered in one piece.
    fields = kcodec.to_arrow(data, batch_fields=["batch_position"])
    assert fields.column("batch_position").num_chunks == 1
    assert fields["batch_position"].to_pylist() == [b.position for b in read_batches(data)]


def test_the_defaults_of_to_arrow_and_decode_columns(threaded_parts):
    from kcodec.records import ControlRecordType

    blob = _many_batches()
    rows = kcodec.to_arrow(blob, use_threads=False).num_rows
    marker = kcodec.RecordBatchBuilder(base_offset=10 ** 6, producer_id=9, producer_epoch=0,
                                       is_transactional=True, is_control=True)
    marker.append_end_txn_marker(ControlRecordType.COMMIT, 3, timestamp=T0)
    data = blob + bytes(marker.build())
    for table in (kcodec.to_arrow(data), pa.table(kcodec.decode_columns(data))):
        assert table.num_rows == rows  # no control records
        assert table.column("value").num_chunks == 4  # on threads
        assert table.schema.field("value").type == pa.binary()  # copies, not views
        assert table.schema.field("headers").type == kcodec.kafka_schema().field("headers").type
    bad = bytearray(blob)
    bad[17] ^= 1  # the first batch's CRC
    for call in (kcodec.to_arrow, kcodec.decode_columns):
        with pytest.raises(kcodec.CorruptRecordError):
            call(bytes(bad))
        assert pa.table(call(bytes(bad), validate=False)).num_rows == rows


def test_lists_of_buffers_and_of_batches():
    blob = _many_batches(n=50)
    one = kcodec.to_arrow(blob)
    assert kcodec.to_arrow([]).num_rows == 0 and kcodec.to_arrow([]).schema == one.schema
    assert kcodec.to_arrow([blob]).equals(one) and kcodec.to_arrow((blob[:0], blob)).equals(one)
    assert kcodec.to_arrow(list(read_batches(blob))).equals(one)
    # Unknown batch fields are refused before any decoding, whatever the input holds.
    damaged = bytearray(blob)
    damaged[17] ^= 1
    for call in (kcodec.to_arrow, kcodec.decode_columns):
        with pytest.raises(ValueError, match="unknown batch field 'offsets'"):
            call(bytes(damaged), batch_fields=["base_offset", "offsets"])
    # The first item tells a list of buffers from one of batches.
    with pytest.raises(TypeError, match="buffer 1 of 2 is not a buffer of batches"):
        kcodec.to_arrow([blob, next(iter(read_batches(blob)))])


def test_thread_count_without_pyarrow(monkeypatch):
    import os
    import sys

    from kcodec.arrow import threads

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # not imported: the usable cores of this process
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {1, 4, 6} if pid == 0 else set(range(64)))
    assert threads.thread_count() == 3
    monkeypatch.delattr(os, "sched_getaffinity")
    monkeypatch.setattr(os, "cpu_count", lambda: 5)
    assert threads.thread_count() == 5
    monkeypatch.setattr(os, "cpu_count", lambda: None)  # undeterminable
    assert threads.thread_count() == 1


def test_on_threads_runs_every_part_and_waits_for_them():
    import os
    import time

    from kcodec.arrow import threads

    assert threads.on_threads(lambda a, b: (a, b), [0, 10, 25, 30]) == [(0, 10), (10, 25), (25, 30)]
    assert threads._pool_key == (os.getpid(), 2)  # two pool threads beside the caller's for three parts
    assert threads.on_threads(lambda a, b: None if a == 25 else a, [0, 10, 25, 30]) is None
    done = []

    def convert(a, b):
        if a == 0:
            raise ValueError("the first part")
        time.sleep(0.3)
        done.append(a)
        return a

    with pytest.raises(ValueError, match="the first part"):
        threads.on_threads(convert, [0, 10, 20, 30])
    assert sorted(done) == [10, 20]  # no part still reads the buffer once it raises


def test_the_pool_follows_the_thread_count_and_lets_the_old_one_go():
    import threading

    from kcodec.arrow import threads

    pool = threads._executor(3)
    assert threads._executor(3) is pool and pool._max_workers == 3
    started, release = threading.Event(), threading.Event()
    pool.submit(lambda: (started.set(), release.wait(30)))
    assert started.wait(30)
    got = []
    other = threading.Thread(target=lambda: got.append(threads._executor(2)))
    other.start()
    other.join(10)
    waited = not got  # the old pool is shut down without waiting for the part it still runs
    release.set()
    other.join()
    assert not waited and got[0] is not pool and got[0]._max_workers == 2
    assert pool._shutdown and threads._executor(2) is got[0]


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_leaves_the_parents_pool_alone():
    """The child's copy of the parent's pool may hold locks of threads it has not got: it is never shut down."""
    import os

    from kcodec.arrow import threads

    pool = threads._executor(3)
    with pool._shutdown_lock:  # as a parent thread submitting a part holds it when the fork comes
        pid = os.fork()
        if pid == 0:
            import signal
            signal.alarm(10)  # a hang fails the test instead of stalling it
            ok = threads._executor(3) is not pool and not pool._shutdown
            os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert threads._executor(3) is pool


@pytest.mark.parametrize("sizes", [(5, 200), (900, 1100), (3000, 9000), (15000, 40000)])
def test_from_arrow_large_batches_carry_the_crc_of_their_bytes(sizes):
    # Batches of about 1 MiB of records of every size class: the fill takes their CRC in steps as
    # it writes them, and the seal joins it to the header's.  Checked against the table CRC, read
    # back, and by the Java client when it is here.
    from kcodec._native import primitives

    rng = np.random.default_rng(sizes[0])
    n = max(40, (3 << 20) // sum(sizes))
    values = [rng.bytes(int(rng.integers(*sizes))) for _ in range(n)]
    keys = [None if i % 5 == 0 else b"key-%d" % i for i in range(n)]
    table = pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                      "timestamp": pa.array(1_700_000_000_000 + np.arange(n), pa.int64())})
    batches = kcodec.from_arrow(table, compression="none", max_batch_bytes=1 << 20)
    assert len(batches) >= 2
    for b in batches:
        assert int.from_bytes(b[17:21], "big") == primitives.crc32c_portable(b[21:])
    data = b"".join(batches)
    back = kcodec.to_arrow(data)
    assert back["value"].to_pylist() == values and back["key"].to_pylist() == keys
    if oracle_available():
        rc, doc = oracle_verify(data)
        assert rc == 0, doc


def _header_fields(blob):
    (b,) = read_batches(blob)
    return (b.base_offset, b.magic, int(b.compression), int(b.timestamp_type), b.producer_id, b.producer_epoch,
            b.base_sequence, b.is_transactional, b.partition_leader_epoch, b.record_count)


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_from_arrow_header_defaults_are_a_plain_producers(codec):
    # MemoryRecordsBuilder's defaults: offset 0, no producer id, epoch or sequence, no leader epoch yet.
    table = pa.table({"value": [b"a", b"b"], "timestamp": pa.array([T0, T0 + 1], pa.int64())})
    cid = CODECS.index(codec)
    want = (0, 2, cid, 0, -1, -1, -1, False, -1, 2)
    (one,) = kcodec.from_arrow_iter(table, compression=codec)
    (two,) = kcodec.from_arrow(table, compression=codec)
    assert _header_fields(one) == _header_fields(two) == want
    b = kcodec.RecordBatchBuilder(compression=codec)
    b.append(None, b"a", T0)
    b.append(None, b"b", T0 + 1)
    assert one == two == bytes(b.build())


def test_from_arrow_default_batch_size_is_one_mebibyte():
    # Two records that fill 1 MiB to the byte share a batch; one byte more and the second starts another.
    small = _record_size(1, 10)
    first = 1_048_576 - 61 - small
    value_len = next(n for n in range(first - 16, first) if _record_size(0, n) == first)
    for extra, batches in ((0, 1), (1, 2)):
        table = pa.table({"value": [b"x" * value_len, b"y" * (10 + extra)],
                          "timestamp": pa.array([T0, T0], pa.int64())})
        if extra:
            assert 61 + _record_size(0, value_len) + _record_size(1, 10 + extra) == 1_048_577
        assert len(list(kcodec.from_arrow_iter(table))) == batches, extra
        assert len(kcodec.from_arrow(table)) == batches, extra


def test_from_arrow_takes_record_batches_and_arrow_stream_exporters():
    table = _table(_rows(12, seed=4))
    want = kcodec.from_arrow(table, compression="gzip", max_batch_bytes=500)
    assert len(want) > 1

    class Exporter:
        def __arrow_c_stream__(self, requested_schema=None):
            return table.__arrow_c_stream__(requested_schema)

    for data in (table.to_batches()[0], Exporter()):
        assert kcodec.from_arrow(data, compression="gzip", max_batch_bytes=500) == want
        assert list(kcodec.from_arrow_iter(data, compression="gzip", max_batch_bytes=500)) == want


@pytest.mark.parametrize("magic", [0, 1, 2])
def test_from_arrow_of_no_rows_writes_no_batch(magic):
    empty = pa.table({"value": pa.array([], pa.binary()), "timestamp": pa.array([], pa.int64())})
    for codec in ("none", "lz4"):
        assert kcodec.from_arrow(empty, compression=codec, magic=magic) == []
        assert list(kcodec.from_arrow_iter(empty, compression=codec, magic=magic)) == []


@pytest.mark.parametrize("fn,options", [
    pytest.param("from_arrow_iter", "EncodeOptions", id="kcodec.arrow.options.EncodeOptions"),
    pytest.param("to_arrow", "DecodeOptions", id="kcodec.arrow.options.DecodeOptions-to_arrow"),
    pytest.param("decode_columns", "DecodeOptions", id="kcodec.arrow.options.DecodeOptions-decode_columns")])
def test_options_defaults_are_the_functions_defaults(fn, options):
    # EncodeOptions and DecodeOptions carry the public functions' arguments; made with no argument
    # they must ask for what a call without keywords asks for
    import inspect

    from kcodec.arrow import options as module

    cls = getattr(module, options)
    params = inspect.signature(getattr(kcodec, fn)).parameters
    assert cls()._asdict() == {name: params[name].default for name in cls._fields}
    assert module.EncodeOptions() == ("none", None, 1_048_576, 0, 2, kcodec.TimestampType.CREATE_TIME, None, -1, -1,
                                      -1, False, -1, 1.0)


def test_from_arrow_with_a_codec_that_has_no_native_functions():
    # A codec without native functions compresses each batch's records through its compress(): here
    # the built-in zstd's (magic 2 only), so the batches, header fields and sequences included, are the
    # native path's
    from kcodec.compression.zstd import ZstdCodec

    builtin = kcodec.get_codec("zstd")

    class PythonZstd(ZstdCodec):
        def native_codec(self):
            return None

        def compress(self, data, level=None, magic=2):
            return builtin.compress(data, level, magic)

    rows = _rows(40, seed=9)
    options = dict(compression="zstd", max_batch_bytes=2000, base_offset=7, producer_id=12, producer_epoch=3,
                   base_sequence=2 ** 31 - 5, is_transactional=True, partition_leader_epoch=4)
    native = kcodec.from_arrow(_table(rows), **options)
    kcodec.register_codec(PythonZstd(), replace=True)
    try:
        ours = kcodec.from_arrow(_table(rows), **options)
    finally:
        kcodec.unregister_codec(4)
    assert len(ours) > 2 and ours == native
    first = _header_fields(ours[0])[9]
    assert [_header_fields(b)[:9] for b in ours][:2] == [(7, 2, 4, 0, 12, 3, 2 ** 31 - 5, True, 4),
                                                         (7 + first, 2, 4, 0, 12, 3, first - 5, True, 4)]


def test_from_arrow_legacy_needs_a_value_column_and_no_key_column():
    with pytest.raises(kcodec.RecordBuilderError, match="^from_arrow needs a 'value' column$"):
        kcodec.from_arrow(pa.table({"key": [b"k"]}), magic=1)
    (blob,) = kcodec.from_arrow(pa.table({"value": [b"a", b"b"]}), magic=1, base_offset=3)
    assert [(r.offset, r.key, r.value) for b in read_batches(blob) for r in b] == [(3, None, b"a"), (4, None, b"b")]


def test_from_arrow_refuses_log_append_time_without_its_time_and_equal_offsets():
    table = pa.table({"value": [b"a", b"b"], "offset": pa.array([5, 5], pa.int64())})
    for codec in ("none", "lz4"):
        with pytest.raises(kcodec.RecordBuilderError, match="^a LOG_APPEND_TIME batch needs log_append_time$"):
            kcodec.from_arrow(table.drop_columns("offset"), compression=codec,
                              timestamp_type=kcodec.TimestampType.LOG_APPEND_TIME)
        with pytest.raises(kcodec.RecordBuilderError, match="must increase strictly"):
            kcodec.from_arrow(table, compression=codec)
        (one,) = kcodec.from_arrow(table.slice(1), compression=codec)
        assert [r.offset for r in next(read_batches(one))] == [5]


def test_second_timestamps_at_the_edges_of_milliseconds():
    from kcodec.arrow.columns import timestamps_ms

    top, bottom = (2 ** 63 - 1) // 1000, -(2 ** 63 // 1000)  # the seconds whose milliseconds fit int64
    got = timestamps_ms(pa.array([top, bottom, 0], pa.timestamp("s")), 3)
    assert got.tolist() == [top * 1000, bottom * 1000, 0]
    for beyond in (top + 1, bottom - 1):  # bottom - 1 wrapped to a large positive time before
        with pytest.raises(kcodec.LimitExceededError, match="timestamp\\('s'\\)"):
            timestamps_ms(pa.array([0, beyond], pa.timestamp("s")), 2)
    assert timestamps_ms(pa.array([], pa.timestamp("s")), 0).tolist() == []


def test_null_timestamps_take_the_current_time_in_every_unit():
    import time

    from kcodec.arrow.columns import timestamps_ms

    for unit, t0, small in (("s", 1_700_000_000, [1000, 2_500_000]), ("ms", T0, [1, 2_500]),
                            ("us", T0 * 1000, [0, 2]), ("ns", T0 * 1_000_000, [0, 0])):
        arr = pa.array([None, t0, None], pa.timestamp(unit))
        before = int(time.time() * 1000)
        got = timestamps_ms(arr, 3)
        after = int(time.time() * 1000)
        assert got[1] == T0, unit
        assert before <= got[0] <= after and before <= got[2] <= after, unit  # a second column got 1000 times it
        assert timestamps_ms(arr, 3, missing=-1).tolist() == [-1, T0, -1]
        assert timestamps_ms(pa.array([1, 2_500], pa.timestamp(unit)), 2).tolist() == small
    table = pa.table({"value": [b"a", b"b"], "timestamp": pa.array([None, 5], pa.timestamp("s"))})
    before = int(time.time() * 1000)
    stamps = [r.timestamp for b in read_batches(b"".join(kcodec.from_arrow(table))) for r in b]
    assert before <= stamps[0] <= int(time.time() * 1000) and stamps[1] == 5000


def test_timestamps_of_whole_milliseconds_and_none():
    import time

    from kcodec.arrow.columns import timestamps_ms

    plain = pa.array([5, -1, 2 ** 40], pa.int64())
    got = timestamps_ms(plain, 3)
    assert got.tolist() == [5, -1, 2 ** 40]
    assert got.ctypes.data == plain.buffers()[1].address  # an int64 column without nulls is not copied
    assert timestamps_ms(pa.array([7, None], pa.int32()), 2, missing=3).tolist() == [7, 3]
    before = int(time.time() * 1000)
    now = timestamps_ms(pa.array([None, 9], pa.int64()), 2)
    assert before <= now[0] <= int(time.time() * 1000) and now[1] == 9 and now.dtype == np.int64
    now = timestamps_ms(None, 2)
    assert before <= now[0] == now[1] <= int(time.time() * 1000) and now.dtype == np.int64
    assert timestamps_ms(None, 3, missing=-1).tolist() == [-1, -1, -1]
    with pytest.raises(kcodec.RecordBuilderError, match="timestamps or whole milliseconds, not string"):
        timestamps_ms(pa.array(["soon"]), 1)


def test_the_column_helpers_take_arrow_layouts_as_they_are():
    from kcodec.arrow import columns as c

    table = pa.table({"v": pa.chunked_array([pa.array([b"ab", b"c"])]),
                      "w": pa.chunked_array([pa.array(["x"]), pa.array([None], pa.string())])})
    assert c.as_table(table) is table
    batch = table.to_batches()[0]
    assert c.as_table(batch).equals(pa.Table.from_batches([batch]))

    class Stream:
        def __arrow_c_stream__(self, requested_schema=None):
            return table.__arrow_c_stream__(requested_schema)

    class Array:
        def __arrow_c_array__(self, requested_schema=None):
            return batch.__arrow_c_array__(requested_schema)

    assert c.as_table(Stream()).equals(table) and c.as_table(Array()).equals(pa.Table.from_batches([batch]))
    with pytest.raises(TypeError, match="not list"):
        c.as_table([1])
    assert c.column(table, "missing") is None
    one = c.column(table, "v")
    assert one.buffers()[2].address == table.column("v").chunk(0).buffers()[2].address  # not copied
    assert c.column(table, "w").to_pylist() == ["x", None]
    for arr in (pa.array([b"a"]), pa.array(["a"]), pa.array([b"a"], pa.large_binary()),
                pa.array(["a"], pa.large_string())):
        assert c.as_binary(arr) is arr
    assert c.as_binary(pa.array([b"ab"], pa.binary(2))).type == pa.large_binary()
    with pytest.raises(kcodec.RecordBuilderError, match="the header key column must be binary or string, not int64"):
        c.as_binary(pa.array([1]), "header key")
    # Offsets from the array's own first row, 32 or 64 bits wide.
    for t in (pa.binary(), pa.large_string()):
        arr = pa.array([b"a", b"bcd", b"", b"ef"], t).slice(1, 2)
        offsets = c.value_offsets(arr, arr.buffers()[1])
        assert offsets.tolist() == [1, 4, 4] and offsets.dtype == (np.int64 if t == pa.large_string() else np.int32)
        validity, offset, spec_offsets, data = c.binary_spec(arr)
        assert validity is None and offset == 1 and spec_offsets.tolist() == [1, 4, 4]
        assert data.address == arr.buffers()[2].address
    nulls = pa.array([b"a", None])
    validity, _, spec_offsets, data = c.binary_spec(nulls)
    assert validity.address == nulls.buffers()[0].address and spec_offsets.tolist() == [0, 1, 1]


def test_header_fields_and_specs():
    from kcodec.arrow import columns as c

    def headers(fields, rows):
        return pa.array(rows, pa.list_(pa.struct([(name, t) for name, t in fields])))

    kv = [("key", pa.string()), ("value", pa.binary())]
    assert c.header_fields(headers(kv, [])) == (0, 1)
    assert c.header_fields(headers(kv[::-1], [])) == (1, 0)
    assert c.header_fields(headers([("a", pa.string()), ("b", pa.binary())], [])) == (0, 1)
    assert c.header_fields(headers([("key", pa.string()), ("b", pa.binary())], [])) == (0, 1)
    assert c.header_fields(headers([("a", pa.binary()), ("key", pa.string())], [])) == (0, 1)
    assert c.header_fields(headers([("a", pa.string()), ("value", pa.binary())], [])) == (0, 1)
    assert c.header_fields(pa.array([], pa.large_list(pa.struct(kv[::-1])))) == (1, 0)
    for bad in (pa.array([1]), pa.array([[1]]), headers(kv + [("more", pa.int8())], []),
                headers(kv[:1], []), pa.array([], pa.list_(pa.string()))):
        with pytest.raises(kcodec.RecordBuilderError, match="list<struct<key: string, value: binary>>"):
            c.header_fields(bad)
    rows = [[{"key": "a", "value": b"1"}], None, [{"key": "bc", "value": None}, {"key": "d", "value": b"23"}]]
    hdrs = headers(kv, rows)
    lists, keys, values = c.header_specs(hdrs)
    assert lists[0].address == hdrs.buffers()[0].address and lists[1] == 0 and lists[2].tolist() == [0, 1, 1, 3]
    assert lists[3] is None
    assert keys[2].tolist() == [0, 1, 3, 4] and values[0] is not None and values[2].tolist() == [0, 1, 1, 3]
    swapped = headers(kv[::-1], [[{"value": b"1", "key": "a"}]])
    assert bytes(c.header_specs(swapped)[1][3]) == b"a"  # the key field, wherever it stands
    lists = c.header_specs(hdrs.slice(2))[0]
    assert lists[0] is None and lists[1] == 2 and lists[2].tolist() == [1, 3]
    # A null header inside a list is refused, unless asked not to; one outside the rows used is not seen.
    entries = pa.StructArray.from_arrays([pa.array(["a", "b", "c"]), pa.array([b"1", b"2", b"3"])],
                                         ["key", "value"], mask=pa.array([True, False, False]))
    holed = pa.ListArray.from_arrays(pa.array([0, 1, 3], pa.int32()), entries)
    with pytest.raises(kcodec.RecordBuilderError, match="Invalid null header found in headers"):
        c.header_specs(holed)
    assert c.header_specs(holed, refuse_null_entries=False)[0][2].tolist() == [0, 1, 3]
    assert c.header_specs(holed.slice(1))[0][2].tolist() == [1, 3]
    tail = pa.ListArray.from_arrays(pa.array([0, 2, 3], pa.int32()), entries.take([1, 2, 0]))
    inner = pa.ListArray.from_arrays(pa.array([0, 1, 3, 4], pa.int32()), entries.take([1, 1, 2, 0])).slice(1, 1)
    assert c.header_specs(inner)[0][2].tolist() == [1, 3]  # the null entry after the rows used is not seen
    assert c.header_specs(tail.slice(0, 1))[0][2].tolist() == [0, 2]
    with pytest.raises(kcodec.RecordBuilderError, match="Invalid null header"):
        c.header_specs(tail.slice(1))


@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_from_arrow_names_the_first_negative_timestamp_other_than_minus_one(codec):
    def table(stamps):
        return pa.table({"value": [b"v"] * len(stamps), "timestamp": pa.array(stamps, pa.int64())})

    with pytest.raises(kcodec.RecordBuilderError, match="^Invalid negative timestamp -5$"):
        kcodec.from_arrow(table([T0, 0, -1, -5, -7]), compression=codec)
    with pytest.raises(kcodec.RecordBuilderError, match="^Invalid negative timestamp -2$"):
        kcodec.from_arrow(table([-2]), compression=codec)
    # -1 is "no timestamp", and 0 the epoch itself
    (blob,) = kcodec.from_arrow(table([-1, 0, -1]), compression=codec)
    assert [r.timestamp for r in next(read_batches(blob))] == [-1, 0, -1]


def test_from_arrow_sequences_from_zero_move_on_with_each_batch():
    rows = _rows(60, seed=6)
    for codec in ("none", "lz4"):
        got = [next(read_batches(b)) for b in kcodec.from_arrow(_table(rows), compression=codec, max_batch_bytes=2000,
                                                                 producer_id=5, producer_epoch=0, base_sequence=0)]
        assert len(got) > 2
        assert [b.base_sequence for b in got] == [b.base_offset for b in got] == \
            [0] + np.cumsum([b.record_count for b in got])[:-1].tolist()


@pytest.mark.parametrize("magic", [0, 1])
def test_from_arrow_legacy_cuts_like_the_builder_and_fills_missing_offsets(magic):
    values = [bytes([65 + i]) * 100 for i in range(12)]
    offsets = [0, None, 2, 3, None, 5, 6, None, 8, 20, 21, 30]
    table = pa.table({"value": values, "offset": pa.array(offsets, pa.int64()),
                      "timestamp": pa.array([T0 + i for i in range(12)], pa.int64())})
    got = kcodec.from_arrow(table, magic=magic, compression="gzip", max_batch_bytes=400)
    filled = [i if o is None else o for i, o in enumerate(offsets)]
    want, b = [], None
    for i, (off, value) in enumerate(zip(filled, values)):
        if b is not None and not b.has_room_for(None, value):
            want.append(bytes(b.build()))
            b = None
        if b is None:
            b = kcodec.batch_builder(magic=magic, compression="gzip", base_offset=off, write_limit=400)
        b.append(None, value, T0 + i, offset=off)
    want.append(bytes(b.build()))
    assert 2 < len(got) < 12 and got == want
    assert [(r.offset, r.value) for blob in got for x in read_batches(blob) for r in x] == list(zip(filled, values))


def test_batch_objects_check_control_records_and_give_pooled_buffers_back():
    from kcodec.errors import InvalidRecordError
    from kcodec.records.builder import RecordBatchBuilder
    from kcodec.records.pool import BufferPool

    lead = RecordBatchBuilder(base_offset=0)
    lead.append(b"a", b"1", 1_700_000_000_000)
    control = RecordBatchBuilder(base_offset=4, is_control=True, producer_id=7, producer_epoch=1)
    control.append_control(key=b"\x00\x00", value=b"")  # a key of 2 bytes, where Kafka needs 4
    data = lead.build() + control.build()
    # batch objects take the general path, which checks a control batch's records as the fast pass does,
    # whether or not they are kept
    for include_control in (False, True):
        with pytest.raises(InvalidRecordError, match="at least 4 bytes, but found only 2"):
            kcodec.to_arrow(read_batches(data), include_control=include_control)
    kept = kcodec.to_arrow(read_batches(data), validate=False)
    assert kept.column("offset").to_pylist() == [0] and kept.column("value").to_pylist() == [b"1"]
    # a compressed batch's records are decompressed into the pool's buffer, given back once copied
    pool = BufferPool()
    packed = b"".join(kcodec.from_arrow(pa.table({"value": [b"v" * 100] * 50}), compression="gzip"))
    table = kcodec.to_arrow(read_batches(packed, pool=pool))
    assert table.column("value").to_pylist() == [b"v" * 100] * 50
    assert pool.cached_bytes() > 0


def test_a_region_the_gather_refuses_is_never_returned_in_part(monkeypatch):
    """Were the record objects ever to accept a region the native gather refuses, to_arrow would still
    raise at the batch, never return the records gathered before the damage."""
    from kcodec.records.batch import RecordBatch

    b = kcodec.RecordBatchBuilder(compression="gzip", base_offset=40)
    for i in range(5):
        b.append(b"k%d" % i, b"v" * i, T0 + i)
    good = bytes(b.build())
    region = bytearray(kcodec.get_codec("gzip").decompress(good[61:]))
    region[-1] ^= 0xFF  # the last record's last header count: damage after four whole records
    payload = kcodec.get_codec("gzip").compress(bytes(region))
    data = bytearray(good[:61] + payload)
    data[8:12] = (len(data) - 12).to_bytes(4, "big")
    monkeypatch.setattr(RecordBatch, "scan", lambda self: None)
    with pytest.raises(kcodec.InvalidRecordError) as err:
        kcodec.to_arrow(bytes(data), validate=False, batch_fields=("batch_position",))
    assert (err.value.message, err.value.position, err.value.batch_offset) == (
        "Found invalid record structure", 0, 40)


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_a_strided_or_transposed_buffer_is_read_as_its_bytes(codec):
    """A buffer with no flat view (a numpy column, a transposed array) is read as its bytes in C order."""
    import gc

    values = [b"%d" % i * 40 for i in range(3000)]
    table = pa.table({"value": pa.array(values), "timestamp": pa.array(range(3000), pa.timestamp("ms"))})
    data = b"".join(kcodec.from_arrow(table, compression=codec, max_batch_bytes=20000))
    grid = np.zeros((len(data), 2), np.uint8)
    grid[:, 0] = np.frombuffer(data, np.uint8)
    strided, column = grid[:, 0], grid[:, :1]
    assert not strided.flags.c_contiguous and not column.flags.c_contiguous
    want = kcodec.to_arrow(data).column("value").to_pylist()
    assert want == values
    for buf in (strided, column):
        for kw in ({}, {"use_threads": False}, {"views": True}, {"batch_fields": ("batch_position",)}):
            got = kcodec.to_arrow(buf, **kw)
            gc.collect()
            assert got.column("value").to_pylist() == values, kw
        assert kcodec.to_arrow([buf, data]).column("value").to_pylist() == values * 2
        assert [b.base_offset for b in kcodec.read_batches(buf)] == [b.base_offset for b in kcodec.read_batches(data)]
