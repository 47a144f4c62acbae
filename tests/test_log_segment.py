"""Segment files and indexes (``LogSegment``, ``OffsetIndex``, ``TimeIndex``)."""
import os
import struct
import warnings

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


def test_a_truncated_segment_is_flushed_to_disk_before_its_indexes_are_written(tmp_path, monkeypatch):
    # LogSegment.recover truncates and then flushes: a crash after the indexes are written must not
    # find the log still holding the bytes the new indexes left out
    import kcodec.log.segment as segment_module

    data, doc, _ = _batches("segment_mixed")
    d = tmp_path / "t-0"
    d.mkdir()
    log = d / segment_file_name(0)
    pos = doc["batches"][40]["position"]
    log.write_bytes(data[:pos + 30])  # a partial batch at the end
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append((os.path.realpath(f"/proc/self/fd/{fd}"), os.fstat(fd).st_size,
                       (d / segment_file_name(0, ".index")).exists()))
        real(fd)

    monkeypatch.setattr(segment_module.os, "fsync", fsync)
    assert rebuild_indexes(log) == pos
    assert synced[0] == (str(log.resolve()), pos, False)


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


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o027, 0o640), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_write_gives_the_permissions_of_a_plain_open(tmp_path, umask, mode):
    from kcodec.storage import atomic_write_bytes

    old = os.umask(umask)
    try:
        atomic_write_bytes(tmp_path / "new.html", b"page")
        (tmp_path / "plain.html").write_bytes(b"page")
        (tmp_path / "old.html").write_bytes(b"before")
        os.chmod(tmp_path / "old.html", 0o600)
        atomic_write_bytes(tmp_path / "old.html", b"after")  # a new file, not the old one's mode
    finally:
        os.umask(old)
    assert {p.name: p.stat().st_mode & 0o777 for p in tmp_path.iterdir()} == \
        {"new.html": mode, "plain.html": mode, "old.html": mode}
    assert (tmp_path / "old.html").read_bytes() == b"after"


def test_atomic_write_leaves_nothing_behind_when_the_rename_fails(tmp_path):
    from kcodec.storage import atomic_write_bytes

    (tmp_path / "taken").mkdir()
    (tmp_path / "taken" / "inside").write_bytes(b"x")
    with pytest.raises(OSError):
        atomic_write_bytes(tmp_path / "taken", b"data")  # a directory that is not empty cannot be replaced
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]
    with pytest.raises(TypeError):
        atomic_write_bytes(tmp_path / "f", "text, not bytes")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_atomic_write_of_a_forked_process_never_touches_its_parents_temporary_file(tmp_path):
    """The report's charts are written by forked processes: a child writing the file the parent is writing
    has a temporary file of its own, so the parent's write still lands whole after the child's."""
    p = tmp_path / "chart.png"
    with atomic_write(p) as f:
        f.write(b"parent's ")
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                with atomic_write(p) as g:
                    g.write(b"child's")
                code = 0
            finally:
                os._exit(code)
        assert os.waitpid(pid, 0)[1] == 0
        assert p.read_bytes() == b"child's"
        f.write(b"chart")
    assert p.read_bytes() == b"parent's chart"
    assert os.listdir(tmp_path) == ["chart.png"]


def _record_fsyncs(monkeypatch):
    """Every os.fsync from now on, as what it made durable: ("file", its size then) or ("dir", its inode)."""
    import stat

    seen = []
    real = os.fsync

    def fsync(fd):
        st = os.fstat(fd)
        seen.append(("dir", st.st_ino) if stat.S_ISDIR(st.st_mode) else ("file", st.st_size))
        real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return seen


def _open_fds():
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_atomic_write_makes_every_byte_durable_then_the_rename_and_closes_its_file(tmp_path, monkeypatch):
    seen = _record_fsyncs(monkeypatch)
    p = tmp_path / "f.log"
    fds = _open_fds()
    with atomic_write(p) as f:
        f.write(b"12345")
    # the file's fsync covers the five buffered bytes; the folder's makes the rename durable
    assert seen == [("file", 5), ("dir", tmp_path.stat().st_ino)]
    assert f.closed and _open_fds() == fds and p.read_bytes() == b"12345"
    with pytest.raises(RuntimeError):
        with atomic_write(p) as g:
            g.write(b"partial")
            raise RuntimeError("crash")
    assert g.closed and _open_fds() == fds
    assert p.read_bytes() == b"12345" and os.listdir(tmp_path) == ["f.log"]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts descriptors in /proc")
