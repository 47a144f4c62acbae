"""Columnar in and out: to_arrow / from_arrow against Java's vectors and the object API."""
from __future__ import annotations

import base64
import datetime as dt

import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

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


@pytest.mark.parametrize("case", [c for c in cases() if not c.endswith("empty_batch_retained")])
def test_every_golden_vector(case):
    data, doc, is_digest = load_case(case)
    if is_digest:
        pytest.skip("digest-only fixture (covered by the object API test)")
    table = kcodec.to_arrow(data, topic="golden", partition=3)
    expected = [r for b in doc["batches"] if not b["isControlBatch"] for r in b["records"]]
    assert table.num_rows == len(expected)
    rows = table.to_pylist()
    types = [b["timestampType"] for b in doc["batches"] if not b["isControlBatch"] for _ in b["records"]]
    tmap = {"CREATE_TIME": 0, "LOG_APPEND_TIME": 1, "NO_TIMESTAMP_TYPE": -1}
    for row, rec, tt in zip(rows, expected, types):
        assert row["offset"] == rec["offset"]
        assert row["key"] == _b(rec["key"]) and row["value"] == _b(rec["value"])
        assert int(row["timestamp"].timestamp() * 1000) == rec["timestamp"]
        assert row["timestampType"] == tmap[tt]
        assert row["topic"] == "golden" and row["partition"] == 3
        if rec["headers"]:
            assert [(h["key"], h["value"]) for h in row["headers"]] == [(k, _b(v)) for k, v in rec["headers"]]
        else:
            assert row["headers"] is None


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
    got = [(r["offset"], r["timestamp"], _b(r["key"]), _b(r["value"])) for b in java["batches"] for r in b["records"]]
    rows = table.to_pylist()
    one = [(r["offset"], int(r["timestamp"].timestamp() * 1000), r["key"], r["value"]) for r in rows]
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
