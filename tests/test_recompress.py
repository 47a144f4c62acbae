"""Recompressing a partition directory: offsets, timestamps and producer state survive, bytes change."""
import os

import pytest

import kcodec
from builders import (
    T0,
    batch,
    check_dir_with_java,
    check_indexes,
    dir_batches,
    kv,
    legacy_batch,
    make_log,
    marker,
    sized_batch,
)
from kcodec.compression import CompressionType, TimestampType
from kcodec.log import recompression as rc
from kcodec.log.cleaner import AbortedTxn, encode_txn_index, list_segments, read_txn_index, segment_file_name
from kcodec.log.recompression import RecompressVerificationError, recompress, records_digest
from oracle_util import load_case


def full_records(path):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers))
            for b in dir_batches(path) for r in b]


def oracle_dir(tmp_path, name):
    data = load_case(name)[0]
    return make_log(tmp_path / "seg-0", [(0, [data])])


@pytest.mark.parametrize("name", ["segment_mixed", "segment_v2_txn"])
def test_oracle_segments_to_zstd(tmp_path, name):
    d = oracle_dir(tmp_path, name)
    before = full_records(d)
    old = dir_batches(d)
    dry = recompress(d, "zstd", to_magic=2, dry_run=True)
    r = recompress(d, "zstd", to_magic=2)
    assert r.bytes_after == dry.bytes_after and r.bytes_saved == dry.bytes_saved
    assert full_records(d) == before
    new = dir_batches(d)
    for b in new:
        if not b.is_control and b.record_count:
            assert CompressionType.of(b.compression) == CompressionType.ZSTD and b.magic == 2
    # producer state of every v2 data batch is unchanged
    v2_bases = {b.base_offset for b in old if b.magic == 2}

    def state(bs):
        return [(b.base_offset, b.last_offset, b.producer_id, b.producer_epoch, b.base_sequence,
                 b.is_transactional, b.partition_leader_epoch, b.timestamp_type, b.max_timestamp)
                for b in bs if b.magic == 2 and b.base_offset in v2_bases]
    assert state(new) == state(old)
    # control batches are copied byte for byte
    assert [bytes(b.raw) for b in new if b.is_control] == [bytes(b.raw) for b in old if b.is_control]
    check_indexes(d)
    check_dir_with_java(d)


def test_legacy_kept_when_codec_needs_v2(tmp_path):
    d = oracle_dir(tmp_path, "segment_mixed")
    before = full_records(d)
    legacy_before = [bytes(b.raw) for b in dir_batches(d) if b.magic < 2]
    r = recompress(d, "zstd")
    # 71 batches: 30 legacy ones that zstd cannot carry, 5 control batches copied, 36 rebuilt
    seg = r.segments[0]
    assert len(legacy_before) == 30
    assert (seg.batches_rebuilt, seg.batches_kept, seg.batches_unsupported, seg.records) == (36, 35, 30, 593)
    assert [bytes(b.raw) for b in dir_batches(d) if b.magic < 2] == legacy_before
    assert full_records(d) == before


def test_legacy_recompressed_in_its_own_format(tmp_path):
    d = oracle_dir(tmp_path, "segment_mixed")
    before = full_records(d)
    magics = [b.magic for b in dir_batches(d)]
    recompress(d, "gzip", level=9)
    after = dir_batches(d)
    assert full_records(d) == before
    assert {b.magic for b in after} == set(magics)
    assert all(CompressionType.of(b.compression) == CompressionType.GZIP for b in after
               if not b.is_control and b.record_count)
    check_dir_with_java(d)


def test_special_v2_batches_preserved(tmp_path):
    names = ["v2_none_log_append_time", "v2_gzip_partition_leader_epoch", "v2_snappy_transactional",
             "v2_lz4_sequence_wrap", "v2_gzip_delete_horizon", "v2_empty_batch_retained",
             "v2_none_offset_gaps"]
    parts = [load_case(n)[0] for n in names]
    # give each part its own segment so offsets never go backwards
    segs = [(next(iter(kcodec.read_batches(p))).base_offset, [p]) for p in parts]
    segs.sort()
    bases = [b for b, _ in segs]
    assert bases == sorted(set(bases))
    d = make_log(tmp_path / "t-0", segs)
    before = full_records(d)
    old = {b.base_offset: b for b in dir_batches(d)}
    recompress(d, "zstd", level=5)
    assert full_records(d) == before
    for b in dir_batches(d):
        o = old[b.base_offset]
        assert (b.last_offset, b.delete_horizon_ms, b.timestamp_type, b.max_timestamp, b.base_sequence,
                b.last_sequence, b.record_count) == \
               (o.last_offset, o.delete_horizon_ms, o.timestamp_type, o.max_timestamp, o.base_sequence,
                o.last_sequence, o.record_count)
        if b.record_count == 0:
            assert bytes(b.raw) == bytes(o.raw)
    check_dir_with_java(d)


