"""Segment deletion by retention.ms and retention.bytes (``UnifiedLog.deleteOldSegments``)."""
import os

from builders import DAY, T0, batch, dir_records, kv, legacy_batch, make_log
from kcodec.log.cleaner import FileOps, list_segments, recover_log_dir, segment_file_name
from kcodec.log.retention import retain


def four_segments(tmp_path):
    # segment i holds timestamps around T0 + i days
    return make_log(tmp_path / "t-0", [
        [batch(i * 10, [kv("k%d" % j, "x" * 100) for j in range(10)], ts=T0 + i * DAY)] for i in range(4)])


def sizes(d):
    return [s.size for s in list_segments(d)]


def test_retention_ms_deletes_old_segments_in_order(tmp_path):
    d = four_segments(tmp_path)
    now = T0 + 3 * DAY
    r = retain(d, retention_ms=DAY + 1000, now_ms=now)
    # largest timestamps: T0+9, T0+DAY+9, ... ; now - largest > retention for segments 0 and 1 only
    assert r.deleted == [0, 10] and r.reasons == ["retention.ms", "retention.ms"]
    assert [s.base_offset for s in list_segments(d)] == [20, 30]
    assert r.log_start_offset == 20
    assert not [f for f in os.listdir(d) if f.endswith(".deleted")]


def test_retention_ms_stops_at_first_kept_segment(tmp_path):
    d = make_log(tmp_path / "t-0", [
        [batch(0, [kv("a")], ts=T0)],
        [batch(1, [kv("b")], ts=T0 + 10 * DAY)],  # young
        [batch(2, [kv("c")], ts=T0)],  # old, but behind a young segment
        [batch(3, [kv("d")], ts=T0)],
    ])
    r = retain(d, retention_ms=DAY, now_ms=T0 + 10 * DAY)
    assert r.deleted == [0]


def test_active_segment_never_deleted(tmp_path):
    d = four_segments(tmp_path)
    r = retain(d, retention_ms=0, now_ms=T0 + 100 * DAY)
    assert r.deleted == [0, 10, 20]
    assert [s.base_offset for s in list_segments(d)] == [30]


def test_retention_bytes(tmp_path):
    d = four_segments(tmp_path)
    total = sum(sizes(d))
    one = sizes(d)[0]
    r = retain(d, retention_ms=-1, retention_bytes=total - one - 1, now_ms=T0)
    # deleting segment 0 leaves total - one < limit? no: diff = one + 1, only segment 0 fits (diff - size >= 0)
    assert r.deleted == [0]
    assert r.bytes_remaining == total - one
    r = retain(d, retention_ms=-1, retention_bytes=1, now_ms=T0)
    assert r.deleted == [10, 20]  # the active segment stays


def test_retention_bytes_below_limit_does_nothing(tmp_path):
    d = four_segments(tmp_path)
    assert retain(d, retention_ms=-1, retention_bytes=sum(sizes(d)) + 1, now_ms=T0).deleted == []
    # size == limit: Kafka proceeds, but no segment fits in a zero difference
    assert retain(d, retention_ms=-1, retention_bytes=sum(sizes(d)), now_ms=T0).deleted == []


def test_log_start_offset_rule(tmp_path):
    d = four_segments(tmp_path)
    r = retain(d, retention_ms=-1, log_start_offset=25, now_ms=T0)
    assert r.deleted == [0, 10] and r.reasons == ["log start offset"] * 2 and r.log_start_offset == 25


def test_segment_without_timestamps_uses_mtime(tmp_path):
    d = make_log(tmp_path / "t-0", [[legacy_batch(0, [kv("a")], magic=0)], [batch(1, [kv("b")], ts=T0)]],
                 mtime=(T0 - 5 * DAY) / 1000)
    assert retain(d, retention_ms=DAY, now_ms=T0, dry_run=True).deleted == [0]
    assert retain(d, retention_ms=10 * DAY, now_ms=T0, dry_run=True).deleted == []


def test_dry_run_deletes_nothing(tmp_path):
    d = four_segments(tmp_path)
    before = sorted(os.listdir(d))
    r = retain(d, retention_ms=0, now_ms=T0 + 100 * DAY, dry_run=True)
    assert r.deleted == [0, 10, 20] and sorted(os.listdir(d)) == before


