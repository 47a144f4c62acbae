"""Where keyless records go: Kafka's sticky partitioner (``BuiltInPartitioner``), replayed in order."""
from __future__ import annotations

import numpy as np

__all__ = ["assign_partitions"]


def assign_partitions(sizes: np.ndarray, keyed_partition: np.ndarray, batch_size: int,
                      num_partitions: int) -> np.ndarray:
    """Each record's partition: its key's (``keyed_partition >= 0``) or the sticky partitioner's.

    Keyless records (``keyed_partition < 0``) are taken in order; the sticky
    partition changes after a record brings the bytes produced to it to
    ``batch.size`` or more (``BuiltInPartitioner.updatePartitionInfo``), in
    round-robin order starting at partition 0.  Kafka picks the next one at
    random, weighted by queue sizes; round-robin keeps the replay reproducible.
    Producing to a partition and its batch filling coincide when keyless
    records are the only ones in that partition, so the ``2 x batch.size``
    rule of a not-yet-full batch does not arise here.
    """
    part = np.asarray(keyed_partition, dtype=np.int32).copy()
    keyless = np.flatnonzero(part < 0)
    if len(keyless) == 0:
        return part
    run = np.cumsum(np.asarray(sizes, dtype=np.int64)[keyless])
    # A run ends on the first record that reaches batch_size; the next run starts counting from zero.
    sticky = np.empty(len(keyless), dtype=np.int64)
    start, p = 0, 0
    while start < len(keyless):
        base = run[start - 1] if start else 0
        end = int(np.searchsorted(run, base + batch_size, side="left")) + 1
        sticky[start:end] = p
        start, p = end, (p + 1) % num_partitions
    part[keyless] = sticky
    return part
