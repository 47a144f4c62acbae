"""``--write DIR``: each topic's records rewritten as segment folders with its recommended setting.

``DIR`` may be a URL (``s3://`` ...): the segments are then put through
:mod:`kcodec.storage` with the ``--storage-option`` options (parsed once, into the
input plan), each object whole.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Callable, Dict, Sequence

from kcodec import storage
from kcodec.errors import InvalidNameError, KcodecError
from kcodec.escape import terminal_text

__all__ = ["check_write", "write_topics", "check_topics"]


def check_write(plan, out: str) -> None:
    """What can be refused from the arguments alone, before Spark starts."""
    if plan.kind == "cluster":
        raise KcodecError(f"--write {out}: needs log directories or record files, not --bootstrap-server")


def _records(spark, plan, options):
    """The records ``--write`` rewrites: every topic of the input, with its ``topic`` column."""
    if plan.kind == "logs":
        reader = spark.read.format("kafka-log")
        if plan.storage_options:  # URL inputs
            reader = reader.option("storageOptions", json.dumps(plan.storage_options))
        return reader.load(options.inputs[0] if len(options.inputs) == 1 else list(options.inputs))
    from kcodec.advise.records import records_frame

    return records_frame(spark, plan, options.records, options.seed,
                         options.tasks or spark.sparkContext.defaultParallelism)


def check_topics(spark, plan, options, out: str) -> None:
    """Every topic name of record files checked before measuring (log folders and the sample are
    named validly already): a bad one is refused before a long job, not after it."""
    from kcodec.spark.transforms import check_topic_column

    if plan.kind != "records":
        return
    try:
        check_topic_column(_records(spark, plan, options))
    except InvalidNameError as exc:
        raise InvalidNameError(f"--write {out}: {exc.message}", value=exc.value,
                               source=f"column 'topic' of {', '.join(plan.record_paths)}; nothing was written") \
            from None


def write_topics(spark, plan, options, advice: Sequence, out: str, log: Callable[[str], None]) -> Dict[str, str]:
    """Write every topic that has a recommendation (or ``--choose``) under ``out``; returns topic -> setting."""
    from pyspark.sql import functions as F

    from kcodec.spark.transforms import write_log

    df = _records(spark, plan, options)
    target = out if storage.is_url(out) else str(Path(out))
    storage_options = plan.storage_options or {}
    written = {}
    for a in advice:
        name = terminal_text(a.topic)
        if a.best is None:
            log(f"--write: {name} keeps today's settings; not written")
            continue
        s = a.best.setting
        opts = {"compression": s.codec, "batchBytes": s.batch_bytes, "storage_options": storage_options}
        if s.level is not None:
            opts["level"] = s.level
        part = df.filter(F.col("topic") == a.topic)
        if "partition" in part.columns:
            write_log(part, target, mode="overwrite", **opts)
        else:
            write_log(part, target, mode="overwrite", partitions=options.partitions,
                      partition_column=None, **opts)
        written[a.topic] = s.label
        log(f"--write: {name} written with {s.label} under {out}")
    return written