def test_levels_and_skip_same_codec(tmp_path):
    d = oracle_dir(tmp_path, "segment_v2_txn")
    low = recompress(d, "zstd", level=1, dry_run=True).bytes_after
    high = recompress(d, "zstd", level=19, dry_run=True).bytes_after
    assert high < low
    recompress(d, "zstd", level=1)
    again = recompress(d, "zstd", skip_same_codec=True)
    assert again.bytes_saved == 0 and again.segments[0].batches_rebuilt == 0


def test_txnindex_carried_and_indexes_rebuilt(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a" * 10, "x" * 2000) for _ in range(5)], producer_id=9, producer_epoch=0, base_sequence=0,
               is_transactional=True), marker(5, 9, 0, commit=False)],
        [batch(6, [kv("b")])],
    ])
    txn = encode_txn_index([AbortedTxn(9, 0, 5, 6)])
    seg = list_segments(d)[0]
    open(seg.path(".txnindex"), "wb").write(txn)
    recompress(d, "gzip")
    assert open(seg.path(".txnindex"), "rb").read() == txn
    assert read_txn_index(txn)[0].first_offset == 0
    check_indexes(d)


def test_mtime_preserved(tmp_path):
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], [batch(1, [kv("b")])]], mtime=1_600_000_000)
    recompress(d, "snappy")
    assert all(int(s.mtime) == 1_600_000_000 for s in list_segments(d))


def test_skip_active(tmp_path):
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a", "x" * 500)])], [batch(1, [kv("b", "y" * 500)])]])
    active = open(os.path.join(d, segment_file_name(1)), "rb").read()
    r = recompress(d, "gzip", include_active=False)
    assert [s.base_offset for s in r.segments] == [0]
    assert open(os.path.join(d, segment_file_name(1)), "rb").read() == active


def test_verification_failure_leaves_log_untouched(tmp_path, monkeypatch):
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a"), kv("b")])], [batch(2, [kv("c")])]])
    before = sorted(os.listdir(d))
    records = full_records(d)
    real = rc.rewrite_records

    def lossy(buf, options, digest=None, stats=None):
        for out in real(buf, options, digest, stats):
            b = next(iter(kcodec.read_batches(out)))
            yield rc.rebuild_batch(list(b)[:1], magic=2, compression="gzip", level=None,
                                   base_offset=b.base_offset, timestamp_type=TimestampType.CREATE_TIME)
    monkeypatch.setattr(rc, "rewrite_records", lossy)
    with pytest.raises(RecompressVerificationError, match="different records"):
        recompress(d, "gzip")
    assert sorted(os.listdir(d)) == before and full_records(d) == records


def test_records_digest_is_order_and_content_sensitive():
    a = batch(0, [kv("a"), kv("b")])
    b = batch(0, [kv("b"), kv("a")])
    assert records_digest(a) != records_digest(b)
    assert records_digest(a).startswith("2:")


def test_spark_recompress_matches_local(tmp_path, spark):
    from kcodec.spark.ops import recompress_spark
    local = oracle_dir(tmp_path / "local", "segment_v2_txn")
    parts = [bytes(b.raw) for b in dir_batches(local)]
    second = next(iter(kcodec.read_batches(parts[1]))).base_offset
    remote = make_log(tmp_path / "remote" / "seg-0", [(0, parts[:1]), (second, parts[1:])])
    before = full_records(remote)
    dry = recompress_spark(spark, [remote], "zstd", dry_run=True)[0]
    (r,) = recompress_spark(spark, remote, "zstd")
    assert len(r.segments) == 2 and all(s.swapped for s in r.segments)
    assert r.bytes_after == dry.bytes_after and r.bytes_saved > 0
    assert full_records(remote) == before
    recompress(local, "zstd")
    assert full_records(local) == before
    check_indexes(remote)
    check_dir_with_java(remote)


# --------------------------------------------------------------------------------------------
# options, totals, the digest and the read-back

def three_records(tmp_path, name="t-0"):
    return make_log(tmp_path / name, [[batch(0, [kv("a", "x" * 300)]), batch(1, [kv("b", "y" * 300)])],
                                       [batch(2, [kv("c", "z" * 300)])]])


