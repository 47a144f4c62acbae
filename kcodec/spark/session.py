"""A SparkSession set up the way kcodec's jobs and tests need it."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from kcodec._extras import require
from kcodec.errors import KcodecError

__all__ = ["get_session", "worker_environment"]


def _shadowing_folder() -> Optional[Path]:
    """The ``kcodec`` in the working folder, if it is not the package this interpreter imported.

    Spark starts its Python workers with ``python -m pyspark.daemon`` in the
    driver's working folder, and ``-m`` puts that folder first on their
    ``sys.path``.  In a source checkout whose ``kcodec/`` has no built
    extensions (a fresh clone with kcodec installed from it), workers would
    import that folder instead of the installed package.
    """
    cwd = Path.cwd()
    found = next((p for p in (cwd / "kcodec", cwd / "kcodec.py") if p.exists()), None)
    # this file is <root>/kcodec/spark/session.py, and <root> the folder the package was imported from
    if found is None or Path(__file__).resolve().parents[2] == cwd.resolve():
        return None
    return found


def worker_environment() -> Dict[str, str]:
    """Environment variables for Spark's Python workers, so that they import this kcodec.

    Where the working folder holds another ``kcodec``, PYTHONSAFEPATH=1 keeps
    the folder off the workers' ``sys.path`` (Python 3.11+); Python 3.10 has no
    such switch, so there a KcodecError asks to run from another folder.
    """
    folder = _shadowing_folder()
    if folder is None:
        return {}
    if sys.version_info < (3, 11):
        raise KcodecError(
            f"{folder} would replace the installed kcodec in Spark's Python workers, which put the "
            f"working folder first on their path; run from another folder (or use Python 3.11+)")
    return {"PYTHONSAFEPATH": "1"}


def get_session(master: Optional[str] = None, app_name: str = "kcodec", *, quiet: bool = True,
                config: Optional[Mapping[str, str]] = None) -> Any:
    """Return (or create) a SparkSession whose Python workers import this interpreter's kcodec.

    Workers run ``python3`` from PATH unless PYSPARK_PYTHON is set, and would
    then miss pyarrow and kcodec; this pins both to ``sys.executable``, and
    keeps a ``kcodec`` folder in the working folder from shadowing the
    package (:func:`worker_environment`).  The JVM options halve local
    start-up time.  ``master`` defaults to ``local[*]`` unless spark-submit
    already chose one; ``config`` adds Spark settings.
    """
    require("pyspark", "pyspark", "kcodec's Spark session")
    env = worker_environment()
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
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.sql.session.timeZone": "UTC",
        "spark.driver.extraJavaOptions": jvm_opts,
        "spark.sql.execution.arrow.maxRecordsPerBatch": "100000",
        **{f"spark.executorEnv.{k}": v for k, v in env.items()},
        **(config or {}),
    }
    for key, value in settings.items():
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    if quiet:
        spark.sparkContext.setLogLevel("ERROR")
    from kcodec.spark.datasource import register
    register(spark)
    return spark
