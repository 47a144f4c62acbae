"""Log compaction of a partition directory: the rules of Kafka's ``Cleaner``."""
import os
import struct
import time

import pytest

from builders import (
    DAY,
    PID,
    PID2,
    T0,
    batch,
    check_dir_with_java,
    check_indexes,
    dir_batches,
    dir_records,
    kv,
    legacy_batch,
    make_log,
    marker,
    sized_batch,
)
from kcodec.compression import CompressionType
from kcodec.log.cleaner import (
    CleanerConfig,
    FileOps,
    build_indexes,
    compact,
    group_segments_by_size,
    list_segments,
    read_cleaner_checkpoint,
    read_txn_index,
    recover_log_dir,
    segment_file_name,
)


def base_log(tmp_path, name="topic-0"):
    """Three segments plus an active one: keys overwritten across segments."""
    return make_log(tmp_path / name, [
        [batch(0, [kv("a", "a0"), kv("b", "b0"), kv("c", "c0")]), batch(3, [kv("a", "a1"), kv("d", "d0")])],
        [batch(5, [kv("b", "b1"), kv("e", "e0")]), batch(7, [kv("c", "c1"), kv("f", "f0"), kv("a", "a2")])],
        [batch(10, [kv("g", "g0"), kv("b", "b2")])],
        [batch(12, [kv("a", "a3"), kv("z", "z0")])],  # active
    ])


def run(path, now=T0 + 1000, **cfg):
    config = CleanerConfig(**cfg)
    return compact(str(path), config=config, now_ms=now, force=True)


# --------------------------------------------------------------------------------------------
# record retention

def test_latest_record_per_key_kept_offsets_unchanged(tmp_path):
    d = base_log(tmp_path)
    active_before = open(os.path.join(d, segment_file_name(12)), "rb").read()
    r = run(d)
    assert r.cleaned and r.first_uncleanable_offset == 12
    got = dir_records(d)
    assert got == [
        (4, b"d", b"d0"), (6, b"e", b"e0"), (7, b"c", b"c1"), (8, b"f", b"f0"), (9, b"a", b"a2"),
        (10, b"g", b"g0"), (11, b"b", b"b2"), (12, b"a", b"a3"), (13, b"z", b"z0")]
    # the active segment is untouched, byte for byte
    assert open(os.path.join(d, segment_file_name(12)), "rb").read() == active_before
    check_indexes(d)
    check_dir_with_java(d)


def test_batch_keeps_base_and_last_offset(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a"), kv("b"), kv("c")], codec="gzip")],
        [batch(3, [kv("c", "new")])],
        [batch(4, [kv("x")])],
    ])
    run(d)
    b = dir_batches(d)[0]
    assert (b.base_offset, b.last_offset, b.record_count) == (0, 2, 2)  # record 2 gone, lastOffsetDelta kept
    assert CompressionType.of(b.compression) == CompressionType.GZIP  # same codec (default level)
    assert [(r.offset, r.key) for r in b] == [(0, b"a"), (1, b"b")]
    check_dir_with_java(d)


def test_untouched_batches_are_copied_verbatim(tmp_path):
    first = batch(0, [kv("a"), kv("b")], codec="lz4")
    d = make_log(tmp_path / "t-0", [[first], [batch(2, [kv("c")])], [batch(3, [kv("x")])]])
    run(d)
    data = open(os.path.join(d, segment_file_name(0)), "rb").read()
    assert data.startswith(first)


def test_null_keys_dropped_from_legacy_data(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [legacy_batch(0, [kv("a")]), legacy_batch(1, [(None, b"nokey")]), legacy_batch(2, [kv("b")])],
        [batch(3, [kv("x")])],
    ])
    r = run(d)
    assert r.invalid_records == 1
    assert dir_records(d) == [(0, b"a", b"v"), (2, b"b", b"v"), (3, b"x", b"v")]
    check_dir_with_java(d)


def test_keys_only_in_clean_section_are_kept(tmp_path):
    d = base_log(tmp_path)
    r = compact(d, config=CleanerConfig(), now_ms=T0, first_dirty_offset=5, force=True)
    got = dict((o, (k, v)) for o, k, v in dir_records(d))
    # d (offset 4) and a@3 sit below the dirty range; only "a" is superseded there
    assert 4 in got and 3 not in got and 0 not in got
    assert r.first_dirty_offset == 5


# --------------------------------------------------------------------------------------------
# tombstones and the delete horizon (KIP-534)

def _horizon_of(path, offset):
    for b in dir_batches(path):
        if b.base_offset <= offset <= b.last_offset:
            return b.delete_horizon_ms, [r.offset for r in b]
    return None, []


def test_tombstone_kept_until_horizon_then_removed(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a"), kv("b")])],
        [batch(2, [kv("a", None), kv("c")])],
        [batch(4, [kv("x")])],
    ])
    now1 = T0 + 1000
    run(d, now=now1, delete_retention_ms=DAY)
    horizon, offs = _horizon_of(d, 2)
    assert horizon == now1 + DAY and 2 in offs  # first clean: kept, horizon stamped
    b = [b for b in dir_batches(d) if b.base_offset == 2][0]
    assert b.base_timestamp == now1 + DAY
    check_dir_with_java(d)
    run(d, now=now1 + DAY - 1, delete_retention_ms=DAY)
    assert 2 in [o for o, *_ in dir_records(d)]  # before the horizon: still there
    run(d, now=now1 + DAY + 1, delete_retention_ms=DAY)
    assert 2 not in [o for o, *_ in dir_records(d)]  # after it: gone
    assert [o for o, *_ in dir_records(d)] == [1, 3, 4]
    check_dir_with_java(d)


def test_tombstones_on_both_sides_of_the_horizon(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a"), kv("b")])],
        [batch(2, [kv("a", None)])],
        [batch(3, [kv("x")])],
    ])
    now1 = T0 + 1000
    run(d, now=now1, delete_retention_ms=DAY)
    # a later segment brings a second tombstone; the old active segment becomes cleanable
    make_log(d, [[batch(4, [kv("b", None), kv("y")])], [batch(6, [kv("z")])]])
    now2 = now1 + DAY + 5
    run(d, now=now2, delete_retention_ms=DAY)
    offsets = [o for o, *_ in dir_records(d)]
    assert 2 not in offsets  # horizon now1 + DAY has passed: removed
    assert 4 in offsets  # first seen in this clean: kept, stamped now2 + DAY
    assert _horizon_of(d, 4)[0] == now2 + DAY
    assert offsets == [3, 4, 5, 6]
    check_dir_with_java(d)


def test_legacy_tombstones_follow_last_modified(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [legacy_batch(0, [kv("a")]), legacy_batch(1, [(b"a", None)])],
        [batch(2, [kv("x")])],
    ], mtime=(T0 - 10 * DAY) / 1000)
    run(d, delete_retention_ms=DAY)
    assert (1, b"a", None) in dir_records(d)  # no clean section yet: legacy deletes retained


# --------------------------------------------------------------------------------------------
# producers and transactions

def test_last_batch_of_active_producer_kept_empty(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "1")], producer_id=PID, producer_epoch=0, base_sequence=0)],
        [batch(1, [kv("a", "2")])],
        [batch(2, [kv("x")])],
    ])
    run(d, producer_id_expiration_ms=10 * DAY)
    b = dir_batches(d)[0]
    assert (b.base_offset, b.record_count, b.size_in_bytes, b.producer_id, b.base_sequence) == (0, 0, 61, PID, 0)
    check_dir_with_java(d)
    # once the producer has expired the empty batch goes too
    run(d, now=T0 + 11 * DAY, producer_id_expiration_ms=10 * DAY)
    assert [b.base_offset for b in dir_batches(d)] == [1, 2]


def test_last_batch_of_round_kept_empty(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "1")]), batch(1, [(None, b"no key")])],
        [batch(2, [kv("x")])],
    ])
    run(d)
    first = dir_batches(d)[:2]
    # the null-key record goes, but the round's last batch stays as an empty header
    assert [(b.base_offset, b.last_offset, b.record_count, b.size_in_bytes) for b in first] == \
        [(0, 0, 1, first[0].size_in_bytes), (1, 1, 0, 61)]
    check_dir_with_java(d)


