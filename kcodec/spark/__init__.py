"""kcodec on Spark: mapInArrow transforms and the ``kafka-log`` data source.

Nothing here imports pyspark until used; install ``kcodec[spark]``.
"""
from __future__ import annotations

from kcodec._lazy import lazy_attributes

__all__ = ["decode", "encode", "register", "write_log", "get_session", "KAFKA_DDL", "BATCH_DDL"]

_LAZY = {
    "decode": "kcodec.spark.transforms",
    "encode": "kcodec.spark.transforms",
    "write_log": "kcodec.spark.transforms",
    "KAFKA_DDL": "kcodec.spark.transforms",
    "BATCH_DDL": "kcodec.spark.transforms",
    "register": "kcodec.spark.datasource",
    "get_session": "kcodec.spark.session",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
