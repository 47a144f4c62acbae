"""How Kafka's Java producer cuts a partition's records into batches, replayed on columns.

The model, from ``RecordAccumulator``, ``ProducerBatch``, ``MemoryRecordsBuilder``,
``BuiltInPartitioner`` and ``CompressionRatioEstimator`` (kafka-clients 3.x):

* A partition has one open batch.  A record joins it when
  ``estimated_bytes + record_size <= write_limit``, where ``estimated_bytes`` is
  the 61-byte v2 header plus the records appended so far, multiplied for a
  compressed batch by the topic's estimated compression ratio times 1.05.
  ``write_limit`` is ``max(batch.size, upper bound of the first record)``: the
  first record always fits, so a record larger than ``batch.size`` gets a
  batch of its own.
* A batch is sent ``linger.ms`` after its first record: a later record whose
  timestamp is at most ``linger.ms`` after the batch's first one joins it
  (records of the same millisecond share a batch even at ``linger.ms=0``).
* The compression ratio estimate starts at 1.0 per topic and codec and is
  updated after each batch closes: a worse observed ratio raises it to
  ``max(estimate + 0.05, observed)``, a better one lowers it by 0.005.
* Keyless records follow the sticky partitioner: all go to one partition until
  at least ``batch.size`` bytes were appended there and its batch is full (or
  ``2 x batch.size`` bytes regardless), then the next partition is taken.
  Kafka picks the next one at random (weighted by queue sizes); this replay
  takes them in round-robin order so the result is reproducible.

What the replay cannot know: how many producers wrote the data, their
in-flight request limits and send latency (a busy sender makes
``linger.ms=0`` batches larger than the timestamps alone suggest), and
``buffer.memory`` back-pressure.  Record sizes count each record's offset and
timestamp deltas as one byte each, which can move a cut by one record.

Everything works on numpy columns; the only loop is one step per batch.
"""
from __future__ import annotations

import math
from typing import Callable, List, Optional

import numpy as np

__all__ = [
    "LIMITS",
    "BATCH_OVERHEAD",
    "ESTIMATION_FACTOR",
    "record_sizes",
    "record_upper_bounds",
    "update_estimate",
    "assign_partitions",
    "form_batches",
]

LIMITS = ("each partition's records are re-batched by their timestamps as Kafka's producer would; the replay "
          "cannot know how many producers wrote a topic, their in-flight limits and send latency, or "
          "buffer.memory back-pressure")
BATCH_OVERHEAD = 61  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
ESTIMATION_FACTOR = 1.05  # MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR
IMPROVING_STEP = 0.005  # CompressionRatioEstimator.COMPRESSION_RATIO_IMPROVING_STEP
DETERIORATE_STEP = 0.05  # CompressionRatioEstimator.COMPRESSION_RATIO_DETERIORATE_STEP
MAX_RECORD_OVERHEAD = 21  # DefaultRecord.MAX_RECORD_OVERHEAD


def _varint_size(values: np.ndarray) -> np.ndarray:
    """Bytes of each value as a zig-zag varint (Kafka's ByteUtils.sizeOfVarint)."""
    v = np.asarray(values, dtype=np.int64)
    z = ((v << 1) ^ (v >> 63)).astype(np.uint64)
    size = np.ones(len(z), dtype=np.int64)
    for shift in (7, 14, 21, 28):
        size += z >= (np.uint64(1) << np.uint64(shift))
    return size


def record_sizes(key_len: np.ndarray, value_len: np.ndarray, header_bytes: Optional[np.ndarray] = None,
                 header_count: Optional[np.ndarray] = None) -> np.ndarray:
    """``DefaultRecord.sizeInBytes`` of each record, offset and timestamp deltas taken as one byte.

    ``key_len``/``value_len`` are -1 for null.  ``header_bytes`` is each
    record's already-framed header bytes (varint lengths included), with
    ``header_count`` headers.
    """
    key_len = np.asarray(key_len, dtype=np.int64)
    value_len = np.asarray(value_len, dtype=np.int64)
    n = len(value_len)
    hb = np.zeros(n, np.int64) if header_bytes is None else np.asarray(header_bytes, dtype=np.int64)
    hc = np.zeros(n, np.int64) if header_count is None else np.asarray(header_count, dtype=np.int64)
    body = (1 + 1 + 1  # attributes, timestamp delta, offset delta
            + _varint_size(key_len) + np.maximum(key_len, 0)
            + _varint_size(value_len) + np.maximum(value_len, 0)
            + _varint_size(hc) + hb)
    return body + _varint_size(body)


