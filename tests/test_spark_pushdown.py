"""The kafka-log source reads what a query needs: the ``columns`` option and pushed filters (real Spark)."""
from __future__ import annotations

import datetime as dt

import pytest

import kcodec
from kcodec.log import open_log_dir, write_partition

pa = pytest.importorskip("pyarrow")
np = pytest.importorskip("numpy")
pytest.importorskip("pyspark")

# the data source's reader is PySpark's, even where a test calls it without a session
pytestmark = pytest.mark.spark

T0 = 1_700_000_000_000  # ms
UTC = dt.timezone.utc


def _stamp(ms: int) -> dt.datetime:
    return dt.datetime.fromtimestamp(ms / 1000, UTC)


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """Three partitions of two topics, several segments each; record i has timestamp T0 + i s."""
    root = tmp_path_factory.mktemp("pushdown")
    for name, n in (("clicks-0", 400), ("clicks-1", 250), ("views-0", 300)):
        table = pa.table({"key": pa.array([b"k%d" % i for i in range(n)], pa.binary()),
                          "value": pa.array([b"v" * (i % 50) for i in range(n)], pa.binary()),
                          "offset": pa.array(np.arange(n), pa.int64()),
                          "timestamp": pa.array(T0 + np.arange(n) * 1000, pa.int64())})
        write_partition(root / name, kcodec.from_arrow(table, max_batch_bytes=512), segment_bytes=4096,
                        index_interval_bytes=512)  # every batch indexed
    return root


def _tuples(df):
    # collect() gives naive local datetimes; .timestamp() turns them back into the epoch
    return sorted((r["topic"], r["partition"], r["offset"], round(r["timestamp"].timestamp() * 1000),
                   bytes(r["key"]), bytes(r["value"])) for r in df.collect())


@pytest.fixture(scope="module")
def everything(spark, log_dir):
    return _tuples(spark.read.format("kafka-log").load(str(log_dir)))


def test_pushed_filters_give_the_rows_of_the_unfiltered_read(spark, log_dir, everything):
    from pyspark.sql import functions as F

    assert spark.conf.get("spark.sql.python.filterPushdown.enabled") == "true"  # set by register()

    col = F.col
    ms = [T0 + s * 1000 for s in (0, 120, 121, 260)]
    t = [_stamp(m) for m in ms]
    cases = [
        (col("offset") == 7, lambda r: r[2] == 7),
        (col("offset") > 150, lambda r: r[2] > 150),
        (col("offset") >= 150, lambda r: r[2] >= 150),
        (col("offset") < 40, lambda r: r[2] < 40),
        (col("offset") <= 40, lambda r: r[2] <= 40),
        (col("offset").isin(3, 99, 260, 399), lambda r: r[2] in (3, 99, 260, 399)),
        (col("timestamp") == t[1], lambda r: r[3] == ms[1]),
        (col("timestamp") > t[1], lambda r: r[3] > ms[1]),
        (col("timestamp") >= t[2], lambda r: r[3] >= ms[2]),
        (col("timestamp") < t[2], lambda r: r[3] < ms[2]),
        (col("timestamp") <= t[1], lambda r: r[3] <= ms[1]),
        (col("timestamp").isin(t[0], t[3]), lambda r: r[3] in (ms[0], ms[3])),
        (col("topic") == "views", lambda r: r[0] == "views"),
        (col("topic").isin("clicks"), lambda r: r[0] == "clicks"),
        (col("partition") > 0, lambda r: r[1] > 0),
        (col("partition") <= 0, lambda r: r[1] <= 0),
        (col("partition").isin(1), lambda r: r[1] == 1),
        # pushed and unpushed together; the key test stays Spark's
        ((col("topic") == "clicks") & (col("offset") >= 100) & (col("offset") < 200)
         & (col("key") != b"k150"),
         lambda r: r[0] == "clicks" and 100 <= r[2] < 200 and r[4] != b"k150"),
    ]
    df = spark.read.format("kafka-log").load(str(log_dir))
    for condition, keep in cases:
        assert _tuples(df.filter(condition)) == [r for r in everything if keep(r)], condition
    # combined with the reader's own options
    opt = spark.read.format("kafka-log").option("startingOffset", 50).option("endingOffset", 300).load(str(log_dir))
    assert _tuples(opt.filter((col("offset") > 280) | (col("offset") < 0))) == [
        r for r in everything if 280 < r[2] < 300]
    assert _tuples(opt.filter(col("offset") <= 60)) == [r for r in everything if 50 <= r[2] <= 60]


def _reader(log_dir, **options):
    from kcodec.spark.datasource import KafkaLogReader

    return KafkaLogReader(dict(options, path=str(log_dir)))


def _planned_segments(reader) -> set:
    return {(p.topic, p.partition, p.path.rsplit("/", 1)[-1]) for p in reader.partitions()}


def _segments_holding(log_dir, offsets) -> set:
    out = set()
    for (topic, partition), part in open_log_dir(str(log_dir)).items():
        segs = part.segments
        for i, seg in enumerate(segs):
            nxt = segs[i + 1].base_offset if i + 1 < len(segs) else None
            if any(seg.base_offset <= o and (nxt is None or o < nxt) for o in offsets):
                out.add((topic, partition, seg.url.rsplit("/", 1)[-1]))
    return out