def test_aborted_transaction_removed_and_marker_lifecycle(tmp_path):
    cfg = dict(producer_id_expiration_ms=1, delete_retention_ms=DAY)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "ok")]),
         batch(1, [kv("a", "aborted"), kv("q", "aborted")], producer_id=PID, producer_epoch=0, base_sequence=0,
               is_transactional=True),
         batch(3, [kv("c", "committed")], producer_id=PID2, producer_epoch=0, base_sequence=0,
               is_transactional=True)],
        [marker(4, PID, 0, commit=False), marker(5, PID2, 0, commit=True)],
        [batch(6, [kv("x")])],
    ])
    now = T0 + 1000
    run(d, now=now, **cfg)
    recs = dir_records(d)
    offsets = [o for o, *_ in recs]
    assert 1 not in offsets and 2 not in offsets  # aborted data removed regardless of keys
    assert (0, b"a", b"ok") in recs and (3, b"c", b"committed") in recs
    markers = {b.base_offset: b for b in dir_batches(d) if b.is_control}
    assert set(markers) == {4, 5}  # data seen in this pass: markers kept, no horizon yet
    assert all(m.delete_horizon_ms is None for m in markers.values())
    seg = list_segments(d)[0]
    txn = read_txn_index(open(seg.path(".txnindex"), "rb").read())
    assert [(t.producer_id, t.first_offset, t.last_offset) for t in txn] == [(PID, 1, 4)]
    check_dir_with_java(d)

    run(d, now=now + 10, **cfg)  # the aborted data is gone: its ABORT marker gets a horizon
    markers = {b.base_offset: b for b in dir_batches(d) if b.is_control}
    assert markers[4].delete_horizon_ms == now + 10 + DAY
    assert markers[5].delete_horizon_ms is None  # its committed data (offset 3) is still there
    check_dir_with_java(d)

    run(d, now=now + 20 + DAY, **cfg)  # past the horizon: the ABORT marker is removed
    assert 4 not in [b.base_offset for b in dir_batches(d)]
    assert (3, b"c", b"committed") in dir_records(d)


def test_commit_marker_removable_once_its_data_is_gone(tmp_path):
    cfg = dict(producer_id_expiration_ms=1, delete_retention_ms=DAY)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("k", "txn")], producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True),
         marker(1, PID, 0, commit=True)],
        [batch(2, [kv("k", "newer")])],
        [batch(3, [kv("x")])],
    ])
    run(d, now=T0 + 10, **cfg)  # data superseded and removed; the marker saw it in this pass
    assert [b.base_offset for b in dir_batches(d) if b.is_control] == [1]
    assert 0 not in [b.base_offset for b in dir_batches(d)]  # the producer has expired: nothing kept
    run(d, now=T0 + 11, **cfg)
    m = [b for b in dir_batches(d) if b.is_control][0]
    assert m.delete_horizon_ms == T0 + 11 + DAY
    run(d, now=T0 + 12 + DAY, **cfg)
    assert not [b for b in dir_batches(d) if b.is_control]


def test_open_transaction_bounds_the_dirty_range(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "1")])],
        [batch(1, [kv("a", "2")], producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True)],
        [batch(2, [kv("a", "3")])],
        [batch(3, [kv("x")])],
    ])
    r = run(d)
    assert r.first_uncleanable_offset == 1  # the last stable offset is the open txn's first offset
    assert [o for o, *_ in dir_records(d)] == [0, 1, 2, 3]


# --------------------------------------------------------------------------------------------
# ranges, ratio, grouping

def test_ratio_threshold_and_dry_run(tmp_path):
    d = base_log(tmp_path)
    before = dir_records(d)
    r = compact(d, config=CleanerConfig(min_cleanable_dirty_ratio=0.5), now_ms=T0, first_dirty_offset=10)
    sizes = [s.size for s in list_segments(d)]
    ratio = sizes[2] / sum(sizes[:3])   # segment 10 is dirty, 0 and 5 clean, 12 active
    assert (r.clean_bytes, r.cleanable_bytes, r.cleanable_ratio) == (sizes[0] + sizes[1], sizes[2], ratio)
    assert not r.cleaned and r.reason == f"cleanable ratio {ratio:.3f} does not exceed min.cleanable.dirty.ratio 0.5"
    dry = compact(d, now_ms=T0, force=True, dry_run=True)
    assert not dry.cleaned and dry.cleanable_ratio == 1.0
    assert dir_records(d) == before


def test_min_compaction_lag(tmp_path):
    d = base_log(tmp_path)
    r = run(d, now=T0 + 100, min_compaction_lag_ms=200)
    # every segment's largest timestamp is within the lag of now: nothing is cleanable
    assert not r.cleaned and r.first_uncleanable_offset == 0


def test_groups_merge_small_segments_and_reindex(tmp_path):
    segs = [[batch(i * 10, [kv("s%d-%d" % (i, j % 5), "x" * 300) for j in range(10)])] for i in range(8)]
    d = make_log(tmp_path / "t-0", segs)
    r = run(d, segment_bytes=7000, index_interval_bytes=512)
    # 3191-byte segments, two to a 7000-byte group; the active segment stays alone
    assert (r.segments_before, r.segments_after) == (8, 5)
    assert r.groups == [[0, 10], [20, 30], [40, 50], [60]]
    assert (r.messages_read, r.messages_written, r.map_keys) == (70, 35, 35)
    assert [g[0] for g in r.groups] == [s.base_offset for s in list_segments(d)[:-1]]
    # each group's cleaned segment is named by its first member
    keys = {}
    cleaned = [(o, k) for o, k, _v in dir_records(d) if o < 70]
    for o, k in cleaned:
        keys[k] = o
    assert sorted(keys.values()) == [o for o, _k in cleaned]  # one record per key below the active segment
    assert len(cleaned) == 35
    # rebuilt with a 512-byte interval: re-check against that interval
    for seg in list_segments(d):
        data = open(seg.path(), "rb").read()
        assert open(seg.path(".index"), "rb").read() == build_indexes(data, seg.base_offset, 512)[0]
    check_dir_with_java(d)


def test_group_segments_by_size_rules(tmp_path):
    d = base_log(tmp_path)
    segs = list_segments(d)[:-1]
    sizes = [s.size for s in segs]
    assert [len(g) for g in group_segments_by_size(segs, sum(sizes), 10 << 20, 12)] == [3]
    assert [len(g) for g in group_segments_by_size(segs, sizes[0], 10 << 20, 12)] == [1, 1, 1]


def test_checkpoint_round_trip(tmp_path):
    d = base_log(tmp_path, "orders-3")
    compact(d, now_ms=T0, force=True, use_checkpoint=True)
    assert read_cleaner_checkpoint(d) == 12
    text = open(tmp_path / "cleaner-offset-checkpoint").read().split("\n")
    assert text[:3] == ["0", "1", "orders 3 12"]


def test_leftover_files_recovered(tmp_path):
    d = base_log(tmp_path)
    open(os.path.join(d, segment_file_name(0, ".log") + ".cleaned"), "wb").write(b"junk")
    open(os.path.join(d, segment_file_name(5, ".index") + ".deleted"), "wb").write(b"junk")
    open(os.path.join(d, segment_file_name(99, ".index")), "wb").write(b"")
    stats = recover_log_dir(d)
    assert stats["cleaned_removed"] == 1 and stats["deleted_removed"] == 1 and stats["orphans_removed"] == 1
    assert sorted(os.listdir(d)) == sorted(
        segment_file_name(b, s) for b in (0, 5, 10, 12) for s in (".log", ".index", ".timeindex"))


