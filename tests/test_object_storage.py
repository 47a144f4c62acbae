"""Segments in an S3 bucket (a moto server on 127.0.0.1 reached over HTTP by s3fs).

Recompression and compaction of an ``s3://`` partition are stopped after
every single object operation (put, copy, delete); recovery must then leave
every record present exactly once, as on local disk.
"""
import array
import datetime
import functools
import gc
import json
import os
import sys

import fsspec
import pytest

import kcodec
from builders import DAY, PID, T0, batch, kv, make_log, marker
from kcodec.log import RecordRange, find_partitions, open_log_dir
from kcodec.log.cleaner import CleanerConfig, FileOps, compact, list_segments, recover_log_dir
from kcodec.log.recompression import recompress
from kcodec.storage import LOCAL, StorageError, io_stats, is_url, resolve
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


# -- the storage layer itself: local files and objects behind one interface ---------------------

@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path):
    """(storage, root) on the local file system, or under a fresh bucket (the URL's trailing / dropped)."""
    if request.param == "local":
        return LOCAL, str(tmp_path)
    server = request.getfixturevalue("s3")
    storage, root = resolve(f"s3://{server.new_bucket()}/root/", server.storage_options)
    assert not root.endswith("/")
    return storage, root


def test_local_and_object_storage_answer_alike(store):
    import time

    storage, root = store
    j = storage.join
    assert storage.remote is (storage is not LOCAL)
    storage.makedirs(j(root, "d"))
    storage.makedirs(j(root, "d"))  # already there: no error
    a, b = j(root, "d", "a.log"), j(root, "b.log")
    storage.put(a, b"0123456789")
    with storage.open_write(b) as w:
        assert (w.write(b"xy"), w.write(memoryview(b"z"))) == (2, 1)
    listing = sorted(storage.list(root))
    assert [(f.name, f.size, f.is_dir) for f in listing] == [("b.log", 3, False), ("d", 0, True)]
    assert abs(listing[0].mtime - time.time()) < 120 and listing[1].mtime == 0.0
    assert [storage.exists(a), storage.exists(j(root, "none")), storage.isdir(j(root, "d")), storage.isdir(a),
            storage.isfile(a), storage.isfile(j(root, "d")), storage.size(a)] == [True, False, True, False, True,
                                                                                 False, 10]
    assert (storage.parent(a), storage.basename(a)) == (storage.parent(j(root, "d", "x")), "a.log")
    assert storage.read_bytes(b) == b"xyz"
    assert [storage.read_range(a, 2, 5), storage.read_range(a, 0, 10), storage.read_range(a, 4, 4),
            storage.read_range(a, 7, 3)] == [b"234", b"0123456789", b"", b""]
    with storage.open_read(a) as buf:
        assert bytes(buf) == b"0123456789"
    c = j(root, "d", "c.log")
    storage.rename(a, c)
    assert (storage.exists(a), storage.read_bytes(c)) == (False, b"0123456789")
    assert storage.delete(c) is True and not storage.exists(c)
    assert storage.set_mtime(b, 1_600_000_000.5) is (storage is LOCAL)
    storage.makedirs(j(root, "d", "e"))
    storage.put(j(root, "d", "e", "f.log"), b"f")
    storage.delete_tree(j(root, "d"))
    assert [f.name for f in storage.list(root)] == ["b.log"]
    storage.delete_tree(j(root, "d"))  # gone already: no error