def test_options_refused_before_anything_is_written(tmp_path):
    from kcodec.errors import UnsupportedCodecError
    d = three_records(tmp_path)
    # a leftover of a crashed run: refused options must not even recover the directory
    open(os.path.join(d, segment_file_name(0) + ".cleaned"), "wb").write(b"junk")
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    with pytest.raises(ValueError, match=r"^recompression converts legacy data up to magic 2 only "
                                         r"\(to_magic must be None or 2\)$"):
        recompress(d, "gzip", to_magic=1)
    with pytest.raises(UnsupportedCodecError, match="invalid gzip level 10"):
        recompress(d, "gzip", level=10)
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_result_totals_and_swaps(tmp_path):
    import dataclasses
    import time
    d = three_records(tmp_path)
    dry = recompress(d, "gzip", dry_run=True)
    started = time.perf_counter()
    r = recompress(d, "gzip")
    assert 0 < r.seconds <= time.perf_counter() - started   # the run's own time, within the call's
    sizes = [s.size for s in list_segments(d)]
    for res in (dry, r):
        # 742 and 371 bytes of 300-byte values become 190 and 95 bytes of gzip
        assert [(s.base_offset, s.bytes_before, s.bytes_after, s.records, s.batches_rebuilt, s.batches_kept)
                for s in res.segments] == [(0, 742, 190, 2, 2, 0), (2, 371, 95, 1, 1, 0)]
        assert (res.bytes_before, res.bytes_after, res.bytes_saved, res.records) == (1113, 285, 828, 3)
    assert sizes == [190, 95]
    assert [(s.swapped, s.digest) for s in dry.segments] == [(False, ""), (False, "")]
    fields = dataclasses.asdict(dry)
    assert fields.pop("seconds") > 0
    assert fields == {"log_dir": d, "dry_run": True, "segments": [
        {"base_offset": 0, "bytes_before": 742, "bytes_after": 190, "records": 2, "batches_rebuilt": 2,
         "batches_kept": 0, "batches_unsupported": 0, "digest": "", "swapped": False},
        {"base_offset": 2, "bytes_before": 371, "bytes_after": 95, "records": 1, "batches_rebuilt": 1,
         "batches_kept": 0, "batches_unsupported": 0, "digest": "", "swapped": False}]}
    assert [s.swapped for s in r.segments] == [True, True]
    assert (dry.dry_run, r.dry_run) == (True, False)


def test_digest_covers_offset_timestamp_key_value_and_headers(tmp_path):
    import hashlib
    import struct
    recs = [(b"k", None, T0, [("h", b"hv"), ("e", None)]), (None, b"v", T0 + 7, [])]
    data = batch(5, recs)

    def field(b):
        return b"\xff" * 8 if b is None else struct.pack(">q", len(b)) + b
    h = hashlib.blake2b(digest_size=32)
    for offset, (key, value, ts, headers) in zip((5, 6), recs):
        h.update(struct.pack(">qq", offset, ts) + field(key) + field(value) + struct.pack(">q", len(headers)))
        for hk, hv in headers:
            h.update(field(hk.encode()) + field(hv))
    assert records_digest(data) == "2:" + h.hexdigest()
    d = make_log(tmp_path / "t-0", [[data]])
    assert recompress(d, "lz4").segments[0].digest == "2:" + h.hexdigest()


def test_a_segment_that_does_not_read_back_is_refused(tmp_path, monkeypatch):
    d = three_records(tmp_path)
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}

    def flipped(buf, options, digest=None, stats=None):
        for out in rc_rewrite(buf, options, digest, stats):
            out = bytearray(out)
            out[17] ^= 1   # the stored CRC: every record still decodes, the batch is not valid
            yield bytes(out)
    rc_rewrite = rc.rewrite_records
    monkeypatch.setattr(rc, "rewrite_records", flipped)
    with pytest.raises(RecompressVerificationError, match="^rewritten segment does not read back: ") as e:
        recompress(d, "gzip")
    assert e.value.source == os.path.join(d, segment_file_name(0))
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_a_corrupt_batch_is_named_and_nothing_is_left(tmp_path):
    from kcodec.errors import CorruptDataError
    bad = bytearray(batch(1, [kv("b", "y" * 300)]))
    bad[-1] ^= 1
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a", "x" * 300)]), bytes(bad)], [batch(2, [kv("c")])]])
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    with pytest.raises(CorruptDataError, match=r"^Record is corrupt \(stored crc = ") as e:
        recompress(d, "gzip")
    # the second batch, after the first's 371 bytes
    assert str(e.value).endswith(f"(in {os.path.join(d, segment_file_name(0))}, at byte 371, "
                                 "in the batch with base offset 1)")
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


# --------------------------------------------------------------------------------------------
# legacy messages packed into wrappers