def test_file_ops_hook_sees_every_step(tmp_path):
    d = base_log(tmp_path)
    seen = []
    compact(d, now_ms=T0, force=True, ops=FileOps(hook=lambda op, p: seen.append((op, os.path.basename(p)))))
    ops = [op for op, _ in seen]
    assert {"write", "rename", "delete"} <= set(ops)
    log_swap = [i for i, (op, p) in enumerate(seen) if op == "rename" and p.endswith(".log.swap")]
    idx_swaps = [i for i, (op, p) in enumerate(seen) if op == "rename" and p.endswith("index.swap")]
    assert log_swap and max(idx_swaps) < log_swap[0]  # the .log.swap rename commits the swap


def test_spark_compaction_matches_local(tmp_path, spark):
    import shutil

    from kcodec.spark.ops import compact_spark
    local = base_log(tmp_path / "a")
    other = str(tmp_path / "b" / "topic-0")
    shutil.copytree(local, other)
    cfg = CleanerConfig(segment_bytes=200)
    want = compact(local, config=cfg, now_ms=T0, force=True)
    got = compact_spark(spark, other, config=cfg, now_ms=T0, force=True)
    assert got.cleaned and got.map_keys == want.map_keys and got.groups == want.groups
    assert dir_records(other) == dir_records(local)
    for seg_a, seg_b in zip(list_segments(local), list_segments(other)):
        assert open(seg_a.path(), "rb").read() == open(seg_b.path(), "rb").read()
    check_indexes(other)


def test_indexes_agree_with_segment_recovery(tmp_path):
    import shutil

    from kcodec.log.segment import rebuild_indexes
    d = make_log(tmp_path / "t-0", [[batch(i * 20, [kv("k%d" % j, "x" * 200) for j in range(20)],
                                           ts=T0 + (i * 7919) % 1000) for i in range(12)], [batch(240, [kv("z")])]])
    run(d, index_interval_bytes=1024)
    seg = list_segments(d)[0]
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(seg.path(), copy / os.path.basename(seg.path()))
    rebuild_indexes(str(copy / os.path.basename(seg.path())), index_interval_bytes=1024)
    assert open(seg.path(".index"), "rb").read() == (copy / os.path.basename(seg.path(".index"))).read_bytes()
    assert open(seg.path(".timeindex"), "rb").read() == \
        (copy / os.path.basename(seg.path(".timeindex"))).read_bytes()


def test_offsets_beyond_an_int32_above_the_base_are_reported(tmp_path):
    # A segment holding a batch 2^33 above its base offset (Kafka would have
    # rolled a new segment): the rebuilt indexes cannot express it, and the
    # cleaner says so with a kcodec error instead of a struct.error.
    from kcodec.errors import CorruptDataError
    data = batch(0, [kv("a")]) + batch(2 ** 33, [kv("b")], ts=T0 + 1)
    with pytest.raises(CorruptDataError, match=f"offset {2 ** 33} cannot be stored relative to base offset 0"):
        build_indexes(data, 0)
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], [batch(2 ** 33 + 1, [kv("z")])]])
    with open(os.path.join(d, segment_file_name(0)), "wb") as f:
        f.write(data)
    before = sorted(os.listdir(d))
    with pytest.raises(CorruptDataError, match="cannot be stored relative"):
        run(d)
    assert dir_records(d)  # the log is still readable
    assert sorted(os.listdir(d)) == before


# --------------------------------------------------------------------------------------------
# recovery first, dry runs, the checkpoint, the offset map's edges

def tree_digest(root):
    """Every file under ``root``: relative path, bytes and modification time."""
    import hashlib
    out = {}
    for folder, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(folder, name)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = (hashlib.sha256(f.read()).hexdigest(), os.stat(p).st_mtime_ns)
    return out


def with_leftovers(tmp_path):
    """base_log after a crash: an uncommitted .cleaned file, and the active segment without its .timeindex."""
    d = base_log(tmp_path, "orders-3")
    open(os.path.join(d, segment_file_name(0, ".log") + ".cleaned"), "wb").write(b"junk")
    os.remove(os.path.join(d, segment_file_name(12, ".timeindex")))
    return d


def test_compact_recovers_the_directory_before_cleaning(tmp_path):
    d = with_leftovers(tmp_path)
    r = run(d)
    assert r.cleaned
    assert sorted(os.listdir(d)) == sorted(
        segment_file_name(b, s) for b in (0, 12) for s in (".log", ".index", ".timeindex", ".txnindex")
        if not (b == 12 and s == ".txnindex"))
    # the active segment, which the clean does not rewrite, got its time index back from recovery
    data = open(os.path.join(d, segment_file_name(12)), "rb").read()
    assert open(os.path.join(d, segment_file_name(12, ".timeindex")), "rb").read() == build_indexes(data, 12)[1]


def test_dry_run_leaves_the_tree_untouched(tmp_path):
    d = with_leftovers(tmp_path)
    compact(d, now_ms=T0, force=True, use_checkpoint=True)   # a checkpoint file to leave alone too
    open(os.path.join(d, segment_file_name(0, ".log") + ".cleaned"), "wb").write(b"junk")
    make_log(d, [[batch(14, [kv("a", "a4")])]])
    before = tree_digest(tmp_path)
    r = compact(d, now_ms=T0, force=True, dry_run=True, use_checkpoint=True)
    assert (r.cleaned, r.reason, r.first_dirty_offset, r.first_uncleanable_offset) == (False, "dry run", 12, 14)
    assert r.segments_before == r.segments_after == 3 and r.map_keys == 0 and r.groups == []
    assert tree_digest(tmp_path) == before


def test_second_compaction_starts_from_the_checkpoint(tmp_path):
    d = base_log(tmp_path, "orders-3")
    first = compact(d, now_ms=T0, force=True, use_checkpoint=True)
    assert (first.first_dirty_offset, first.map_keys) == (0, 7)
    assert read_cleaner_checkpoint(d) == 12
    make_log(d, [[batch(14, [kv("a", "a4"), kv("g", "g1")])], [batch(16, [kv("q")])]])
    second = compact(d, now_ms=T0, force=True, use_checkpoint=True)
    # the map holds only the dirty range [12, 16): a, z, g
    assert (second.first_dirty_offset, second.first_uncleanable_offset, second.map_keys) == (12, 16, 3)
    assert read_cleaner_checkpoint(d) == 16
    assert [(o, k, v) for o, k, v in dir_records(d)] == [
        (4, b"d", b"d0"), (6, b"e", b"e0"), (7, b"c", b"c1"), (8, b"f", b"f0"), (11, b"b", b"b2"),
        (13, b"z", b"z0"), (14, b"a", b"a4"), (15, b"g", b"g1"), (16, b"q", b"v")]
    check_indexes(d)


def test_a_segment_that_lost_one_of_its_indexes_is_rebuilt(tmp_path):
    d = base_log(tmp_path)
    want = {}
    for base in (5, 10):
        data = open(os.path.join(d, segment_file_name(base)), "rb").read()
        want[base] = build_indexes(data, base)
    os.remove(os.path.join(d, segment_file_name(5, ".index")))
    os.remove(os.path.join(d, segment_file_name(10, ".timeindex")))
    stats = recover_log_dir(d)
    assert stats == {"cleaned_removed": 0, "swaps_completed": 0, "deleted_removed": 0, "orphans_removed": 0,
                     "indexes_rebuilt": 2}
    for base, (index, tindex) in want.items():
        assert open(os.path.join(d, segment_file_name(base, ".index")), "rb").read() == index
        assert open(os.path.join(d, segment_file_name(base, ".timeindex")), "rb").read() == tindex
    assert recover_log_dir(d)["indexes_rebuilt"] == 0


def offset_map_of(d, first_dirty):
    from kcodec.log.cleaner import CleanerRunner
    from kcodec.log.cleaner_plan import plan_clean
    return CleanerRunner().offset_map(plan_clean(d, CleanerConfig(), T0, first_dirty))