def test_local_storage_files(tmp_path, monkeypatch):
    from kcodec import storage
    from test_log_segment import _record_fsyncs

    names = {}
    exec("from kcodec.storage import *", names)  # the module's stated boundary, not its imports
    assert set(names) - {"__builtins__"} == set(storage.__all__) and "resolve" in names
    assert storage.Storage.url(LOCAL, "a/b") == "a/b"  # the default every storage inherits

    d = str(tmp_path)
    assert (LOCAL.url("a/b"), LOCAL.join("a", "b"), LOCAL.parent("a/b"), LOCAL.basename("a/b/")) == \
        ("a/b", os.path.join("a", "b"), os.path.abspath("a"), "b")
    (tmp_path / "empty").write_bytes(b"")
    (tmp_path / "one").write_bytes(b"1")
    with LOCAL.open_read(str(tmp_path / "empty")) as buf:
        assert type(buf) is bytes and buf == b""
    with LOCAL.open_read(str(tmp_path / "one")) as buf:
        assert bytes(buf) == b"1"
    assert buf.closed  # the map is released with the block
    (tmp_path / "big").write_bytes(bytes(range(256)) * 64)
    with LOCAL.open_read(str(tmp_path / "big")) as buf:
        view = memoryview(buf)[100:103]  # still held when the block ends: the map stays open for it
    assert bytes(view) == bytes([100, 101, 102]) and len(buf) == 256 * 64
    view.release()
    assert LOCAL.delete(str(tmp_path / "one")) is True and LOCAL.delete(str(tmp_path / "one")) is False
    assert LOCAL.set_mtime(str(tmp_path / "empty"), 1_600_000_000.5) is True
    assert os.stat(tmp_path / "empty").st_mtime == 1_600_000_000.5
    with pytest.raises(FileExistsError):
        LOCAL.makedirs(str(tmp_path / "empty"))  # a file is in the way
    seen = _record_fsyncs(monkeypatch)
    with LOCAL.open_write(os.path.join(d, "w")) as f:
        f.write(b"abcd")
    assert f.closed and seen == [("file", 4)]
    with LOCAL.open_write(os.path.join(d, "v"), fsync=False) as f:
        f.write(b"abcd")
    LOCAL.rename(os.path.join(d, "w"), os.path.join(d, "x"))
    assert seen == [("file", 4), ("dir", tmp_path.stat().st_ino)]
    LOCAL.rename(os.path.join(d, "x"), os.path.join(d, "y"), fsync=False)
    assert len(seen) == 2 and (tmp_path / "y").read_bytes() == b"abcd"


class _FakeFile:
    """An upload in progress, in parts of ``blocksize`` bytes: complete at close(), dropped by discard()."""

    def __init__(self, fs, path, blocksize):
        self.fs, self.path, self.data, self.closed, self.discarded = fs, path, bytearray(), False, False
        if blocksize is not None:
            self.blocksize = blocksize

    def write(self, data):
        self.data += data

    def close(self):
        if not self.closed:
            self.fs.objects[self.path] = bytes(self.data)
            self.closed = True

    def discard(self):
        self.discarded = True


class _FakeFS:
    """A file system that answers as told, for what a real store does not do on demand: listings
    with odd entries, chosen part sizes, and each client library's own errors."""

    def __init__(self, entries=(), blocksize=None, error=None):
        self.entries, self.blocksize, self.error = list(entries), blocksize, error
        self.objects, self.files = {}, []

    def ls(self, path, detail, refresh):
        return self.entries

    def open(self, path, mode):
        f = _FakeFile(self, path, self.blocksize)
        self.files.append(f)
        return f

    def _fail(self, *args, **kwargs):
        raise self.error

    exists = isdir = isfile = size = cat_file = copy = _fail

    def rm_file(self, path):
        if self.objects.pop(path, None) is None:
            raise FileNotFoundError(path)

    def rm(self, path, recursive):
        raise FileNotFoundError(path)


def _counted(fn):
    """(fn's result, the requests, bytes read and bytes written it counted)."""
    io_stats.reset()
    out = fn()
    return out, (io_stats.requests, io_stats.bytes_read, io_stats.bytes_written)


