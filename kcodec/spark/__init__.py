"""kcodec on Spark: mapInArrow transforms and the ``kafka-log`` data source.

Nothing here imports pyspark until used; install ``kcodec[spark]``.
"""
from __future__ import annotations

import importlib
from typing import Any

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


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kcodec.spark' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