def test_offset_map_takes_the_record_at_exactly_the_first_dirty_offset(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a"), kv("b"), kv("c")]), batch(3, [kv("a"), kv("d")])],
        [batch(5, [kv("e")])],
        [batch(6, [kv("x")])],   # active
    ])
    omap = offset_map_of(d, 3)
    assert omap.map == {b"a": 3, b"d": 4, b"e": 5} and omap.latest_offset == 5
    omap = offset_map_of(d, 4)
    assert omap.map == {b"d": 4, b"e": 5} and omap.latest_offset == 5
    assert (omap.get(b"d"), omap.get(b"a"), len(omap)) == (4, -1, 2)
    # a first dirty offset inside a batch: the batch's earlier records stay in the clean section
    r = compact(d, now_ms=T0, force=True, first_dirty_offset=1)
    assert r.first_dirty_offset == 1 and r.map_keys == 5
    assert [(o, k) for o, k, _v in dir_records(d)] == [(1, b"b"), (2, b"c"), (3, b"a"), (4, b"d"), (5, b"e"),
                                                      (6, b"x")]


def test_offset_map_latest_offset_covers_the_whole_dirty_range(tmp_path):
    # the dirty range ends before the active segment's base, past the last record read
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], (9, [batch(9, [kv("b")])])])
    omap = offset_map_of(d, 0)
    assert omap.map == {b"a": 0} and omap.latest_offset == 8


def test_producer_writes_again_after_its_own_aborted_transaction(tmp_path):
    txn = dict(producer_id=PID, producer_epoch=0, is_transactional=True)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "aborted")], base_sequence=0, **txn), marker(1, PID, 0, commit=False)],
        [batch(2, [kv("a", "committed"), kv("b", "b0")], base_sequence=1, **txn), marker(4, PID, 0)],
        [batch(5, [kv("x")])],   # active
    ])
    omap = offset_map_of(d, 0)
    assert omap.map == {b"a": 2, b"b": 3}
    r = run(d, now=T0 + 1000)
    assert r.cleaned and r.map_keys == 2
    # the aborted record goes, its marker stays for now; the committed transaction is kept whole
    assert [(b.base_offset, b.is_control, [(x.offset, x.key, x.value) for x in b if not b.is_control])
            for b in dir_batches(d)] == [(1, True, []), (2, False, [(2, b"a", b"committed"), (3, b"b", b"b0")]),
                                         (4, True, []), (5, False, [(5, b"x", b"v")])]


def test_recovery_completes_a_committed_swap(tmp_path):
    d = base_log(tmp_path)
    merged = batch(0, [kv("a", "a0"), kv("b", "b0"), kv("c", "c0")]) + batch(3, [kv("a", "a1"), kv("d", "d0")]) \
        + batch(5, [kv("b", "b1"), kv("e", "e0")]) + batch(7, [kv("c", "c1"), kv("f", "f0"), kv("a", "a2")])
    index, tindex = build_indexes(merged, 0)
    for suffix, data in ((".log", merged), (".index", index), (".timeindex", tindex)):
        open(os.path.join(d, segment_file_name(0, suffix) + ".swap"), "wb").write(data)
    # an index swap without its .log.swap belongs to a swap that never committed
    open(os.path.join(d, segment_file_name(10, ".index") + ".swap"), "wb").write(b"partial")
    segment_10 = open(os.path.join(d, segment_file_name(10)), "rb").read()
    stats = recover_log_dir(d)
    assert stats == {"cleaned_removed": 0, "swaps_completed": 1, "deleted_removed": 0, "orphans_removed": 0,
                     "indexes_rebuilt": 0}
    assert sorted(os.listdir(d)) == sorted(
        segment_file_name(b, s) for b in (0, 10, 12) for s in (".log", ".index", ".timeindex"))
    assert open(os.path.join(d, segment_file_name(0)), "rb").read() == merged
    assert open(os.path.join(d, segment_file_name(0, ".index")), "rb").read() == index
    assert open(os.path.join(d, segment_file_name(0, ".timeindex")), "rb").read() == tindex
    # segment 10 starts exactly where the swap's offsets end: not part of it
    assert open(os.path.join(d, segment_file_name(10)), "rb").read() == segment_10
    assert [o for o, *_ in dir_records(d)] == list(range(14))


def test_recovery_finishes_a_swap_whose_recovery_was_interrupted(tmp_path):
    # A recovery renamed the new .index in and stopped: the .log.swap and .timeindex.swap remain.
    # The swap covers offsets [5, 12), so segment 10 goes; the .index of its own base is the new one.
    d = base_log(tmp_path)
    merged = batch(5, [kv("b", "b1"), kv("e", "e0")]) + batch(10, [kv("g", "g0"), kv("b", "b2")])
    index, tindex = build_indexes(merged, 5, 64)
    open(os.path.join(d, segment_file_name(5, ".index")), "wb").write(index)
    open(os.path.join(d, segment_file_name(5, ".timeindex") + ".swap"), "wb").write(tindex)
    open(os.path.join(d, segment_file_name(5) + ".swap"), "wb").write(merged)
    stats = recover_log_dir(d)
    assert (stats["swaps_completed"], stats["indexes_rebuilt"]) == (1, 0)
    assert sorted(os.listdir(d)) == sorted(
        segment_file_name(b, s) for b in (0, 5, 12) for s in (".log", ".index", ".timeindex"))
    for suffix, data in ((".log", merged), (".index", index), (".timeindex", tindex)):
        assert open(os.path.join(d, segment_file_name(5, suffix)), "rb").read() == data
    assert [o for o, *_ in dir_records(d)] == [0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13]


def test_recovery_rebuilds_indexes_at_the_given_interval(tmp_path):
    d = make_log(tmp_path / "t-0", [[batch(i * 4, [kv("k%d" % j, "x" * 100) for j in range(4)])
                                     for i in range(10)], [batch(40, [kv("z")])]])
    os.remove(os.path.join(d, segment_file_name(0, ".index")))
    assert recover_log_dir(d, index_interval_bytes=600)["indexes_rebuilt"] == 1
    data = open(os.path.join(d, segment_file_name(0)), "rb").read()
    rebuilt = open(os.path.join(d, segment_file_name(0, ".index")), "rb").read()
    assert rebuilt == build_indexes(data, 0, 600)[0] != build_indexes(data, 0)[0]
    assert len(rebuilt) == 8 * 4


def test_recovery_names_the_segment_it_cannot_index(tmp_path):
    from kcodec.errors import CorruptDataError
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], [batch(2 ** 33 + 1, [kv("z")])]])
    with open(os.path.join(d, segment_file_name(0)), "wb") as f:
        f.write(batch(0, [kv("a")]) + batch(2 ** 33, [kv("b")], ts=T0 + 1))
    os.remove(os.path.join(d, segment_file_name(0, ".timeindex")))
    with pytest.raises(CorruptDataError, match="cannot be stored relative") as e:
        recover_log_dir(d)
    assert e.value.source == os.path.join(d, segment_file_name(0))


def test_offset_map_alone():
    from kcodec.log.offset_map import OffsetMap, dirty_ranges
    omap = OffsetMap()
    assert (omap.get(b"k"), omap.latest_offset, len(omap)) == (-1, -1, 0)
    omap.put(b"k", 5)
    omap.update_latest(9)
    omap.update_latest(4)
    assert (omap.get(b"k"), omap.latest_offset, len(omap)) == (5, 9, 1)
    assert dirty_ranges([], 10) == []
    segs = [SegmentStub(0), SegmentStub(4), SegmentStub(7)]
    assert [(s.base_offset, end) for s, end in dirty_ranges(segs, 12)] == [(0, 4), (4, 7), (7, 12)]


class SegmentStub:
    def __init__(self, base_offset):
        self.base_offset = base_offset


def test_offset_map_add_segment_alone(tmp_path):
    # the Spark variant builds the map one segment at a time: add_segment's own latest offset
    from kcodec.log.offset_map import OffsetMap
    from kcodec.log.transaction_index import CleanedTransactionMetadata
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")]), batch(2, [kv("c"), (None, b"n")]),
                                     batch(4, [kv("a")])], [batch(5, [kv("z")])]])
    seg = list_segments(d)[0]
    for start, keys, latest in ((0, {b"a": 4, b"b": 1, b"c": 2}, 4), (2, {b"a": 4, b"c": 2}, 4),
                                (3, {b"a": 4}, 4), (4, {b"a": 4}, 4), (5, {}, -1)):
        omap = OffsetMap()
        omap.add_segment(seg, CleanedTransactionMetadata(), start)
        assert (omap.map, omap.latest_offset) == (keys, latest), start


