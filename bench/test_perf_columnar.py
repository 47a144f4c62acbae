"""Columnar API benchmarks: to_arrow and from_arrow over compare.py's workloads.

Their groups are the object API's ("w1 none read", "w1 none build"), so when
run with test_perf_records.py the columnar figures sit in the same table as
kcodec's object API and the peers.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402

import kcodec  # noqa: E402

pytestmark = pytest.mark.perf

WORKLOADS = ["w1", "w2", "w3"]


@pytest.mark.parametrize("codec", compare.CODECS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_to_arrow(benchmark, workloads, workload, codec):
    wl = workloads.timed(benchmark, workload, codec, "read", "kcodec.to_arrow")
    blob, expected = wl.blob(codec), wl.table()
    # one thread: the process-time timer would add up the threads' CPU time
    table = benchmark(kcodec.to_arrow, blob, use_threads=False)
    assert table.num_rows == wl.n
    for column in ("key", "value", "headers"):
        assert table.column(column).equals(expected.column(column)), column


@pytest.mark.parametrize("codec", compare.CODECS)
@pytest.mark.parametrize("workload", WORKLOADS)
def test_from_arrow(benchmark, workloads, workload, codec):
    wl = workloads.timed(benchmark, workload, codec, "build", "kcodec.from_arrow")
    table, reference = wl.table(), wl.batches(codec)
    # As compare.run: with the estimate at 1/1.05 compressed batches are cut
    # where the uncompressed ones are, so the result can equal the builder's.
    ratio = 1.0 if codec == "none" else 1 / 1.05
    out = benchmark(kcodec.from_arrow, table, compression=codec, max_batch_bytes=wl.limit,
                    estimated_compression_ratio=ratio)
    assert len(out) == len(reference)
    for data, ref, r in zip(out, reference, wl.ranges):
        # from_arrow numbers offsets across the table, the builder from 0 in every
        # batch; the base offset is outside the CRC, so the rest must match exactly.
        assert int.from_bytes(data[:8], "big") == r.start
        assert data[8:] == ref[8:]