def test_offset_and_timestamp_filters_plan_only_the_segments_they_need(log_dir):
    from pyspark.sql.datasource import EqualTo, GreaterThanOrEqual, In, IsNotNull, LessThan, StringStartsWith

    everything = _planned_segments(_reader(log_dir))
    assert len(everything) >= 9  # several segments in each of the three partitions

    reader = _reader(log_dir)
    kept = [IsNotNull(("key",)), StringStartsWith(("topic",), "cl")]
    handled = [EqualTo(("offset",), 230), EqualTo(("topic",), "clicks")]
    assert list(reader.pushFilters(kept + handled)) == kept
    planned = _planned_segments(reader)
    assert planned == {s for s in _segments_holding(log_dir, [230]) if s[0] == "clicks"}
    assert len(planned) == 2 < len(everything)
    # and inside the segment only the bytes from the batch holding offset 230 up to the next indexed batch
    rows = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    assert rows["offset"].to_pylist() == [230, 230]

    reader = _reader(log_dir)
    assert list(reader.pushFilters([In(("offset",), (5, 10)), EqualTo(("partition",), 1)])) == []
    assert _planned_segments(reader) == {s for s in _segments_holding(log_dir, [5, 10]) if s[1] == 1}

    # A lower timestamp bound skips the segments the time indexes prove older.
    reader = _reader(log_dir)
    assert list(reader.pushFilters([GreaterThanOrEqual(("timestamp",), _stamp(T0 + 280_000))])) == []
    # (a partition's last segment stays: no index records where it ends)
    last = {(t, p, part.segments[-1].url.rsplit("/", 1)[-1]) for (t, p), part in open_log_dir(str(log_dir)).items()}
    assert _planned_segments(reader) == _segments_holding(log_dir, range(280, 400)) | last
    rows = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])
    assert sorted(rows["offset"].to_pylist()) == sorted([*range(280, 300), *range(280, 400)])

    # Literals of another type, and tests of other columns, stay Spark's.
    reader = _reader(log_dir)
    other = [LessThan(("offset",), 2.5), EqualTo(("timestamp",), 5), EqualTo(("timestampType",), 0),
             In(("topic",), ("a", 1))]
    assert list(reader.pushFilters(other)) == other
    assert _planned_segments(reader) == everything


def test_columns_option_yields_exactly_those_columns(spark, log_dir, everything):
    full = spark.read.format("kafka-log").load(str(log_dir))
    kv = spark.read.format("kafka-log").option("columns", "key,value").load(str(log_dir))
    assert kv.columns == ["key", "value"]
    assert sorted(tuple(bytes(x) for x in r) for r in kv.collect()) == sorted(
        (bytes(r["key"]), bytes(r["value"])) for r in full.select("key", "value").collect())
    picked = spark.read.format("kafka-log").option("columns", "offset, topic").load(str(log_dir))
    assert picked.columns == ["offset", "topic"]
    assert picked.schema == full.select("offset", "topic").schema
    assert sorted((r["topic"], r["offset"]) for r in picked.filter("offset >= 390").collect()) == sorted(
        (r[0], r[2]) for r in everything if r[2] >= 390)
    for bad in ("key,nope", "key,KEY"):
        with pytest.raises(ValueError, match="columns"):
            _reader(log_dir, columns=bad)


def test_timestamp_literals_between_milliseconds_keep_exactly_the_matching_rows(log_dir):
    from pyspark.sql.datasource import EqualTo, GreaterThan, GreaterThanOrEqual, In, LessThan, LessThanOrEqual

    def rows(reader):
        table = pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)],
                                      schema=kcodec.kafka_schema())
        return sorted(zip(table["topic"].to_pylist(), table["offset"].to_pylist()))

    full = pa.Table.from_batches([b for p in _reader(log_dir).partitions() for b in _reader(log_dir).read(p)])
    stamps = list(zip(full["topic"].to_pylist(), full["offset"].to_pylist(),
                      full["timestamp"].cast(pa.int64()).to_pylist()))  # microseconds
    ops = {EqualTo: lambda a, b: a == b, GreaterThan: lambda a, b: a > b, GreaterThanOrEqual: lambda a, b: a >= b,
           LessThan: lambda a, b: a < b, LessThanOrEqual: lambda a, b: a <= b}
    for micros in (T0 * 1000 + 120_000_000 + d for d in (-1, 0, 1, 500)):
        literal = dt.datetime(1970, 1, 1, tzinfo=UTC) + dt.timedelta(microseconds=micros)
        for cls, test in ops.items():
            reader = _reader(log_dir, startingOffset=100)
            assert list(reader.pushFilters([cls(("timestamp",), literal)])) == []
            assert rows(reader) == sorted((t, o) for t, o, us in stamps if o >= 100 and test(us, micros)), (cls, micros)
        reader = _reader(log_dir)
        assert list(reader.pushFilters([In(("timestamp",), (literal, _stamp(T0)))])) == []
        assert rows(reader) == sorted((t, o) for t, o, us in stamps if us in (micros, T0 * 1000))


def test_columns_with_or_without_headers_decode_them_exactly_when_named(tmp_path):
    table = pa.table({"key": pa.array([b"k%d" % i for i in range(20)], pa.binary()),
                      "value": pa.array([b"v%d" % i for i in range(20)], pa.binary()),
                      "headers": [[{"key": "h", "value": b"%d" % i}] if i % 3 else None for i in range(20)]})
    write_partition(tmp_path / "t-0", kcodec.from_arrow(table, max_batch_bytes=200))

    def read(columns):
        reader = _reader(tmp_path, columns=columns)
        return pa.Table.from_batches([b for p in reader.partitions() for b in reader.read(p)])

    named = read("headers,value")
    assert named.column_names == ["headers", "value"]
    assert named["headers"].to_pylist() == [[{"key": "h", "value": b"%d" % i}] if i % 3 else None for i in range(20)]
    assert read("value,key").to_pydict() == {"value": table["value"].to_pylist(), "key": table["key"].to_pylist()}