def test_offset_map_reads_batches_without_checking_their_crc(tmp_path):
    # Kafka's Cleaner.buildOffsetMapForSegment iterates records.batches() without ensureValid():
    # a batch whose CRC no longer matches still gives its keys
    from kcodec.log.offset_map import OffsetMap
    from kcodec.log.transaction_index import CleanedTransactionMetadata
    damaged = bytearray(batch(3, [kv("a", "xx"), kv("d")]))
    damaged[bytes(damaged).index(b"xx")] ^= 1
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")]), bytes(damaged)], [batch(5, [kv("z")])]])
    omap = OffsetMap()
    omap.add_segment(list_segments(d)[0], CleanedTransactionMetadata(), 0)
    assert omap.map == {b"a": 3, b"b": 1, b"d": 4} and omap.latest_offset == 4


def test_recovery_rebuilds_at_kafkas_default_interval(tmp_path):
    # batches of 4096 and 4097 bytes: an index entry after more than index.interval.bytes (4096)
    d = make_log(tmp_path / "t-0", [[sized_batch(i, 4096) for i in range(3)],
                                    [sized_batch(3 + i, 4097) for i in range(3)],
                                    [batch(6, [kv("z")])]])
    for base in (0, 3):
        os.remove(os.path.join(d, segment_file_name(base, ".index")))
    assert recover_log_dir(d)["indexes_rebuilt"] == 2
    assert open(os.path.join(d, segment_file_name(0, ".index")), "rb").read() == struct.pack(">ii", 2, 8192)
    assert open(os.path.join(d, segment_file_name(3, ".index")), "rb").read() == struct.pack(">iiii", 1, 4097,
                                                                                              2, 8194)


def test_recovery_swap_range_ends_one_past_its_last_offset(tmp_path):
    # a swap holding offsets 0-3 replaces the segment starting at its last offset, 3, and not the one at 4
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b"), kv("c")])], [batch(3, [kv("d")])],
                                    [batch(4, [kv("e")])], [batch(5, [kv("z")])]])
    merged = batch(0, [kv("a", "A"), kv("b", "B"), kv("c", "C")]) + batch(3, [kv("d", "D")])
    open(os.path.join(d, segment_file_name(0) + ".swap"), "wb").write(merged)
    # segment 3's indexes go with it in the swap, not later as orphans
    assert recover_log_dir(d) == {"cleaned_removed": 0, "swaps_completed": 1, "deleted_removed": 0,
                                  "orphans_removed": 0, "indexes_rebuilt": 0}
    assert [b for b in (0, 3, 4, 5) if os.path.exists(os.path.join(d, segment_file_name(b)))] == [0, 4, 5]
    assert not os.path.exists(os.path.join(d, segment_file_name(3, ".index")))
    assert [(o, v) for o, _k, v in dir_records(d)] == [(0, b"A"), (1, b"B"), (2, b"C"), (3, b"D"), (4, b"v"),
                                                      (5, b"v")]


def test_recovery_swaps_in_an_empty_segment(tmp_path):
    # an empty .log.swap stands for offsets [base, base + 1): the next segment, at base + 1, stays
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], [batch(1, [kv("b")])], [batch(2, [kv("c")])]])
    for suffix in (".log", ".index", ".timeindex"):
        open(os.path.join(d, segment_file_name(0, suffix) + ".swap"), "wb").write(b"")
    assert recover_log_dir(d)["swaps_completed"] == 1
    assert os.path.getsize(os.path.join(d, segment_file_name(0))) == 0
    assert [(o, k) for o, k, _v in dir_records(d)] == [(1, b"b"), (2, b"c")]


def test_recovery_after_a_recovery_that_stopped_between_its_renames(tmp_path):
    # The earlier recovery deleted the old segment 5 and renamed the new .index in, then stopped:
    # no 5.log, a 5.index that belongs to the 5.log.swap. It is not an orphan, and is not rebuilt.
    d = base_log(tmp_path)
    merged = batch(5, [kv("b", "b1"), kv("e", "e0")]) + batch(10, [kv("g", "g0"), kv("b", "b2")])
    index, tindex = build_indexes(merged, 5, 64)
    assert index != build_indexes(merged, 5)[0]
    for suffix in (".log", ".timeindex"):
        os.remove(os.path.join(d, segment_file_name(5, suffix)))
    open(os.path.join(d, segment_file_name(5, ".index")), "wb").write(index)
    open(os.path.join(d, segment_file_name(5, ".timeindex") + ".swap"), "wb").write(tindex)
    open(os.path.join(d, segment_file_name(5) + ".swap"), "wb").write(merged)
    assert recover_log_dir(d) == {"cleaned_removed": 0, "swaps_completed": 1, "deleted_removed": 0,
                                  "orphans_removed": 0, "indexes_rebuilt": 0}
    assert open(os.path.join(d, segment_file_name(5, ".index")), "rb").read() == index
    assert [o for o, *_ in dir_records(d)] == [0, 1, 2, 3, 4, 5, 6, 10, 11, 12, 13]


def test_recovery_star_import_gives_its_one_public_name(tmp_path):
    names: dict = {}
    exec("from kcodec.log.recovery import *", names)
    assert sorted(n for n in names if n != "__builtins__") == ["recover_log_dir"]
    d = base_log(tmp_path)
    assert names["recover_log_dir"](d) == {"cleaned_removed": 0, "swaps_completed": 0, "deleted_removed": 0,
                                           "orphans_removed": 0, "indexes_rebuilt": 0}


# --------------------------------------------------------------------------------------------
# the cleaner's filter at its edges (Cleaner.cleanInto's logCleanerFilter, Cleaner.shouldRetainRecord)

def test_clean_result_counts_what_the_round_read_and_wrote(tmp_path):
    import dataclasses
    d = base_log(tmp_path)
    sizes = [s.size for s in list_segments(d)]
    started = time.perf_counter()
    r = run(d)
    elapsed = time.perf_counter() - started
    after = [s.size for s in list_segments(d)]
    # the three segments below the active one are read whole and become one of 314 bytes: batch 0
    # goes, batches 3 and 5 lose a record each and are rebuilt, 7 and 10 are copied
    assert (r.bytes_read, r.bytes_written) == (sum(sizes[:3]), after[0]) == (425, 314)
    assert [(b.base_offset, b.size_in_bytes) for b in dir_batches(d)][:4] == [(3, 71), (5, 71), (7, 91), (10, 81)]
    got = dataclasses.asdict(r)
    assert 0 < got.pop("seconds") <= elapsed   # the round's own time, within the call's
    assert got == {
        "log_dir": d, "cleaned": True, "reason": "cleaned", "first_dirty_offset": 0, "first_uncleanable_offset": 12,
        "cleanable_ratio": 1.0, "clean_bytes": 0, "cleanable_bytes": 425, "map_keys": 7, "groups": [[0, 5, 10]],
        "bytes_read": 425, "bytes_written": 314, "messages_read": 12, "messages_written": 7, "invalid_records": 0,
        "batches_rebuilt": 2, "batches_emptied": 0, "segments_before": 4, "segments_after": 2}


def test_clean_result_counts_an_emptied_batch(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "1")]), batch(1, [(None, b"no key")])],
        [batch(2, [kv("x")])],
    ])
    r = run(d)
    # 70 and 74 bytes read; the first batch is copied, the second kept as a 61-byte header
    assert (r.bytes_read, r.bytes_written) == (70 + 74, 70 + 61)
    assert (r.messages_read, r.messages_written, r.batches_rebuilt, r.batches_emptied) == (2, 1, 0, 1)
    assert (r.invalid_records, r.segments_before, r.segments_after) == (1, 2, 2)
    started = time.perf_counter()
    dry = compact(d, now_ms=T0, force=True, dry_run=True)
    assert 0 < dry.seconds <= time.perf_counter() - started
    assert (dry.bytes_read, dry.bytes_written, dry.messages_read, dry.messages_written, dry.batches_rebuilt,
            dry.batches_emptied, dry.invalid_records) == (0, 0, 0, 0, 0, 0, 0)


