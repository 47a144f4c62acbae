"""Shared fixtures.  The Spark session is created once, only when a test asks for it."""
from __future__ import annotations

import os
import shutil

import pytest


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
