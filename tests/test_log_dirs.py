"""Whole broker log directories for recompress, compact and retain; what a new user tries first."""
import json
import os

import pytest

from builders import T0, batch, dir_batches, dir_records, kv, make_log
from kcodec.cli import main
from kcodec.compression import CompressionType
from kcodec.log import find_partitions, open_log_dir, partition_path
from kcodec.log.cleaner import PartialTailError
from kcodec.log.recompression import recompress


def broker_dir(root):
    """A log directory with two topics, two partitions each, two segments per partition."""
    for topic in ("orders", "clicks"):
        for p in range(2):
            d = partition_path(str(root), topic, p)
            make_log(d, [[batch(0, [kv(b"k%d" % i, b"x" * 200) for i in range(20)])],
                         [batch(20, [kv(b"k%d" % i, b"y" * 200) for i in range(20)])]])
    (root / "cleaner-offset-checkpoint").write_text("0\n0\n")
    (root / "orders-0.9a8b7c-delete").mkdir()
    return root


def codecs_of(path):
    return {CompressionType.of(b.compression) for b in dir_batches(path)}


def test_recompress_whole_log_dir_and_topic_regex(tmp_path, capsys):
    root = broker_dir(tmp_path / "data")
    before = {p: dir_records(str(root / p)) for p in ("orders-0", "orders-1", "clicks-0", "clicks-1")}
    assert main(["recompress", str(root), "--codec", "zstd", "--topic", "ord.*"]) == 0
    out = capsys.readouterr().out
    assert out.count("2 segments, 40 records") == 2 and "total: 2 partitions" in out
    assert codecs_of(str(root / "orders-0")) == {CompressionType.ZSTD}
    assert codecs_of(str(root / "clicks-1")) == {CompressionType.NONE}
    # the regex must match the whole topic name
    assert main(["recompress", str(root), "--codec", "lz4", "--topic", "click"]) == 1
    assert "no Kafka segments of a topic matching 'click'" in capsys.readouterr().err
    assert main(["recompress", str(root), "--codec", "lz4"]) == 0
    for p, recs in before.items():
        assert codecs_of(str(root / p)) == {CompressionType.LZ4}
        assert dir_records(str(root / p)) == recs


def test_compact_and_retain_whole_log_dir(tmp_path, capsys):
    root = broker_dir(tmp_path / "data")
    assert main(["compact", str(root), "--force", "--now-ms", str(T0 + 10_000)]) == 0
    out = capsys.readouterr().out
    assert out.count("cleaned") == 4
    assert main(["retain", str(root), "--topic", "clicks", "--retention-bytes", "0", "--now-ms",
                 str(T0)]) == 0
    out = capsys.readouterr().out
    assert out.count("deleted 1 segments") == 2 and "orders" not in out


@pytest.mark.parametrize("command", [["recompress", "--codec", "zstd"], ["compact"], ["retain"]])
def test_path_without_segments_is_an_error_naming_it(tmp_path, capsys, command):
    empty = tmp_path / "not-kafka"
    empty.mkdir()
    (empty / "notes.txt").write_text("hello")
    (empty / "sub-dir").mkdir()
    assert main([command[0], str(empty)] + command[1:]) == 1
    err = capsys.readouterr().err
    assert f"no Kafka segments under {empty}" in err and "Traceback" not in err
    a_file = empty / "notes.txt"
    assert main([command[0], str(a_file)] + command[1:]) == 1
    assert str(a_file) in capsys.readouterr().err


def test_partial_tail_is_refused_and_named(tmp_path, capsys):
    d = make_log(tmp_path / "t-0", [[batch(0, [kv(b"a"), kv(b"b")]), batch(2, [kv(b"c")])],
                                    [batch(10, [kv(b"a")])]])
    log = os.path.join(d, "00000000000000000000.log")
    whole = open(log, "rb").read()
    with open(log, "ab") as f:
        f.write(batch(3, [kv(b"d")])[:30])
    with pytest.raises(PartialTailError) as e:
        recompress(d, "zstd")
    assert e.value.position == len(whole) and e.value.source == log
    assert open(log, "rb").read()[:len(whole)] == whole and os.path.getsize(log) == len(whole) + 30
    for cmd in (["recompress", d, "--codec", "zstd"], ["compact", d, "--force"]):
        assert main(cmd) == 1
        err = capsys.readouterr().err
        assert "30 bytes that are not a complete batch" in err and log in err and f"at byte {len(whole)}" in err
    assert os.path.getsize(log) == len(whole) + 30 and not [n for n in os.listdir(d) if ".cleaned" in n]


def test_dump_any_log_name_and_recompress_errors_name_the_file(tmp_path, capsys):
    f = tmp_path / "segment.log"
    f.write_bytes(batch(5, [kv(b"a"), kv(b"b")]))
    assert main(["dump", str(f), "--json"]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["baseOffset"] for r in rows] == [5]
    assert main(["dump", str(f)]) == 0
    out = capsys.readouterr().out
    assert "Log starting offset" not in out and "baseOffset: 5" in out
    bad = str(tmp_path / "t-0")
    os.makedirs(bad)
    with open(os.path.join(bad, "00000000000000000000.log"), "wb") as out:
        out.write(b"\x00" * 8 + b"\x00\x00\x00\x02" + b"\x00" * 10)
    assert main(["recompress", bad, "--codec", "zstd"]) == 1
    err = capsys.readouterr().err
    assert os.path.join(bad, "00000000000000000000.log") in err


def test_find_partitions_layouts(tmp_path):
    root = broker_dir(tmp_path / "data")
    assert [(p.topic, p.partition) for p in find_partitions(root)] == \
        [("clicks", 0), ("clicks", 1), ("orders", 0), ("orders", 1)]
    assert list(open_log_dir(root / "orders-1")) == [("orders", 1)]
    assert list(open_log_dir(root, topic="orders")) == [("orders", 0), ("orders", 1)]
    assert open_log_dir(tmp_path) == {}
