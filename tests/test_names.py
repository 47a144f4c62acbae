"""Names from data never choose where kcodec writes: Kafka's naming rules, safe joins, escaping.

Every writer is tried with hostile names; the whole temporary tree is listed
before and after to show that nothing was created, changed or followed.
"""
from __future__ import annotations

import json
import os
import pickle
import re
import warnings

import pytest

import kcodec
from kcodec.errors import InvalidNameError, InvalidNameWarning, KcodecError
from kcodec.escape import chart_text, csv_cell, file_name, html_text, json_text, terminal_text
from kcodec.log import LogWriter, open_log_dir, open_partition, write_partition
from kcodec.log.cleaner import FileOps, compact, list_segments
from kcodec.log.names import (
    check_partition,
    check_topic,
    parse_partition_dir_name,
    partition_dir_name,
    safe_join,
    segment_file_name,
)
from kcodec.log.recompression import recompress
from kcodec.log.retention import retain

HOSTILE_TOPICS = ["..", ".", "../x", "../../escaped", "a/b", "a\\b", "", "x" * 250, "a\x00b", "café",
                  "bad topic", "\x1b[2Jt", None]
HOSTILE_PARTITIONS = [-1, 2 ** 31, True, 1.5, "1", None]
HOSTILE_FOLDERS = ["bad topic-0", "t-01", "..-0", "a\\b-0", "caf\u00e9-0", "x" * 250 + "-0", "t-2147483648",
                   "\x1b[31mred-0", "noname"]


def tree(root) -> list:
    """Everything under ``root``: path, kind, and size or link target (symlinks are not followed)."""
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        for name in sorted(dirnames + filenames):
            p = os.path.join(dirpath, name)
            st = os.lstat(p)
            if os.path.islink(p):
                out.append((os.path.relpath(p, root), "link", os.readlink(p)))
            elif os.path.isdir(p):
                out.append((os.path.relpath(p, root), "dir", None))
            else:
                with open(p, "rb") as f:
                    out.append((os.path.relpath(p, root), "file", st.st_size, f.read()))
    return sorted(out, key=lambda e: e[0])


def batch(offset, n=3, key=b"k", headers=()):
    b = kcodec.RecordBatchBuilder(magic=2, compression="none", base_offset=offset)
    for i in range(n):
        b.append(key + str(i).encode(), b"value-%d" % i, timestamp=1_700_000_000_000 + i, headers=headers)
    return bytes(b.build())


@pytest.fixture
def root(tmp_path):
    """A temporary root holding a target ``out`` and, beside it, ``elsewhere`` with a file to guard."""
    (tmp_path / "out").mkdir()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_bytes(b"untouched")
    return tmp_path


# --------------------------------------------------------------------------------------------
# the rules

def test_topic_rules_match_kafka():
    for good in ["a", "orders", "my.topic_v2-x", "__consumer_offsets", "-", "...", ".a", "x" * 249]:
        assert check_topic(good) == good
    for bad in HOSTILE_TOPICS + [123, "t\n", "t\u202e", "ｔ"]:
        with pytest.raises(InvalidNameError) as info:
            check_topic(bad, source="row 7")
        assert isinstance(info.value, ValueError) and isinstance(info.value, KcodecError)
        assert "row 7" in str(info.value) and info.value.value == bad
        # the message quotes the value escaped: nothing in it can drive a terminal
        assert terminal_text(str(info.value)) == str(info.value)


def test_partition_rules():
    import numpy as np

    assert check_partition(0) == 0 and check_partition(2 ** 31 - 1) == 2 ** 31 - 1
    assert check_partition(np.int64(5)) == 5
    for bad in HOSTILE_PARTITIONS:
        with pytest.raises(InvalidNameError, match="invalid Kafka partition"):
            check_partition(bad)


