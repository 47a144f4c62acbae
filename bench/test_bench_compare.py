"""Smoke tests for the benchmark scripts: tiny workloads, correctness only (run: pytest bench/)."""
from __future__ import annotations

import json
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402
import floors  # noqa: E402
import peerbench  # noqa: E402
import peerbench_adapter  # noqa: E402

import kcodec  # noqa: E402


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_compare_runs_and_reports(codec):
    row = compare.run("w1", codec, 0.002, 1)
    assert row["records"] == 400 and row["from_arrow_batches"] == row["batches"]
    text = compare.report([row]) + compare.targets([row])
    assert "kcodec to_arrow" in text and "Targets" in text


def test_compare_names_the_machine(tmp_path, capsys):
    from kcodec._native.primitives import crc32c_backend

    env = compare.environment(["gzip", "zstd"])
    assert f"CRC-32C {crc32c_backend()}" in env
    assert "gzip: zlib" in env and "zstd: zstandard" in env and "cores" in env
    out = tmp_path / "figures.json"
    assert compare.main(["--workload", "w1", "--codec", "none", "--reps", "1", "--quick",
                         "--peer", "aiokafka", "--json", str(out)]) == 0
    assert capsys.readouterr().out.startswith("machine: ")
    doc = json.loads(out.read_text())
    assert doc["machine"] == compare.environment(["none"]) and doc["rows"][0]["records"] == 20000
    assert doc["views"][0]["records"] == 20000 and set(doc["views"][0]["peak_mb"]) == {"views", "copies"}


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_views_section_runs_and_reports(codec):
    row = compare.views_row("w1", codec, 0.002, 1)
    assert set(row["seconds"]) == {"kcodec to_arrow, views", "kcodec to_arrow", "aiokafka read"}
    assert all(peak >= 0 for peak in row["peak_mb"].values())
    text = compare.views_report([row])
    assert "views/copies" in text and ("target w1 none" in text) == (codec == "none")


@pytest.mark.parametrize("adapter", [peerbench_adapter.KcodecAdapter, peerbench_adapter.KcodecArrowAdapter])
@pytest.mark.parametrize("codec", ["none", "lz4"])
def test_peerbench_adapters_build_and_read(adapter, codec):
    ad = adapter()
    batches = [[(1_700_000_000_000 + i, None if i % 3 == 0 else b"k%d" % i, b"v" * i,
                 [("h", b"x")] if i % 2 else []) for i in range(b * 5, b * 5 + 5)] for b in range(3)]
    built = ad.build(batches, codec, 1 << 20)
    assert len(built) == 3
    for blob, recs in zip(built, batches):
        (batch,) = kcodec.read_batches(bytes(blob))
        assert batch.is_valid() and batch.base_offset == 0
        assert [(r.timestamp, r.key, r.value, list(r.headers)) for r in batch] == [
            (ts, k, v, h) for ts, k, v, h in recs]
    n, nbytes = ad.read([bytes(b) for b in built])
    assert n == 15
    assert nbytes == sum(len(k or b"") + len(v) for recs in batches for _, k, v, _ in recs)


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_floors_kafka_frame_calls_round_trip_kcodec_batches(codec):
    # The library calls floors.py times on Kafka's frames must decode kcodec's own batches
    # back to their records regions, and their compressors must be decodable by kcodec.
    keys, values, headers, limit = compare.make_workload("w2", 0.02)
    ranges = compare.cut_batches(keys, values, headers, limit)
    records = compare.batch_records(keys, values, headers, ranges)
    batches = compare.kc_build_batches(codec, records)
    regions = [b[61:] for b in compare.kc_build_batches("none", records)]
    comp, dec = floors._kafka_frames(codec, regions, [b[61:] for b in batches])
    assert b"".join(bytes(x) for x in dec()) == b"".join(regions)
    assert comp()


def test_floors_verdicts():
    assert floors.verdict([("a", 1.0), ("b", 3.0)], 2.0) == "no"
    assert floors.verdict([("a", 1.5), ("b", 1.0)], 2.0) == "unlikely"
    assert floors.verdict([("a", 0.5), ("b", 1.0)], 2.0) == "open"


def _row(impl, codec, op, rate, workload="w3"):
    return {"impl": impl, "workload": workload, "codec": codec, "op": op, "records": 1000, "records_per_s": rate}


