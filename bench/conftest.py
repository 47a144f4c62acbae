"""Shared workloads, settings and the throughput summary for the pytest-benchmark suites (test_perf_*.py).

The data are compare.py's workloads at KCODEC_BENCH_SCALE (default 0.1) of its
sizes, built once per session and checked once, so each benchmark times only
the operation and then checks its own result.
"""
from __future__ import annotations

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402

import kcodec  # noqa: E402

SCALE = float(os.environ.get("KCODEC_BENCH_SCALE", "0.1"))
KAFKA_PYTHON = os.environ.get("KCODEC_BENCH_KAFKA_PYTHON", "") not in ("", "0")


def pytest_configure(config):
    config.addinivalue_line("markers", "perf: pytest-benchmark benchmark over compare.py's workloads")


def pytest_report_header(config):
    malloc = "compare.py's" if all(os.environ.get(k) == v for k, v in compare.MALLOC_ENV.items()) else "glibc defaults"
    return [f"kcodec bench: scale={SCALE:g} (KCODEC_BENCH_SCALE), "
            f"kafka-python={'on' if KAFKA_PYTHON else 'off'} (KCODEC_BENCH_KAFKA_PYTHON=1), malloc={malloc}",
            f"machine: {compare.environment()}"]


class Workload:
    """One of compare.py's workloads with everything derived from it, each built on first use."""

    def __init__(self, name: str, scale: float):
        self.name = name
        self.keys, self.values, self.headers, self.limit = compare.make_workload(name, scale)
        self.ranges = compare.cut_batches(self.keys, self.values, self.headers, self.limit)
        self.records = compare.batch_records(self.keys, self.values, self.headers, self.ranges)
        self.n = len(self.values)
        self.mb = (sum(map(len, self.values)) + sum(len(k) for k in self.keys if k)) / 1e6
        self._batches = {}
        self._regions = None
        self._table = None
        # What a test module derives from the workload, dropped with it.
        self.cache = {}

    def info(self, impl: str) -> dict:
        return {"impl": impl, "records": self.n, "mb": round(self.mb, 6), "scale": SCALE}

    def batches(self, codec: str) -> list:
        """kcodec's batches, the reference every build is held to and every reader reads."""
        if codec not in self._batches:
            out = compare.kc_build_batches(codec, self.records)
            self._check_reference(out)
            self._batches[codec] = out
        return self._batches[codec]

    def _check_reference(self, batches) -> None:
        # Read by another implementation where there is one, so that a kcodec bug
        # shared by its builder and reader cannot hide behind the equality checks.
        try:
            from aiokafka.record.default_records import DefaultRecordBatch
        except ImportError:
            self.check_batches(batches)
            return
        got = []
        for data in batches:
            batch = DefaultRecordBatch(data)
            assert batch.validate_crc()
            got.extend((r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
        assert got == self.expected_records()

    def blob(self, codec: str) -> bytes:
        return b"".join(self.batches(codec))

    def expected_records(self) -> list:
        return [(compare.T0 + i, self.keys[i], self.values[i], list(self.headers[i])) for i in range(self.n)]

    def check_batches(self, batches) -> None:
        """Valid CRCs and exactly the workload's records, in order, read by kcodec."""
        got = []
        for batch in kcodec.read_batches(b"".join(bytes(b) for b in batches)):
            assert batch.is_valid()
            got.extend((r.timestamp, r.key, r.value, list(r.headers)) for r in batch)
        assert len(got) == self.n
        assert got == self.expected_records()

    def table(self):
        """The records as an Arrow table in kcodec's schema, as compare.run builds it."""
        if self._table is None:
            import pyarrow as pa
            self._table = pa.table({
                "key": pa.array(self.keys, pa.binary()), "value": pa.array(self.values, pa.binary()),
                "timestamp": pa.array([compare.T0 + i for i in range(self.n)], pa.int64()),
                "headers": pa.array([[{"key": k, "value": v} for k, v in h] or None for h in self.headers],
                                    kcodec.kafka_schema().field("headers").type)})
        return self._table

    def regions(self) -> list:
        """Each batch's uncompressed records region: what a codec compresses (as compare._raw cuts them)."""
        if self._regions is None:
            self._regions = [b[61:] for b in self.batches("none")]
        return self._regions


class Workloads(dict):
    def __missing__(self, name):
        # One workload at a time (tests run workload by workload, see below):
        # at KCODEC_BENCH_SCALE=1 each holds several hundred MB.
        self.clear()
        self[name] = Workload(name, SCALE)
        return self[name]

    def timed(self, benchmark, name: str, codec: str, operation: str, impl: str) -> Workload:
        """Workload ``name``, with ``benchmark`` filed where the throughput summary below reads it:
        in the group "<workload> <codec> <operation>", as implementation ``impl``."""
        wl = self[name]
        benchmark.group = f"{name} {codec} {operation}"
        benchmark.extra_info.update(wl.info(impl))
        return wl


def _workload_of(item):
    callspec = getattr(item, "callspec", None)
    return callspec.params.get("workload") if callspec else None


def pytest_collection_modifyitems(items):
    order = {"w1": 0, "w2": 1, "w3": 2}
    items.sort(key=lambda item: order.get(_workload_of(item), -1))


@pytest.fixture(scope="session")
def workloads():
    return Workloads()


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter, config):
    bs = getattr(config, "_benchmarksession", None)
    rows = [b for b in getattr(bs, "benchmarks", ()) if b and "mb" in (b.extra_info or {})]
    if not rows:
        return
    base = {b.group: b.stats.min for b in rows if b.extra_info.get("impl") == "kcodec"}
    tr = terminalreporter
    tr.write_sep("-", "throughput from each benchmark's fastest round; time/kcodec is against kcodec in the group")
    tr.write_line(f"{'group':<20} {'implementation':<18} {'Mrec/s':>8} {'MB/s':>8} {'time/kcodec':>12}")
    for b in sorted(rows, key=lambda b: (b.group or "", b.stats.min)):
        sec, info = b.stats.min, b.extra_info
        rel = f"{sec / base[b.group]:.2f}x" if b.group in base else "-"
        tr.write_line(f"{b.group or '':<20} {info['impl']:<18} {info['records'] / sec / 1e6:>8.2f} "
                      f"{info['mb'] / sec:>8.0f} {rel:>12}")