def legacy_shapes(path):
    return [(b.base_offset, b.magic, CompressionType.of(b.compression).name, [r.offset for r in b])
            for b in dir_batches(path)]


def test_legacy_messages_packed_up_to_max_batch_bytes(tmp_path):
    # 136-byte v1 and 128-byte v0 messages: a wrapper takes messages while their sizes add up to at most
    # max_batch_bytes, and a run ends where the format changes or a batch that is not packed comes
    segs = [legacy_batch(i, [kv("k%d" % i, "x" * 100)], ts=T0 + i) for i in range(5)]
    segs += [legacy_batch(i, [kv("k%d" % i, "x" * 100)], magic=0) for i in (5, 6)]
    segs += [batch(7, [kv("z")]), legacy_batch(8, [kv("k8", "x" * 100)])]
    assert [len(s) for s in segs] == [136] * 5 + [128, 128, 70, 136]
    d = make_log(tmp_path / "t-0", [segs])
    before = full_records(d)
    r = recompress(d, "gzip", max_batch_bytes=2 * 136)
    assert legacy_shapes(d) == [(0, 1, "GZIP", [0, 1]), (2, 1, "GZIP", [2, 3]), (4, 1, "GZIP", [4]),
                                (5, 0, "GZIP", [5, 6]), (7, 2, "GZIP", [7]), (8, 1, "GZIP", [8])]
    assert (r.segments[0].batches_rebuilt, r.segments[0].batches_kept, r.records) == (6, 0, 9)
    assert full_records(d) == before
    check_dir_with_java(d)
    # a byte less and no two messages fit: each goes alone, from the first run on
    d = make_log(tmp_path / "t-1", [segs])
    recompress(d, "gzip", max_batch_bytes=2 * 136 - 1)
    assert [offsets for *_, offsets in legacy_shapes(d)] == [[0], [1], [2], [3], [4], [5, 6], [7], [8]]


def test_legacy_messages_packed_into_wrappers_of_1_mib_by_default(tmp_path):
    # 65,536-byte messages: sixteen make exactly 1 MiB
    d = make_log(tmp_path / "t-0", [[legacy_batch(i, [kv("k", "x" * 65501)]) for i in range(33)]])
    assert list_segments(d)[0].size == 33 * 65536
    recompress(d, "gzip")
    assert [(b.base_offset, b.record_count) for b in dir_batches(d)] == [(0, 16), (16, 16), (32, 1)]


def test_uncompressed_legacy_data_kept_when_the_target_is_none(tmp_path):
    segs = [legacy_batch(0, [kv("a")]), legacy_batch(1, [kv("b")], magic=0), legacy_batch(2, [kv("c"), kv("d")],
                                                                                          codec="gzip")]
    d = make_log(tmp_path / "t-0", [segs])
    before = full_records(d)
    r = recompress(d, "none")
    # the two uncompressed messages stay as they are; the gzip wrapper becomes two v1 messages
    data = open(list_segments(d)[0].path(), "rb").read()
    assert data.startswith(segs[0] + segs[1])
    assert legacy_shapes(d) == [(0, 1, "NONE", [0]), (1, 0, "NONE", [1]), (2, 1, "NONE", [2]), (3, 1, "NONE", [3])]
    assert (r.segments[0].batches_kept, r.segments[0].batches_rebuilt) == (2, 1)
    assert full_records(d) == before


def test_a_crash_point_once_half_the_segment_is_written(tmp_path):
    # the fault-injection tests crash at "write-partial": the new .log then holds just over half of the
    # old segment's size in whole batches
    from kcodec.log.cleaner import FileOps
    d = make_log(tmp_path / "t-0", [[batch(i, [kv("k%d" % i, "x" * 100)]) for i in range(4)]])
    size = list_segments(d)[0].size
    seen = []

    def hook(op, path):
        if op.startswith("write"):
            seen.append((op, os.path.basename(path), os.path.getsize(path)))
    recompress(d, "none", ops=FileOps(hook=hook))
    assert size == 4 * 172
    assert seen[:2] == [("write-partial", segment_file_name(0) + ".cleaned", 3 * 172),
                        ("write", segment_file_name(0) + ".cleaned", 4 * 172)]


def test_rewrite_records_alone():
    from kcodec.log.recompression import RecompressOptions, SegmentResult, rewrite_records
    data = batch(0, [kv("a")], codec="gzip") + batch(1, [kv("b")])
    stats = SegmentResult(0, len(data), 0, 0)
    out = list(rewrite_records(data, RecompressOptions("gzip"), stats=stats))
    # by default a batch already in the target codec is rebuilt too (at the codec's default level)
    assert (stats.records, stats.batches_rebuilt, stats.batches_kept) == (2, 2, 0)
    assert [records_digest(b) for b in out] == [records_digest(batch(0, [kv("a")])),
                                                records_digest(batch(1, [kv("b")]))]
    assert [len(b) for b in rewrite_records(data, RecompressOptions("lz4"))] == [85, 85]
    with pytest.raises(ValueError, match="to_magic must be None or 2"):
        list(rewrite_records(data, RecompressOptions("gzip", to_magic=0)))