def test_tombstone_and_marker_go_at_exactly_their_horizon(tmp_path):
    # a tombstone stays while now < its horizon; a removable marker goes once its horizon <= now
    cfg = dict(producer_id_expiration_ms=1, delete_retention_ms=DAY)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a"), kv("b")]),
         batch(2, [kv("k", "txn")], producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True),
         marker(3, PID, 0, commit=True)],
        [batch(4, [kv("a", None), kv("k", "newer")])],
        [batch(6, [kv("x")])],
    ])
    now = T0 + 1000
    run(d, now=now, **cfg)   # the tombstone gets its horizon; the marker saw its data go in this pass
    run(d, now=now + 10, **cfg)   # the marker gets its own horizon
    horizons = {b.base_offset: b.delete_horizon_ms for b in dir_batches(d)}
    assert (horizons[3], horizons[4]) == (now + 10 + DAY, now + DAY)
    run(d, now=now + DAY, **cfg)
    assert [(o, k) for o, k, _v in dir_records(d) if o != 3] == [(1, b"b"), (5, b"k"), (6, b"x")]
    assert [b.base_offset for b in dir_batches(d) if b.is_control] == [3]
    run(d, now=now + 10 + DAY, **cfg)
    assert [b.base_offset for b in dir_batches(d)] == [0, 4, 6]


def test_last_batch_of_producer_id_zero_kept_empty(tmp_path):
    # 0 is a producer id like any other: only -1 (RecordBatch.NO_PRODUCER_ID) has none
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "1")], producer_id=0, producer_epoch=0, base_sequence=0), batch(1, [kv("b")])],
        [batch(2, [kv("a", "2")])],
        [batch(3, [kv("x")])],
    ])
    run(d, producer_id_expiration_ms=10 * DAY)
    assert [(b.base_offset, b.record_count, b.size_in_bytes, b.producer_id) for b in dir_batches(d)][:2] == \
        [(0, 0, 61, 0), (1, 1, 70, -1)]


def test_marker_of_an_epoch_bump_kept_empty_while_its_producer_is_active(tmp_path):
    # The coordinator aborted with a bumped epoch: the producer's state has no data batch of that epoch,
    # so the marker holds its epoch and is kept as an empty header once it could go (isBatchLastRecordOfProducer).
    cfg = dict(producer_id_expiration_ms=10 * DAY, delete_retention_ms=DAY)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "aborted")], producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True),
         marker(1, PID, 1, commit=False)],
        [batch(2, [kv("a", "new")])],
        [batch(3, [kv("x")])],
    ])
    now = T0 + 1000

    def first():
        b = dir_batches(d)[0]
        return (b.base_offset, b.is_control, b.record_count, b.size_in_bytes, b.producer_epoch, b.delete_horizon_ms)
    run(d, now=now, **cfg)
    assert first() == (1, True, 1, 78, 1, None)
    run(d, now=now + 10, **cfg)
    assert first() == (1, True, 1, 81, 1, now + 10 + DAY)
    r = run(d, now=now + 10 + DAY, **cfg)
    assert first() == (1, True, 0, 61, 1, None) and r.batches_emptied == 1
    assert [(o, v) for o, _k, v in dir_records(d)] == [(2, b"new"), (3, b"v")]
    check_dir_with_java(d)


def test_aborted_last_batch_of_an_active_producer_kept_without_its_records(tmp_path):
    # discarded data that must stay for its producer's sequence: an empty header, not the aborted records
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "ok")]),
         batch(1, [kv("a", "aborted"), kv("q", "aborted")], producer_id=PID, producer_epoch=0, base_sequence=0,
               is_transactional=True)],
        [marker(3, PID, 0, commit=False)],
        [batch(4, [kv("x")])],
    ])
    r = run(d, producer_id_expiration_ms=10 * DAY)
    assert [(b.base_offset, b.last_offset, b.record_count, b.size_in_bytes, b.producer_id, b.base_sequence)
            for b in dir_batches(d)][:2] == [(0, 0, 1, 71, -1, -1), (1, 2, 0, 61, PID, 0)]
    assert [(o, v) for o, _k, v in dir_records(d) if o != 3] == [(0, b"ok"), (4, b"v")]
    assert (r.messages_written, r.batches_emptied) == (2, 1)
    check_dir_with_java(d)


def test_marker_kept_whatever_a_data_record_with_its_key_says(tmp_path):
    # A data record may carry the 4 bytes of a COMMIT marker's key; the offset map never holds
    # control records, and the filter never asks it about them (shouldRetainRecord's isControlBatch).
    commit_key = struct.pack(">hh", 0, 1)
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("t", "txn")], producer_id=PID, producer_epoch=0, base_sequence=0, is_transactional=True),
         marker(1, PID, 0, commit=True)],
        [batch(2, [(commit_key, b"data")])],
        [batch(3, [kv("x")])],
    ])
    r = run(d, producer_id_expiration_ms=1)
    assert [(b.base_offset, b.is_control, b.record_count) for b in dir_batches(d)] == \
        [(0, False, 1), (1, True, 1), (2, False, 1), (3, False, 1)]
    assert (r.messages_written, r.invalid_records) == (3, 0)


def test_records_past_the_maps_latest_offset_are_kept(tmp_path):
    # A map that ends early, as Kafka's SkimpyOffsetMap does when it fills: Cleaner.shouldRetainRecord
    # keeps every record past its latest offset, duplicates and null keys too.
    from kcodec.log.cleaner import CleanerRunner
    from kcodec.log.offset_map import OffsetMap
    from kcodec.log.transaction_index import CleanedTransactionMetadata

    class FirstSegmentOnly(CleanerRunner):
        def offset_map(self, plan):
            omap = OffsetMap()
            omap.add_segment(plan.dirty[0], CleanedTransactionMetadata(), plan.first_dirty)
            return omap

    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a", "a0"), kv("b", "b0"), kv("a", "a1")])],
        [batch(3, [kv("a", "a2"), (None, b"n"), kv("a", "a3")])],
        [batch(6, [kv("x")])],
    ])
    r = compact(d, now_ms=T0, force=True, runner=FirstSegmentOnly())
    assert r.map_keys == 2
    assert [(o, k, v) for o, k, v in dir_records(d)] == [
        (1, b"b", b"b0"), (2, b"a", b"a1"), (3, b"a", b"a2"), (4, None, b"n"), (5, b"a", b"a3"), (6, b"x", b"v")]
    assert r.invalid_records == 0


def test_legacy_tombstones_go_from_segments_older_than_the_horizon(tmp_path):
    # The legacy horizon is the last clean segment's time (segment 2's, T0) minus delete.retention.ms:
    # segment 0, last modified at exactly that time, loses its tombstone (Kafka keeps legacy deletes
    # only in a segment modified after it); segment 2 keeps its own.
    d = make_log(tmp_path / "t-0", [[legacy_batch(0, [kv("a")]), legacy_batch(1, [(b"b", None)])]],
                 mtime=(T0 - DAY) / 1000)
    make_log(d, [[legacy_batch(2, [(b"c", None)])]], mtime=T0 / 1000)
    make_log(d, [[batch(3, [kv("d")])], [batch(4, [kv("x")])]], mtime=(T0 + DAY) / 1000)
    r = compact(d, config=CleanerConfig(delete_retention_ms=DAY), now_ms=T0, first_dirty_offset=3, force=True)
    assert r.cleaned and r.first_dirty_offset == 3
    assert dir_records(d) == [(0, b"a", b"v"), (2, b"c", None), (3, b"d", b"v"), (4, b"x", b"v")]
    check_dir_with_java(d)


