"""kcodec on real Spark (local[2]): transforms, the kafka-log data source, its writer."""
from __future__ import annotations

import base64

import pytest

import kcodec
from kcodec.log import open_log_dir, rebuild_indexes, segment_file_name, write_partition
from kcodec.records.framing import iter_entries
from oracle_util import load_case, oracle_available, oracle_verify

pa = pytest.importorskip("pyarrow")


def _oracle_records(doc, include_control=False):
    out = []
    for b in doc["batches"]:
        if b["isControlBatch"] and not include_control:
            continue
        for r in b["records"]:
            out.append((r["offset"], r["timestamp"],
                        None if r["key"] is None else base64.b64decode(r["key"]),
                        None if r["value"] is None else base64.b64decode(r["value"]),
                        [(k, None if v is None else base64.b64decode(v)) for k, v in r["headers"]]))
    return out


def _rows(df):
    out = []
    for row in df.orderBy("offset").collect():
        ts = row["timestamp"]
        ms = None if ts is None else int(round(ts.timestamp() * 1000))
        headers = [] if row["headers"] is None else [(h["key"], None if h["value"] is None else bytes(h["value"]))
                                                     for h in row["headers"]]
        out.append((row["offset"], ms,
                    None if row["key"] is None else bytes(row["key"]),
                    None if row["value"] is None else bytes(row["value"]), headers))
    return out


def _segment_dir(tmp_path, name, topic="golden", partition=0):
    data, doc, _ = load_case(name)
    d = tmp_path / f"{topic}-{partition}"
    d.mkdir(parents=True)
    log = d / segment_file_name(0)
    log.write_bytes(data)
    rebuild_indexes(log)
    return d, doc


@pytest.mark.parametrize("case", ["segment_mixed", "segment_v2_txn"])
def test_data_source_reads_oracle_segments(spark, tmp_path, case):
    d, doc = _segment_dir(tmp_path, case)
    df = spark.read.format("kafka-log").load(str(tmp_path))
    assert [f.name for f in df.schema.fields] == ["key", "value", "topic", "partition", "offset",
                                                  "timestamp", "timestampType", "headers"]
    expected = _oracle_records(doc)
    # v0 records have no timestamp: Spark shows -1 ms as 1969-12-31T23:59:59.999
    got = _rows(df)
    assert len(got) == len(expected)
    assert [g[0] for g in got] == [e[0] for e in expected]
    assert [(g[2], g[3], g[4]) for g in got] == [(e[2], e[3], e[4]) for e in expected]
    assert [g[1] for g in got] == [e[1] for e in expected]
    assert {r["topic"] for r in df.select("topic").distinct().collect()} == {"golden"}


def test_data_source_splits_and_offset_options(spark, tmp_path):
    d, doc = _segment_dir(tmp_path, "segment_v2_txn")
    expected = [e[0] for e in _oracle_records(doc)]
    from kcodec.spark.datasource import KafkaLogReader
    assert len(KafkaLogReader({"path": str(d), "splitBytes": "50000"}).partitions()) > 3
    df = spark.read.format("kafka-log").option("splitBytes", 50_000).load(str(d))
    assert sorted(r["offset"] for r in df.select("offset").collect()) == expected
    lo, hi = expected[1000], expected[3000]
    sub = (spark.read.format("kafka-log").option("startingOffset", lo).option("endingOffset", hi)
           .option("splitBytes", 50_000).load(str(d)))
    assert sorted(r["offset"] for r in sub.select("offset").collect()) == [o for o in expected if lo <= o < hi]
    records = _oracle_records(doc)
    t_lo, t_hi = sorted(e[1] for e in records)[500], sorted(e[1] for e in records)[4000]
    by_time = (spark.read.format("kafka-log").option("startingTimestamp", t_lo).option("endingTimestamp", t_hi)
               .load(str(d)))
    assert sorted(r["offset"] for r in by_time.select("offset").collect()) == sorted(
        e[0] for e in records if t_lo <= e[1] < t_hi)


