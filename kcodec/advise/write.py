"""``--write DIR``: each topic's records rewritten as segment folders with its recommended setting.

``DIR`` may be a URL (``s3://`` ...): the segments are then put through
:mod:`kcodec.storage` with the ``--storage-option`` options (parsed once, into the
input), each object whole.  Which records an input rewrites is the input's own
(:meth:`kcodec.advise.inputs.Source.write_records`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, Sequence

from kcodec import storage
from kcodec.advise.inputs import Sampling, Source
from kcodec.errors import InvalidNameError
from kcodec.escape import terminal_text

__all__ = ["write_topics", "check_topics"]


def check_topics(spark, source: Source, sampling: Sampling, out: str) -> None:
    """Every topic name of an input whose names were not checked where they were read (a topic column of
    record files) checked before measuring: a bad one is refused before a long job, not after it."""
    from kcodec.spark.transforms import check_topic_column

    if source.topic_names_checked:
        return
    try:
        check_topic_column(source.write_records(spark, sampling))
    except InvalidNameError as exc:
        raise InvalidNameError(f"--write {out}: {exc.message}", value=exc.value,
                               source=f"column 'topic' of {source.description}; nothing was written") \
            from None


def write_topics(spark, source: Source, sampling: Sampling, advice: Sequence, out: str,
                 log: Callable[[str], None]) -> Dict[str, str]:
    """Write every topic of ``source`` that has a recommendation (or ``--choose``) under ``out``, records
    naming no partition spread over ``--partitions``; returns topic -> setting."""
    from pyspark.sql import functions as F

    from kcodec.spark.transforms import write_log

    df = source.write_records(spark, sampling)
    target = out if storage.is_url(out) else str(Path(out))
    storage_options = source.storage_options or {}
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
            write_log(part, target, mode="overwrite", partitions=sampling.partitions,
                      partition_column=None, **opts)
        written[a.topic] = s.label
        log(f"--write: {name} written with {s.label} under {out}")
    return written