def record_upper_bounds(key_len: np.ndarray, value_len: np.ndarray,
                        header_bytes: Optional[np.ndarray] = None) -> np.ndarray:
    """``DefaultRecordBatch.estimateBatchSizeUpperBound`` for a batch of one record."""
    hb = 0 if header_bytes is None else np.asarray(header_bytes, dtype=np.int64)
    return (BATCH_OVERHEAD + MAX_RECORD_OVERHEAD + np.maximum(np.asarray(key_len, np.int64), 0)
            + np.maximum(np.asarray(value_len, np.int64), 0) + hb)


def update_estimate(estimate: float, observed: float) -> float:
    """``CompressionRatioEstimator.updateEstimation`` (float32 arithmetic as in Java)."""
    est, obs = np.float32(estimate), np.float32(observed)
    if obs > est:
        return float(max(np.float32(est + np.float32(DETERIORATE_STEP)), obs))
    if obs < est:
        return float(np.float32(est - np.float32(IMPROVING_STEP)))
    return float(est)


def assign_partitions(sizes: np.ndarray, keyed_partition: np.ndarray, batch_size: int,
                      num_partitions: int) -> np.ndarray:
    """Each record's partition: its key's (``keyed_partition >= 0``) or the sticky partitioner's.

    Keyless records (``keyed_partition < 0``) are taken in order; the sticky
    partition changes after a record brings the bytes produced to it to
    ``batch.size`` or more, in round-robin order starting at partition 0.
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


def form_batches(timestamps: np.ndarray, sizes: np.ndarray, upper_bounds: np.ndarray, batch_size: int,
                 linger_ms: float, compressed: bool = False,
                 close: Optional[Callable[[int, int], float]] = None) -> np.ndarray:
    """Batch boundaries of one partition's records in arrival order.

    Returns ``starts`` with a final ``len(sizes)``: batch ``i`` is records
    ``starts[i]:starts[i+1]``.  For a compressed codec, ``close(a, b)`` is
    called as each batch closes and returns its observed compression ratio
    (compressed records size / uncompressed records size), which updates the
    estimate the next cut uses, as the producer does.
    """
    ts = np.asarray(timestamps, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    n = len(sizes)
    cum = np.concatenate(([0], np.cumsum(sizes)))
    starts: List[int] = []
    estimate = 1.0
    timed = linger_ms is not None and np.isfinite(linger_ms)
    a = 0
    while a < n:
        starts.append(a)
        factor = estimate * ESTIMATION_FACTOR if compressed else 1.0
        limit = max(batch_size, int(upper_bounds[a]))
        # Records a+1.. join while header + factor * (records so far) + their own size fits; past
        # ``hi`` even a 0-byte record would not.
        room = math.floor((limit - BATCH_OVERHEAD) / factor)
        hi = min(max(int(np.searchsorted(cum, int(cum[a]) + room, side="right")), a + 1), n)
        b, lo, width = hi, a + 1, 16
        if lo < hi and ((timed and ts[lo] - ts[a] > linger_ms)
                        or BATCH_OVERHEAD + (cum[lo] - cum[a]) * factor + sizes[lo] > limit):
            lo = b = a + 1  # the next record already starts a new batch: no arrays needed
        # Look at the candidates in growing windows: a batch that linger closes early costs little.
        while lo < hi:
            cand = np.arange(lo, min(lo + width, hi))
            fits = BATCH_OVERHEAD + (cum[cand] - cum[a]) * factor + sizes[cand] <= limit
            if timed:
                fits &= ts[cand] - ts[a] <= linger_ms
            stop = np.flatnonzero(~fits)
            if len(stop):
                b = int(cand[stop[0]])
                break
            lo, width = lo + width, width * 4
        if compressed and close is not None:
            estimate = update_estimate(estimate, close(a, b))
        a = b
    starts.append(n)
    return np.asarray(starts, dtype=np.int64)
