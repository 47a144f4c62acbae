"""Smoke tests for the benchmark scripts: tiny workloads, correctness only (run: pytest bench/)."""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402
import peerbench_adapter  # noqa: E402

import kcodec  # noqa: E402


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_compare_runs_and_reports(codec):
    row = compare.run("w1", codec, 0.002, 1)
    assert row["records"] == 400 and row["from_arrow_batches"] == row["batches"]
    text = compare.report([row]) + compare.targets([row])
    assert "kcodec to_arrow" in text and "Targets" in text


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
