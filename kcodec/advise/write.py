"""``--write DIR``: each topic's records rewritten as segment folders with its recommended setting."""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Callable, Dict, Sequence

from kcodec.errors import KcodecError

__all__ = ["write_topics"]

_TOPIC = re.compile(r"[a-zA-Z0-9._-]{1,249}")


def write_topics(spark, plan, options, advice: Sequence, out: str, log: Callable[[str], None]) -> Dict[str, str]:
    """Write every topic that has a recommendation (or ``--choose``) under ``out``; returns topic -> setting."""
    from pyspark.sql import functions as F

    from kcodec.spark.transforms import write_log

    if plan.kind == "cluster":
        raise KcodecError("--write needs log directories or record files, not --bootstrap-server")
    if plan.kind == "logs":
        reader = spark.read.format("kafka-log")
        if plan.storage_options:  # URL inputs
            reader = reader.option("storageOptions", json.dumps(plan.storage_options))
        df = reader.load(options.inputs[0] if len(options.inputs) == 1 else list(options.inputs))
    else:
        from kcodec.advise.records import records_frame

        df = records_frame(spark, plan, options.records, options.seed,
                           options.tasks or spark.sparkContext.defaultParallelism)
    written = {}
    for a in advice:
        if not _TOPIC.fullmatch(a.topic):
            raise KcodecError(f"--write {out}: {a.topic!r} is not a Kafka topic name ([a-zA-Z0-9._-], at most 249)")
    for a in advice:
        if a.best is None:
            log(f"--write: {a.topic} keeps today's settings; not written")
            continue
        s = a.best.setting
        opts = {"compression": s.codec, "batchBytes": s.batch_bytes}
        if s.level is not None:
            opts["level"] = s.level
        part = df.filter(F.col("topic") == a.topic)
        if "partition" in part.columns:
            write_log(part, str(Path(out)), mode="overwrite", **opts)
        else:
            write_log(part, str(Path(out)), mode="overwrite", partitions=options.partitions,
                      partition_column=None, **opts)
        written[a.topic] = s.label
        log(f"--write: {a.topic} written with {s.label} under {out}")
    return written