def test_clean_group_alone(tmp_path):
    # what a Spark task runs (no FileOps given): a group's .cleaned files, and its trailing members
    # that keep nothing left out of the swap for the caller to delete
    import kcodec
    from kcodec.log.cleaner import CleanerRunner, clean_group
    from kcodec.log.cleaner_plan import plan_clean
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("c"), kv("a")])],
        [batch(2, [kv("a"), kv("b")])],
        [batch(4, [kv("a"), kv("b")])],
        [batch(6, [kv("x")])],
    ])
    plan = plan_clean(d, CleanerConfig(), T0)
    omap = CleanerRunner().offset_map(plan)
    segs = list_segments(d)
    before = sorted(os.listdir(d))
    out = clean_group(d, segs[1:2], plan.state, omap, CleanerConfig(), T0, 0, plan.first_uncleanable)
    assert (out.base_offset, out.replaced, out.emptied, out.written) == (2, [], segs[1:2], False)
    assert sorted(os.listdir(d)) == before
    out = clean_group(d, segs[:2], plan.state, omap, CleanerConfig(), T0, 0, plan.first_uncleanable)
    assert (out.base_offset, out.replaced, out.emptied, out.written) == (0, segs[:1], segs[1:2], True)
    assert (out.stats.messages_read, out.stats.messages_retained, out.invalid_records) == (4, 1, 0)
    assert sorted(set(os.listdir(d)) - set(before)) == [segment_file_name(0, s) + ".cleaned"
                                                        for s in (".index", ".log", ".timeindex", ".txnindex")]
    with open(os.path.join(d, segment_file_name(0) + ".cleaned"), "rb") as f:
        assert [(r.offset, r.key) for b in kcodec.read_batches(f.read()) for r in b] == [(0, b"c")]


def test_a_given_offset_map_covers_the_whole_dirty_range(tmp_path):
    # a map built elsewhere, its latest offset never set: the round still reaches the end of the
    # dirty range, and only the keys the map holds are cleaned
    from kcodec.log.offset_map import OffsetMap
    d = base_log(tmp_path)
    omap = OffsetMap()
    omap.put(b"a", 9)
    omap.put(b"b", 11)
    r = compact(d, now_ms=T0, force=True, offset_map=omap)
    assert (r.map_keys, omap.latest_offset) == (2, 11)
    assert [o for o, _k, _v in dir_records(d)] == [2, 4, 6, 7, 8, 9, 10, 11, 12, 13]
    # a map that read up to offset 1 and knows of a later record (here, in the active segment): it is
    # raised to the round's last offset, whose record goes too
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("a")])], [batch(3, [kv("a")])]])
    omap = OffsetMap()
    omap.put(b"a", 3)
    omap.put(b"b", 1)
    omap.update_latest(1)
    compact(d, now_ms=T0, force=True, offset_map=omap)
    assert [(o, k) for o, k, _v in dir_records(d)] == [(1, b"b"), (3, b"a")]


def test_groups_that_keep_nothing_are_deleted(tmp_path):
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("a")])],
                                    [batch(3, [kv("a"), kv("b")])], [batch(5, [kv("x")])]])
    seen = []
    r = compact(d, config=CleanerConfig(segment_bytes=100), now_ms=T0 + 1000, force=True,
                ops=FileOps(hook=lambda op, p: seen.append((op, os.path.basename(p)))))
    assert r.groups == [[0], [2], [3]] and (r.segments_before, r.segments_after) == (4, 2)
    # a group that keeps nothing swaps nothing in: its empty .cleaned log goes, then its segment
    name = segment_file_name(0)[:-len(".log")]
    assert [(op, p) for op, p in seen if p.startswith(name)] == [
        ("write", name + ".log.cleaned"), ("delete", name + ".log.cleaned")] + [
        ("rename", name + s + ".deleted") for s in (".log", ".index", ".timeindex")] + [
        ("delete", name + s + ".deleted") for s in (".log", ".index", ".timeindex")]
    assert sorted(os.listdir(d)) == sorted([segment_file_name(3, s) for s in (".log", ".index", ".timeindex",
                                                                             ".txnindex")]
                                           + [segment_file_name(5, s) for s in (".log", ".index", ".timeindex")])
    assert dir_records(d) == [(3, b"a", b"v"), (4, b"b", b"v"), (5, b"x", b"v")]


def test_a_corrupt_batch_in_the_clean_section_is_named_and_nothing_is_left(tmp_path):
    # the offset map never reads below the first dirty offset: the rewrite is the first to decompress it
    from kcodec.errors import CorruptCompressedDataError
    from kcodec.records import batch_header
    bad = bytearray(batch(2, [kv("b", "y" * 200), kv("c", "z" * 200)], codec="gzip"))
    bad[-12] ^= 0xff
    batch_header.seal(bad, 0, len(bad))   # a valid CRC over a deflate stream that does not decode
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")]), bytes(bad)], [batch(4, [kv("b")])],
                                    [batch(5, [kv("x")])]])
    before = tree_digest(tmp_path)
    with pytest.raises(CorruptCompressedDataError, match="^gzip: invalid deflate data") as e:
        compact(d, now_ms=T0, first_dirty_offset=4, force=True)
    assert (e.value.batch_offset, e.value.source) == (2, os.path.join(d, segment_file_name(0)))
    assert tree_digest(tmp_path) == before


def test_compact_names_the_metadata_logs_topic_whose_setting_is_not_a_number(tmp_path, capsys):
    import uuid

    import kraft_metadata as km
    from kcodec.cli import main
    tid = uuid.UUID(int=1)
    meta = tmp_path / "meta" / "__cluster_metadata-0"
    km.write_segment(meta, 0, km.log_batches([km.topic_record("users", tid), km.partition_record(tid, 0, [1]),
                                              km.config_record(km.TOPIC, "users", "cleanup.policy", "compact"),
                                              km.config_record(km.TOPIC, "users", "segment.bytes", "lots")]))
    d = base_log(tmp_path / "logs", "users-0")
    before = tree_digest(tmp_path / "logs")
    assert main(["compact", d, "--metadata-log", str(meta), "--force"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [f"kcodec compact: --metadata-log {meta}: topic users: invalid literal for int() with base 10: "
                   "'lots'"]
    assert tree_digest(tmp_path / "logs") == before


def test_a_batch_whose_crc_no_longer_matches_is_copied_as_it_is(tmp_path):
    # Cleaner.cleanInto filters MemoryRecords.readableRecords(...) without ensureValid(): a damaged
    # batch whose records all stay is copied byte for byte, as Kafka copies it
    damaged = bytearray(batch(2, [kv("b", "xx"), kv("c")]))
    damaged[bytes(damaged).index(b"xx")] ^= 1
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")]), bytes(damaged)], [batch(4, [kv("x")])]])
    r = run(d)
    import kcodec
    data = open(os.path.join(d, segment_file_name(0)), "rb").read()
    assert data[-len(damaged):] == bytes(damaged)
    assert [(r.offset, r.key) for b in kcodec.read_batches(data[:-len(damaged)]) for r in b] == [(0, b"a")]
    assert (r.messages_read, r.messages_written) == (4, 3)


def test_the_crash_point_of_a_group_comes_after_its_first_member_that_keeps_something(tmp_path):
    # the fault-injection tests crash at "write-partial": the new .log then ends after a whole member
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("c", "x" * 50)])],
                                    [batch(3, [kv("a"), kv("b")])], [batch(5, [kv("x")])]])
    seen = []

    def hook(op, path):
        if path.endswith(".log.cleaned") and op.startswith("write"):
            seen.append((op, os.path.getsize(path)))
    compact(d, now_ms=T0, force=True, ops=FileOps(hook=hook))
    kept = [len(batch(2, [kv("c", "x" * 50)])), len(batch(3, [kv("a"), kv("b")]))]
    assert seen == [("write-partial", kept[0]), ("write", sum(kept))]


def test_clean_group_refuses_a_segment_that_ends_in_a_partial_batch(tmp_path):
    # planned on a whole segment, handed a torn one (a Spark task reads the file again): nothing is written
    from kcodec.log.cleaner import CleanerRunner, PartialTailError, clean_group
    from kcodec.log.cleaner_plan import plan_clean
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("a")])], [batch(3, [kv("x")])]])
    plan = plan_clean(d, CleanerConfig(), T0)
    omap = CleanerRunner().offset_map(plan)
    with open(os.path.join(d, segment_file_name(2)), "ab") as f:
        f.write(batch(3, [kv("b")])[:30])
    before = sorted(os.listdir(d))
    with pytest.raises(PartialTailError, match="ends in 30 bytes that are not a complete batch") as e:
        clean_group(d, list_segments(d)[:2], plan.state, omap, CleanerConfig(), T0, 0, plan.first_uncleanable)
    assert (e.value.source, e.value.position) == (os.path.join(d, segment_file_name(2)), 70)
    assert sorted(os.listdir(d)) == before


