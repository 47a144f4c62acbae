"""Object API benchmarks: records -> v2 batches and back, kcodec next to aiokafka and kafka-python.

Every implementation builds the batches compare.py cuts and reads the bytes
kcodec builds.  kafka-python is about a hundred times slower than the others,
so it runs only with KCODEC_BENCH_KAFKA_PYTHON=1.
"""
from __future__ import annotations

import importlib
import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402

import kcodec  # noqa: E402

pytestmark = pytest.mark.perf

KAFKA_PYTHON = os.environ.get("KCODEC_BENCH_KAFKA_PYTHON", "") not in ("", "0")

WORKLOADS = ["w1", "w2", "w3"]
IMPLS = ["kcodec", "aiokafka", "kafka-python"]
PEER_MODULES = {"aiokafka": "aiokafka.record.default_records", "kafka-python": "kafka.record.default_records"}
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
#: every test runs on each workload, codec and implementation
GRID = pytest.mark.parametrize(("workload", "codec", "impl"), list(itertools.product(WORKLOADS, compare.CODECS, IMPLS)))


@pytest.fixture(autouse=True)
def _runnable(impl):
    """Skip an implementation that cannot run here: kafka-python unless asked for, a peer not installed."""
    if impl == "kafka-python" and not KAFKA_PYTHON:
        pytest.skip("kafka-python is ~100x slower: set KCODEC_BENCH_KAFKA_PYTHON=1 to include it")
    if impl != "kcodec":
        pytest.importorskip(PEER_MODULES[impl])


def _peer_build(impl, codec, wl):
    builder_cls = importlib.import_module(PEER_MODULES[impl]).DefaultRecordBatchBuilder
    codec_id, records = CODEC_IDS[codec], wl.records
    return lambda: compare.peer_build_batches(builder_cls, codec_id, records)


@GRID
def test_build(benchmark, workloads, workload, codec, impl):
    wl = workloads.timed(benchmark, workload, codec, "build", impl)
    reference = wl.batches(codec)
    if impl == "kcodec":
        records = wl.records
        out = benchmark(lambda: compare.kc_build_batches(codec, records))
        assert out == reference
    else:
        out = benchmark(_peer_build(impl, codec, wl))
        assert len(out) == len(reference)
        wl.check_batches(out)


@GRID
def test_read(benchmark, workloads, workload, codec, impl):
    wl = workloads.timed(benchmark, workload, codec, "read", impl)
    blob = wl.blob(codec)
    if impl == "kcodec":
        def read():
            c, last = 0, None
            for batch in kcodec.read_batches(blob):
                for rec in batch:
                    rec.key
                    last = rec.value
                    c += 1
            return c, last

        assert benchmark(read) == (wl.n, wl.values[-1])
    else:
        # The peer's read asserts the record count itself.
        _, read = compare._peers(codec, wl.records, wl.batches(codec), wl.n)[impl]
        benchmark(read)
