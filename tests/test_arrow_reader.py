"""kcodec.read_arrow: a log as a stream of Arrow batches, read by pyarrow, DuckDB and Polars."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")

import kcodec  # noqa: E402
from kcodec.errors import CorruptDataError, CorruptRecordError, KcodecError, LogNotFoundError  # noqa: E402
from kcodec.log import LogWriter, RecordRange, open_log_dir, rebuild_indexes  # noqa: E402
from oracle_util import load_case  # noqa: E402

T0 = 1_700_000_000_000
CODECS = ("none", "zstd", "none", "lz4", "gzip")
# (topic, partition, records); folder names sort "clicks-10" before "clicks-2", the stream must not
PARTITIONS = (("orders", 0, 3000), ("orders", 1, 2400), ("clicks", 2, 1800), ("clicks", 10, 1800))


def _records(n: int, seed: int) -> "pa.Table":
    rng = np.random.default_rng(seed)
    sizes = rng.integers(0, 120, n)
    values = [rng.bytes(int(s) // 2) * 2 for s in sizes]  # half compressible
    # timestamps run forward with jitter, so they are not in offset order (as in real logs)
    stamps = T0 + np.arange(n, dtype=np.int64) * 10 + rng.integers(-400, 400, n)
    headers = [[{"key": "h", "value": b"%d" % i}] if i % 7 == 0 else None for i in range(n)]
    return pa.table({"key": [b"k%d" % (i % 97) for i in range(n)], "value": values,
                     "timestamp": pa.array(stamps, pa.int64()),
                     "headers": pa.array(headers, kcodec.kafka_schema().field("headers").type)})


def _marker(offset: int, ts: int) -> bytes:
    b = kcodec.RecordBatchBuilder(magic=2, base_offset=offset, producer_id=7, producer_epoch=0,
                                  is_transactional=True, is_control=True)
    b.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 0), timestamp=ts)
    return bytes(b.build())


def _write_partition(folder, table, seed: int) -> None:
    """Batches of several codecs, a commit marker now and then, small segments."""
    with LogWriter(folder, segment_bytes=30_000, index_interval_bytes=1000) as w:
        row, offset, step = 0, 0, 0
        while row < table.num_rows:
            part = table.slice(row, 50 + (seed * 31 + step * 17) % 150)
            codec = CODECS[(seed + step) % len(CODECS)]
            for batch in kcodec.from_arrow(part, compression=codec, base_offset=offset, max_batch_bytes=2000):
                w.append(batch)
            row += part.num_rows
            offset += part.num_rows
            if step % 5 == 4:  # a control batch takes one offset
                w.append(_marker(offset, int(part["timestamp"][-1].as_py())))
                offset += 1
            step += 1


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("logs")
    for seed, (topic, partition, n) in enumerate(PARTITIONS):
        _write_partition(root / f"{topic}-{partition}", _records(n, seed), seed)
    (root / "meta.properties").write_text("version=0\n")
    return root


def _whole(path, include_control=False, **only):
    """Every segment converted in one to_arrow call each, in (topic, partition) order."""
    tables = []
    for (topic, partition), part in sorted(open_log_dir(path).items()):
        if only.get("topics") is not None and topic not in only["topics"]:
            continue
        if only.get("partitions") is not None and partition not in only["partitions"]:
            continue
        for seg in part.segments:
            data = seg.path.read_bytes()
            tables.append(kcodec.to_arrow(data, topic=topic, partition=partition,
                                          include_control=include_control, use_threads=False))
    return pa.concat_tables(tables)


def _brute_force(table, start_offset=None, end_offset=None, start_timestamp=None, end_timestamp=None):
    offsets = table["offset"].to_numpy()
    stamps = table["timestamp"].cast(pa.int64()).to_numpy() // 1000
    keep = np.ones(table.num_rows, bool)
    if start_offset is not None:
        keep &= offsets >= start_offset
    if end_offset is not None:
        keep &= offsets < end_offset
    if start_timestamp is not None:
        keep &= stamps >= start_timestamp
    if end_timestamp is not None:
        keep &= stamps < end_timestamp
    return table.filter(pa.array(keep))


def test_log_has_many_segments_and_indexes(log_dir):
    parts = open_log_dir(log_dir)
    assert len(parts) == 4
    for part in parts.values():
        assert len(part.segments) >= 3
        assert all(len(seg.offset_index) >= 6 and len(seg.time_index) >= 3 for seg in part.segments[:-1])


@pytest.mark.parametrize("use_threads", [False, True])
def test_whole_directory_equals_to_arrow(log_dir, use_threads):
    reader = kcodec.read_arrow(log_dir, chunk_bytes=10_000, use_threads=use_threads)
    assert isinstance(reader, pa.RecordBatchReader) and hasattr(reader, "__arrow_c_stream__")
    assert reader.schema == kcodec.kafka_schema()
    got = reader.read_all()
    expected = _whole(log_dir)
    assert got.equals(expected)
    order = got.select(["topic", "partition"]).to_pylist()
    firsts = [r for i, r in enumerate(order) if i == 0 or r != order[i - 1]]
    assert firsts == [{"topic": t, "partition": p} for t, p in
                      [("clicks", 2), ("clicks", 10), ("orders", 0), ("orders", 1)]]


def test_partition_folder_and_segment_file(log_dir):
    folder = log_dir / "orders-1"
    assert kcodec.read_arrow(folder).read_all().equals(_whole(log_dir, topics={"orders"}, partitions={1}))
    seg = sorted(folder.glob("*.log"))[1]
    expected = kcodec.to_arrow(seg.read_bytes(), topic="orders", partition=1)
    assert kcodec.read_arrow(seg, chunk_bytes=5000).read_all().equals(expected)
    # a segment outside a <topic>-<partition> folder has no topic or partition
    lone = log_dir.parent / "lone"
    lone.mkdir(exist_ok=True)
    shutil.copy(seg, lone / seg.name)
    got = kcodec.read_arrow(lone / seg.name).read_all()
    assert got.equals(kcodec.to_arrow(seg.read_bytes()))
    assert got["topic"].null_count == got.num_rows


def test_control_records(log_dir):
    without = kcodec.read_arrow(log_dir).read_all()
    with_control = kcodec.read_arrow(log_dir, include_control=True).read_all()
    assert with_control.equals(_whole(log_dir, include_control=True))
    assert with_control.num_rows > without.num_rows


@pytest.mark.parametrize("case", ["segment_mixed", "segment_v2_txn"])
def test_segments_written_by_java(tmp_path, case):
    """The oracle's segments (Java client; v0, v1 and v2, transactions): same rows as one to_arrow."""
    data, _, _ = load_case(case)
    log = tmp_path / "golden-3" / "00000000000000000000.log"
    log.parent.mkdir()
    log.write_bytes(data)
    rebuild_indexes(log)
    expected = kcodec.to_arrow(data, topic="golden", partition=3, include_control=True)
    got = kcodec.read_arrow(tmp_path, chunk_bytes=20_000, include_control=True).read_all()
    assert got.equals(expected)
    middle = int(expected["offset"][expected.num_rows // 2].as_py())
    assert kcodec.read_arrow(log, start_offset=middle).read_all().equals(
        _brute_force(kcodec.to_arrow(data, topic="golden", partition=3), start_offset=middle))


def _kafka_batches(log_dir):
    """{(topic, partition): {base offset: last offset}} of the non-control batches."""
    out = {}
    for (topic, partition), part in open_log_dir(log_dir).items():
        spans = out.setdefault((topic, partition), {})
        for seg in part.segments:
            for batch in kcodec.read_batches(seg.path.read_bytes()):
                if not batch.is_control:
                    spans[batch.base_offset] = batch.last_offset
    return out


def test_chunks_hold_whole_kafka_batches(log_dir):
    spans = _kafka_batches(log_dir)
    chunks = list(kcodec.read_arrow(log_dir, chunk_bytes=8000, use_threads=False))
    total = sum(os.path.getsize(p) for p in log_dir.glob("*/*.log"))
    assert len(chunks) >= total // 8000 // 2
    for chunk in chunks:
        (topic,), (partition,) = chunk["topic"].unique().to_pylist(), chunk["partition"].unique().to_pylist()
        offsets = chunk["offset"].to_numpy()
        batch_spans = spans[(topic, partition)]
        # starts at a batch's first record, ends at a batch's last, and holds every record between
        assert int(offsets[0]) in batch_spans
        assert int(offsets[-1]) in set(batch_spans.values())
        firsts = [o for o in batch_spans if offsets[0] <= o <= offsets[-1]]
        assert sum(batch_spans[o] - o + 1 for o in firsts) == len(offsets)


FILTERS = [
    {"start_offset": 1234},
    {"end_offset": 777},
    {"start_offset": 500, "end_offset": 1501},
    {"start_offset": 5000},
    {"start_offset": 900, "end_offset": 900},
    {"start_timestamp": T0 + 12_345},
    {"end_timestamp": T0 + 4_000},
    {"start_timestamp": T0 + 5_000, "end_timestamp": T0 + 9_000},
    {"start_offset": 100, "start_timestamp": T0 + 8_000, "end_offset": 2500},
    {"start_timestamp": T0 + 10_000_000},
    # bounds whose microseconds pass int64 (the column's unit): every row, or none, as their milliseconds say
    {"start_timestamp": (1 << 63) - 1},
    {"end_timestamp": -(1 << 63)},
    {"start_timestamp": -(1 << 63), "end_timestamp": (1 << 63) - 1},
]


@pytest.mark.parametrize("filters", FILTERS)
def test_filters_match_brute_force(log_dir, filters):
    got = kcodec.read_arrow(log_dir, chunk_bytes=6000, **filters).read_all()
    expected = _brute_force(_whole(log_dir), **filters)
    assert got.equals(expected)


@pytest.mark.parametrize("topics,partitions", [("orders", None), (["clicks"], [10]), (None, 0),
                                               (None, {1, 2}), ("nothing", None)])
def test_topic_and_partition_filters(log_dir, topics, partitions):
    got = kcodec.read_arrow(log_dir, topics=topics, partitions=partitions).read_all()
    ts = None if topics is None else ({topics} if isinstance(topics, str) else set(topics))
    ps = None if partitions is None else ({partitions} if isinstance(partitions, int) else set(partitions))
    whole = _whole(log_dir)
    keep = [(ts is None or t in ts) and (ps is None or p in ps)
            for t, p in zip(whole["topic"].to_pylist(), whole["partition"].to_pylist())]
    assert got.equals(whole.filter(pa.array(keep)))


def test_start_is_located_through_the_indexes(log_dir):
    """Bytes before the start the indexes give are never read: damage there does not matter."""
    part = open_log_dir(log_dir)[("orders", 0)]
    seg = part.segments[1]
    wanted = RecordRange(start_offset=seg.offset_index.offsets[5] + 1)
    assert wanted.segments(part) == part.segments[1:]
    start, end = wanted.byte_range(seg)
    assert start == seg.offset_index.positions[5] and end == seg.size

    # the time index entry (T, O): nothing up to offset O is later than T
    by_time = RecordRange(start_timestamp=int(seg.time_index.entries["timestamp"][2]) + 1)
    older = seg.base_offset + int(seg.time_index.entries["relative_offset"][2])
    assert by_time.byte_range(seg)[0] == seg.offset_index.lookup(older + 1).position > 0

    stamps = _whole(log_dir, topics={"orders"}, partitions={0})

    copy = log_dir.parent / "damaged" / "orders-0"
    shutil.copytree(part.path, copy)
    victim = copy / seg.path.name
    data = bytearray(victim.read_bytes())
    data[0:start] = b"\xff" * start
    victim.write_bytes(bytes(data))
    (copy / part.segments[0].path.name).write_bytes(b"\xff" * 100)
    expected = _brute_force(stamps, start_offset=wanted.start_offset)
    assert kcodec.read_arrow(copy, start_offset=wanted.start_offset).read_all().equals(expected)
    with pytest.raises(KcodecError):
        kcodec.read_arrow(copy).read_all()


def test_end_offset_stops_early(log_dir):
    part = open_log_dir(log_dir)[("orders", 0)]
    seg = part.segments[0]
    end_offset = int(seg.offset_index.offsets[2]) + 1
    start, end = RecordRange(end_offset=end_offset).byte_range(seg)
    assert start == 0 and end == seg.offset_index.positions[3]
    assert RecordRange(end_offset=end_offset).segments(part) == [seg]


def test_segments_without_indexes_are_cut_at_batch_headers(log_dir, tmp_path):
    copy = tmp_path / "orders-0"
    shutil.copytree(log_dir / "orders-0", copy)
    for index in copy.glob("*.*index"):
        index.unlink()
    chunks = list(kcodec.read_arrow(copy, chunk_bytes=5000, use_threads=False))
    assert len(chunks) > len(list(copy.glob("*.log")))
    assert pa.Table.from_batches(chunks).equals(_whole(log_dir, topics={"orders"}, partitions={0}))
    got = kcodec.read_arrow(copy, start_offset=1500, start_timestamp=T0 + 20_000).read_all()
    assert got.equals(_brute_force(_whole(log_dir, topics={"orders"}, partitions={0}), start_offset=1500,
                                   start_timestamp=T0 + 20_000))


def test_duckdb_queries_the_stream(log_dir):
    duckdb = pytest.importorskip("duckdb")
    expected = _whole(log_dir)
    reader = kcodec.read_arrow(log_dir, chunk_bytes=20_000)  # noqa: F841 (DuckDB finds it by its name)
    rows = duckdb.sql('select topic, partition, count(*), sum(octet_length(value)), max("offset") '
                      "from reader group by all order by all").fetchall()
    sizes = pa.compute.binary_length(expected["value"])
    want = (expected.append_column("size", sizes)
            .group_by(["topic", "partition"]).aggregate([("offset", "count"), ("size", "sum"), ("offset", "max")])
            .sort_by([("topic", "ascending"), ("partition", "ascending")]))
    assert rows == [(r["topic"], r["partition"], r["offset_count"], r["size_sum"], r["offset_max"])
                    for r in want.to_pylist()]

    filtered = kcodec.read_arrow(log_dir, start_timestamp=T0 + 5_000, topics="orders")
    got = duckdb.from_arrow(filtered).filter("key = 'k5'::BLOB").aggregate("count(*)").fetchall()[0][0]
    brute = _brute_force(expected, start_timestamp=T0 + 5_000)
    assert got == sum(1 for t, k in zip(brute["topic"].to_pylist(), brute["key"].to_pylist())
                      if t == "orders" and k == b"k5")


def test_polars_reads_the_stream(log_dir):
    pl = pytest.importorskip("polars")
    expected = _whole(log_dir)
    frame = pl.from_arrow(kcodec.read_arrow(log_dir, chunk_bytes=20_000))
    assert frame.height == expected.num_rows
    for name in ("offset", "key", "value", "partition"):
        assert frame[name].to_list() == expected[name].to_pylist()
    sizes = (frame.lazy().filter(pl.col("topic") == "clicks")
             .group_by("partition").agg(pl.col("value").bin.size().sum().alias("bytes"))
             .sort("partition").collect())
    clicks = expected.filter(pa.compute.equal(expected["topic"], "clicks"))
    want = {}
    for p, v in zip(clicks["partition"].to_pylist(), clicks["value"].to_pylist()):
        want[p] = want.get(p, 0) + len(v)
    assert sizes.rows() == sorted(want.items())


def test_missing_path(tmp_path):
    with pytest.raises(LogNotFoundError) as err:
        kcodec.read_arrow(tmp_path / "nowhere")
    assert str(tmp_path / "nowhere") in str(err.value)
    assert isinstance(err.value, FileNotFoundError)
    with pytest.raises(LogNotFoundError, match="00000000000000000000.log"):
        kcodec.read_arrow(tmp_path / "t-0" / "00000000000000000000.log")


def test_not_a_log(tmp_path):
    (tmp_path / "notes.txt").write_text("hello")
    with pytest.raises(CorruptDataError, match="notes.txt"):
        kcodec.read_arrow(tmp_path / "notes.txt")
    with pytest.raises(CorruptDataError, match=str(tmp_path)):
        kcodec.read_arrow(tmp_path)
    with pytest.raises(ValueError):
        kcodec.read_arrow(tmp_path, chunk_bytes=0)


def test_truncated_tail_names_the_file(log_dir, tmp_path):
    copy = tmp_path / "orders-0"
    shutil.copytree(log_dir / "orders-0", copy)
    last = sorted(copy.glob("*.log"))[-1]
    size = last.stat().st_size
    with open(last, "r+b") as f:
        f.truncate(size - 10)
    with pytest.raises(CorruptRecordError) as err:
        kcodec.read_arrow(copy).read_all()
    assert err.value.source == str(last)
    assert str(last) in str(err.value)
    # an earlier segment cut short inside a run (not at its end) is found too
    first = sorted(copy.glob("*.log"))[0]
    data = first.read_bytes()
    first.write_bytes(data[:len(data) // 2])
    with pytest.raises(CorruptRecordError, match=first.name):
        kcodec.read_arrow(copy, chunk_bytes=1 << 20).read_all()


def test_damaged_batch_names_the_file_and_byte(log_dir, tmp_path):
    copy = tmp_path / "orders-1"
    shutil.copytree(log_dir / "orders-1", copy)
    seg = sorted(copy.glob("*.log"))[1]
    data = bytearray(seg.read_bytes())
    data[2000] ^= 0xFF
    seg.write_bytes(bytes(data))
    with pytest.raises(KcodecError) as err:
        kcodec.read_arrow(copy, chunk_bytes=4096).read_all()
    assert err.value.source == str(seg) and err.value.position is not None


def _mapped(folder) -> list:
    with open("/proc/self/maps") as f:
        return [line for line in f if str(folder) in line]


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc/self/maps")
def test_segments_are_unmapped_after_reading(log_dir):
    import gc

    folder = log_dir / "orders-0"
    reader = kcodec.read_arrow(folder, chunk_bytes=5000)
    assert reader.read_next_batch().num_rows
    assert len(_mapped(folder)) == 1  # one segment at a time
    for _ in reader:
        assert len(_mapped(folder)) <= 1
    assert _mapped(folder) == []
    reader = kcodec.read_arrow(folder, chunk_bytes=5000)
    reader.read_next_batch()
    reader.close()
    del reader
    gc.collect()
    assert _mapped(folder) == []


def test_memory_stays_bounded_over_a_gibibyte(tmp_path):
    """A full pass over 1.1 GiB of log (two ~560 MiB segments) stays under 400 MB above the
    interpreter's own memory (measured: about 125 MB with 16 MiB runs; about 670 MB if the
    mapped pages of converted runs were kept)."""
    # the bench script beside tests/ (in a checkout or an unpacked sdist), run against the kcodec
    # these tests import; from tmp_path, where no source folder can stand in for it
    script = Path(__file__).resolve().parents[1] / "bench" / "read_arrow.py"
    out = subprocess.run([sys.executable, str(script), "--json", "--stream-only"],
                         capture_output=True, text=True, check=True, timeout=300, cwd=tmp_path)
    result = json.loads(out.stdout)
    assert result["log_bytes"] >= 1 << 30
    assert result["rows"] == result["records"]
    assert result["peak_mb"] - result["base_mb"] < 400, result


@pytest.mark.parametrize("use_threads", [False, True])
def test_views_stream_equals_the_copying_stream(log_dir, use_threads):
    reader = kcodec.read_arrow(log_dir, chunk_bytes=10_000, use_threads=use_threads, views=True,
                               start_timestamp=T0 + 3_000)
    assert reader.schema == kcodec.kafka_schema(views=True)
    got = reader.read_all()
    got.validate(full=True)
    expected = kcodec.read_arrow(log_dir, chunk_bytes=10_000, start_timestamp=T0 + 3_000).read_all()
    assert got.cast(expected.schema).equals(expected)
    pl = pytest.importorskip("polars")
    assert pl.from_arrow(got)["value"].to_list() == expected["value"].to_pylist()
    duckdb = pytest.importorskip("duckdb")
    reader = kcodec.read_arrow(log_dir, chunk_bytes=10_000, views=True)  # noqa: F841 (DuckDB finds it by its name)
    rows = duckdb.sql("select count(*), sum(octet_length(value)), count(key) from reader").fetchall()
    whole = _whole(log_dir)
    assert rows == [(whole.num_rows, sum(pa.compute.binary_length(whole["value"]).to_pylist()),
                     whole.num_rows - whole["key"].null_count)]


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="reads Linux's /proc/self/maps")
def test_views_keep_their_segment_mapped_until_the_last_goes(log_dir):
    import gc

    folder = log_dir / "orders-0"
    batches = list(kcodec.read_arrow(folder, chunk_bytes=5000, views=True))
    assert len(_mapped(folder)) >= 1  # uncompressed values reference the map
    expected = kcodec.read_arrow(folder, chunk_bytes=5000).read_all()
    assert pa.Table.from_batches(batches).cast(expected.schema).equals(expected)
    del batches
    gc.collect()
    assert _mapped(folder) == []