def test_data_source_on_written_log_dir(spark, tmp_path):
    data, doc, _ = load_case("segment_v2_txn")
    batches = [data[e.position:e.position + e.size] for e in iter_entries(data)]
    write_partition(tmp_path / "orders-0", batches[:75], segment_bytes=100_000)
    write_partition(tmp_path / "orders-1", batches[75:], segment_bytes=100_000)
    df = spark.read.format("kafka-log").load(str(tmp_path))
    counts = {r["partition"]: r["count"] for r in df.groupBy("partition").count().collect()}
    exp = _oracle_records(doc)
    split_offset = doc["batches"][75]["baseOffset"]
    assert counts == {0: sum(1 for e in exp if e[0] < split_offset), 1: sum(1 for e in exp if e[0] >= split_offset)}


def test_corrupt_batch_names_file_and_position(spark, tmp_path):
    d, doc = _segment_dir(tmp_path, "segment_mixed")
    log = d / segment_file_name(0)
    raw = bytearray(log.read_bytes())
    pos = doc["batches"][50]["position"]
    raw[pos + 40] ^= 0x55
    log.write_bytes(bytes(raw))
    from pyspark.errors import PythonException
    with pytest.raises(PythonException) as info:
        spark.read.format("kafka-log").load(str(d)).collect()
    text = str(info.value)
    assert str(log) in text and "corrupt" in text.lower()
    assert f"at byte {pos}" in text


def test_decode_and_encode_round_trip(spark, tmp_path):
    data, doc, _ = load_case("segment_v2_txn")
    entries = list(iter_entries(data))
    raw = spark.createDataFrame([(bytes(data[e.position:e.position + e.size]),) for e in entries[:40]],
                                "value binary")
    decoded = kcodec.spark.decode(raw, "value", topic="t", partition=0)
    rows = _rows(decoded)
    exp = [e for e in _oracle_records(doc) if e[0] <= doc["batches"][39]["lastOffset"]]
    assert rows == exp
    encoded = kcodec.spark.encode(decoded, topic="t", compression="zstd", batch_bytes=4096, partitions=3)
    out = encoded.collect()
    assert {r["partition"] for r in out} <= {0, 1, 2}
    assert sum(r["record_count"] for r in out) == len(exp)
    keys_by_part = {}
    for r in out:
        for batch in kcodec.read_batches(bytes(r["batch"])):
            assert batch.compression == kcodec.CompressionType.ZSTD
            for rec in batch:
                keys_by_part.setdefault(r["partition"], []).append(rec.key)
    for p, keys in keys_by_part.items():
        parts = kcodec.partition_for_keys([k for k in keys if k is not None], 3)
        assert set(parts.tolist()) <= {p}
    again = kcodec.spark.decode(encoded.select("batch"), "batch", topic="t", partition=0)
    assert sorted((r[2], r[3]) for r in _rows(again)) == sorted((e[2], e[3]) for e in exp)


def test_writer_produces_java_readable_segments(spark, tmp_path):
    d, doc = _segment_dir(tmp_path / "in", "segment_v2_txn")
    df = spark.read.format("kafka-log").load(str(d))
    out = tmp_path / "out"
    kcodec.spark.write_log(df, str(out), compression="lz4", batchBytes=8192, segmentBytes=200_000)
    parts = open_log_dir(out)
    assert list(parts) == [("golden", 0)]
    seg_files = [s.path for s in parts[("golden", 0)].segments]
    assert len(seg_files) >= 2
    assert not [p for p in out.iterdir() if p.name.startswith(".")]
    expected = _oracle_records(doc)
    back = _rows(spark.read.format("kafka-log").load(str(out)))
    assert back == expected
    if oracle_available():
        for f in seg_files:
            rc, got = oracle_verify(f.read_bytes())
            assert rc == 0, got
        rc, got = oracle_verify(b"".join(f.read_bytes() for f in seg_files))
        java = [(r["offset"], r["timestamp"]) for b in got["batches"] for r in b["records"]]
        assert java == [(e[0], e[1]) for e in expected]
