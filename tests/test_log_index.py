"""``kcodec.log.index``: Kafka's offset and time indexes, entry by entry, with worked expectations."""
from __future__ import annotations

import struct

import numpy as np
import pytest

import kcodec
from kcodec.errors import CorruptDataError
from kcodec.log.index import (
    NO_TIMESTAMP,
    CorruptIndexError,
    IndexBuilder,
    OffsetIndex,
    OffsetPosition,
    TimeIndex,
    TimestampOffset,
    batch_index_info,
    build_indexes,
    relative_offset,
)
from kcodec.records.framing import iter_entries
from oracle_util import load_case


def offset_index(base, entries, path="00.index"):
    return OffsetIndex.open(path, base, b"".join(struct.pack(">ii", r, p) for r, p in entries))


def time_index(base, entries, path="00.timeindex"):
    return TimeIndex.open(path, base, b"".join(struct.pack(">qi", t, r) for t, r in entries))


def test_relative_offset_fits_an_int32_at_or_above_the_base():
    assert relative_offset(100, 100) == 0
    assert relative_offset(100 + 2 ** 31 - 1, 100) == 2 ** 31 - 1
    for offset in (99, 100 + 2 ** 31):
        with pytest.raises(CorruptDataError, match=f"^offset {offset} cannot be stored relative to base offset 100$"):
            relative_offset(offset, 100)


def test_open_checks_the_file_size(tmp_path):
    p = tmp_path / "00.index"
    p.write_bytes(struct.pack(">ii", 1, 0) + b"\0\0\0")
    with pytest.raises(CorruptIndexError, match="^offset index file size 11 is not a multiple of 8") as e:
        OffsetIndex.open(p, 0)
    assert e.value.source == str(p)
    with pytest.raises(CorruptIndexError, match="^time index file size 13 is not a multiple of 12"):
        TimeIndex.open("t", 0, bytes(13))
    p.write_bytes(struct.pack(">ii", 1, 0) + struct.pack(">ii", 3, 70))
    idx = OffsetIndex.open(p, 10)
    assert (len(idx), idx.path, idx.offsets.tolist(), idx.positions.tolist()) == (2, str(p), [11, 13], [0, 70])
    empty = OffsetIndex.empty(10)
    assert (len(empty), empty.path, empty.lookup(50)) == (0, "", (10, 0))
    assert len(TimeIndex.empty(10)) == 0


def test_offset_lookup_takes_the_largest_entry_at_or_below():
    idx = offset_index(1000, [(5, 100), (9, 250), (20, 900)])
    assert idx.lookup(1004) == OffsetPosition(1000, 0)
    assert idx.lookup(1005) == (1005, 100)
    assert idx.lookup(1008) == (1005, 100)
    assert idx.lookup(1009) == (1009, 250)
    assert idx.lookup(5000) == (1020, 900)


def test_time_lookup_takes_the_largest_timestamp_at_or_below():
    idx = time_index(1000, [(50, 2), (70, 6)])
    assert idx.lookup(49) == TimestampOffset(-1, 1000)
    assert idx.lookup(50) == (50, 1002)
    assert idx.lookup(69) == (50, 1002)
    assert idx.lookup(10 ** 12) == (70, 1006)


def test_offset_index_sanity_check():
    offset_index(7, []).sanity_check()
    offset_index(7, [(0, 0)]).sanity_check()
    offset_index(7, [(1, 10), (2, 20)]).sanity_check()
    with pytest.raises(CorruptIndexError, match=r"^Corrupt index found, index file \(x.index\) has non-zero size "
                                                r"but the last offset is 4 which is less than the base offset 7\."):
        offset_index(7, [(1, 0), (-3, 5)], "x.index").sanity_check()
    with pytest.raises(CorruptIndexError, match="^offset index entry 2 does not increase the offset"):
        offset_index(7, [(1, 10), (2, 20), (2, 30)]).sanity_check()
    with pytest.raises(CorruptIndexError, match="^offset index entry 1 does not increase the position"):
        offset_index(7, [(1, 10), (2, 10), (3, 30)]).sanity_check()


def test_time_index_sanity_check():
    time_index(7, []).sanity_check()
    time_index(7, [(5, 0)]).sanity_check()
    time_index(7, [(5, 1), (6, 1)]).sanity_check()   # a later timestamp at the same offset
    with pytest.raises(CorruptIndexError, match=r"^Corrupt time index found, time index file \(t\) has non-zero "
                                                r"size but the last offset is 6 which is less than the base "
                                                r"offset 7\."):
        time_index(7, [(5, -1)], "t").sanity_check()
    for entries in ([(5, 1), (5, 2)], [(5, 2), (6, 1)]):
        with pytest.raises(CorruptIndexError, match="^time index entries are not increasing"):
            time_index(7, entries).sanity_check()