def test_fsync_dir_syncs_the_folder_and_closes_its_descriptor(tmp_path, monkeypatch):
    from kcodec.storage import fsync_dir

    seen = _record_fsyncs(monkeypatch)
    fds = _open_fds()
    fsync_dir(tmp_path)
    assert seen == [("dir", tmp_path.stat().st_ino)] and _open_fds() == fds


def test_open_new_replaces_links_and_stale_files_and_never_writes_through_them(tmp_path):
    from kcodec.storage import open_new

    outside = tmp_path / "outside"
    outside.write_bytes(b"keep")
    (tmp_path / "dir").mkdir()
    paths = [tmp_path / "dir" / name for name in ("symlink", "hardlink", "stale", "fresh")]
    paths[0].symlink_to(outside)
    os.link(outside, paths[1])
    paths[2].write_bytes(b"stale contents")
    old = os.umask(0)
    try:
        for p in paths:
            with open_new(p) as f:
                f.write(b"new")
    finally:
        os.umask(old)
    assert outside.read_bytes() == b"keep"
    assert [(p.is_symlink(), p.read_bytes(), p.stat().st_mode & 0o777, p.stat().st_nlink) for p in paths] == \
        [(False, b"new", 0o666, 1)] * 4


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



# -- LogSegment and Partition, on hand-built segments -------------------------------------

@pytest.fixture
def log_at(tmp_path):
    """``log_at(name, sets, index=None, **writer options)``: the partition folder ``tmp_path/name`` of
    ``sets`` (one message set each, as appended), opened; ``index`` replaces the first segment's
    ``.index`` by these ``(absolute offset, position)`` entries.  Closed at the end."""
    opened = []

    def make(name, sets, index=None, **options):
        d = tmp_path / name
        write_partition(d, sets, **options)
        if index is not None:
            base = offset_from_file_name(sorted(p.name for p in d.glob("*.log"))[0])
            (d / segment_file_name(base, ".index")).write_bytes(
                b"".join(struct.pack(">ii", o - base, p) for o, p in index))
        part = open_log_dir(d)[(name.rsplit("-", 1)[0], int(name.rsplit("-", 1)[1]))]
        opened.append(part)
        return part

    yield make
    for part in opened:
        part.close()


def _five_record_sets(count=6):
    """``count`` batches of five records each at offsets 0, 5, 10, ...; and their start positions."""
    from builders import batch, kv
    sets = [batch(i * 5, [kv(b"k%d" % j, b"v" * 40) for j in range(5)]) for i in range(count)]
    starts = [sum(len(s) for s in sets[:i]) for i in range(count)]
    return sets, starts


def test_writer_defaults_are_kafkas(tmp_path):
    """log.segment.bytes is 1 GiB and log.index.interval.bytes 4096 (Kafka's LogConfig defaults); an
    entry is written when more than 4096 bytes, not exactly 4096, went in since the last one."""
    from builders import batch, kv
    assert LogWriter(tmp_path / "t-0").segment_bytes == 1_073_741_824
    # a one-record batch with a 953-byte value is 1024 bytes, with 954 bytes 1025
    sizes = [1024] * 6 + [1024, 1024, 1025, 1024, 1024]
    sets = [batch(i, [kv(b"k", b"v" * (n - 71))]) for i, n in enumerate(sizes)]
    assert [len(s) for s in sets] == sizes
    write_partition(tmp_path / "t-1", sets)
    index = OffsetIndex.open(tmp_path / "t-1" / segment_file_name(0, ".index"), 0)
    # 4096 bytes after four appends: none at the fifth; 5120 after five: one at the sixth (offset 5,
    # position 5120); then 4097 after four more: one at the tenth (offset 9, position 9217)
    assert list(zip(index.offsets.tolist(), index.positions.tolist())) == [(5, 5120), (9, 9217)]


def test_segment_names_and_live_size(tmp_path, log_at):
    from kcodec.log import LogSegment
    sets, starts = _five_record_sets(2)
    seg = log_at("t-0", sets).segments[0]
    path = tmp_path / "t-0" / segment_file_name(0)
    assert repr(seg) == f"LogSegment({str(path)!r})" and seg.url == str(path)
    assert seg.txn_index_path == tmp_path / "t-0" / segment_file_name(0, ".txnindex")
    assert seg.size == len(sets[0]) + len(sets[1])
    # a local .log is measured on every call, as LogSegment.size reads the live file
    with open(path, "ab") as f:
        f.write(b"\0" * 7)
    assert seg.size == len(sets[0]) + len(sets[1]) + 7
    assert LogSegment(path, size=3).size == len(sets[0]) + len(sets[1]) + 7


