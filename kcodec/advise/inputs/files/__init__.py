"""Record files (Parquet, JSON) as an input of ``kcodec advise``.

Records carry no batches: today's batches are replayed at the --current-* flags
(:class:`~kcodec.advise.inputs.replayed.ReplayedSource`).  Their topics come from a
``topic`` column, else from the file's name, so only Spark can list them; their
timestamps' unit is settled before Spark starts (:mod:`kcodec.advise.inputs.files.timestamps`).
"""
from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from kcodec.advise.inputs.replayed import ReplayedSource
from kcodec.advise.inputs.source import Sampling
from kcodec.errors import KcodecError

__all__ = ["FileSource"]


class FileSource(ReplayedSource):
    """Parquet or JSON files or folders of them (``fmt``), paths or URLs."""

    topic_names_checked = False  # a topic column may hold any string

    def __init__(self, paths: Sequence[str], fmt: str, storage_options: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(f"{fmt} {', '.join(paths)}", storage_options)
        self.paths = list(paths)
        self.format = fmt
        self.timestamps: Optional[Any] = None  #: a kcodec.advise.inputs.files.timestamps.TimestampPlan, once settled

    def use_timestamp_unit(self, unit: Optional[str]) -> None:
        from kcodec.advise.inputs.files.timestamps import detect_timestamps

        self.timestamps = detect_timestamps(self.paths, self.format, unit, self.storage_options)
        self.description += f"; timestamps: {self.timestamps.text()}"

    def records(self, spark, sampling: Sampling):
        from pyspark.sql import functions as F

        df = spark.read.format(self.format).load(self.paths)
        if "value" not in df.columns:
            raise KcodecError(f"{', '.join(self.paths)}: the records need a 'value' column "
                              f"(found {', '.join(df.columns)})")
        for name in ("key", "value"):
            if name in df.columns and dict(df.dtypes)[name] == "string":
                df = df.withColumn(name, F.col(name).cast("binary"))
        if "topic" not in df.columns:
            df = df.withColumn("topic", F.lit(_topic_name(self.paths[0])))
        if self.timestamps is not None:
            from kcodec.advise.inputs.files.timestamps import timestamp_column

            df = timestamp_column(df, self.timestamps)
        df = self.only_topics(df)
        if "headers" in df.columns and df.filter(F.size("headers") > 0).limit(1).count() == 0:
            # Spark hands an array<struct> column to Python slowly even when every value is null
            # (seconds per 100,000 rows): a column without a header is left behind.
            df = df.drop("headers")
        return df.select(*[c for c in ("key", "value", "timestamp", "headers", "topic", "partition")
                           if c in df.columns])


def _topic_name(path: str) -> str:
    from pathlib import Path

    return Path(path).stem or "records"
