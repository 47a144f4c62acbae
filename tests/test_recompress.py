"""Recompressing a partition directory: offsets, timestamps and producer state survive, bytes change."""
import os

import pytest

import kcodec
from builders import batch, check_dir_with_java, check_indexes, dir_batches, kv, make_log, marker
from kcodec.compression import CompressionType, TimestampType
from kcodec.log import recompress as rc
from kcodec.log.cleaner import AbortedTxn, encode_txn_index, list_segments, read_txn_index, segment_file_name
from kcodec.log.recompress import RecompressVerificationError, recompress, records_digest
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
