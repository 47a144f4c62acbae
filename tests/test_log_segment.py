"""Segment files and indexes (``LogSegment``, ``OffsetIndex``, ``TimeIndex``)."""
import os
import struct

import numpy as np
import pytest

from kcodec.errors import CorruptDataError
from kcodec.log import (
    IndexBuilder,
    LogWriter,
    OffsetIndex,
    TimeIndex,
    offset_from_file_name,
    open_log_dir,
    rebuild_indexes,
    segment_file_name,
    write_partition,
)
from kcodec.log.files import atomic_write
from kcodec.log.index import CorruptIndexError
from kcodec.records.framing import iter_entries
from oracle_util import load_case


def _batches(name="segment_v2_txn"):
    data, doc, _ = load_case(name)
    return data, doc, [data[e.position:e.position + e.size] for e in iter_entries(data)]


def test_names():
    assert segment_file_name(12345) == "00000000000000012345.log"
    assert segment_file_name(7, ".timeindex") == "00000000000000000007.timeindex"
    assert offset_from_file_name("00000000000000012345.log.deleted") == 12345
    with pytest.raises(ValueError):
        offset_from_file_name("abc.log")


def test_index_interval_rule():
    # appends of 1000 bytes with interval 4096 -> entries at the 6th, 11th, ... append
    b = IndexBuilder(0, 4096)
    for i in range(16):
        b.append(i * 1000, 1000, largest_offset=i, max_timestamp=100 + i, shallow_offset_of_max=i)
    assert b.offset_entries == [(5, 5000), (10, 10000), (15, 15000)]
    assert b.time_entries == [(105, 5), (110, 10), (115, 15)]
    b.finish()
    assert b.time_entries[-1] == (115, 15)


def test_time_index_only_on_increase():
    b = IndexBuilder(100, 0)
    for i, ts in enumerate([50, 40, 40, 60, 55]):
        b.append(i * 10, 10, 100 + i, ts, 100 + i)
    # the first append never creates an entry; later ones only when the max grew
    assert [t for t, _ in b.time_entries] == [50, 60]
    assert b.offset_entries == [(101, 10), (102, 20), (103, 30), (104, 40)]


def test_no_timestamps_no_time_entries():
    b = IndexBuilder(0, 0)
    for i in range(5):
        b.append(i * 10, 10, i, -1, i)
    b.finish()
    assert b.time_entries == []


def test_write_and_read_partition(tmp_path):
    data, doc, batches = _batches()
    part_dir = tmp_path / "orders-3"
    written = write_partition(part_dir, batches, segment_bytes=150_000)
    assert len(written) >= 3
    assert not [f for f in os.listdir(part_dir) if f.startswith(".")]  # no temp files left
    parts = open_log_dir(tmp_path)
    part = parts[("orders", 3)]
    assert [s.base_offset for s in part.segments] == [offset_from_file_name(p.name) for p in written]
    joined = b"".join(s.path.read_bytes() for s in part.segments)
    assert joined == data
    for seg in part.segments:
        seg.sanity_check()
        assert seg.size <= 150_000
        # the index points at batch starts holding the indexed offsets
        starts = {e.position for e in seg.entries()}
        assert set(seg.offset_index.positions.tolist()) <= starts
    part.close()


def test_segment_base_offsets_and_roll(tmp_path):
    data, doc, batches = _batches()
    write_partition(tmp_path / "t-0", batches, segment_bytes=100_000)
    part = open_log_dir(tmp_path / "t-0")[("t", 0)]
    expected_bases = []
    size = 0
    for b, info in zip(batches, doc["batches"]):
        if not expected_bases or size + len(b) > 100_000:
            expected_bases.append(info["baseOffset"])
            size = 0
        size += len(b)
    assert [s.base_offset for s in part.segments] == expected_bases
    part.close()


def test_indexes_match_recovery(tmp_path):
    data, doc, batches = _batches()
    d = tmp_path / "t-0"
    write_partition(d, batches)
    log = d / segment_file_name(0)
    idx_before = (d / segment_file_name(0, ".index")).read_bytes()
    tidx_before = (d / segment_file_name(0, ".timeindex")).read_bytes()
    assert rebuild_indexes(log) == len(data)
    assert (d / segment_file_name(0, ".index")).read_bytes() == idx_before
    assert (d / segment_file_name(0, ".timeindex")).read_bytes() == tidx_before