def test_io_stats_counts_each_request_and_its_bytes(s3):
    from kcodec.storage import IOStats
    assert IOStats() == IOStats(0, 0, 0)
    stats = IOStats(3, 4, 5)
    snap = stats.snapshot()
    stats.reset()
    assert (stats, snap) == (IOStats(0, 0, 0), IOStats(3, 4, 5))
    storage, root = resolve(f"s3://{s3.new_bucket()}/p", s3.storage_options)
    a, b = f"{root}/a", f"{root}/b"
    assert _counted(lambda: storage.put(a, b"0123456789")) == (None, (1, 0, 10))
    for call, result, counts in [
            (lambda: [f.name for f in storage.list(root)], ["a"], (1, 0, 0)),
            (lambda: storage.exists(a), True, (1, 0, 0)),
            (lambda: storage.isdir(root), True, (1, 0, 0)),
            (lambda: storage.isfile(a), True, (1, 0, 0)),
            (lambda: storage.size(a), 10, (1, 0, 0)),
            (lambda: storage.read_bytes(a), b"0123456789", (1, 10, 0)),
            (lambda: storage.read_range(a, 3, 7), b"3456", (1, 4, 0)),
            (lambda: storage.read_range(a, 3, 3), b"", (0, 0, 0)),
            (lambda: storage.read_range(a, 3, 1), b"", (0, 0, 0)),
            (lambda: storage.copy(a, b), None, (1, 0, 0)),
            (lambda: storage.rename(b, f"{root}/c"), None, (2, 0, 0)),
            (lambda: storage.delete(a), True, (1, 0, 0)),
            (lambda: storage.delete_tree(root), None, (1, 0, 0)),
            (lambda: storage.exists(f"{root}/c"), False, (1, 0, 0))]:
        assert _counted(call) == (result, counts)


@pytest.mark.parametrize("blocksize, size, requests", [
    (None, 10, 1), (0, 10, 1), (4, 4, 1), (4, 8, 4), (4, 10, 5), (4, 0, 1)])
