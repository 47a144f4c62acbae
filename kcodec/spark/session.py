"""A SparkSession set up the way kcodec's jobs and tests need it."""
from __future__ import annotations

import os
import sys
from typing import Optional

__all__ = ["get_session"]


def get_session(master: Optional[str] = None, app_name: str = "kcodec", *, quiet: bool = True):
    """Return (or create) a SparkSession whose Python workers import this interpreter's kcodec.

    Workers run ``python3`` from PATH unless PYSPARK_PYTHON is set, and would
    then miss pyarrow and kcodec; this pins both to ``sys.executable``.  The
    JVM options halve local start-up time.  ``master`` defaults to
    ``local[*]`` unless spark-submit already chose one.
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = SparkSession.builder.appName(app_name)
    if master:
        builder = builder.master(master)
    elif not os.environ.get("PYSPARK_GATEWAY_PORT"):
        # Under spark-submit the JVM starts first (and sets the gateway port);
        # its --master must win.  Run directly, kcodec defaults to local mode.
        builder = builder.master(os.environ.get("KCODEC_SPARK_MASTER", "local[*]"))
    jvm_opts = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"
    builder = (builder
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .config("spark.driver.extraJavaOptions", jvm_opts)
               .config("spark.sql.execution.arrow.maxRecordsPerBatch", "100000"))
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    from kcodec.spark.datasource import register
    register(spark)
    return spark