def test_lookup(tmp_path):
    data, doc, batches = _batches()
    d = tmp_path / "t-0"
    write_partition(d, batches)
    part = open_log_dir(d)[("t", 0)]
    seg = part.segments[0]
    idx = seg.offset_index
    assert idx.lookup(-5) == (0, 0)
    for off, pos in zip(idx.offsets.tolist(), idx.positions.tolist()):
        assert idx.lookup(off) == (off, pos)
        assert idx.lookup(off + 1).offset >= off
    target = doc["batches"][100]["records"][0]["offset"]
    got = [r.offset for b in part.batches(target) for r in b][:3]
    assert got[0] <= target and target in [r["offset"] for r in doc["batches"][100]["records"]]
    all_offsets = [r["offset"] for b in doc["batches"] for r in b["records"]]
    assert [r.offset for b in part.batches() for r in b] == all_offsets
    tidx = seg.time_index
    assert tidx.lookup(-10) == (-1, 0)
    part.close()


def test_byte_ranges_are_batch_aligned(tmp_path):
    data, doc, batches = _batches()
    write_partition(tmp_path / "t-0", batches)
    seg = open_log_dir(tmp_path)[("t", 0)].segments[0]
    ranges = seg.byte_ranges(60_000)
    assert len(ranges) > 3 and ranges[0][0] == 0 and ranges[-1][1] == len(data)
    starts = {e.position for e in iter_entries(data)}
    for (a, b), (c, _) in zip(ranges, ranges[1:]):
        assert b == c and c in starts
    count = sum(len(list(seg.batches(start_position=a, end_position=b))) for a, b in ranges)
    assert count == doc["batchCount"]
    seg.close()


def test_recovery_truncates_at_corrupt_batch(tmp_path):
    data, doc, batches = _batches("segment_mixed")
    d = tmp_path / "t-0"
    d.mkdir()
    bad = bytearray(data)
    pos = doc["batches"][40]["position"]
    bad[pos + 30] ^= 0xFF
    (d / segment_file_name(0)).write_bytes(bad)
    assert rebuild_indexes(d / segment_file_name(0)) == pos
    assert (d / segment_file_name(0)).stat().st_size == pos


def test_writer_rejects_out_of_order(tmp_path):
    _, _, batches = _batches()
    w = LogWriter(tmp_path / "t-0")
    w.append(batches[1])
    with pytest.raises(CorruptDataError, match="offset order"):
        w.append(batches[0])


def test_index_sanity(tmp_path):
    good = OffsetIndex(100, np.array([(1, 0), (5, 100)], dtype=[("relative_offset", ">i4"), ("position", ">i4")]))
    good.sanity_check()
    bad = OffsetIndex(100, np.array([(5, 0), (1, 100)], dtype=good.entries.dtype))
    with pytest.raises(CorruptIndexError):
        bad.sanity_check()
    p = tmp_path / "00000000000000000000.index"
    p.write_bytes(b"\x00" * 9)
    with pytest.raises(CorruptIndexError, match="multiple of 8"):
        OffsetIndex.open(p, 0)
    tp = tmp_path / "00000000000000000000.timeindex"
    tp.write_bytes(struct.pack(">qi", 10, 0) + struct.pack(">qi", 5, 1))
    with pytest.raises(CorruptIndexError):
        TimeIndex.open(tp, 0).sanity_check()


def test_atomic_write_keeps_old_file_on_error(tmp_path):
    p = tmp_path / "f.log"
    p.write_bytes(b"old")
    with pytest.raises(RuntimeError):
        with atomic_write(p) as f:
            f.write(b"new and partial")
            raise RuntimeError("crash")
    assert p.read_bytes() == b"old"
    assert os.listdir(tmp_path) == ["f.log"]
    with atomic_write(p) as f:
        f.write(b"new")
    assert p.read_bytes() == b"new"


def test_written_segments_pass_the_java_oracle(tmp_path):
    from oracle_util import oracle_available, oracle_verify
    if not oracle_available():
        pytest.skip("Java oracle not available")
    data, doc, batches = _batches("segment_mixed")
    written = write_partition(tmp_path / "t-0", batches, segment_bytes=20_000)
    assert len(written) > 2
    offsets = []
    for path in written:
        rc, got = oracle_verify(path.read_bytes())
        assert rc == 0, got
        offsets += [r["offset"] for b in got["batches"] for r in b["records"]]
    assert offsets == [r["offset"] for b in doc["batches"] for r in b["records"]]