def test_builder_adds_entries_after_more_than_the_interval():
    b = IndexBuilder(100, index_interval_bytes=10)
    b.append(0, 10, 101, 5, 100)
    b.append(10, 10, 103, 4, 102)       # 10 bytes since the last entry: not more than the interval
    assert b.offset_entries == [] and b.time_entries == []
    b.append(20, 1, 104, 9, 104)        # 20 bytes: an entry at this append's position
    b.append(21, 30, 106, 9, 105)
    b.append(51, 5, 107, 8, 107)        # no time entry: the max timestamp did not grow
    assert b.offset_entries == [(104, 20), (107, 51)] and b.time_entries == [(9, 104)]
    assert (b.bytes_since_last_entry, b.max_timestamp_so_far, b.shallow_offset_of_max) == (5, 9, 104)
    b.finish()                          # nothing newer than the last time entry
    assert b.time_entries == [(9, 104)]
    assert b.offset_index_bytes() == struct.pack(">iiii", 4, 20, 7, 51)
    assert b.time_index_bytes() == struct.pack(">qi", 9, 4)
    b.append(56, 20, 108, 12, 108)
    b.finish()
    assert b.time_entries == [(9, 104), (12, 108)]


def test_builder_skips_an_offset_entry_that_would_not_grow():
    b = IndexBuilder(0, index_interval_bytes=0)
    b.extend([(0, 1, 5, 1, 5), (1, 1, 5, 1, 5), (2, 1, 5, 2, 5)])
    assert b.offset_entries == [(5, 1)] and b.time_entries == [(1, 5), (2, 5)]
    assert np.frombuffer(b.offset_index_bytes(), ">i4").tolist() == [5, 1]


def test_builder_keeps_its_state_when_an_offset_does_not_fit():
    b = IndexBuilder(0, index_interval_bytes=100)
    with pytest.raises(CorruptDataError, match=f"^offset {2 ** 31} cannot be stored relative to base offset 0"):
        b.extend([(0, 7, 1, 3, 1), (7, 3, 2 ** 31, 4, 2 ** 31)])
    assert (b.bytes_since_last_entry, b.max_timestamp_so_far, b.shallow_offset_of_max) == (7, 3, 1)
    b.extend([(7, 3, 2 ** 31 - 1, 2, 9)])
    assert b.bytes_since_last_entry == 10


def test_a_fresh_builder_has_kafkas_unknown_state():
    """``LogSegment``'s ``TimestampOffset.UNKNOWN``: no timestamp (-1) at offset -1, Kafka's default
    ``index.interval.bytes`` of 4096, nothing appended; finished as it is, it has no entries to write."""
    b = IndexBuilder(7)
    b.finish()
    assert NO_TIMESTAMP == -1
    assert (b.index_interval_bytes, b.bytes_since_last_entry, b.max_timestamp_so_far, b.shallow_offset_of_max,
            b.offset_entries, b.time_entries) == (4096, 0, -1, -1, [], [])
    assert b.offset_index_bytes() == b.time_index_bytes() == b""


def test_default_interval_is_more_than_4096_bytes():
    """An entry comes with the first append after more than 4096 bytes (``bytesSinceLastIndexEntry >
    indexIntervalBytes``): 4096 bytes are not enough, 4097 are."""
    b = IndexBuilder(0)
    b.append(0, 4096, 0, 10, 0)
    b.append(4096, 1, 1, 11, 1)         # 4096 bytes before it: no entry
    assert b.offset_entries == [] and b.time_entries == []
    b.append(4097, 1, 2, 12, 2)         # 4097 bytes before it
    assert b.offset_entries == [(2, 4097)] and b.time_entries == [(12, 2)]


def _batch_of_size(size, offset, timestamp):
    """A v2 batch of one record, exactly ``size`` bytes long (its value's length grows by one at a time)."""
    n = size - 80
    while True:
        b = kcodec.RecordBatchBuilder(magic=2, base_offset=offset)
        b.append(timestamp=timestamp, key=None, value=b"v" * n)
        out = bytes(b.build())
        if len(out) >= size:
            assert len(out) == size
            return out
        n += 1


def test_build_indexes_default_interval():
    """``build_indexes`` without an interval uses Kafka's 4096 bytes: after a 4096-byte batch the next gets
    no entry; after a 4097-byte one it does."""
    for first, entries in ((4096, b""), (4097, struct.pack(">ii", 1, 4097))):
        log = _batch_of_size(first, 100, 1000) + _batch_of_size(200, 101, 2000)
        index, tindex = build_indexes(log, 100)
        assert index == entries, first
        assert tindex == struct.pack(">qi", 2000, 1), first


def test_builder_refuses_an_offset_below_its_base():
    b = IndexBuilder(100, 0)
    with pytest.raises(CorruptDataError, match="^offset 99 cannot be stored relative to base offset 100$"):
        b.append(0, 10, 99, 5, 99)
    with pytest.raises(CorruptDataError, match=f"^offset {100 + 2 ** 31} cannot be stored relative to base offset "
                                               "100$"):
        b.append(0, 10, 100 + 2 ** 31, 5, 100)
    assert (b.offset_entries, b.time_entries, b.bytes_since_last_entry) == ([], [], 0)
    b.extend([(0, 10, 100, 5, 100), (10, 10, 100 + 2 ** 31 - 1, 6, 100 + 2 ** 31 - 1)])
    assert b.offset_entries == [(100 + 2 ** 31 - 1, 10)]


