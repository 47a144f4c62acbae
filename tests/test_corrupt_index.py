"""A corrupt ``.index`` is not used: every reader scans the segment from its start and warns.

Kafka treats an index failing ``OffsetIndex.sanityCheck`` as corrupt and
rebuilds it (``LogLoader.loadSegmentFiles``); an entry pointing before the
file or past its end is as corrupt, since ``LogSegment.read`` would seek
outside the ``.log``.
"""
import struct
import warnings

import pytest

import kcodec
from kcodec.errors import CorruptIndexWarning
from kcodec.log import LogSegment, LogWriter, open_partition
from kcodec.log.index import CorruptIndexError

N = 5


@pytest.fixture()
def folder(tmp_path):
    """A segment holding offsets 0-4, one batch each, indexed at every batch."""
    part = tmp_path / "t-0"
    with LogWriter(part, index_interval_bytes=0) as w:
        for i in range(N):
            b = kcodec.RecordBatchBuilder(magic=2, base_offset=i)
            b.append(timestamp=1000 + i, key=b"k", value=b"v%d" % i)
            w.append(bytes(b.build()))
    return part


def _index(folder, entries):
    (folder / "00000000000000000000.index").write_bytes(b"".join(struct.pack(">ii", *e) for e in entries))


def _size(folder):
    return (folder / "00000000000000000000.log").stat().st_size


BAD = {
    "negative position": lambda size: [(1, -70), (2, 140)],
    "position past the end": lambda size: [(1, size + 10)],
    "position at the end": lambda size: [(3, size)],
    "last offset below the base": lambda size: [(-3, 70)],
    "offsets not increasing": lambda size: [(3, 70), (1, 140)],
    "positions not increasing": lambda size: [(1, 140), (3, 70)],
}


def _seg(folder):
    return LogSegment(folder / "00000000000000000000.log")


@pytest.mark.parametrize("damage", sorted(BAD))
def test_every_reader_scans_from_the_start(folder, damage):
    _index(folder, BAD[damage](_size(folder)))
    with pytest.raises(CorruptIndexError):
        _seg(folder).sanity_check()
    with pytest.warns(CorruptIndexWarning, match="reading the segment from its start"):
        assert _seg(folder).start_position(3) == 0
    with pytest.warns(CorruptIndexWarning):
        assert [b.base_offset for b in _seg(folder).batches(1)] == [1, 2, 3, 4]
    with pytest.warns(CorruptIndexWarning):
        assert [b.base_offset for b in open_partition(folder).batches(2)] == [2, 3, 4]
    with pytest.warns(CorruptIndexWarning):
        table = kcodec.read_arrow(folder, start_offset=2).read_all()
    assert table["offset"].to_pylist() == [2, 3, 4]
    with pytest.warns(CorruptIndexWarning):
        assert kcodec.read_arrow(folder, chunk_bytes=10).read_all()["offset"].to_pylist() == list(range(N))


@pytest.mark.parametrize("damage", sorted(BAD))
def test_the_data_source_plans_splits_as_without_the_index(folder, damage):
    pytest.importorskip("pyspark")
    from kcodec.spark.datasource import _task_cuts

    _index(folder, BAD[damage](_size(folder)))
    with pytest.warns(CorruptIndexWarning):
        cuts = _task_cuts(_seg(folder), 0, _size(folder), 64, 64)
    (folder / "00000000000000000000.index").unlink()
    assert cuts == _task_cuts(_seg(folder), 0, _size(folder), 64, 64)  # planned as without an index



def test_a_sound_index_is_used_without_a_word(folder):
    seg = _seg(folder)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        seg.sanity_check()
        position = seg.start_position(3)
        assert position > 0
        assert [b.base_offset for b in seg.batches(3)] == [3, 4]


def test_the_dump_tool_refuses_the_index(folder, capsys):
    from kcodec.cli import main

    _index(folder, [(1, -70)])
    assert main(["dump", str(folder / "00000000000000000000.index"), "--index-sanity-check"]) != 0
    assert "negative position -70" in capsys.readouterr().err


def test_an_entry_past_its_batch_is_not_trusted(folder):
    """Entry (1, start of the batch of offset 3) is sane by Kafka's checks, but a read from offset 2
    through it would skip offset 2: the batch there ends after the entry's offset."""
    from kcodec.records.framing import iter_entries

    starts = [e.position for e in iter_entries((folder / "00000000000000000000.log").read_bytes())]
    _index(folder, [(1, starts[3])])
    with _seg(folder) as seg:
        seg.offset_index.sanity_check(_size(folder))
    with pytest.warns(CorruptIndexWarning, match="does not point at a batch ending by offset 1"), _seg(folder) as seg:
        assert [b.base_offset for b in seg.batches(2)] == [2, 3, 4]
    with pytest.warns(CorruptIndexWarning):
        assert kcodec.read_arrow(folder, start_offset=2).read_all()["offset"].to_pylist() == [2, 3, 4]
    _index(folder, [(3, starts[3])])  # an honest entry
    with warnings.catch_warnings(), _seg(folder) as seg:
        warnings.simplefilter("error")
        assert [b.base_offset for b in seg.batches(3)] == [3, 4]
        assert seg.start_position(4) == starts[3]
