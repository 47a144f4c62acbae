"""Whose records are whose: a partition's records split by the producer that wrote them.

Each producer has its own ``RecordAccumulator``, so each producer's records are batched on their
own: two producers writing to one partition at the same rate each fill batches half as fast.
Idempotent producers (the default since Kafka 3.0) stamp each v2 batch with their producer id;
non-idempotent ones write -1, and then the user's producer count splits the records in turn, as
producers sharing a steady stream would.
"""
from __future__ import annotations

from typing import List

import numpy as np

__all__ = ["producer_groups", "NO_PRODUCER_ID"]

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID


def producer_groups(producer_ids: np.ndarray, producers: int = 1) -> List[np.ndarray]:
    """Record indices of each producer, in arrival order; producers in order of their first record.

    Records of batches without a producer id are split in turn among ``producers`` producers
    (one group when 1).
    """
    pid = np.asarray(producer_ids, dtype=np.int64)
    groups: List[np.ndarray] = []
    anonymous = np.flatnonzero(pid == NO_PRODUCER_ID)
    if len(anonymous):
        k = max(1, int(producers))
        groups.extend(anonymous[i::k] for i in range(min(k, len(anonymous))))
    known = np.flatnonzero(pid != NO_PRODUCER_ID)
    if len(known):
        ids, first = np.unique(pid[known], return_index=True)
        for i in np.argsort(first, kind="stable"):
            groups.append(known[pid[known] == ids[i]])
    groups.sort(key=lambda g: int(g[0]))
    return groups
