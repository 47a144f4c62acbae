"""The ``kcodec`` command."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from kcodec.cli import main
from kcodec.log import rebuild_indexes, segment_file_name
from oracle_util import load_case


def _segment(tmp_path, case="segment_mixed"):
    data, doc, _ = load_case(case)
    d = tmp_path / "t-0"
    d.mkdir()
    log = d / segment_file_name(0)
    log.write_bytes(data)
    rebuild_indexes(log)
    return log, doc


def test_dump_batches_and_records(tmp_path, capsys):
    log, doc = _segment(tmp_path)
    assert main(["dump", str(log)]) == 0
    out = capsys.readouterr().out
    assert "Log starting offset: 0" in out
    assert out.count("baseOffset:") == doc["batchCount"]
    assert "compresscodec: zstd" in out and "isvalid: true" in out
    assert main(["dump", "--print-data-log", str(log)]) == 0
    out = capsys.readouterr().out
    assert out.count("| offset:") == doc["recordCount"]
    assert "endTxnMarker: COMMIT" in out or "endTxnMarker: ABORT" in out


def test_dump_json_matches_oracle(tmp_path, capsys):
    log, doc = _segment(tmp_path)
    assert main(["dump", "--json", "--deep-iteration", str(log)]) == 0
    rows = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [r["baseOffset"] for r in rows] == [b["baseOffset"] for b in doc["batches"]]
    assert [r["crc"] for r in rows] == [b["checksum"] for b in doc["batches"]]
    assert [[x["offset"] for x in r["records"]] for r in rows] == [
        [x["offset"] for x in b["records"]] for b in doc["batches"]]


def test_dump_indexes(tmp_path, capsys):
    log, _ = _segment(tmp_path, "segment_v2_txn")
    assert main(["dump", str(log.with_suffix(".index"))]) == 0
    assert "offset:" in capsys.readouterr().out
    assert main(["dump", "--index-sanity-check", str(log.with_suffix(".index")),
                 str(log.with_suffix(".timeindex"))]) == 0
    assert capsys.readouterr().out.count("passed sanity check") == 2
    bad = log.with_suffix(".index")
    bad.write_bytes(bad.read_bytes()[:-3])
    assert main(["dump", str(bad)]) == 1
    assert "multiple of 8" in capsys.readouterr().err


def test_dump_corrupt_file_names_file_and_position(tmp_path, capsys):
    log, doc = _segment(tmp_path)
    raw = bytearray(log.read_bytes())
    pos = doc["batches"][10]["position"]
    raw[pos + 25] ^= 0x10
    log.write_bytes(bytes(raw))
    assert main(["dump", str(log)]) == 1
    err = capsys.readouterr().err
    assert "Record is corrupt" in err and str(log) in err
    at = int(err.split("at byte ")[1].split(",")[0].split(")")[0])
    assert pos <= at < pos + doc["batches"][10]["sizeInBytes"]
    assert main(["dump", "--skip-crc", str(log)]) == 0


def test_usage_errors(tmp_path, capsys):
    assert main([]) == 2
    assert main(["dump", str(tmp_path / "missing.log")]) == 1
    with pytest.raises(SystemExit) as info:
        main(["no-such-command"])
    assert info.value.code == 2


def test_console_script_and_codecs_listing():
    proc = subprocess.run([sys.executable, "-m", "kcodec.cli", "codecs", "--json"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    rows = json.loads(proc.stdout)
    assert {r["name"] for r in rows if r["active"]} >= {"none", "gzip", "snappy", "lz4", "zstd"}