def test_builder_entries_grow_from_the_last_entry_not_the_first():
    """An offset entry only for an offset above the last entry's, a time entry only for a timestamp above
    the last entry's, and ``finish`` compares with the last time entry too."""
    b = IndexBuilder(0, 0)
    b.extend([(0, 1, 5, 1, 5), (1, 1, 5, 1, 5), (2, 1, 10, 3, 10), (3, 1, 8, 3, 8), (4, 1, 12, 3, 12)])
    assert b.offset_entries == [(5, 1), (10, 2), (12, 4)]
    assert b.time_entries == [(1, 5), (3, 10)]
    b.finish()
    assert b.time_entries == [(1, 5), (3, 10)]


def test_two_entry_indexes_are_checked():
    with pytest.raises(CorruptIndexError, match=r"^offset index entry 1 does not increase the offset \(in 00.index\)$"):
        offset_index(7, [(2, 10), (2, 20)]).sanity_check()
    with pytest.raises(CorruptIndexError,
                       match=r"^offset index entry 1 does not increase the position \(in 00.index\)$"):
        offset_index(7, [(1, 10), (2, 10)]).sanity_check()
    with pytest.raises(CorruptIndexError, match=r"^offset index entry 0 has the negative position -1 \(in 00.index\)$"):
        offset_index(7, [(1, -1), (2, 10)]).sanity_check()
    offset_index(7, [(1, 0), (2, 99)]).sanity_check(log_size=100)
    with pytest.raises(CorruptIndexError, match="^offset index entry 1 has position 100, past the end of the "
                                                r"100-byte log \(in 00.index\)$"):
        offset_index(7, [(1, 0), (2, 100)]).sanity_check(log_size=100)


def test_a_last_offset_one_below_the_base_is_corrupt():
    with pytest.raises(CorruptIndexError, match=r"^Corrupt index found, index file \(00.index\) has non-zero size "
                                                r"but the last offset is 6 which is less than the base offset 7\."):
        offset_index(7, [(-1, 0)]).sanity_check()
    with pytest.raises(CorruptIndexError, match=r"^Corrupt time index found, time index file \(00.timeindex\) has "
                                                r"non-zero size but the last offset is 6 which is less than the base "
                                                r"offset 7\."):
        time_index(7, [(5, -1)]).sanity_check()


def test_sanity_checks_name_the_entry_at_fault():
    """Positions need only increase (by one byte is enough); the entry named is the first that does not;
    a time index's last entry is the one held against the base."""
    offset_index(7, [(1, 0), (2, 1)]).sanity_check()
    with pytest.raises(CorruptIndexError, match="^offset index entry 2 does not increase the position "):
        offset_index(7, [(1, 10), (2, 11), (3, 11)]).sanity_check()
    with pytest.raises(CorruptIndexError, match="^offset index entry 2 does not increase the offset "):
        offset_index(7, [(1, 10), (2, 11), (2, 12)]).sanity_check()
    with pytest.raises(CorruptIndexError, match=r"^Corrupt time index found, time index file \(00.timeindex\) has "
                                                r"non-zero size but the last offset is 6 which is less than the base "
                                                r"offset 7\."):
        time_index(7, [(5, 1), (6, -1)]).sanity_check()


def _kafka_indexes(batches, interval):
    """``LogSegment.append``'s rule over the Java client's reading of each entry."""
    offsets, times, since, max_ts, shallow = [], [], 0, -1, -1
    for b in batches:
        if b["maxTimestamp"] > max_ts:
            max_ts, shallow = b["maxTimestamp"], b["lastOffset"]
        if since > interval:
            offsets.append((b["lastOffset"], b["position"]))
            if max_ts > (times[-1][0] if times else -1):
                times.append((max_ts, shallow))
            since = 0
        since += b["sizeInBytes"]
    if max_ts > (times[-1][0] if times else -1):
        times.append((max_ts, shallow))
    return (b"".join(struct.pack(">ii", o, p) for o, p in offsets),
            b"".join(struct.pack(">qi", t, o) for t, o in times))


@pytest.mark.parametrize("name", ["segment_mixed", "v0_none_json100", "v1_none_json100", "v1_gzip_ts_unordered"])
def test_indexes_of_every_magic_from_javas_reading(name):
    """Each entry's last offset and max timestamp as the Java client reads them (v0: -1; v1: the message's or
    wrapper's), and the indexes Kafka's rule builds from them."""
    data, doc, _ = load_case(name)
    entries = list(iter_entries(data))
    assert [(e.position, e.magic) for e in entries] == [(b["position"], b["magic"]) for b in doc["batches"]]
    assert [batch_index_info(data, e) for e in entries] == [(b["lastOffset"], b["maxTimestamp"])
                                                             for b in doc["batches"]]
    for interval in (0, 300, 4096):
        assert build_indexes(data, 0, interval) == _kafka_indexes(doc["batches"], interval), interval
