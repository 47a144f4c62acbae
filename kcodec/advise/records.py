"""Records (of Parquet, JSON or the generated sample) as chunks of batches, like a producer would write them.

Records carry no batches, so today's batches are made by replaying the
producer with ``--current-codec``, ``--current-batch-size`` and
``--current-linger-ms``: keyed records go to ``murmur2(key) % --partitions``,
keyless ones to the sticky partitioner (:mod:`kcodec.advise.replay`).
"""
from __future__ import annotations

from typing import Iterator

import numpy as np

from kcodec.advise.chunks import CHUNK_DDL, chunk_batch
from kcodec.advise.grid import Setting

__all__ = ["record_chunks", "RECORD_DDL"]

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
    from kcodec.advise.replay import assign_partitions
    from kcodec.advise.task import replay_starts
    from kcodec.partitioner import partition_for_keys

    batches = [b for b in batches if b.num_rows]
    if not batches:
        return
    table = pa.Table.from_batches(batches).combine_chunks()
    task = TaskContext.get().partitionId() if TaskContext.get() else 0
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
