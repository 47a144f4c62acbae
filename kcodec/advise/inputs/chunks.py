"""The chunk, what every input kind of ``kcodec advise`` yields: a run of whole record batches as stored.

A chunk travels between Spark tasks as one row of :data:`CHUNK_DDL`, ``chunk``
numbering the chunks within a partition.  Input modules produce chunks and the
measure stage consumes them; neither needs the other.
"""
from __future__ import annotations

__all__ = ["CHUNK_DDL", "chunk_batch"]

CHUNK_DDL = "topic string, partition int, chunk int, data binary"


def chunk_batch(topic: str, partition: int, chunk: int, data: bytes):
    """One chunk as the one-row Arrow batch (:data:`CHUNK_DDL`) a Spark task yields for it."""
    import pyarrow as pa

    schema = pa.schema([("topic", pa.string()), ("partition", pa.int32()), ("chunk", pa.int32()),
                        ("data", pa.binary())])
    return pa.RecordBatch.from_arrays([pa.array([topic]), pa.array([partition], pa.int32()),
                                       pa.array([chunk], pa.int32()), pa.array([data], pa.binary())], schema=schema)