def test_crash_during_deletion_recovers(tmp_path):
    d = four_segments(tmp_path)
    records = dir_records(d)

    class Crash(Exception):
        pass
    count = [0]

    def hook(op, path):
        count[0] += 1
        if count[0] == 2:
            raise Crash(path)
    try:
        retain(d, retention_ms=0, now_ms=T0 + 100 * DAY, ops=FileOps(hook=hook))
    except Crash:
        pass
    recover_log_dir(d)
    got = dir_records(d)
    # the segment whose .log was renamed is gone entirely; the others are intact
    assert got == [r for r in records if r[0] >= 10]
    assert not os.path.exists(os.path.join(d, segment_file_name(0, ".index")))
    r = retain(d, retention_ms=0, now_ms=T0 + 100 * DAY)
    assert r.deleted == [10, 20]


def test_retention_ms_boundary_and_detail(tmp_path):
    d = four_segments(tmp_path)   # largest timestamps T0 + i days + 9
    now = T0 + 2 * DAY + 9
    r = retain(d, retention_ms=DAY, now_ms=now, dry_run=True)
    assert r.deleted == [0]       # segment 1 is exactly retention.ms old: kept
    assert r.segments[0].detail == ("largest timestamp 2023-11-14T22:13:20.009Z is 172800000 ms before now "
                                    "2023-11-16T22:13:20.009Z, more than retention.ms 86400000")
    assert (r.segments[0].file_name, r.segments[0].size) == (segment_file_name(0), sizes(d)[0])
    assert retain(d, retention_ms=DAY, now_ms=now + 1, dry_run=True).deleted == [0, 10]
    assert retain(d, retention_ms=-1, now_ms=now + 100 * DAY, dry_run=True).deleted == []


def test_retention_bytes_detail_and_counts(tmp_path):
    d = four_segments(tmp_path)
    s = sizes(d)
    r = retain(d, retention_bytes=s[1] + s[2] + s[3], now_ms=T0)
    assert r.deleted == [0] and r.reasons == ["retention.bytes"]
    assert r.segments[0].detail == f"the log is {s[0]} bytes over retention.bytes {s[1] + s[2] + s[3]}, " \
                                   f"this segment is {s[0]}"
    assert (r.bytes_deleted, r.bytes_remaining, r.log_start_offset) == (s[0], s[1] + s[2] + s[3], 10)
    assert [x.base_offset for x in list_segments(d)] == [10, 20, 30]


def test_log_start_offset_boundary(tmp_path):
    d = four_segments(tmp_path)
    r = retain(d, log_start_offset=20, now_ms=T0, dry_run=True)
    assert r.deleted == [0, 10] and r.log_start_offset == 20
    assert r.segments[1].detail == "the next segment starts at offset 20, at or below the log start offset 20"
    r = retain(d, log_start_offset=19, now_ms=T0, dry_run=True)
    assert r.deleted == [0] and r.log_start_offset == 19
    assert retain(d, log_start_offset=0, now_ms=T0, dry_run=True).log_start_offset == 0


def test_rules_apply_in_order_and_a_compact_topic_keeps_all_but_the_start(tmp_path):
    from kcodec.log.retention import RetentionPolicy
    d = four_segments(tmp_path)
    s = sizes(d)
    both = RetentionPolicy(retention_ms=2 * DAY, retention_bytes=s[2] + s[3], log_start_offset=35)
    r = retain(d, policy=both, now_ms=T0 + 3 * DAY, dry_run=True)
    assert list(zip(r.deleted, r.reasons)) == [(0, "retention.ms"), (10, "retention.bytes"),
                                               (20, "log start offset")]
    compact = RetentionPolicy(retention_ms=0, retention_bytes=0, log_start_offset=15, cleanup_policy="compact")
    assert retain(d, policy=compact, now_ms=T0 + 9 * DAY, dry_run=True).deleted == [0]


def test_policy_text_and_cleanup_policy(tmp_path):
    import pytest

    from kcodec.log.retention import RetentionPolicy, RetentionPolicyError
    assert RetentionPolicy().deletes and not RetentionPolicy().given
    assert RetentionPolicy(cleanup_policy="compact, delete").deletes
    assert not RetentionPolicy(cleanup_policy="compact").deletes
    assert RetentionPolicy(log_start_offset=0).given and RetentionPolicy(retention_bytes=-1).given
    p = RetentionPolicy(retention_ms=5, log_start_offset=7, cleanup_policy="compact",
                        sources={"retention.ms": "--retention-ms", "cleanup.policy": "topic config"})
    assert p.describe() == ("retention.ms 5 (--retention-ms), log start offset 7, cleanup.policy compact "
                            "(topic config): only the log start offset applies")
    assert RetentionPolicy().describe() == "no limit"
    d = four_segments(tmp_path)
    with pytest.raises(RetentionPolicyError, match=f"^{d}: no retention policy given"):
        retain(d)
    with pytest.raises(TypeError, match="either policy= or the retention keywords"):
        retain(d, policy=p, retention_ms=1)
    assert len(list_segments(d)) == 4


