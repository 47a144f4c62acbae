"""Inputs of records (Parquet, JSON, the generated sample) and their chunks, batched as a producer would.

Records carry no batches, so today's batches are made by replaying the
producer with ``--current-codec``, ``--current-batch-size`` and
``--current-linger-ms``: keyed records go to ``murmur2(key) % --partitions``,
keyless ones to the sticky partitioner (:mod:`kcodec.advise.replay`).
"""
from __future__ import annotations

from abc import abstractmethod
from typing import Any, Iterator, Optional, Tuple

import numpy as np

from kcodec.advise.grid import Setting
from kcodec.advise.inputs.chunks import CHUNK_DDL, chunk_batch
from kcodec.advise.inputs.source import Sampling, Source

__all__ = ["ReplayedSource", "record_chunks", "RECORD_DDL"]

RECORD_DDL = ("key binary, value binary, timestamp timestamp, headers array<struct<key:string,value:binary>>, "
              "topic string")


def record_chunks(records, current: Setting, partitions: int, chunk_bytes: int):
    """The chunk DataFrame of a record DataFrame, batched as ``current``."""
    return records.mapInArrow(lambda it: _to_chunks(it, current, partitions, chunk_bytes), CHUNK_DDL)


def _to_chunks(batches: Iterator, current: Setting, partitions: int, chunk_bytes: int):
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark import TaskContext

    from kcodec.advise.measure import BatchEncoder
    from kcodec.advise.profile import record_columns
    from kcodec.advise.replay import assign_partitions, replay_starts
    from kcodec.partitioner import partition_for_keys

    filled = [b for b in batches if b.num_rows]
    if not filled:
        return
    table = pa.Table.from_batches(filled).combine_chunks()
    context = TaskContext.get()
    task = context.partitionId() if context is not None else 0
    for topic in pc.unique(table["topic"]).to_pylist():
        part_table = table.filter(pc.equal(table["topic"], topic)) if topic is not None \
            else table.filter(pc.is_null(table["topic"]))
        if "partition" in part_table.column_names:
            parts = part_table["partition"].to_numpy(zero_copy_only=False).astype(np.int32)
        else:
            keyed = partition_for_keys(part_table["key"], partitions) if "key" in part_table.column_names \
                else np.full(part_table.num_rows, -1, np.int32)
            parts = assign_partitions(record_columns(part_table)["sizes"], keyed, current.batch_bytes, partitions)
        for p in np.unique(parts).tolist():
            sub = part_table.filter(pa.array(parts == p))
            encoder = BatchEncoder(sub)
            built = encoder.build(replay_starts(encoder, record_columns(sub), current), current.codec,
                                  current.level)
            chunk, size, run = 0, 0, []
            for b in built + [None]:
                if b is not None:
                    run.append(b)
                    size += len(b)
                if run and (b is None or size >= chunk_bytes):
                    yield chunk_batch(topic or "records", p, task * 100_000 + chunk, b"".join(run))
                    chunk, size, run = chunk + 1, 0, []


class ReplayedSource(Source):
    """An input of records rather than batches: today's batches are made by replaying the producer
    at the --current-* flags."""

    replays_today = True
    reads_every_record = True

    @abstractmethod
    def records(self, spark, sampling: Sampling):
        """A DataFrame of records: key, value, timestamp, headers, topic (and partition where given)."""

    def chunks(self, spark, sampling: Sampling) -> Tuple[Any, Optional[int]]:
        frame = self.records(spark, sampling)
        # Measuring a chunk costs far more than making it: spread the chunks over more tasks than
        # made them, so cores stay busy and the progress bar moves.
        chunks = record_chunks(frame, sampling.current, sampling.partitions, sampling.chunk_bytes)
        return chunks.repartition(max(8, 4 * sampling.tasks)), None

    def write_records(self, spark, sampling: Sampling):
        return self.records(spark, sampling)

    def only_topics(self, df):
        """The records of the topics ``--topic`` matches whole (all without it)."""
        if self.topic_regex is None:
            return df
        from pyspark.sql import functions as F

        return df.filter(F.col("topic").rlike(f"^(?:{self.topic_regex})$"))