def test_skip_same_codec_still_converts_legacy_data_to_v2(tmp_path):
    segs = [legacy_batch(0, [kv("a"), kv("b")], codec="gzip"), batch(2, [kv("c")], codec="gzip")]
    d = make_log(tmp_path / "t-0", [segs])
    r = recompress(d, "gzip", to_magic=2, skip_same_codec=True)
    assert (r.segments[0].batches_rebuilt, r.segments[0].batches_kept) == (1, 1)
    assert [(b.base_offset, b.magic) for b in dir_batches(d)] == [(0, 2), (2, 2)]
    assert open(list_segments(d)[0].path(), "rb").read().endswith(segs[1])


def test_v0_messages_up_converted_get_create_time_without_timestamps(tmp_path):
    # Kafka's up-conversion of magic 0: CREATE_TIME, every timestamp NO_TIMESTAMP (-1)
    segs = [legacy_batch(0, [kv("a")], magic=0), legacy_batch(1, [kv("b")], magic=0),
            legacy_batch(2, [kv("c"), kv("d")], magic=0, codec="gzip")]
    d = make_log(tmp_path / "t-0", [segs])
    recompress(d, "lz4", to_magic=2)
    assert [(b.base_offset, b.magic, b.timestamp_type, b.max_timestamp, [(r.offset, r.timestamp) for r in b])
            for b in dir_batches(d)] == [(0, 2, TimestampType.CREATE_TIME, -1, [(0, -1), (1, -1)]),
                                         (2, 2, TimestampType.CREATE_TIME, -1, [(2, -1), (3, -1)])]
    check_dir_with_java(d)


def test_a_dry_run_leaves_a_crashed_runs_files_alone(tmp_path):
    d = three_records(tmp_path)
    open(os.path.join(d, segment_file_name(0) + ".cleaned"), "wb").write(b"junk")
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    assert recompress(d, "gzip", dry_run=True).bytes_after == 285
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_a_segment_ending_in_a_partial_batch_is_refused(tmp_path):
    from kcodec.log.segment_list import PartialTailError
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")]), batch(1, [kv("b")])[:30]]])
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    with pytest.raises(PartialTailError, match="ends in 30 bytes that are not a complete batch") as e:
        recompress(d, "gzip")
    assert (e.value.source, e.value.position) == (os.path.join(d, segment_file_name(0)), 70)
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_recompress_segment_alone(tmp_path):
    # what a Spark task runs (no FileOps given): the verified .cleaned files, nothing swapped
    from kcodec.log.recompression import RecompressOptions, recompress_segment
    d = three_records(tmp_path)
    seg = list_segments(d)[0]
    res = recompress_segment(d, seg, RecompressOptions("gzip"))
    assert (res.bytes_before, res.bytes_after, res.records, res.swapped) == (742, 190, 2, False)
    assert sorted(n for n in os.listdir(d) if n.endswith(".cleaned")) == [
        segment_file_name(0, s) + ".cleaned" for s in (".index", ".log", ".timeindex", ".txnindex")]


