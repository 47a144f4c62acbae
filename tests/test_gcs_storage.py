"""Segments in a Google Cloud Storage bucket (gcp-storage-emulator on 127.0.0.1, reached over HTTP by gcsfs).

The same entry points as on S3 (tests/test_object_storage.py), through a
second fsspec file system whose objects, listings and copies behave
differently: reading, ranged reads through the index, the CLI, and
recompression and compaction stopped at each hand-over between object operations.
"""
import pytest

import kcodec
from gcs_server import gcs  # noqa: F401  (the session fixture)
from kcodec.log import RecordRange, open_log_dir
from kcodec.storage import io_stats
from test_object_storage import check_cli_on_a_log_directory, check_crashes


@pytest.mark.parametrize("operation", ["recompress", "compact"])
def test_crash_at_each_hand_over_between_object_operations(tmp_path, gcs, operation):
    # the S3 suite stops after every single step; here after the first and last of each kind of hand-over
    check_crashes(gcs, "gs", tmp_path, operation, every_step=False)


def test_reads_like_local_with_ranged_reads(tmp_path, gcs):
    from builders import batch, kv
    from kcodec.log import write_partition
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
    # the .index object, the header of the batch its entry names (checked to end by the entry's
    # offset, LogSegment.start_position), then one ranged read
    assert io_stats.requests == 3
    assert io_stats.bytes_read == end - start + 8 * len(seg.offset_index) + 27 < seg.size // 10


def test_cli_on_a_gcs_log_directory(tmp_path, gcs, capsys):
    opt_args = [f"--storage-option={k}={v}" for k, v in gcs.storage_options.items()]
    check_cli_on_a_log_directory(gcs, f"gs://{gcs.new_bucket()}/kafka", opt_args, tmp_path, capsys)