def test_peerbench_table_ratios(tmp_path, capsys):
    kc = peerbench.KCODEC_IMPL
    results = {"machine": {"date": "d", "cpu_model": "cpu", "cpus": "2", "loadavg_at_start": "0.1"},
               "rows": [_row("memcpy", "none", "build", 4000), _row("codec-raw", "lz4", "build", 4000),
                        _row("java", "lz4", "build", 1000), _row(kc, "lz4", "build", 1500),
                        _row("java", "none", "build", 2000), _row(kc, "none", "build", 1000)]}
    cells = {(c["codec"], c["op"]): c for c in peerbench.cells(results)}
    assert cells["lz4", "build"]["vs_java"] == 1.5
    assert cells["lz4", "build"]["vs_floor"] == 1500 / 2000  # floor: memcpy's time plus codec-raw's
    assert cells["none", "build"]["vs_java"] == 0.5 and cells["none", "build"]["vs_floor"] == 0.25
    text = peerbench.table(results, before=results)
    # bold: behind Java, or below 1/1.2 of the floor; the earlier run's columns beside
    assert "| w3 | none | build | 2 k | 1 k | **0.50** | **0.25** | - | - | 1 k | **0.50** | **0.25** |" in text
    assert "| w3 | lz4 | build | 1 k | 2 k | 1.50 | **0.75** | - | - |" in text
    assert "cells behind Java: 1 of 2: w3 none build" in text
    assert "cells below 1/1.2 of the floor: 2 of 2: w3 none build, w3 lz4 build" in text
    # Reads: the CPython floor (plus codec-raw's time for a codec) against Java's rate.
    floor = peerbench.CPYTHON_FLOOR
    results["rows"] += [_row(floor, "none", "read", 3200), _row("codec-raw", "lz4", "read", 6000),
                        _row("java", "none", "read", 4000), _row(kc, "none", "read", 2500),
                        _row("java", "lz4", "read", 1500), _row(kc, "lz4", "read", 1400),
                        _row("memcpy", "none", "read", 9000)]
    cells = {(c["codec"], c["op"]): c for c in peerbench.cells(results)}
    assert cells["none", "read"]["cpython_floor"] == 3200 and cells["none", "read"]["cpython_bound"]
    assert cells["lz4", "read"]["cpython_floor"] == 1000 / (1000 / 3200 + 1000 / 6000)
    assert not cells["lz4", "read"]["cpython_bound"]  # Java's 1.5 k is below the 2 k floor
    text = peerbench.table(results)
    assert "| w3 | none | read | 4 k | 2 k | **0.62** | **0.28** | 3 k CPython | **0.78** |" in text
    assert ("of these, Java is faster than CPython's own loop over the same records (handing out the bytes, or "
            "one call per record, plus codec-raw): w3 none read") in text
    # Builds: the CPython floor's one call per record plus memcpy's copy, plus codec-raw's compression
    results["rows"] += [_row(floor, "none", "build", 1400)]
    cells = {(c["codec"], c["op"]): c for c in peerbench.cells(results)}
    assert cells["none", "build"]["cpython_floor"] == pytest.approx(1000 / (1000 / 1400 + 1000 / 4000))
    assert cells["none", "build"]["cpython_bound"]  # Java's 2 k is above it
    assert cells["lz4", "build"]["cpython_floor"] == pytest.approx(1000 / (1000 / 1400 + 2 * 1000 / 4000))
    assert cells["lz4", "build"]["vs_cpython"] == 1500 / cells["lz4", "build"]["cpython_floor"]
    text = peerbench.table(results)
    assert "| w3 | none | build | 2 k | 1 k | **0.50** | **0.25** | 1 k CPython | 0.96 |" in text
    assert "of these, within 1.2x of CPython's own loop: w3 none build, w3 lz4 build" in text
    path = tmp_path / "r.json"
    path.write_text(json.dumps(results))
    assert peerbench.main(["--results", str(path)]) == 0
    assert "kcodec ÷ Java" in capsys.readouterr().out
    assert peerbench.main(["--results", str(tmp_path / "missing.json")]) == 2


def test_the_cpython_floor_reads_every_key_and_value():
    class Workload:
        batches = [[(1, None if i % 3 == 0 else b"k%d" % i, b"v" * i, []) for i in range(b * 5, b * 5 + 5)]
                   for b in range(3)]
    floor = peerbench_adapter.CPythonFloor()
    floor.setup(Workload, "none")
    assert floor.read([]) == (15, sum(len(k or b"") + len(v) for recs in Workload.batches for _, k, v, _ in recs))
    nulls = type("W", (), {"batches": [[(1, None, b"abc", [])] * 4]})
    floor.setup(nulls, "none")
    assert floor.read([]) == (4, 12)
    assert len(floor.build(Workload.batches, "none", 1 << 20)) == 3