def test_an_upload_counts_one_put_or_a_multipart_upload(blocksize, size, requests):
    """A multipart upload is three requests more than its parts: start, each part, complete."""
    from kcodec.storage import ObjectStorage
    fs = _FakeFS(blocksize=blocksize)
    storage = ObjectStorage(fs, "s3")

    def upload():
        with storage.open_write("b/k") as w:
            w.write(b"x" * (size // 2))
            w.write(array.array("B", b"y" * (size - size // 2)))
    assert _counted(upload) == (None, (requests, 0, size))
    assert fs.objects == {"b/k": b"x" * (size // 2) + b"y" * (size - size // 2)}


def test_a_failed_upload_is_discarded_and_never_completed(s3):
    from kcodec.storage import ObjectStorage
    fs = _FakeFS(blocksize=4)
    storage = ObjectStorage(fs, "s3")
    with pytest.raises(ValueError, match="stop"):
        with storage.open_write("b/k") as w:
            w.write(b"partial")
            raise ValueError("stop")
    (f,) = fs.files
    f.close()  # as the file's finalizer does: it must not complete the object
    assert f.discarded and fs.objects == {}
    # a real client: the unfinished object never appears, even once its file is collected
    storage, root = resolve(f"s3://{s3.new_bucket()}/p", s3.storage_options)
    with pytest.raises(ValueError, match="stop"):
        with storage.open_write(f"{root}/half") as w:
            w.write(b"half an object")
            raise ValueError("stop")
    del w
    gc.collect()
    assert s3.filesystem().exists(f"{root}/half") is False


def test_object_listings_skip_the_folder_itself_and_read_each_stores_times():
    from kcodec.storage import FileInfo, ObjectStorage
    when = datetime.datetime(2024, 5, 1, tzinfo=datetime.timezone.utc)
    entries = [
        {"name": "b/p/", "type": "directory", "size": 0},  # the folder itself, as some stores list it
        {"name": "/", "type": "directory"},
        {"name": "b/p/s3", "type": "file", "size": 5, "LastModified": when},
        {"name": "b/p/local", "type": "file", "size": 6, "mtime": "1700000000.25"},
        {"name": "b/p/hdfs", "type": "file", "size": 7, "modificationTime": 1700000000500},
        {"name": "b/p/gcs", "type": "file", "size": 8, "mtime": "not a time", "updated": 1700000001},
        {"name": "b/p/sub/", "type": "directory", "size": None},
    ]
    assert ObjectStorage(_FakeFS(entries), "s3").list("b/p/") == [
        FileInfo("s3", 5, when.timestamp(), False), FileInfo("local", 6, 1700000000.25, False),
        FileInfo("hdfs", 7, 1700000000.5, False), FileInfo("gcs", 8, 1700000001.0, False),
        FileInfo("sub", 0, 0.0, True)]


def test_object_listings_and_stats_see_what_other_writers_did(s3):
    """A directory marker is not listed as an entry of itself, and neither a listing nor a stat comes from
    a cache, even when the options ask the client for one."""
    bucket = s3.new_bucket()
    other = s3.filesystem()
    other.pipe_file(f"{bucket}/d/", b"")  # the marker some tools write for a folder
    other.pipe_file(f"{bucket}/d/x", b"x")
    storage, root = resolve(f"s3://{bucket}/d", s3.storage_options)
    assert [f.name for f in storage.list(root)] == ["x"]
    other.rm_file(f"{bucket}/d/x")
    assert storage.exists(f"{root}/x") is False
    cached, root = resolve(f"s3://{bucket}/d", dict(s3.storage_options, use_listings_cache=True))
    assert [f.name for f in cached.list(root)] == []
    other.pipe_file(f"{bucket}/d/y", b"y")
    assert [f.name for f in cached.list(root)] == ["y"]


def test_object_store_errors_name_the_object_and_never_a_secret():
    from kcodec.errors import CorruptDataError
    from kcodec.storage import ObjectStorage

    def fails(error):
        return ObjectStorage(_FakeFS(error=error), "gs", ("s3cr3t-value",))
    ours = CorruptDataError("ours")
    with pytest.raises(CorruptDataError) as e:
        fails(ours).exists("b/k")
    assert e.value is ours
    with pytest.raises(FileNotFoundError) as e:
        fails(FileNotFoundError("b/k")).read_bytes("b/k")
    assert type(e.value) is FileNotFoundError and str(e.value) == "no such file or object: gs://b/k"
    with pytest.raises(StorageError) as e:
        fails(RuntimeError("denied for s3cr3t-value")).copy("b/k", "b/l")
    assert (e.value.message, e.value.source) == ("copy failed: RuntimeError: denied for ***", "gs://b/k")
    storage = ObjectStorage(_FakeFS(), "gs")
    assert (storage.delete("b/none"), storage.set_mtime("b/k", 1.0), storage.makedirs("b/d")) == (False, False, None)
    assert (storage.url("b/k"), storage.join("b", "k"), storage.parent("b/d/k/"), storage.basename("b/d/k/")) == \
        ("gs://b/k", "b/k", "b/d", "k")
    storage.delete_tree("b/none")  # nothing there: no error


class _OddPath:
    def __fspath__(self):
        return "/data/kafka"

    def __str__(self):
        return "not the path"


def test_resolve_local_paths_and_file_urls():
    assert resolve("/data/kafka") == (LOCAL, "/data/kafka")
    assert resolve(_OddPath()) == (LOCAL, "/data/kafka")
    assert resolve("FILE:///data/kafka") == (LOCAL, "/data/kafka")
    assert resolve("file:///data/odd://name") == (LOCAL, "/data/odd://name")
    assert resolve("file://") == (LOCAL, "/")
    assert [is_url("s3://b"), is_url("data/kafka"), is_url(None)] == [True, False, False]


class _RefusingFS(fsspec.AbstractFileSystem):
    protocol = "kcodec-refusing"

    def __init__(self, **options):
        raise ValueError(f"refused {sorted(options.items())}")


def test_resolve_errors_name_what_to_install_and_hide_credentials(monkeypatch):
    registry = sys.modules["fsspec.registry"]._registry
    monkeypatch.setitem(registry, "kcodec-refusing", _RefusingFS)
    with pytest.raises(StorageError) as e:
        resolve("kcodec-refusing://b/p", {"token": "t0k3", "pass": "pw1", "region": "eu-west-9",
                                          "client_kwargs": {"aws_secret_access_key": "n3sted", "port": "8443"},
                                          "credentials": {"id": "inh3rited"}})
    # values of 4 characters or more, of options named as credentials (or inside one), are hidden
    assert str(e.value) == ("cannot open kcodec-refusing:// storage: ValueError: refused [('client_kwargs', "
                            "{'aws_secret_access_key': '***', 'port': '8443'}), ('credentials', {'id': '***'}), "
                            "('pass', 'pw1'), ('region', 'eu-west-9'), ('token', '***')]")
    assert "t0k3" not in e.value.message and "pw1" in e.value.message
    with pytest.raises(StorageError) as e:
        resolve("nosuch://user:p@ss@host/logs/t-0")
    assert (e.value.message, e.value.source) == (
        "unknown URL scheme nosuch:// (no fsspec file system is registered for it)", "nosuch://***@host/logs/t-0")
    with pytest.raises(StorageError) as e:
        resolve("nosuch://host/logs")
    assert e.value.source == "nosuch://host/logs"
    monkeypatch.setitem(sys.modules, "fsspec", None)  # as if not installed
    with pytest.raises(StorageError) as e:
        resolve("s3://b/p")
    assert str(e.value) == "s3:// paths need fsspec and s3fs: pip install fsspec s3fs (or pip install 'kcodec[s3]')"
    with pytest.raises(StorageError) as e:
        resolve("hdfs://b/p")
    assert str(e.value) == "hdfs:// paths need fsspec and pyarrow: pip install fsspec pyarrow"
    with pytest.raises(StorageError) as e:
        resolve("other://b/p")
    assert str(e.value) == ("other:// paths need fsspec and the fsspec implementation of other: "
                            "pip install fsspec the fsspec implementation of other")


def test_storage_options_from_data_source_options():
    from kcodec.storage import storage_options_from
    assert storage_options_from({"path": "s3://b", "storageOptions": '{"anon": false, "client_kwargs": {"a": 1}}',
                                 "storage.key": "K", "Storage.use_ssl": "TRUE", "storage.anon": "False",
                                 "storage.retries": 3, "storage.region": "eu"}) == \
        {"client_kwargs": {"a": 1}, "key": "K", "use_ssl": True, "anon": False, "retries": 3, "region": "eu"}
    assert storage_options_from({"storageoptions": {"anon": True}}) == {"anon": True}  # as Spark lowercases it
    assert storage_options_from({"path": "p"}) == {}
    with pytest.raises(StorageError, match="^the storageOptions option is not a JSON object: JSONDecodeError$"):
        storage_options_from({"storageOptions": "{anon"})
    with pytest.raises(StorageError, match="^the storageOptions option is not a JSON object$"):
        storage_options_from({"storageOptions": "[1]"})


def test_parse_storage_option():
    from kcodec.storage import parse_storage_option
    assert [parse_storage_option(t) for t in ("key=K", "retries=3", 'kw={"a": [1]}', "url=a=b", "empty=")] == \
        [("key", "K"), ("retries", 3), ("kw", {"a": [1]}), ("url", "a=b"), ("empty", "")]
    for text, shown in (("novalue", "'novalue'"), ("=v", "'=v'")):
        with pytest.raises(StorageError) as e:
            parse_storage_option(text)
        assert str(e.value) == f"--storage-option wants KEY=VALUE, got {shown}"