def test_retention_bytes_at_the_limit_deletes_a_leading_empty_segment(tmp_path):
    # UnifiedLog.deleteRetentionSizeBreachedSegments goes on at size == retention.bytes, with a
    # difference of 0: a segment whose size fits in it, an empty one, is deleted.
    d = make_log(tmp_path / "t-0", [(0, []), [batch(10, [kv("a", "x" * 100)], ts=T0)],
                                    [batch(11, [kv("b", "x" * 100)], ts=T0)]])
    assert sizes(d)[0] == 0
    r = retain(d, retention_ms=-1, retention_bytes=sum(sizes(d)), now_ms=T0)
    assert r.deleted == [0] and r.reasons == ["retention.bytes"]
    assert [s.base_offset for s in list_segments(d)] == [10, 11]


def test_retention_ms_is_measured_from_the_clock_when_no_time_is_given(tmp_path):
    import time

    now = int(time.time() * 1000)
    hour = 3_600_000
    d = make_log(tmp_path / "t-0", [[batch(i, [kv("k", "x" * 10)], ts=ts)]
                                    for i, ts in enumerate((now - 3 * DAY, now - 2 * DAY, now - hour, now))])
    r = retain(d, retention_ms=DAY)
    assert r.deleted == [0, 1]  # older than a day by the wall clock; the hour-old segment stays


def test_minus_one_disables_each_limit(tmp_path):
    # LogConfig: retention.ms and retention.bytes of -1 mean "no limit", never "delete everything"
    d = four_segments(tmp_path)
    before = sizes(d)
    for kw in ({"retention_ms": -1}, {"retention_bytes": -1}, {"retention_ms": -1, "retention_bytes": -1}):
        r = retain(d, now_ms=T0 + 100 * DAY, **kw)
        assert r.deleted == [] and r.bytes_deleted == 0 and r.bytes_remaining == sum(before)
        assert r.log_start_offset == 0
    assert sizes(d) == before
    # 0 is a limit: everything but the active segment goes
    assert retain(d, retention_ms=0, now_ms=T0 + 100 * DAY, dry_run=True).deleted == [0, 10, 20]
    assert retain(d, retention_bytes=0, dry_run=True).deleted == [0, 10, 20]


def test_a_result_starts_empty_and_a_policy_cannot_be_changed():
    import dataclasses

    import pytest

    from kcodec.log.retention import RetentionPolicy, RetentionResult

    r = RetentionResult("d", True)
    assert (r.segments, r.bytes_deleted, r.bytes_remaining, r.log_start_offset) == ([], 0, 0, 0)
    assert r.deleted == [] and r.reasons == [] and r.policy == RetentionPolicy()
    with pytest.raises(dataclasses.FrozenInstanceError):
        RetentionPolicy(retention_ms=1).retention_ms = 2


def test_a_timestamp_beyond_the_calendar_is_named_in_milliseconds(tmp_path):
    from kcodec.log.retention import RetentionPolicy, deletable_segments
    from kcodec.log.segment_list import SegmentInfo

    far = -(2 ** 62)  # no datetime reaches it: the detail prints the number itself
    segs = [SegmentInfo(0, str(tmp_path), 10, 0.0), SegmentInfo(5, str(tmp_path), 10, 0.0)]
    policy = RetentionPolicy(retention_ms=DAY)
    (seg, rule, detail), = deletable_segments(segs, {0: far, 5: T0}, now_ms=T0, policy=policy)
    assert seg.base_offset == 0 and rule == "retention.ms"
    assert detail.startswith(f"largest timestamp {far} ms is {T0 - far} ms before now ")


def test_retention_bytes_keeps_a_segment_one_byte_bigger_than_the_excess(tmp_path):
    # UnifiedLog.deleteRetentionSizeBreachedSegments deletes while diff - segment.size >= 0: a segment
    # one byte larger than what the log is over stays, and the log stays one byte over.
    d = four_segments(tmp_path)
    s = sizes(d)
    assert retain(d, retention_bytes=sum(s) - (s[0] - 1), dry_run=True).deleted == []
    r = retain(d, retention_bytes=sum(s) - s[0], dry_run=True)
    assert r.deleted == [0] and r.bytes_deleted == s[0]


def test_a_partition_without_segments_reports_offset_zero(tmp_path):
    d = tmp_path / "t-0"
    d.mkdir()
    r = retain(str(d), retention_ms=0, now_ms=T0)
    assert (r.deleted, r.bytes_deleted, r.bytes_remaining, r.log_start_offset) == ([], 0, 0, 0)