def test_partition_folder_names():
    assert partition_dir_name("orders", 3) == "orders-3"
    assert parse_partition_dir_name("my-topic-12") == ("my-topic", 12)  # after the last '-'
    assert parse_partition_dir_name("t--1") == ("t-", 1)
    assert parse_partition_dir_name("__cluster_metadata-0") == ("__cluster_metadata", 0)
    for bad in ["orders", "orders-", "-0", "t-01", "t-+1", "t-1_0", "t-\u0661", "t-2147483648", "..-0",
                "bad topic-0", "t-0.abc-delete", "caf\u00e9-0"]:
        with pytest.raises(InvalidNameError, match="not a partition folder name"):
            parse_partition_dir_name(bad)
    with pytest.raises(InvalidNameError):
        partition_dir_name("../x", 0)
    with pytest.raises(InvalidNameError):
        partition_dir_name("t", -1)
    with pytest.raises(InvalidNameError):
        segment_file_name(-1)
    with pytest.raises(InvalidNameError):
        segment_file_name(2 ** 63)


def test_invalid_name_error_survives_pickling():
    with pytest.raises(InvalidNameError) as info:
        check_topic("../x", source="row 3")
    back = pickle.loads(pickle.dumps(info.value))
    assert type(back) is InvalidNameError and back.value == "../x" and str(back) == str(info.value)


def test_safe_join_on_paths_and_urls(root):
    out = root / "out"
    assert safe_join(out, "orders-0") == out / "orders-0"
    assert safe_join(str(out), "orders-0", "x.log") == os.path.join(str(out), "orders-0", "x.log")
    assert safe_join("s3://bucket/logs/", "orders-0", "00.log") == "s3://bucket/logs/orders-0/00.log"
    assert safe_join("s3://bucket", "orders-0") == "s3://bucket/orders-0"
    for bad in ["..", ".", "", "a/b", "a\\b", "a\x00b", "../x"]:
        with pytest.raises(InvalidNameError):
            safe_join(out, bad)
        with pytest.raises(InvalidNameError):
            safe_join("s3://bucket/logs", bad)
    os.symlink(root / "elsewhere", out / "orders-0")
    with pytest.raises(InvalidNameError, match="leads outside"):
        safe_join(out, "orders-0")
    with pytest.raises(InvalidNameError, match="leads outside"):
        safe_join(out, "orders-0", "00.log")
    (out / "real-0").mkdir()
    os.symlink(out / "real-0", out / "alias-0")  # a link that stays inside the target is fine
    assert safe_join(out, "alias-0") == out / "alias-0"


# --------------------------------------------------------------------------------------------
# LogWriter

@pytest.mark.parametrize("topic", HOSTILE_TOPICS, ids=repr)
def test_log_writer_refuses_hostile_topics(root, topic):
    before = tree(root)
    with pytest.raises(InvalidNameError, match="invalid Kafka topic name"):
        LogWriter.in_log_dir(root / "out", topic, 0, source="test row")
    assert tree(root) == before


@pytest.mark.parametrize("partition", HOSTILE_PARTITIONS, ids=repr)
def test_log_writer_refuses_hostile_partitions(root, partition):
    before = tree(root)
    with pytest.raises(InvalidNameError, match="invalid Kafka partition"):
        LogWriter.in_log_dir(root / "out", "orders", partition)
    assert tree(root) == before


def test_log_writer_refuses_a_symlinked_partition_folder(root):
    os.symlink(root / "elsewhere", root / "out" / "orders-0")
    before = tree(root)
    with pytest.raises(InvalidNameError, match="leads outside"):
        LogWriter.in_log_dir(root / "out", "orders", 0)
    assert tree(root) == before


def test_log_writer_writes_valid_names(root):
    with LogWriter.in_log_dir(root / "out", "my-topic", 7) as w:
        w.append(batch(0))
    assert list(open_log_dir(root / "out")) == [("my-topic", 7)]


