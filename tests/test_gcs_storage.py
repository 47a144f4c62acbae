"""Segments in a Google Cloud Storage bucket (gcp-storage-emulator on 127.0.0.1, reached over HTTP by gcsfs).

The same entry points as on S3 (tests/test_object_storage.py), through a
second fsspec file system whose objects, listings and copies behave
differently: reading, ranged reads through the index, the CLI, and
recompression and compaction stopped after every object operation.
"""
import functools

import pytest

import kcodec
from gcs_server import gcs  # noqa: F401  (the session fixture)
from kcodec.log import RecordRange, open_log_dir
from kcodec.log.cleaner import FileOps, recover_log_dir
from kcodec.storage import io_stats
from test_fault_injection import Crash, crash_after, records
from test_object_storage import check_s3_indexes as check_indexes
from test_object_storage import run_compact, run_recompress, source_log
from test_object_storage import s3_names as names
from test_object_storage import s3_records as remote_records


@pytest.mark.parametrize("operation", ["recompress", "compact"])
def test_crash_after_every_object_operation(tmp_path, gcs, operation):
    opts = gcs.storage_options
    fn = functools.partial(run_recompress if operation == "recompress" else run_compact, opts=opts)
    pristine = source_log(tmp_path / "t-0")
    original = records(pristine)
    bucket = gcs.new_bucket()

    def fresh(name):
        url = f"gs://{bucket}/{name}/t-0"
        gcs.upload_dir(pristine, url)
        return url

    reference = fresh("reference")
    steps = []
    fn(reference, ops=FileOps(hook=lambda op, path: steps.append(op)))
    expected = remote_records(reference, opts)
    assert len(steps) > 20
    assert expected == original if operation == "recompress" else len(expected) < len(original)
    # The S3 suite stops after every step; here after the first and the last step of each kind of
    # hand-over (an operation after another), where one phase of the protocol meets the next.
    firsts, lasts = {}, {}
    for k in range(1, len(steps) + 1):
        kind = (steps[k - 2] if k > 1 else None, steps[k - 1])
        firsts.setdefault(kind, k)
        lasts[kind] = k
    crash_points = sorted(set(firsts.values()) | set(lasts.values()))
    assert len(crash_points) > 5
    for k in crash_points:
        url = fresh(f"crash{k}")
        with pytest.raises(Crash):
            fn(url, ops=crash_after(k))
        recover_log_dir(url, storage_options=opts)
        got = remote_records(url, opts)
        offsets = [r[0] for r in got]
        assert offsets == sorted(set(offsets)), f"crash after step {k}: offsets repeat"
        if operation == "recompress":
            assert got == original, f"crash after step {k} lost or duplicated records"
        else:
            assert {r[0] for r in expected} <= set(offsets), f"crash after step {k} lost records"
        assert not [n for n in names(url, opts) if n.endswith((".cleaned", ".swap", ".deleted"))]
        check_indexes(url, opts)
        if k in (1, len(steps)):
            fn(url)  # re-running completes
            assert remote_records(url, opts) == expected, f"re-run after a crash at step {k} differs"


def test_reads_like_local_with_ranged_reads(tmp_path, gcs):
    from kcodec.log import write_partition
    from test_cleaner import batch, kv
    local = tmp_path / "big-0"
    write_partition(local, [batch(i * 50, [kv(b"k%d" % j, b"v" * 300) for j in range(50)]) for i in range(100)],
                    index_interval_bytes=4096)
    url = f"gs://{gcs.new_bucket()}/big-0"
    gcs.upload_dir(str(local), url)
    opts = gcs.storage_options
    remote = open_log_dir(url, storage_options=opts)[("big", 0)]
    assert [s.base_offset for s in remote.segments] == [s.base_offset for s in open_log_dir(local)[("big", 0)].segments]
    assert kcodec.read_arrow(url, storage_options=opts).read_all().equals(kcodec.read_arrow(local).read_all())
    seg = remote.segments[0]
    io_stats.reset()
    start, end = RecordRange(2000, 2100).byte_range(seg)
    assert {b.base_offset for b in seg.batches(start_position=start, end_position=end)} >= {2000, 2050}
    assert io_stats.requests == 2  # the .index object, then one ranged read
    assert io_stats.bytes_read == end - start + 8 * len(seg.offset_index) < seg.size // 10


def test_cli_on_a_gcs_log_directory(tmp_path, gcs, capsys):
    from kcodec.cli import main
    from test_log_dirs import broker_dir
    url = f"gs://{gcs.new_bucket()}/kafka"
    gcs.upload_dir(str(broker_dir(tmp_path / "data")), url)
    opt_args = [f"--storage-option={k}={v}" for k, v in gcs.storage_options.items()]
    assert main(["recompress", url, "--codec", "zstd", "--topic", "orders"] + opt_args) == 0
    out = capsys.readouterr().out
    assert f"{url}/orders-0: 2 segments, 40 records" in out and "clicks" not in out
    assert main(["dump", f"{url}/orders-1/00000000000000000020.log", "--json"] + opt_args) == 0
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 and '"compresscodec": "zstd"' in rows[0]
    assert main(["retain", url, "--retention-bytes", "0"] + opt_args) == 0
    assert capsys.readouterr().out.count("deleted 1 segments") == 4
