"""Whose records are whose: a partition's records split by the producer that wrote them.

Each producer has its own ``RecordAccumulator``, so each producer's records are batched on their
own: two producers writing to one partition at the same rate each fill batches half as fast.
Idempotent producers (the default since Kafka 3.0) stamp each v2 batch with their producer id;
non-idempotent ones write -1, and then the user's producer count splits the records.  A batch is
one producer's, so they are split a whole batch at a time: each batch goes to a producer whose
last batch ended (by timestamp) no later than this one starts, the one idle longest, and when
every producer's last batch still overlaps it, to the one whose batch ended first.  A producer's
records arrive in time order, so each producer's share is taken in timestamp order.
"""
from __future__ import annotations

import math
from typing import List, Optional

import numpy as np

__all__ = ["producer_groups", "NO_PRODUCER_ID"]

NO_PRODUCER_ID = -1  # RecordBatch.NO_PRODUCER_ID


def producer_groups(producer_ids: np.ndarray, producers: int = 1, batch_of: Optional[np.ndarray] = None,
                    timestamps: Optional[np.ndarray] = None) -> List[np.ndarray]:
    """Record indices of each producer, in arrival order; producers in order of their first record.

    Records of batches without a producer id are split among ``producers`` producers (one group
    when 1): a whole batch at a time where ``batch_of`` (each record's batch) and ``timestamps``
    are given, else record by record in turn.
    """
    pid = np.asarray(producer_ids, dtype=np.int64)
    groups: List[np.ndarray] = []
    anonymous = np.flatnonzero(pid == NO_PRODUCER_ID)
    if len(anonymous):
        k = max(1, int(producers))
        if k == 1:
            groups.append(anonymous)
        elif batch_of is None or timestamps is None:
            groups.extend(anonymous[i::k] for i in range(min(k, len(anonymous))))
        else:
            groups.extend(_split_by_batch(anonymous, np.asarray(batch_of)[anonymous],
                                          np.asarray(timestamps, dtype=np.int64)[anonymous], k))
    known = np.flatnonzero(pid != NO_PRODUCER_ID)
    if len(known):
        ids, first = np.unique(pid[known], return_index=True)
        for i in np.argsort(first, kind="stable"):
            groups.append(known[pid[known] == ids[i]])
    groups.sort(key=lambda g: int(g.min()))
    return groups


def _split_by_batch(records: np.ndarray, batch: np.ndarray, ts: np.ndarray, k: int) -> List[np.ndarray]:
    """``records`` (their batches and timestamps alongside) split among ``k`` producers, whole batches each."""
    new = np.empty(len(batch), bool)
    new[0] = True
    np.not_equal(batch[1:], batch[:-1], out=new[1:])
    first = np.flatnonzero(new)
    begins = np.minimum.reduceat(ts, first).tolist()
    ends = np.maximum.reduceat(ts, first).tolist()
    last_end = [-math.inf] * k  # each producer's last batch's latest timestamp
    last_used = [-1] * k
    owner = np.empty(len(first), np.int64)
    for b, (begin, end) in enumerate(zip(begins, ends)):
        free = [p for p in range(k) if last_end[p] <= begin]
        if free:
            p = min(free, key=lambda q: (last_used[q], q))
        else:
            p = min(range(k), key=lambda q: (last_end[q], q))
        owner[b] = p
        last_end[p] = max(last_end[p], end)
        last_used[p] = b
    per_record = np.repeat(owner, np.diff(np.append(first, len(batch))))
    out = []
    for p in range(k):
        mine = np.flatnonzero(per_record == p)
        if len(mine):
            out.append(records[mine[np.argsort(ts[mine], kind="stable")]])
    return out