def test_log_writer_refuses_a_negative_base_offset(root):
    before = tree(root)
    w = LogWriter(root / "out" / "t-0")
    with pytest.raises(InvalidNameError, match="segment base offset"):
        w.append(batch(-5))
    assert tree(root) == before + [("out/t-0", "dir", None)]


def test_log_writer_does_not_write_through_a_planted_link(root):
    """A symlink (or hard link) at the temporary or final name of a segment file is replaced, never
    written through."""
    part = root / "out" / "t-0"
    part.mkdir()
    target = root / "elsewhere" / "keep.txt"
    os.symlink(target, part / f".{segment_file_name(0)}.{os.getpid()}.tmp")
    os.symlink(target, part / segment_file_name(0, ".index"))
    os.link(target, part / segment_file_name(0, ".timeindex"))
    with LogWriter(part) as w:
        w.append(batch(0))
    assert target.read_bytes() == b"untouched"
    assert not any(os.path.islink(part / n) for n in os.listdir(part))
    assert [n for n in os.listdir(part) if n.startswith(".")] == []
    assert list(open_log_dir(root / "out")) == [("t", 0)]


# --------------------------------------------------------------------------------------------
# recompress, compact, retain

def _log_dir(root, name="orders-0"):
    d = root / "out" / name
    write_partition(d, [batch(0), batch(3), batch(6, key=b"k")], segment_bytes=1)
    return d


def _plant_links(d, root):
    """Links to a file outside the target at names the operations write or rename."""
    target = root / "elsewhere" / "keep.txt"
    os.symlink(target, d / (segment_file_name(0, ".log") + ".cleaned"))
    os.unlink(d / segment_file_name(3, ".index"))
    os.symlink(target, d / segment_file_name(3, ".index"))
    os.symlink(target, d.parent / "cleaner-offset-checkpoint.tmp")
    return target


@pytest.mark.parametrize("operation", ["recompress", "compact", "retain"])
def test_log_operations_never_write_through_links(root, operation):
    d = _log_dir(root)
    target = _plant_links(d, root)
    elsewhere = tree(root / "elsewhere")
    if operation == "recompress":
        recompress(str(d), "gzip")
    elif operation == "compact":
        res = compact(str(d), force=True, use_checkpoint=True)
        assert res.cleaned
    else:
        retain(str(d), retention_ms=0, now_ms=2_000_000_000_000)
    assert tree(root / "elsewhere") == elsewhere and target.read_bytes() == b"untouched"
    assert not [n for n in os.listdir(d) if os.path.islink(d / n) and n.endswith(".cleaned")]


def test_file_ops_writer_replaces_a_planted_link(root):
    target = root / "elsewhere" / "keep.txt"
    path = root / "out" / "x.cleaned"
    os.symlink(target, path)
    FileOps(fsync=False).write(str(path), b"new bytes")
    assert target.read_bytes() == b"untouched"
    assert not os.path.islink(path) and path.read_bytes() == b"new bytes"


@pytest.mark.parametrize("folder", HOSTILE_FOLDERS, ids=repr)
def test_compact_checkpoint_refuses_a_hostile_folder_name(root, folder):
    d = _log_dir(root, folder)
    before = tree(root)
    with pytest.raises(InvalidNameError, match="not a partition folder name"):
        compact(str(d), force=True, use_checkpoint=True)
    assert tree(root) == before


def test_recompress_refuses_an_offset_kafka_cannot_name(root):
    d = root / "out" / "t-0"
    d.mkdir()
    (d / ("9" * 20 + ".log")).write_bytes(batch(0))
    before = tree(root)
    with pytest.raises(InvalidNameError, match="segment base offset"):
        recompress(str(d), "gzip")
    assert tree(root) == before
    assert [s.base_offset for s in list_segments(str(d))] == [int("9" * 20)]


# --------------------------------------------------------------------------------------------
# reading a log directory

