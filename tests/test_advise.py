"""``kcodec advise`` end to end on a small generated sample, and its pure parts."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest

from kcodec.advise.grid import Setting, format_size, parse_batch_sizes, parse_codecs, parse_size
from kcodec.advise.report import Result, aggregate, recommend
from kcodec.errors import UnsupportedCodecError
from oracle_util import oracle_available, oracle_verify


def test_grid_parsing():
    assert parse_codecs("none,gzip,zstd:1,3,19,lz4:9") == [
        ("none", None), ("gzip", None), ("zstd", 1), ("zstd", 3), ("zstd", 19), ("lz4", 9)]
    with pytest.raises(UnsupportedCodecError):
        parse_codecs("zstd:23")
    with pytest.raises(UnsupportedCodecError):
        parse_codecs("brotli")
    assert parse_batch_sizes("1m,16k,16384") == [16384, 1048576]
    assert parse_size("10GB") == 10 * 1024 ** 3
    assert format_size(1536) == "1.5KiB"
    assert Setting("zstd", 3, 16384).label == "zstd:3@16KiB"


def _row(codec, level, bb, stored, cs, rs):
    return {"codec": codec, "level": level, "batch_bytes": bb, "records": 10, "payload_bytes": 1_000_000,
            "batches": 1, "stored_bytes": stored, "compress_seconds": cs, "read_seconds": rs}


def test_aggregate_projection_and_rule():
    rows = [_row("none", None, 16384, 1_100_000, 0.001, 0.001), _row("none", None, 16384, 0, 0.0, 0.0),
            _row("zstd", 3, 16384, 300_000, 0.004, 0.002), _row("zstd", 19, 16384, 250_000, 0.5, 0.002),
            _row("lz4", 9, 16384, 500_000, 0.001, 0.001)]
    current = Setting("none", None, 16384)
    res = aggregate(rows, current, current_bytes=11e12)
    by = {r.setting.label: r for r in res}
    assert by["zstd:3@16KiB"].ratio == pytest.approx(1_100_000 / 300_000)
    assert by["zstd:3@16KiB"].projected_bytes == pytest.approx(3e12)
    assert by["zstd:3@16KiB"].saving == pytest.approx(1 - 300_000 / 1_100_000)
    best = recommend(res, min_compress_mbps=50, min_read_mbps=100)
    assert best.setting.label == "zstd:3@16KiB"  # zstd 19 is smaller but compresses at 2 MB/s
    assert recommend(res, min_compress_mbps=1, min_read_mbps=1).setting.label == "zstd:19@16KiB"


def test_sample_is_deterministic():
    from kcodec.advise.sample import generate_sample
    a, b = generate_sample(500, seed=3), generate_sample(500, seed=3)
    assert a.equals(b)
    assert a.num_rows == 500 and a.column("key").null_count > 0


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_advise_end_to_end(tmp_path):
    pytest.importorskip("pyspark")
    out, write = tmp_path / "report", tmp_path / "logs"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run(
        [sys.executable, "-m", "kcodec.cli", "advise", "--records", "4000", "--codecs", "zstd:1,lz4,gzip",
         "--batch-sizes", "16k,64k", "--master", "local[2]", "--out", str(out), "--write", str(write),
         "--min-compress-mbps", "0", "--min-read-mbps", "0"],
        capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = proc.stdout
    assert "setting" in text and "zstd:1@16KiB" in text and "recommended:" in text
    assert "[ 1/" in text  # progress lines
    for name in ("report.png", "report.html", "results.json"):
        assert (out / name).stat().st_size > 0
    doc = json.loads((out / "results.json").read_text())
    labels = {r["setting"] for r in doc["results"]}
    assert {"none@16KiB", "none@64KiB", "zstd:1@64KiB", "lz4@16KiB", "gzip@64KiB"} <= labels
    assert all(r["records"] == 4000 for r in doc["results"])
    logs = sorted(write.glob("advise-sample-*/*.log"))
    assert logs
    if oracle_available():
        total = 0
        for log in logs:
            rc, got = oracle_verify(log.read_bytes())
            assert rc == 0, got
            total += got["recordCount"]
        assert total == 4000


def _advise(args, tmp_path):
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    return subprocess.run([sys.executable, "-m", "kcodec.cli", "advise", "--master", "local[2]",
                           "--codecs", "zstd:1,lz4", "--batch-sizes", "16k", "--out", str(tmp_path / "r"),
                           *args], capture_output=True, text=True, env=env, timeout=600)


@pytest.mark.spark
@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_advise_on_a_log_directory_and_on_parquet(tmp_path):
    pytest.importorskip("pyspark")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kcodec.log import rebuild_indexes, segment_file_name
    from oracle_util import load_case

    data, doc, _ = load_case("segment_v2_txn")
    part = tmp_path / "logs" / "orders-0"
    part.mkdir(parents=True)
    (part / segment_file_name(0)).write_bytes(data)
    rebuild_indexes(part / segment_file_name(0))
    proc = _advise([str(tmp_path / "logs"), "--current-codec", "zstd:3", "--current-size", "1TB"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "kafka-log" in proc.stdout and "zstd:1@16KiB" in proc.stdout
    n_data = sum(len(b["records"]) for b in doc["batches"] if not b["isControlBatch"])
    assert f"{n_data} records" in proc.stdout
    assert "1TiB" in proc.stdout or "1.0TiB" in proc.stdout  # the current setting projects to --current-size
    table = pa.table({"key": [f"k{i % 50}" for i in range(3000)],
                      "value": [f'{{"n": {i}, "text": "hello"}}' for i in range(3000)]})
    pq.write_table(table, tmp_path / "events.parquet")
    proc = _advise([str(tmp_path / "events.parquet")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "parquet" in proc.stdout and "3000 records" in proc.stdout
    bad = _advise([str(tmp_path / "events.parquet"), "--codecs", "zstd:99"], tmp_path)
    assert bad.returncode != 0 and "zstd level 99" in bad.stderr