def test_command_line_flags_and_report(tmp_path, capsys, monkeypatch):
    import re

    from kcodec.cli import main
    root = tmp_path / "data"
    for p in ("t-0", "t-1"):
        three_records(root, p)

    def out():
        return [re.sub(r" in \d+\.\d\d s$", " in S s", line) for line in capsys.readouterr().out.splitlines()]
    assert main(["recompress", str(root), "--codec", "gzip", "--dry-run"]) == 0
    assert out() == [f"{root}/t-0: 2 segments, 3 records, 1113 -> 285 bytes, would save 828 (74.4%) in S s",
                     f"{root}/t-1: 2 segments, 3 records, 1113 -> 285 bytes, would save 828 (74.4%) in S s",
                     "total: 2 partitions, 2226 -> 570 bytes, would save 1656"]
    # --no-verify reads nothing back; --skip-active leaves the newest segment alone
    monkeypatch.setattr(rc, "records_digest", lambda buf: pytest.fail("read back"))
    assert main(["recompress", str(root / "t-0"), "--codec", "gzip", "--skip-active", "--no-verify"]) == 0
    assert out() == [f"{root}/t-0: 1 segments, 2 records, 742 -> 190 bytes, saved 552 (74.4%) in S s"]
    monkeypatch.undo()
    # gzip at level 1 is kept with --skip-same-codec; rebuilt, it would be gzip at the default level
    value = "x" * 300 + "abcabcabd" * 20
    fast = batch(0, [kv("a", value)], codec="gzip", level=1)
    assert fast != batch(0, [kv("a", value)], codec="gzip")
    d = make_log(root / "fast-0", [[fast], [batch(1, [kv("b")])]])
    assert main(["recompress", d, "--codec", "gzip", "--skip-same-codec"]) == 0
    assert out() == [f"{d}: 2 segments, 2 records, 174 -> 194 bytes, saved -20 (-11.5%) in S s"]
    assert open(list_segments(d)[0].path(), "rb").read() == fast
    assert main(["recompress", str(root / "t-1"), "--codec", "gzip", "--level", "10"]) == 1
    assert "invalid gzip level 10" in capsys.readouterr().err
    legacy = make_log(root / "old-0", [[legacy_batch(0, [kv("a")], codec="gzip")]])
    assert main(["recompress", legacy, "--codec", "zstd", "--to-magic", "2"]) == 0
    assert out() == [f"{legacy}: 1 segments, 1 records, 77 -> 82 bytes, saved -5 (-6.5%) in S s"]
    assert [(b.magic, CompressionType.of(b.compression)) for b in dir_batches(legacy)] == [(2, CompressionType.ZSTD)]


def test_a_segment_its_indexes_cannot_hold_is_named_and_nothing_is_left(tmp_path):
    # a batch 2^33 above its segment's base (Kafka would have rolled a segment): no .index can hold it
    from kcodec.errors import CorruptDataError
    d = make_log(tmp_path / "t-0", [[batch(0, [kv("a")])], [batch(2 ** 33 + 1, [kv("z")])]])
    with open(os.path.join(d, segment_file_name(0)), "wb") as f:
        f.write(batch(0, [kv("a")]) + batch(2 ** 33, [kv("b")], ts=T0 + 1))
    before = {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)}
    with pytest.raises(CorruptDataError, match=f"^offset {2 ** 33} cannot be stored relative to base offset 0 ") as e:
        recompress(d, "gzip")
    assert e.value.source == os.path.join(d, segment_file_name(0))
    assert {n: open(os.path.join(d, n), "rb").read() for n in os.listdir(d)} == before


def test_log_append_time_messages_keep_their_times(tmp_path):
    # A LogAppendTime wrapper gives every record its one time: uncompressed v1 messages appended at
    # different times each get a wrapper of their own, those appended together share one.
    lat = dict(timestamp_type=TimestampType.LOG_APPEND_TIME)
    segs = [legacy_batch(0, [kv("a")]), legacy_batch(1, [kv("b")], log_append_time=T0 + 5, **lat),
            legacy_batch(2, [kv("c")], log_append_time=T0 + 9, **lat),
            legacy_batch(3, [kv("d")], log_append_time=T0 + 9, **lat),
            legacy_batch(4, [kv("e"), kv("f")], codec="gzip", log_append_time=T0 + 20, **lat)]
    for to_magic, magic in ((None, 1), (2, 2)):
        d = make_log(tmp_path / f"t-{magic}", [segs])
        before = full_records(d)
        recompress(d, "gzip", to_magic=to_magic)
        assert full_records(d) == before
        assert [(b.base_offset, b.magic, b.timestamp_type, b.max_timestamp, [r.offset for r in b])
                for b in dir_batches(d)] == [
            (0, magic, TimestampType.CREATE_TIME, T0, [0]), (1, magic, TimestampType.LOG_APPEND_TIME, T0 + 5, [1]),
            (2, magic, TimestampType.LOG_APPEND_TIME, T0 + 9, [2, 3]),
            (4, magic, TimestampType.LOG_APPEND_TIME, T0 + 20, [4, 5])]
        check_dir_with_java(d)