def test_open_log_dir_reports_and_skips_hostile_folders(root):
    out = root / "out"
    write_partition(out / "orders-0", [batch(0)])
    write_partition(out / "my-topic-1", [batch(0)])
    for name in HOSTILE_FOLDERS:
        write_partition(out / name, [batch(0)])
    (out / "orders-0.0123abcd-delete").mkdir()  # Kafka's own bookkeeping: neither read nor reported
    write_partition(out / "orders-0.0123abcd-delete", [batch(0)])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = open_log_dir(out)
    assert sorted(parts) == [("my-topic", 1), ("orders", 0)]
    assert sorted(os.path.basename(s.path) for s in parts.skipped) == sorted(HOSTILE_FOLDERS)
    assert all("not a partition folder name" in s.reason for s in parts.skipped)
    named = [w for w in caught if issubclass(w.category, InvalidNameWarning)]
    assert len(named) == len(HOSTILE_FOLDERS)
    for w in named:
        assert terminal_text(str(w.message)) == str(w.message)  # no control character from a folder name
    # a hostile partition folder opened directly is reported, not guessed at
    with pytest.warns(InvalidNameWarning):
        alone = open_log_dir(out / "bad topic-0")
    assert dict(alone) == {} and len(alone.skipped) == 1
    with pytest.raises(InvalidNameError):
        open_partition(out / "t-01")


# --------------------------------------------------------------------------------------------
# escaping

def test_escaping_helpers():
    hostile = "<script>alert(1)</script>&\"'\x1b[2J\u202e\x00\n"
    assert "<" not in html_text(hostile) and "&lt;script&gt;" in html_text(hostile)
    shown = terminal_text(hostile)
    assert not any(c in shown for c in "\x1b\u202e\x00\n") and "\\x1b[2J" in shown and "\\u202e" in shown
    assert terminal_text("café-0 ok") == "café-0 ok"
    doc = json_text({"topic": hostile})
    assert json.loads(doc) == {"topic": hostile} and "<" not in doc and doc.isascii()
    assert csv_cell("=HYPERLINK(\"x\")") == "'=HYPERLINK(\"x\")" and csv_cell("@SUM(A1)") == "'@SUM(A1)"
    assert csv_cell("orders") == "orders" and csv_cell(-3) == -3 and csv_cell(None) is None
    # file names: a topic stays itself; anything else is made safe and kept apart from its look-alikes
    assert file_name("orders.v2_x-1") == "orders.v2_x-1"
    names = [file_name(n) for n in (hostile, "<a>", ">a<", "a/b", "a_b", "..", "", "x" * 300)]
    assert len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]{1,200}", n) and n not in (".", "..") for n in names)
    # chart text: no control character reaches matplotlib and `$` does not start math mode
    assert chart_text("a$b$\x1b[31m") == "a\\$b\\$\\x1b[31m" and len(chart_text("y" * 99, 40)) == 40


def test_dump_escapes_keys_values_and_header_keys(tmp_path, capsys):
    from kcodec.cli import main

    d = tmp_path / "t-0"
    evil = b"\x1b]0;owned\x07\x1b[2J"
    b = kcodec.RecordBatchBuilder(magic=2, compression="none", base_offset=0)
    b.append(evil, evil + b"\x9b31m", timestamp=1, headers=[("h\x1b[1m\u202e", evil)])
    write_partition(d, [bytes(b.build())])
    assert main(["dump", "--print-data-log", str(d / segment_file_name(0))]) == 0
    text = capsys.readouterr().out
    assert "\x1b" not in text and "\x07" not in text and "\u202e" not in text and "\x9b" not in text
    assert "\\x1b[2J" in text and "h\\x1b[1m\\u202e" in text
    assert main(["dump", "--json", "--deep-iteration", str(d / segment_file_name(0))]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "\x1b" not in "".join(lines)
    assert json.loads(lines[0])["records"][0]["headerKeys"] == ["h\x1b[1m\u202e"]
