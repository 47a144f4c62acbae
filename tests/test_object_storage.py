"""Segments in an S3 bucket (a moto server on 127.0.0.1 reached over HTTP by s3fs).

Recompression and compaction of an ``s3://`` partition are stopped after
every single object operation (put, copy, delete); recovery must then leave
every record present exactly once, as on local disk.
"""
import functools
import json
import sys

import pytest

import kcodec
from builders import DAY, PID, T0, batch, kv, make_log, marker
from kcodec.log import RecordRange, find_partitions, open_log_dir
from kcodec.log.cleaner import CleanerConfig, FileOps, compact, list_segments, recover_log_dir
from kcodec.log.recompression import recompress
from kcodec.storage import StorageError, io_stats, resolve
from s3_server import KEY, SECRET, s3  # noqa: F401  (the session fixture)
from test_fault_injection import Crash, crash_after, records


def source_log(path):
    """Two closed segments with overwritten keys, a tombstone, an aborted and a committed transaction,
    and an active one (fewer segments than the local fault tests: every object operation is a request)."""
    return make_log(path, [
        [batch(0, [kv("k%d" % (i % 6), "v%d" % i * 20) for i in range(12)], codec="gzip"),
         batch(12, [kv("k1", None), kv("k7", "x" * 50)]),
         batch(14, [kv("k2", "aborted"), kv("k8", "aborted")], producer_id=PID, producer_epoch=0, base_sequence=0,
               is_transactional=True),
         marker(16, PID, 0, commit=False)],
        [batch(17, [kv("k3", "c" * 40)], producer_id=PID + 1, producer_epoch=0, base_sequence=0,
               is_transactional=True), marker(18, PID + 1, 0, commit=True),
         batch(19, [kv("k%d" % i, "z" * 60) for i in range(5)], codec="snappy")],
        [batch(24, [kv("k0", "active")])],
    ])