def test_aborted_transactions_from_the_txnindex(log_at):
    from kcodec.log.transaction_index import AbortedTxn, encode_txn_index
    sets, _ = _five_record_sets(2)
    seg = log_at("t-0", sets).segments[0]
    assert seg.aborted_transactions() == []  # no .txnindex: nothing was aborted
    seg.txn_index_path.write_bytes(encode_txn_index([AbortedTxn(42, 0, 4, 5), AbortedTxn(43, 2, 9, 10)]))
    assert seg.aborted_transactions() == [(42, 0, 4), (43, 2, 9)]


def test_empty_segment(tmp_path, log_at):
    """A rolled, still empty active segment reads as nothing (an empty file cannot be memory-mapped)."""
    sets, _ = _five_record_sets(2)
    log_at("t-0", sets)
    (tmp_path / "t-0" / segment_file_name(10)).write_bytes(b"")
    part = open_log_dir(tmp_path / "t-0")[("t", 0)]
    empty = part.segments[1]
    assert empty.base_offset == 10 and empty.size == 0
    assert empty.data == b""
    assert list(empty.batches()) == [] and list(empty.batches(12)) == []
    assert empty.byte_ranges(1) == []
    assert [b.base_offset for b in part.batches()] == [0, 5]
    part.close()


def test_close_unmaps_and_reading_again_reopens(log_at):
    if not os.path.isdir("/proc/self/fd"):
        pytest.skip("counts open files in /proc")
    sets, starts = _five_record_sets(3)
    seg = log_at("t-0", sets).segments[0]

    def fds():
        return sum(1 for fd in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{fd}") == str(seg.path))

    mapped = seg.data
    assert bytes(mapped[:12]) == sets[0][:12] and fds() == 2  # the file, and the map's own duplicate
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        seg.close()
    assert mapped.closed and fds() == 0
    assert [w.message for w in caught if issubclass(w.category, ResourceWarning)] == []  # closed, not collected
    assert bytes(seg.data) == b"".join(sets)  # reading again maps the file again
    with seg:
        again = seg.data
    assert again.closed and fds() == 0
    # a batch still viewing the map keeps it mapped (and its descriptor open) until it goes
    reading = seg.batches()
    held = next(reading)
    reading.close()
    seg.close()
    assert fds() == 1 and held.base_offset == 0 and [r.offset for r in held] == [0, 1, 2, 3, 4]
    del held
    assert fds() == 0


def test_byte_ranges_cut_at_the_first_entry_target_bytes_on(log_at):
    sets, starts = _five_record_sets(12)
    size = sum(len(s) for s in sets)
    seg = log_at("t-0", sets, index_interval_bytes=1).segments[0]
    assert seg.offset_index.positions.tolist() == starts[1:]  # every batch after the first is indexed
    n = len(sets[0])
    assert seg.byte_ranges(size) == [(0, size)]
    # a cut where at least target_bytes (exactly 3 batches here) lie behind the last cut
    assert seg.byte_ranges(3 * n) == [(0, 3 * n), (3 * n, 6 * n), (6 * n, 9 * n), (9 * n, size)]
    assert seg.byte_ranges(3 * n + 1) == [(0, 4 * n), (4 * n, 8 * n), (8 * n, size)]
    one = log_at("u-0", sets[:3], index=[(9, n)]).segments[0]
    assert len(one.offset_index) == 1 and one.byte_ranges(n) == [(0, n), (n, 3 * n)]


def test_start_position_trusts_only_entries_a_broker_writes(log_at):
    """An entry names the position of a batch ending by its offset (LogSegment.append indexes an
    append's largest offset at its first byte); the lookup below the first entry is (base, 0)."""
    from kcodec.errors import CorruptIndexWarning
    sets, starts = _five_record_sets(6)
    seg = log_at("t-0", sets, index=[(14, starts[2]), (24, starts[4])]).segments[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seg.start_position(None) == 0 and seg.start_position(0) == 0
        assert seg.start_position(3) == 0  # before the first entry: from the start, the index kept
        assert seg.start_position(14) == starts[2] and seg.start_position(23) == starts[2]
        assert seg.start_position(29) == starts[4]
        assert [b.base_offset for b in seg.batches(17)] == [15, 20, 25]
    assert len(seg.offset_index) == 2
    # an entry at a batch's first offset: the batch ends after it, so the index is not used
    bad = log_at("u-0", sets, index=[(10, starts[2]), (24, starts[4])]).segments[0]
    with pytest.warns(CorruptIndexWarning, match=r"its entry \(10, %d\) does not point at a batch ending by "
                      r"offset 10" % starts[2]) as caught:
        assert bad.start_position(12) == 0
    assert [w.filename for w in caught] == [__file__]
    assert len(bad.offset_index) == 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # dropped once: no second warning
        assert bad.start_position(29) == 0
        assert [b.base_offset for b in bad.batches(12)] == [10, 15, 20, 25]


def test_start_position_of_a_legacy_wrapper(log_at):
    """A v0/v1 wrapper's offset is its last inner offset: an entry at it is a batch ending by it."""
    from builders import kv, legacy_batch
    sets = [legacy_batch(i * 4, [kv(b"k%d" % j, b"v" * 30) for j in range(4)], magic=1, codec="gzip")
            for i in range(4)]  # wrappers at offsets 3, 7, 11, 15
    starts = [sum(len(s) for s in sets[:i]) for i in range(4)]
    seg = log_at("t-0", sets, index=[(11, starts[2])]).segments[0]
    assert seg.base_offset == 3
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seg.start_position(11) == starts[2] and seg.start_position(14) == starts[2]
        assert [r.offset for b in seg.batches(9) for r in b] == list(range(8, 16))
    assert len(seg.offset_index) == 1
    # uncompressed v1 messages have no lastOffsetDelta: the bytes there are the timestamp's and key length's
    plain = [legacy_batch(i, [kv(b"k", b"v" * 30)], magic=1, ts=1_000_000 + i) for i in range(6)]
    starts = [sum(len(s) for s in plain[:i]) for i in range(6)]
    seg = log_at("u-0", plain, index=[(2, starts[2]), (4, starts[4])]).segments[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert seg.start_position(3) == starts[2] and seg.start_position(5) == starts[4]
        assert [b.base_offset for b in seg.batches(3)] == [3, 4, 5]


@pytest.mark.parametrize("tail", [10, 16, 20])
def test_start_position_at_a_partial_batch(tmp_path, log_at, tail):
    """An entry at the partial batch a crash left at the end: too short to vouch for anything."""
    from kcodec.errors import CorruptIndexWarning
    sets, starts = _five_record_sets(3)
    size = sum(len(s) for s in sets)
    log_at("t-0", sets)
    with open(tmp_path / "t-0" / segment_file_name(0), "ab") as f:
        f.write(sets[0][:tail])  # its magic byte (2) is the 17th
    seg = log_at("t-0", [], index=[(15, size)]).segments[0]
    with pytest.warns(CorruptIndexWarning, match=r"its entry \(15, %d\)" % size):
        assert seg.start_position(15) == 0
    assert [b.base_offset for b in seg.batches(15)] == []
    assert [b.base_offset for b in seg.batches(7)] == [5, 10]


def test_warnings_name_the_callers_line(tmp_path, log_at):
    """However deep in kcodec (properties, generators, helpers) a warning is raised, it names the
    caller's file."""
    from kcodec.errors import CorruptIndexWarning, InvalidNameWarning
    from kcodec.log import find_partitions, require_partitions
    sets, starts = _five_record_sets(3)
    part = log_at("t-0", sets)
    with open(part.segments[0].index_path, "ab") as f:
        f.write(b"\0")
    reads = {"start_position": lambda seg: seg.start_position(12), "offset_index": lambda seg: seg.offset_index,
             "byte_ranges": lambda seg: seg.byte_ranges(1), "batches": lambda seg: list(seg.batches(12))}
    for what, read in reads.items():
        seg = log_at("t-0", []).segments[0]
        with pytest.warns(CorruptIndexWarning, match="not a multiple of 8") as caught:
            read(seg)
        assert [w.filename for w in caught] == [__file__], what
    with pytest.warns(CorruptIndexWarning) as caught:
        assert [b.base_offset for b in log_at("t-0", []).batches(12)] == [10]
    assert [w.filename for w in caught] == [__file__]
    write_partition(tmp_path / "bad topic-0", sets[:1])
    for read in (open_log_dir, find_partitions, require_partitions):
        with pytest.warns(InvalidNameWarning, match="bad topic-0") as caught:
            read(tmp_path)
        assert [w.filename for w in caught] == [__file__], read.__name__


def test_errors_name_the_segment_and_the_byte(tmp_path, log_at):
    sets, starts = _five_record_sets(4)
    log_at("t-0", sets, index_interval_bytes=1)
    log = tmp_path / "t-0" / segment_file_name(0)
    data = bytearray(log.read_bytes())
    data[starts[2] + 70] ^= 0x01  # in a record of the third batch: its CRC no longer matches
    log.write_bytes(bytes(data))
    part = log_at("t-0", [])
    seg = part.segments[0]
    for start in (None, 12):  # from the first byte, and from the index entry of offset 9
        for reader in (seg, part):
            with pytest.raises(CorruptDataError) as e:
                list(reader.batches(start))
            assert (e.value.source, e.value.position, e.value.batch_offset) == (str(log), starts[2], 10)
    assert seg.start_position(12) == starts[1]
    data[starts[3] + 8:starts[3] + 12] = struct.pack(">i", 3)  # a size below the 14 bytes of any entry
    log.write_bytes(bytes(data))
    seg = log_at("t-0", []).segments[0]
    with pytest.raises(CorruptDataError) as e:
        list(seg.entries())
    assert (e.value.source, e.value.position) == (str(log), starts[3])


def test_sanity_check_names_the_bad_entry(log_at):
    sets, starts = _five_record_sets(4)
    log_at("t-0", sets, index=[(9, starts[1]), (19, starts[3])]).segments[0].sanity_check()
    seg = log_at("u-0", sets, index=[(9, starts[1]), (19, starts[3] + 1)]).segments[0]
    with pytest.raises(CorruptDataError, match=r"offset index entry \(19, %d\) does not point at a batch"
                       % (starts[3] + 1)):
        seg.sanity_check()
    seg = log_at("v-0", sets, index=[(9, starts[1]), (18, starts[3])]).segments[0]
    with pytest.raises(CorruptDataError, match=r"offset index entry \(18, %d\) points at a batch ending at "
                       r"offset 19" % starts[3]):
        seg.sanity_check()
    seg = log_at("w-0", sets).segments[0]
    seg.time_index_path.write_bytes(struct.pack(">qi", 200, 9) + struct.pack(">qi", 100, 19))
    with pytest.raises(CorruptIndexError, match="time index entries are not increasing"):
        seg.sanity_check()


def test_partition_finds_segments_by_offset(tmp_path, log_at):
    from kcodec.log import Partition
    sets, starts = _five_record_sets(8)
    part = log_at("t-0", sets, segment_bytes=2 * len(sets[0]))
    assert [s.base_offset for s in part.segments] == [0, 10, 20, 30]
    assert part.active_segment is part.segments[3]
    assert [part.segment_for(o).base_offset for o in (0, 9, 10, 19, 20, 35, 99)] == [0, 0, 10, 10, 20, 30, 30]
    assert part.segment_for(-1) is None
    assert Partition("t", 0, tmp_path).active_segment is None


def test_partition_reads_from_the_segment_holding_the_start(log_at):
    """Earlier segments are not opened (retention may have deleted them since the folder was listed),
    as LocalLog.read starts at the floor segment of the offset."""
    sets, starts = _five_record_sets(8)
    part = log_at("t-0", sets, segment_bytes=2 * len(sets[0]))
    for seg in part.segments[:2]:
        seg.path.unlink()
    assert [b.base_offset for b in part.batches(20)] == [20, 25, 30, 35]
    assert [b.base_offset for b in part.batches(27)] == [25, 30, 35]
    part.segments[2].path.unlink()
    assert [b.base_offset for b in part.batches(30)] == [30, 35]
    assert [b.base_offset for b in part.batches(36)] == [35]
    with pytest.raises(FileNotFoundError):
        list(part.batches(19))


def test_partition_close_unmaps_every_segment(log_at):
    sets, _ = _five_record_sets(4)
    part = log_at("t-0", sets, segment_bytes=2 * len(sets[0]))
    maps = [seg.data for seg in part.segments]
    assert [bytes(m[:8]) for m in maps] == [sets[0][:8], sets[2][:8]]
    part.close()
    assert [m.closed for m in maps] == [True, True]


def test_open_partition_takes_the_names_given(tmp_path, log_at):
    from kcodec.log import SkippedFolder, open_partition
    sets, _ = _five_record_sets(2)
    log_at("t-0", sets)
    for names, expected in (({"topic": "orders", "partition": 7}, ("orders", 7)), ({"partition": 7}, ("t", 7)),
                            ({"topic": "orders"}, ("orders", 0))):
        part = open_partition(tmp_path / "t-0", **names)
        assert (part.topic, part.partition, part.layout, part.topic_id) == expected + ("broker", None)
        assert [b.base_offset for b in part.batches()] == [0, 5]
        part.close()
    # a folder not named <topic>-<partition> opens with both given, and given names are checked as Kafka does
    (tmp_path / "t-0").rename(tmp_path / "segments")
    part = open_partition(tmp_path / "segments", "orders", 7)
    assert (part.topic, part.partition, part.topic_id) == ("orders", 7, None)
    assert [s.base_offset for s in part.segments] == [0]
    part.close()
    from kcodec.errors import InvalidNameError
    with pytest.raises(InvalidNameError, match="segments"):
        open_partition(tmp_path / "segments", "bad topic", 7)
    with pytest.raises(InvalidNameError, match="segments"):
        open_partition(tmp_path / "segments", "orders", -1)
    (tmp_path / "segments").rename(tmp_path / "t-0")
    found = open_log_dir(tmp_path)
    assert list(found) == [("t", 0)] and found.skipped == []
    skipped = SkippedFolder(str(tmp_path / "bad topic-0"), "not a partition folder name")
    with pytest.raises(AttributeError):  # a frozen record of what was found
        skipped.reason = "other"
    assert {skipped, SkippedFolder(str(tmp_path / "bad topic-0"), "not a partition folder name")} == {skipped}
    found[("t", 0)].close()


def test_writer_takes_message_sets_as_a_broker_appends_them(tmp_path):
    """Each append is one message set: a partial batch in it is refused whole, the segment is named by its
    first offset (a v2 batch's base offset, a v0/v1 entry's offset), and offsets must increase."""
    from builders import batch, kv, legacy_batch
    from kcodec.errors import CorruptRecordError
    sets, starts = _five_record_sets(3)
    w = LogWriter(tmp_path / "t-0")
    w.append(b"")  # nothing to append, nothing to name a segment by
    with pytest.raises(CorruptRecordError) as e:
        w.append(sets[0] + sets[1][:30])
    assert e.value.position == len(sets[0])
    w.append(sets[0] + sets[1])
    with pytest.raises(CorruptDataError, match="offset order: offset 9 after 9"):
        w.append(batch(9, [kv(b"k", b"v")]))
    w.append(sets[2])
    assert [p.name for p in w.close()] == [segment_file_name(0)]
    assert (tmp_path / "t-0" / segment_file_name(0)).read_bytes() == b"".join(sets)
    assert LogWriter(tmp_path / "t-1").close() == [] and os.listdir(tmp_path / "t-1") == []
    legacy = legacy_batch(0, [kv(b"k%d" % i, b"v") for i in range(3)], magic=1)  # three entries, offsets 0-2
    assert [p.name for p in write_partition(tmp_path / "t-2", [legacy])] == [segment_file_name(0)]
    mixed = sets[0] + legacy_batch(5, [kv(b"k", b"v")], magic=1)
    assert [p.name for p in write_partition(tmp_path / "t-3", [mixed])] == [segment_file_name(0)]


def test_writer_rolls_when_an_offset_no_longer_fits_the_index(tmp_path):
    """A relative offset is a 4-byte int: an append ending 2**31 - 1 past the base still fits
    (LogSegment.canConvertToRelativeOffset), one further rolls; far from offset 0 alike."""
    from builders import batch, kv
    for base in (0, 3_000_000_000):
        sets = [batch(base + o, [kv(b"k", b"v")]) for o in (0, 2 ** 31 - 1, 2 ** 31, 2 ** 31 + 5)]
        written = write_partition(tmp_path / f"t-{base}", sets)
        assert [offset_from_file_name(p.name) for p in written] == [base, base + 2 ** 31]


def test_writer_indexes_the_first_batch_of_the_largest_timestamp(tmp_path):
    """Within one message set the time index names the first batch reaching the largest timestamp, even
    a timestamp of 0 (LogValidator's shallowOffsetOfMaxTimestamp starts below every timestamp)."""
    from builders import batch
    cases = {"t-0": ([0] * 5, [0] * 5, [(0, 4)]), "t-1": ([7] * 5, [7] * 5, [(7, 4)]),
             "t-2": ([7] * 5, [8] * 5, [(8, 9)])}
    for name, (first, second, expected) in cases.items():
        message_set = batch(0, [(b"k", b"v", t) for t in first]) + batch(5, [(b"k", b"v", t) for t in second])
        write_partition(tmp_path / name, [message_set])
        index = TimeIndex.open(tmp_path / name / segment_file_name(0, ".timeindex"), 0)
        assert [(int(t), int(r)) for t, r in index.entries.tolist()] == expected


def test_writer_refuses_a_negative_base_offset(tmp_path):
    from builders import batch, kv
    from kcodec.errors import InvalidNameError
    with pytest.raises(InvalidNameError, match="segment base offset") as e:
        LogWriter(tmp_path / "t-0").append(batch(-5, [kv(b"k", b"v")]))
    assert e.value.source == str(tmp_path / "t-0")
    assert os.listdir(tmp_path / "t-0") == []


def test_rebuild_indexes_truncates_only_what_recovery_does(tmp_path):
    """LogSegment.recover checks each batch's size and checksum (ensureValid), not its records; a batch
    whose offsets no index can hold throws past the truncation (LogLoader splits that segment)."""
    import kcodec
    from builders import batch, batch_around, kv
    first, after = (batch(o, [kv(b"k%d" % j, b"v" * 40) for j in range(5)]) for o in (0, 6))
    # offset 5, one record that does not parse, under a valid checksum (which starts after the offset)
    sealed = struct.pack(">q", 5) + batch_around(b"\x7f" * 20, 1, "none")[8:]
    with pytest.raises(CorruptDataError):
        list(next(iter(kcodec.read_batches(sealed))))
    d = tmp_path / "t-0"
    d.mkdir()
    log = d / segment_file_name(0)
    log.write_bytes(first + sealed + after + first[:40])
    assert rebuild_indexes(log, truncate=False) == len(first + sealed + after)
    assert log.stat().st_size == len(first + sealed + after) + 40  # kept, as asked
    assert rebuild_indexes(log, index_interval_bytes=1) == len(first + sealed + after)
    assert log.read_bytes() == first + sealed + after
    index = OffsetIndex.open(d / segment_file_name(0, ".index"), 0)
    assert list(zip(index.offsets.tolist(), index.positions.tolist())) == [(5, len(first)), (10, len(first + sealed))]
    far = batch(2 ** 31, [kv(b"k", b"v")])
    log.write_bytes(first + far + after[:40])
    with pytest.raises(CorruptDataError, match=r"offset 2147483648 cannot be stored relative to base offset 0") as e:
        rebuild_indexes(log)
    assert (e.value.source, e.value.position) == (str(log), len(first))
    assert log.read_bytes() == first + far + after[:40]  # nothing truncated


def test_writer_puts_the_log_last(tmp_path, monkeypatch):
    """On a local disk a segment's .log appears after its indexes, so a crash leaves no .log with a
    half-written index beside it (recovery rebuilds missing ones)."""
    from kcodec.storage import LocalStorage
    puts = []
    real_put = LocalStorage.put
    monkeypatch.setattr(LocalStorage, "put", lambda self, path, data: (puts.append(os.path.basename(path)),
                                                                         real_put(self, path, data)))
    sets, _ = _five_record_sets(4)
    write_partition(tmp_path / "t-0", sets, segment_bytes=2 * len(sets[0]))
    assert puts == [segment_file_name(base, suffix) for base in (0, 10) for suffix in (".index", ".timeindex", ".log")]


def test_a_folder_with_broker_segments_is_a_broker_partition(tmp_path, log_at):
    """A tiered-storage name (``<offset>-<segment id>.log``) beside broker segments does not make the
    folder a tiered one."""
    from kcodec.log import open_partition
    sets, _ = _five_record_sets(2)
    log_at("t-0", sets)
    stray = tmp_path / "t-0" / ("%020d-%s.log" % (5, "A" * 22))
    stray.write_bytes(sets[1])
    part = open_partition(tmp_path / "t-0")
    assert (part.layout, part.topic_id) == ("broker", None)
    assert [s.path.name for s in part.segments] == [segment_file_name(0)]
    part.close()