def test_a_folder_the_checkpoint_cannot_name_is_refused_before_anything_changes(tmp_path):
    from kcodec.errors import InvalidNameError
    d = with_leftovers(tmp_path)
    bad = os.path.join(tmp_path, "not_a_partition")
    os.rename(d, bad)
    before = tree_digest(tmp_path)
    with pytest.raises(InvalidNameError, match="^'not_a_partition' is not a partition folder name") as e:
        compact(bad, now_ms=T0, force=True, use_checkpoint=True)
    assert e.value.source == bad
    assert tree_digest(tmp_path) == before   # not even recovered


def test_without_a_clock_the_horizon_is_stamped_from_now(tmp_path):
    import time
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("a", None)])],
                                    [batch(3, [kv("x")])]])
    earliest = int(time.time() * 1000)
    compact(d, config=CleanerConfig(delete_retention_ms=DAY), force=True)
    latest = int(time.time() * 1000)
    horizon = [b.delete_horizon_ms for b in dir_batches(d) if b.base_offset == 2][0]
    assert earliest + DAY <= horizon <= latest + DAY


def test_the_checkpoint_is_read_only_when_asked_and_no_offset_is_given(tmp_path):
    d = base_log(tmp_path, "orders-3")
    compact(d, now_ms=T0, force=True, use_checkpoint=True)
    assert read_cleaner_checkpoint(d) == 12
    make_log(d, [[batch(14, [kv("a", "a4")])], [batch(15, [kv("q")])]])
    assert compact(d, now_ms=T0, force=True, dry_run=True).first_dirty_offset == 0
    assert compact(d, now_ms=T0, force=True, dry_run=True, use_checkpoint=True).first_dirty_offset == 12
    assert compact(d, now_ms=T0, force=True, dry_run=True, use_checkpoint=True,
                   first_dirty_offset=13).first_dirty_offset == 13


def test_compact_command_reports_each_partition(tmp_path, capsys):
    import re
    import uuid

    import kraft_metadata as km
    from kcodec.cli import main
    meta = tmp_path / "meta" / "__cluster_metadata-0"
    records = []
    for i, (name, configs) in enumerate([("users", {"cleanup.policy": "compact", "segment.bytes": "200"}),
                                         ("logs", {"cleanup.policy": "delete"}), ("plain", {})]):
        tid = uuid.UUID(int=i + 1)
        records += [km.topic_record(name, tid), km.partition_record(tid, 0, [1])]
        records += [km.config_record(km.TOPIC, name, k, v) for k, v in configs.items()]
    km.write_segment(meta, 0, km.log_batches(records))
    logs = tmp_path / "logs"
    for name in ("users", "logs", "plain"):
        base_log(logs, name + "-0")
    before = tree_digest(logs / "plain-0")

    def out():
        return [re.sub(r"; \d+\.\d\d s$", "; S s", line) for line in capsys.readouterr().out.splitlines()]
    assert main(["compact", str(logs), "--metadata-log", str(meta), "--force", "--now-ms", str(T0)]) == 0
    assert out() == [
        f"{logs}/logs-0: not compacted: cleanup.policy = delete (topic config in the metadata log {meta})",
        f"{logs}/plain-0: not compacted: cleanup.policy = delete (Kafka default) (the brokers' server.properties "
        "may say otherwise: compact without --metadata-log to clean it anyway)",
        f"{logs}/users-0: cleaned [segment.bytes = 200 (topic config in the metadata log)]",
        "  dirty range [0, 12), cleanable ratio 1.000 (425 cleanable of 425 bytes)",
        "  12 records read, 7 kept; 425 -> 314 bytes; 7 keys; segments 4 -> 4; S s"]
    assert tree_digest(logs / "plain-0") == before
    assert main(["compact", str(logs / "plain-0"), "--now-ms", str(T0), "--first-dirty-offset", "10"]) == 0
    assert out() == [f"{logs}/plain-0: cleanable ratio 0.191 does not exceed min.cleanable.dirty.ratio 0.5",
                     "  dirty range [10, 12), cleanable ratio 0.191 (81 cleanable of 425 bytes)"]
    assert tree_digest(logs / "plain-0") == before


def test_a_cleaned_segment_keeps_its_groups_last_modification_time(tmp_path):
    # Cleaner.cleanSegments: cleaned.lastModified = segments.last.lastModified (the legacy delete horizon reads it)
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])]], mtime=(T0 - 3 * DAY) / 1000)
    make_log(d, [[batch(2, [kv("a")])]], mtime=(T0 - 2 * DAY) / 1000)
    make_log(d, [[batch(3, [kv("c")])]], mtime=(T0 - DAY) / 1000)
    make_log(d, [[batch(4, [kv("x")])]], mtime=T0 / 1000)
    r = run(d)
    assert r.groups == [[0, 2, 3]]
    assert [(s.base_offset, int(s.mtime * 1000)) for s in list_segments(d)] == [(0, T0 - DAY), (4, T0)]


def test_a_corrupt_batch_in_the_dirty_range_is_named_and_nothing_is_left(tmp_path):
    # the offset map is the first to decompress it
    from kcodec.errors import CorruptCompressedDataError
    from kcodec.records import batch_header
    bad = bytearray(batch(2, [kv("b", "y" * 200), kv("c", "z" * 200)], codec="gzip"))
    bad[-12] ^= 0xff
    batch_header.seal(bad, 0, len(bad))
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")]), bytes(bad)], [batch(4, [kv("x")])]])
    before = tree_digest(tmp_path)
    with pytest.raises(CorruptCompressedDataError, match="^gzip: invalid deflate data") as e:
        run(d)
    assert (e.value.batch_offset, e.value.source) == (2, os.path.join(d, segment_file_name(0)))
    assert tree_digest(tmp_path) == before


def test_compact_takes_every_partitions_lock_before_it_changes_one(tmp_path, capsys):
    # another process holds the second partition's lock: the first is not compacted either
    import subprocess
    import sys

    from kcodec.cli import main
    from kcodec.log.lock import PARTITION_LOCK
    archive = tmp_path / "archive"
    first, second = base_log(archive, "a-0"), base_log(archive, "b-0")
    before = tree_digest(archive)
    holder = subprocess.Popen([sys.executable, "-c", "import fcntl, os, sys\n"
                               "fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)\n"
                               "fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
                               "print('locked', flush=True)\nsys.stdin.read()\n",
                               os.path.join(second, PARTITION_LOCK)],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        held = tree_digest(archive)
        # a settings flag gives every partition a source line; the locks do not depend on it
        assert main(["compact", str(archive), "--force", "--delete-retention-ms", "5", "--now-ms", str(T0)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "is being rewritten" in err[0] and second in err[0]
        assert tree_digest(archive) == held
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    os.remove(os.path.join(second, PARTITION_LOCK))
    assert tree_digest(archive) == before
    assert main(["compact", str(archive), "--force", "--now-ms", str(T0)]) == 0
    assert [o for o, _k, _v in dir_records(first)] == [4, 6, 7, 8, 9, 10, 11, 12, 13]


def test_compact_settings_flags_apply(tmp_path, capsys):
    from kcodec.cli import main
    d = base_log(tmp_path, "t-0")
    # segment 10 alone is dirty: a ratio of 0.191, under Kafka's 0.5 but over the flag's 0.1
    assert main(["compact", d, "--now-ms", str(T0), "--first-dirty-offset", "10",
                 "--min-cleanable-dirty-ratio", "0.1"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{d}: cleaned [min.cleanable.dirty.ratio 0.1 " \
                                                      "(--min-cleanable-dirty-ratio)]"