def s3_records(url, opts):
    storage, path = resolve(url, opts)
    out = []
    for seg in list_segments(path, storage):
        for b in kcodec.read_batches(storage.read_bytes(seg.path())):
            b.ensure_valid()
            out.extend((r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in b)
    return out


def s3_names(url, opts):
    storage, path = resolve(url, opts)
    return sorted(f.name for f in storage.list(path))


def check_s3_indexes(url, opts):
    for part in find_partitions(url, storage_options=opts):
        for seg in part.segments:
            seg.sanity_check()


def run_recompress(url, opts, ops=None):
    return recompress(url, "zstd", level=3, include_active=False, ops=ops, storage_options=opts)


def run_compact(url, opts, ops=None):
    return compact(url, config=CleanerConfig(segment_bytes=900, producer_id_expiration_ms=1,
                                             delete_retention_ms=DAY),
                   now_ms=T0 + 1000, force=True, ops=ops, storage_options=opts)


def check_crashes(server, scheme, tmp_path, operation, every_step=True):
    """Stop ``operation`` on a copy of one partition in ``server``'s bucket after object operations
    (every one, or the first and last of each hand-over from one kind to another), recover, and
    check that every record is present exactly once and that re-running completes."""
    opts = server.storage_options
    fn = functools.partial(run_recompress if operation == "recompress" else run_compact, opts=opts)
    pristine = source_log(tmp_path / "t-0")
    original = records(pristine)
    bucket = server.new_bucket()

    def fresh(name):
        url = f"{scheme}://{bucket}/{name}/t-0"
        server.upload_dir(pristine, url)
        return url

    reference = fresh("reference")
    steps = []
    fn(reference, ops=FileOps(hook=lambda op, path: steps.append(op)))
    expected = s3_records(reference, opts)
    assert len(steps) > 20
    if operation == "compact":
        assert len(s3_names(reference, opts)) < len(s3_names(fresh("count"), opts))
        assert len(expected) < len(original)
    else:
        assert expected == original
    # an object store renames by copy + delete; both are crash points
    assert {"write", "copy", "delete"} <= set(steps)
    firsts, lasts = {}, {}
    for k in range(1, len(steps) + 1):
        kind = (steps[k - 2] if k > 1 else None, steps[k - 1])
        firsts.setdefault(kind, k)
        lasts[kind] = k
    points = range(1, len(steps) + 1) if every_step else sorted(set(firsts.values()) | set(lasts.values()))
    by_offset = {r[0]: r for r in original}
    for k in points:
        url = fresh(f"crash{k}")
        with pytest.raises(Crash):
            fn(url, ops=crash_after(k))
        recover_log_dir(url, storage_options=opts)
        got = s3_records(url, opts)
        offsets = [r[0] for r in got]
        assert offsets == sorted(set(offsets)), f"crash after step {k}: offsets repeat"
        assert all(by_offset[r[0]] == r for r in got), f"crash after step {k}: a record changed"
        if operation == "recompress":
            assert got == original, f"crash after step {k} lost or duplicated records"
        else:
            assert {r[0] for r in expected} <= set(offsets), f"crash after step {k} lost records"
        assert not [n for n in s3_names(url, opts) if n.endswith((".cleaned", ".swap", ".deleted"))]
        check_s3_indexes(url, opts)
        if k in (1, len(steps) // 2, len(steps) - 1, len(steps)):
            fn(url)  # re-running completes
            assert s3_records(url, opts) == expected, f"re-run after a crash at step {k} differs"


@pytest.mark.parametrize("operation", ["recompress", "compact"])
def test_crash_after_every_object_operation(tmp_path, s3, operation):
    check_crashes(s3, "s3", tmp_path, operation)


def test_s3_recompress_equals_local(tmp_path, s3):
    opts = s3.storage_options
    local = source_log(tmp_path / "t-0")
    bucket = s3.new_bucket()
    url = f"s3://{bucket}/data/t-0"
    s3.upload_dir(local, url)
    r_remote = recompress(url, "zstd", level=3, storage_options=opts)
    r_local = recompress(local, "zstd", level=3)
    assert r_remote.log_dir == url
    assert [s.bytes_after for s in r_remote.segments] == [s.bytes_after for s in r_local.segments]
    storage, path = resolve(url, opts)
    for seg in list_segments(local):
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            with open(seg.path(suffix), "rb") as f:
                assert storage.read_bytes(f"{path}/{seg.path(suffix).rsplit('/', 1)[1]}") == f.read(), suffix


def test_ranged_reads_through_the_index(tmp_path, s3):
    """Reading a range of offsets fetches index objects and one ranged read, never the whole segment."""
    from builders import batch, kv
    from kcodec.log import write_partition
    local = tmp_path / "big-0"
    sets = [batch(i * 50, [kv(b"k%d" % j, b"v" * 300) for j in range(50)]) for i in range(200)]
    write_partition(local, sets, index_interval_bytes=4096)
    bucket = s3.new_bucket()
    url = f"s3://{bucket}/big-0"
    s3.upload_dir(str(local), url)
    part = open_log_dir(url, storage_options=s3.storage_options)[("big", 0)]
    seg = part.segments[0]
    size = seg.size
    assert size > 3_000_000
    io_stats.reset()
    start, end = RecordRange(5000, 5100).byte_range(seg)
    batches = list(seg.batches(start_position=start, end_position=end))
    assert {b.base_offset for b in batches} >= {5000, 5050}
    # the .index object, the header of the batch its entry names (checked to end by the entry's
    # offset, LogSegment.start_position), then one ranged GET
    assert io_stats.requests == 3
    batch_bytes = len(sets[0])
    # at most the batch before, the two wanted and the one after; the whole segment is 200 batches
    assert end - start <= 4 * batch_bytes
    assert io_stats.bytes_read == end - start + 8 * len(seg.offset_index) + 27
    # the stream reader takes the URL too: the same bytes, found the same way
    io_stats.reset()
    table = kcodec.read_arrow(url, start_offset=5000, end_offset=5100, storage_options=s3.storage_options).read_all()
    assert table["offset"].to_pylist() == list(range(5000, 5100))
    assert io_stats.bytes_read < end - start + 8 * len(seg.offset_index) + 12 * len(seg.time_index) + 4096


def test_a_segment_in_a_bucket_reads_as_on_disk(tmp_path, s3):
    """LogSegment on an object store: the bytes, indexes and aborted transactions of the local files;
    a range is one ranged GET until the whole object is fetched (once), then a view of it."""
    from kcodec.log import LogSegment, write_partition
    from kcodec.log.transaction_index import AbortedTxn, encode_txn_index
    local = tmp_path / "t-0"
    sets = [batch(i * 5, [kv(b"k%d" % j, b"v" * 40) for j in range(5)]) for i in range(6)]
    n = len(sets[0])
    write_partition(local, sets, segment_bytes=3 * n, index_interval_bytes=1)
    (local / "00000000000000000015.txnindex").write_bytes(encode_txn_index([AbortedTxn(PID, 16, 18, 20)]))
    (local / "00000000000000000015.index").unlink()  # the second segment lost its offset index
    url = f"s3://{s3.new_bucket()}/t-0"
    s3.upload_dir(str(local), url)
    part = open_log_dir(url, storage_options=s3.storage_options)[("t", 0)]
    first, second = part.segments
    assert first.url == f"{url}/00000000000000000000.log" and repr(first) == f"LogSegment({first.url!r})"
    io_stats.reset()
    assert first.size == 3 * n and io_stats.requests == 0  # from the listing
    assert bytes(first.read_range(n, 2 * n)) == sets[1]
    assert (io_stats.requests, io_stats.bytes_read) == (1, n)
    io_stats.reset()
    assert first.data == b"".join(sets[:3]) and first.data is first.data
    assert (io_stats.requests, io_stats.bytes_read) == (1, 3 * n)
    assert bytes(first.read_range(n, 2 * n)) == sets[1] and io_stats.requests == 1
    first.close()
    assert bytes(first.read_range(2 * n, 3 * n)) == sets[2] and (io_stats.requests, io_stats.bytes_read) == (2, 4 * n)
    on_disk = LogSegment(local / "00000000000000000000.log")
    assert first.offset_index.entries.tobytes() == on_disk.offset_index.entries.tobytes() != b""
    assert first.time_index.entries.tobytes() == on_disk.time_index.entries.tobytes() != b""
    assert len(second.offset_index) == 0 and len(second.time_index) > 0
    assert first.start_position(12) == n and second.start_position(27) == 0
    assert [b.base_offset for b in part.batches(17)] == [15, 20, 25]
    assert first.aborted_transactions() == [] and second.aborted_transactions() == [(PID, 16, 18)]
    first.sanity_check()
    second.sanity_check()
    part.close()
    on_disk.close()


def test_a_writer_puts_the_log_before_its_indexes(tmp_path, s3, monkeypatch):
    """In an object store each file of a segment is one put, the .log before its indexes; the objects
    hold the bytes a local writer writes."""
    from kcodec.log import LogWriter, write_partition
    from kcodec.storage import ObjectStorage
    puts = []
    real_put = ObjectStorage.put
    monkeypatch.setattr(ObjectStorage, "put", lambda self, path, data: (puts.append(path.rsplit("/", 1)[1]),
                                                                          real_put(self, path, data)))
    sets = [batch(i * 5, [kv(b"k%d" % j, b"v" * 40) for j in range(5)]) for i in range(4)]
    bucket = s3.new_bucket()
    written = write_partition(f"s3://{bucket}/t-0", sets, segment_bytes=2 * len(sets[0]),
                              storage_options=s3.storage_options)
    names = ["%020d%s" % (base, suffix) for base in (0, 10) for suffix in (".log", ".index", ".timeindex")]
    assert puts == names and [str(p) for p in written] == [f"{bucket}/t-0/{n}" for n in names[::3]]
    local = tmp_path / "t-0"
    write_partition(local, sets, segment_bytes=2 * len(sets[0]))
    storage, inner = resolve(f"s3://{bucket}/t-0", s3.storage_options)
    assert {n: storage.read_bytes(f"{inner}/{n}") for n in names} == {n: (local / n).read_bytes() for n in names}
    # the folder of a topic-partition in a log directory: an object key, whatever a local folder of the
    # same name holds (here a symlink leading out of it)
    (tmp_path / bucket / "kafka").mkdir(parents=True)
    (tmp_path / bucket / "kafka" / "orders-3").symlink_to(tmp_path / "t-0")
    monkeypatch.chdir(tmp_path)
    writer = LogWriter.in_log_dir(f"s3://{bucket}/kafka", "orders", 3, storage_options=s3.storage_options)
    assert str(writer.path) == f"{bucket}/kafka/orders-3"


@pytest.mark.spark  # the data source's reader is PySpark's
def test_data_source_reads_an_object_in_few_large_ranged_reads(tmp_path, s3):
    """A task fetches its bytes in reads of about fetchBytes, cut at batch starts through the index:
    every byte once, GETs ~ bytes / fetchBytes; without an index the reads are cut anywhere and the
    batch cut in two is carried over, with the same records."""
    pytest.importorskip("pyspark")
    import os

    from builders import batch, kv
    from kcodec.log import write_partition
    from kcodec.records.framing import iter_entries
    from kcodec.spark.datasource import KafkaLogReader

    local = tmp_path / "data" / "big-0"
    sets = [batch(i * 40, [kv(b"k%d" % j, os.urandom(700)) for j in range(40)]) for i in range(220)]
    write_partition(local, sets, index_interval_bytes=4096)
    size = os.path.getsize(local / "00000000000000000000.log")
    assert size > 6_000_000
    bucket = s3.new_bucket()
    s3.upload_dir(str(tmp_path / "data"), f"s3://{bucket}/data")
    fetch, split = 1 << 20, 3 << 20
    opts = {"path": f"s3://{bucket}/data", "storage.key": KEY, "storage.secret": SECRET,
            "storage.endpoint_url": s3.endpoint, "fetchBytes": str(fetch), "splitBytes": str(split)}

    def read_all(reader):
        parts = reader.partitions()
        io_stats.reset()
        offsets = [o for p in parts for b in reader.read(p) for o in b.column("offset").to_pylist()]
        return parts, offsets, io_stats.snapshot()

    parts, offsets, fetched = read_all(KafkaLogReader(opts))
    assert offsets == list(range(220 * 40))
    assert fetched.bytes_read == size  # each byte once
    reads = sum(len(p.cuts) - 1 for p in parts)
    assert fetched.requests == reads <= size // fetch + 1  # one GET per read, each about fetchBytes
    assert len(parts) == -(-size // split) or len(parts) == size // split
    for p in parts:  # tasks and reads start at batches; a task is whole reads
        assert p.cuts[0] == p.start and p.cuts[-1] == p.end and len(p.cuts) - 1 <= round(split / fetch)
        assert all(b - a < fetch + len(sets[0]) for a, b in zip(p.cuts, p.cuts[1:]))
    starts = {e.position for e in iter_entries((local / "00000000000000000000.log").read_bytes())}
    assert {c for p in parts for c in p.cuts} <= starts | {size}

    storage, inner = resolve(f"s3://{bucket}/data/big-0", s3.storage_options)
    storage.delete(inner + "/00000000000000000000.index")
    parts, offsets, fetched = read_all(KafkaLogReader(opts))
    assert offsets == list(range(220 * 40)) and len(parts) == 1  # no batch starts known: one task
    assert fetched.bytes_read == size and fetched.requests == len(parts[0].cuts) - 1 == round(size / fetch)


def test_missing_package_and_secret_free_errors(tmp_path, s3, capsys, monkeypatch):
    import fsspec  # noqa: F401  (its registry module below)
    monkeypatch.setitem(sys.modules, "gcsfs", None)  # as if not installed
    monkeypatch.delitem(sys.modules["fsspec.registry"]._registry, "gs", raising=False)
    with pytest.raises(StorageError, match=r"pip install gcsfs \(or pip install 'kcodec\[gcs\]'\)"):
        resolve("gs://bucket/data")
    opts = dict(s3.storage_options)
    with pytest.raises(FileNotFoundError) as e:
        open_log_dir("s3://kc-no-such-bucket/data", storage_options=opts)
    assert SECRET not in str(e.value) and KEY not in str(e.value)
    bad = dict(opts, endpoint_url="http://127.0.0.1:9")  # nothing listens there
    with pytest.raises(StorageError) as e:
        open_log_dir("s3://b/data", storage_options=dict(bad, config_kwargs={"retries": {"max_attempts": 1},
                                                                              "connect_timeout": 1}))
    assert SECRET not in str(e.value)
    from kcodec.cli import main
    args = ["recompress", "s3://b/data", "--codec", "zstd", "--storage-option", f"secret={SECRET}",
            "--storage-option", f"key={KEY}", "--storage-option", "endpoint_url=http://127.0.0.1:9",
            "--storage-option", 'config_kwargs={"retries": {"max_attempts": 1}, "connect_timeout": 1}']
    assert main(args) == 1
    err = capsys.readouterr().err
    assert err.startswith("kcodec recompress: ") and SECRET not in err and "Traceback" not in err


def check_cli_on_a_log_directory(server, url, opt_args, tmp_path, capsys):
    """recompress --topic, dump and retain from the command line on a broker's log directory at ``url``."""
    from kcodec.cli import main
    from test_log_dirs import broker_dir
    server.upload_dir(str(broker_dir(tmp_path / "data")), url)
    assert main(["recompress", url, "--codec", "zstd", "--topic", "orders"] + opt_args) == 0
    out = capsys.readouterr().out
    assert f"{url}/orders-0: 2 segments, 40 records" in out and "clicks" not in out
    assert main(["dump", f"{url}/orders-1/00000000000000000020.log", "--json"] + opt_args) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 and '"compresscodec": "zstd"' in rows[0]
    assert main(["retain", url, "--retention-bytes", "0"] + opt_args) == 0
    assert capsys.readouterr().out.count("deleted 1 segments") == 4


def test_cli_on_an_s3_log_directory(tmp_path, s3, capsys):
    opt_args = [f"--storage-option={k}={v}" for k, v in (("key", KEY), ("secret", SECRET),
                                                           ("endpoint_url", s3.endpoint))]
    check_cli_on_a_log_directory(s3, f"s3://{s3.new_bucket()}/kafka", opt_args, tmp_path, capsys)


def test_spark_writes_and_reads_s3(spark, tmp_path, s3):
    import kcodec.spark
    from test_tiered_storage import rows
    local = source_log(tmp_path / "src" / "t-0")
    df = spark.read.format("kafka-log").load(local)
    bucket = s3.new_bucket()
    url = f"s3://{bucket}/out"
    kcodec.spark.write_log(df, url, compression="zstd", batchBytes=200, segmentBytes=300,
                          storage_options=s3.storage_options)
    names = s3_names(url, s3.storage_options)
    assert names == ["t-0"]  # the staging prefix is gone
    seg_names = s3_names(f"{url}/t-0", s3.storage_options)
    assert len([n for n in seg_names if n.endswith(".log")]) > 1
    assert {n.rsplit(".", 1)[1] for n in seg_names} == {"log", "index", "timeindex"}
    check_s3_indexes(url, s3.storage_options)
    back = (spark.read.format("kafka-log").option("storageOptions", json.dumps(s3.storage_options))
            .load(url))
    assert rows(back) == rows(df)
    with pytest.raises(Exception, match="exists"):
        kcodec.spark.write_log(df, url, storage_options=s3.storage_options)
    kcodec.spark.write_log(df.where("offset < 5"), url, mode="overwrite", storage_options=s3.storage_options)
    assert [r[2] for r in rows(spark.read.format("kafka-log").option(
        "storageOptions", json.dumps(s3.storage_options)).load(url))] == [0, 1, 2, 3, 4]


def s3_files(url, opts):
    """{name: bytes} of every object under ``url``."""
    storage, path = resolve(url, opts)
    return {f.name: storage.read_bytes(storage.join(path, f.name)) for f in storage.list(path)}


def local_files(path):
    return {f.name: f.read_bytes() for f in sorted(path.iterdir())}


def test_spark_recompress_and_compact_on_s3_equal_local(spark, tmp_path, s3):
    """The Spark operations take an s3:// partition and write the same objects as the local run writes files."""
    from kcodec.spark.ops import compact_spark, recompress_spark
    opts = s3.storage_options
    bucket = s3.new_bucket()
    local = tmp_path / "recompress" / "t-0"
    source_log(local)
    url = f"s3://{bucket}/recompress/t-0"
    s3.upload_dir(str(local), url)
    (remote,) = recompress_spark(spark, url, "zstd", level=3, include_active=False, storage_options=opts)
    assert remote.log_dir == url and len(remote.segments) == 2 and all(s.swapped for s in remote.segments)
    run_recompress(str(local), opts=None)
    assert s3_files(url, opts) == local_files(local)

    local = tmp_path / "compact" / "t-0"
    source_log(local)
    url = f"s3://{bucket}/compact/t-0"
    s3.upload_dir(str(local), url)
    config = CleanerConfig(segment_bytes=900, producer_id_expiration_ms=1, delete_retention_ms=DAY)
    got = compact_spark(spark, url, config=config, now_ms=T0 + 1000, force=True, storage_options=opts)
    want = run_compact(str(local), opts=None)
    assert got.cleaned and got.log_dir == url
    assert (got.groups, got.map_keys, got.messages_written) == (want.groups, want.map_keys, want.messages_written)
    assert s3_files(url, opts) == local_files(local)
    assert s3_records(url, opts) == records(str(local))
    check_s3_indexes(url, opts)