def test_options_are_a_value():
    # frozen: one RecompressOptions is handed to every segment's rewrite (and every Spark task) unchanged
    import dataclasses

    from kcodec.log.recompression import RecompressOptions
    opts = RecompressOptions("zstd", 3)
    assert opts == RecompressOptions("zstd", 3) and hash(opts) == hash(RecompressOptions("zstd", 3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        opts.level = 19
    assert (opts.codec, opts.effective_level, RecompressOptions("zstd").effective_level) == (CompressionType.ZSTD, 3, 3)


def test_recompress_segment_alone_verifies_and_indexes_at_kafkas_defaults(tmp_path, monkeypatch):
    # index.interval.bytes 4096: an entry goes before a batch once more than 4096 bytes follow the last
    import struct

    from kcodec.log.recompression import RecompressOptions, recompress_segment

    d = make_log(tmp_path / "t-0", [[sized_batch(i, 4096) for i in range(3)],
                                    [sized_batch(3 + i, 4097) for i in range(3)],
                                    [batch(6, [kv("z")])]])
    for seg, want in zip(list_segments(d), (struct.pack(">ii", 2, 8192), struct.pack(">iiii", 1, 4097, 2, 8194))):
        recompress_segment(d, seg, RecompressOptions("none"))
        assert open(seg.path(".index") + ".cleaned", "rb").read() == want
    real = rc.rewrite_records

    def lossy(buf, options, digest=None, stats=None):
        for out in real(buf, options, digest, stats):
            yield out[:-1] + bytes([out[-1] ^ 1])
    monkeypatch.setattr(rc, "rewrite_records", lossy)
    with pytest.raises(RecompressVerificationError):
        recompress_segment(d, list_segments(d)[2], RecompressOptions("none"))


def test_recompress_and_its_steps_at_their_defaults(tmp_path):
    # recompress() builds indexes at index.interval.bytes 4096; segments_to_recompress recovers first (at that
    # interval too) and takes the active segment; swap_in swaps
    import struct

    from kcodec.log.cleaner import FileOps, build_indexes
    from kcodec.log.recompression import RecompressOptions, recompress_segment, segments_to_recompress, swap_in

    def sized_batch(offset, size):
        return batch(offset, [kv("k", "x" * (size - 71))])
    want = (struct.pack(">ii", 2, 8192), struct.pack(">iiii", 1, 4097, 2, 8194))
    segs = [[sized_batch(i, 4096) for i in range(3)], [sized_batch(3 + i, 4097) for i in range(3)],
            [batch(6, [kv("z")])]]
    d = make_log(tmp_path / "t-0", segs)
    recompress(d, "none")
    assert [open(s.path(".index"), "rb").read() for s in list_segments(d)[:2]] == list(want)

    d = make_log(tmp_path / "t-1", segs)
    for base in (0, 3):
        os.remove(os.path.join(d, segment_file_name(base, ".index")))
    open(os.path.join(d, segment_file_name(0) + ".cleaned"), "wb").write(b"junk")
    got = segments_to_recompress(FileOps(), d)
    assert [s.base_offset for s in got] == [0, 3, 6]
    assert [open(os.path.join(d, segment_file_name(b, ".index")), "rb").read() for b in (0, 3)] == list(want)
    assert not os.path.exists(os.path.join(d, segment_file_name(0) + ".cleaned"))
    res = recompress_segment(d, got[2], RecompressOptions("gzip"))
    assert swap_in(FileOps(), d, got[2], res) is res and res.swapped
    data = open(os.path.join(d, segment_file_name(6)), "rb").read()
    assert [CompressionType.of(b.compression) for b in kcodec.read_batches(data)] == [CompressionType.GZIP]
    assert open(os.path.join(d, segment_file_name(6, ".index")), "rb").read() == build_indexes(data, 6)[0]


def test_the_codec_is_a_required_flag(tmp_path, capsys):
    from kcodec.cli import main
    d = three_records(tmp_path)
    with pytest.raises(SystemExit) as e:
        main(["recompress", d])
    assert e.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1].endswith("error: the following arguments are required: --codec")


# -- rebuild_batch, which the validator, the cleaner's filter and recompression write with ------------

def _three_records():
    b = kcodec.RecordBatchBuilder(base_offset=0)
    b.append(b"k0", b"v0", T0, headers=[("h", b"x")])
    b.append(None, b"v1", T0 + 5)
    b.append(b"k2", None, T0 + 2)
    return next(kcodec.read_batches(b.build())).records()


def _header_fields(out):
    (b,) = list(kcodec.read_batches(out))
    return (b.magic, b.base_offset, b.last_offset, b.producer_id, b.producer_epoch, b.base_sequence,
            b.partition_leader_epoch, b.is_transactional, b.is_control, b.delete_horizon_ms,
            b.timestamp_type, b.max_timestamp, int(b.compression))


def _fields(out):
    return [(r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for b in kcodec.read_batches(out) for r in b]


CT = TimestampType.CREATE_TIME


def test_rebuild_batch_defaults_write_no_producer_state():
    from kcodec.records.rebuild import rebuild_batch
    out = rebuild_batch(_three_records(), magic=2, compression="none", level=None, base_offset=10, timestamp_type=CT)
    assert type(out) is bytes
    assert _header_fields(out) == (2, 10, 12, -1, -1, -1, -1, False, False, None, CT, T0 + 5, 0)
    assert _fields(out) == [(10, T0, b"k0", b"v0", (("h", b"x"),)), (11, T0 + 5, None, b"v1", ()),
                            (12, T0 + 2, b"k2", None, ())]


def test_rebuild_batch_keeps_producer_state_offsets_horizon_and_last_offset():
    from kcodec.records.rebuild import rebuild_batch
    kwargs = dict(magic=2, compression="gzip", level=None, base_offset=3, timestamp_type=CT, offsets=[3, 7, 9],
                  delete_horizon_ms=T0 + 9, producer_id=5, producer_epoch=2, base_sequence=40,
                  is_transactional=True, partition_leader_epoch=8)
    out = rebuild_batch(_three_records(), last_offset=12, **kwargs)
    assert _header_fields(out) == (2, 3, 12, 5, 2, 40, 8, True, False, T0 + 9, CT, T0 + 5, 1)
    assert [r[0] for r in _fields(out)] == [3, 7, 9]
    (batch,) = list(kcodec.read_batches(out))
    assert batch.last_sequence == 49 and batch.is_valid()  # the sequence of offset 12 survives
    # a last offset the records already end at leaves the batch as written
    assert rebuild_batch(_three_records(), last_offset=9, **kwargs) == rebuild_batch(_three_records(), **kwargs)
    # Kafka's NO_TIMESTAMP horizon is no horizon at all
    kwargs["delete_horizon_ms"] = -1
    assert _header_fields(rebuild_batch(_three_records(), **kwargs))[9] is None


def test_rebuild_batch_log_append_time_only_for_log_append_time_batches():
    from kcodec.records.rebuild import rebuild_batch
    lat = TimestampType.LOG_APPEND_TIME
    out = rebuild_batch(_three_records(), magic=2, compression="none", level=None, base_offset=0, timestamp_type=lat,
                        log_append_time=T0 + 100)
    assert _header_fields(out)[10:12] == (lat, T0 + 100)
    assert [r[1] for r in _fields(out)] == [T0 + 100] * 3
    out = rebuild_batch(_three_records(), magic=2, compression="none", level=None, base_offset=0, timestamp_type=CT,
                        log_append_time=T0 + 100)
    assert [r[1] for r in _fields(out)] == [T0, T0 + 5, T0 + 2]


@pytest.mark.parametrize("magic", [0, 1])
def test_rebuild_batch_below_magic_2_drops_what_legacy_messages_cannot_hold(magic):
    from kcodec.records.rebuild import rebuild_batch
    ts_type = CT if magic else TimestampType.NO_TIMESTAMP_TYPE
    out = rebuild_batch(_three_records()[1:], magic=magic, compression="none", level=None, base_offset=10,
                        timestamp_type=ts_type, producer_id=5, producer_epoch=2, base_sequence=40,
                        partition_leader_epoch=8, delete_horizon_ms=T0, last_offset=20)
    batches = list(kcodec.read_batches(out))
    assert [(b.magic, b.last_offset, b.producer_id, b.partition_leader_epoch) for b in batches] == \
        [(magic, 10, -1, -1), (magic, 11, -1, -1)]
    ts = [T0 + 5, T0 + 2] if magic else [-1, -1]
    assert _fields(out) == [(10, ts[0], None, b"v1", ()), (11, ts[1], b"k2", None, ())]


def test_rebuild_batch_rewrites_control_records_as_control_records():
    from kcodec.records import ControlRecordType
    from kcodec.records.rebuild import rebuild_batch
    b = kcodec.RecordBatchBuilder(base_offset=4, is_control=True, is_transactional=True, producer_id=7,
                                  producer_epoch=1)
    b.append_end_txn_marker(ControlRecordType.ABORT, 6, timestamp=T0)
    original = b.build()
    out = rebuild_batch(next(kcodec.read_batches(original)).records(), magic=2, compression="none", level=None,
                        base_offset=4, timestamp_type=CT, is_control=True, is_transactional=True, producer_id=7,
                        producer_epoch=1)
    assert out == original
    (rec,) = next(kcodec.read_batches(out)).records()
    assert (rec.is_control, rec.control_type, rec.coordinator_epoch) == (True, ControlRecordType.ABORT, 6)


@pytest.mark.parametrize("module", ["kcodec.records.rebuild"])  # named in the node id, for bench/mutation.py
def test_rebuild_module_exports_rebuild_batch_alone(module):
    names: dict = {}
    exec(f"from {module} import *", names)
    assert sorted(k for k in names if k != "__builtins__") == ["rebuild_batch"]
