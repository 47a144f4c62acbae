"""How a producer cuts one partition's records into batches, replayed on columns.

The model, from ``RecordAccumulator``, ``ProducerBatch``, ``MemoryRecordsBuilder`` and
``CompressionRatioEstimator`` (kafka-clients 3.x), and librdkafka's ``rd_kafka_msgset_writer``:

* A partition has one open batch.  Java: a record joins it when
  ``estimated_bytes + record_size <= write_limit``, where ``estimated_bytes`` is
  the 61-byte v2 header plus the records appended so far, multiplied for a
  compressed batch by the topic's estimated compression ratio times 1.05.
  ``write_limit`` is ``max(batch.size, upper bound of the first record)``: the
  first record always fits, so a record larger than ``batch.size`` gets a
  batch of its own.  librdkafka: a record joins while the request written so far
  (uncompressed) plus the record's worst-case size stays within ``batch.size`` and
  the batch holds fewer than ``batch.num.messages`` records
  (:mod:`kcodec.advise.replay.client`).
* A batch is sent when the sender takes it: ``linger.ms`` after it opened plus the
  sender's delay (:mod:`kcodec.advise.replay.sender`); records arriving before then join it.
* Java's compression ratio estimate starts at 1.0 per topic and codec and is
  updated after each batch closes: a worse observed ratio raises it to
  ``max(estimate + 0.05, observed)``, a better one lowers it by 0.005.

What the replay cannot know: in-flight request limits, and ``buffer.memory``
back-pressure; keyless records of a stored partition stay in it (the sticky
partitioner's re-spread, :mod:`kcodec.advise.replay.partitioner`, is replayed where
records arrive without partitions).  Record sizes count each record's offset and
timestamp deltas as one byte each, which can move a cut by one record.

Everything works on numpy columns; the cuts are one native loop
(``replay_cuts``), with one Python call per closed batch where the caller learns its ratio.
"""
from __future__ import annotations

from typing import Callable, Optional, Tuple

import numpy as np

from kcodec._native.columnar import replay_cuts, update_estimate_f32
from kcodec.advise.replay.client import JAVA, ClientRules
from kcodec.advise.replay.sender import SenderModel, arrival_ms
from kcodec.records.framing import RECORD_BATCH_OVERHEAD

__all__ = [
    "LIMITS",
    "LIMIT_ITEMS",
    "BATCH_OVERHEAD",
    "ESTIMATION_FACTOR",
    "record_sizes",
    "varint_sizes",
    "record_upper_bounds",
    "update_estimate",
    "form_batches",
    "warm_estimate",
    "warm_records",
    "time_limits",
]

#: What the replay does not know or only approximates, one short line each (the report lists them).
LIMIT_ITEMS = ("each producer's records are re-batched by their timestamps, as its client (Java or librdkafka) would",
               "the sender delay is calibrated on today's batches",
               "at linger.ms=0 a Java producer's batches vary with the CPU its sender gets and the codec's work",
               "unless today's batches were sent at linger.ms=0, the delay at 0 ms is derived from today's",
               "keyless records stay in the partition that stored them",
               "the sticky partitioner's re-spread under another batch.size is replayed for record inputs only",
               "in-flight limits and buffer.memory back-pressure are not known")
LIMITS = "; ".join(LIMIT_ITEMS)
BATCH_OVERHEAD = RECORD_BATCH_OVERHEAD  # DefaultRecordBatch.RECORD_BATCH_OVERHEAD
ESTIMATION_FACTOR = 1.05  # MemoryRecordsBuilder.COMPRESSION_RATE_ESTIMATION_FACTOR
IMPROVING_STEP = 0.005  # CompressionRatioEstimator.COMPRESSION_RATIO_IMPROVING_STEP
MAX_RECORD_OVERHEAD = 21  # DefaultRecord.MAX_RECORD_OVERHEAD


def varint_sizes(values: np.ndarray) -> np.ndarray:
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
            + varint_sizes(key_len) + np.maximum(key_len, 0)
            + varint_sizes(value_len) + np.maximum(value_len, 0)
            + varint_sizes(hc) + hb)
    return body + varint_sizes(body)


def record_upper_bounds(key_len: np.ndarray, value_len: np.ndarray,
                        header_bytes: Optional[np.ndarray] = None) -> np.ndarray:
    """``DefaultRecordBatch.estimateBatchSizeUpperBound`` for a batch of one record."""
    hb = 0 if header_bytes is None else np.asarray(header_bytes, dtype=np.int64)
    return (BATCH_OVERHEAD + MAX_RECORD_OVERHEAD + np.maximum(np.asarray(key_len, np.int64), 0)
            + np.maximum(np.asarray(value_len, np.int64), 0) + hb)


def update_estimate(estimate: float, observed: float) -> float:
    """``CompressionRatioEstimator.updateEstimation`` (float32 arithmetic as in Java): a worse ratio
    raises the estimate by at least 0.05, a better one lowers it by 0.005 but never below it."""
    return update_estimate_f32(estimate, observed)


def form_batches(timestamps: np.ndarray, sizes: np.ndarray, upper_bounds: np.ndarray, batch_size: int,
                 linger_ms: float, compressed: bool = False,
                 close: Optional[Callable[[int, int], float]] = None, client: ClientRules = JAVA,
                 sender: Optional[SenderModel] = None, estimate: float = 1.0,
                 state: Optional[dict] = None) -> np.ndarray:
    """Batch boundaries of one producer's records of one partition, in arrival order.

    Returns ``starts`` with a final ``len(sizes)``: batch ``i`` is records
    ``starts[i]:starts[i+1]``.  For Java and a compressed codec, ``close(a, b)``
    is called as each batch closes and returns its observed compression ratio
    (compressed records size / uncompressed records size), which updates the
    estimate the next cut uses, as the producer does; for other batches it is
    called too when given, its answer unused.  ``sender`` defaults to the
    client's uncalibrated delay.  ``linger_ms=None`` cuts by size alone.
    ``estimate`` is the ratio estimate the first batch is cut with (1.0 for a
    producer that just started); ``state["estimate"]`` receives the last one.
    """
    starts, estimate = _cutter(timestamps, sizes, upper_bounds, batch_size, linger_ms, compressed, close, client,
                               sender)(estimate)
    if state is not None:
        state["estimate"] = estimate
    return starts


def _cutter(timestamps: np.ndarray, sizes: np.ndarray, upper_bounds: np.ndarray, batch_size: int,
            linger_ms: float, compressed: bool, close: Optional[Callable[[int, int], float]], client: ClientRules,
            sender: Optional[SenderModel]) -> Callable[[float], Tuple[np.ndarray, float]]:
    """:func:`form_batches` as a function of the starting estimate: its columns are prepared once for the
    rounds of :func:`warm_estimate`, which replay the same records from different estimates."""
    ts = np.asarray(timestamps, dtype=np.int64)
    sizes = np.asarray(sizes, dtype=np.int64)
    upper = np.ascontiguousarray(upper_bounds, dtype=np.int64)
    n = len(sizes)
    cum = np.zeros(n + 1, np.int64)
    np.cumsum(sizes, out=cum[1:])
    none = np.zeros(0, np.float64)
    arrival = closes = none
    if linger_ms is not None and np.isfinite(linger_ms):
        sender = sender or SenderModel.default(client)
        arrival = np.ascontiguousarray(arrival_ms(ts), dtype=np.float64)
        closes = np.ascontiguousarray(sender.close_times(arrival, ts, float(linger_ms)), dtype=np.float64)
    estimated = client.learns_ratio
    if estimated:
        overhead = BATCH_OVERHEAD
        nxt_size = sizes  # MemoryRecordsBuilder.hasRoomFor counts the record's own size
    else:
        overhead = client.fill_overhead
        if client.record_overhead is not None:
            # the client's own count of a record: key, value and headers plus a fixed overhead
            cost = upper - BATCH_OVERHEAD - MAX_RECORD_OVERHEAD + client.record_overhead
            np.cumsum(cost, out=cum[1:])
        if client.zero_linger_unbounded and linger_ms is not None and linger_ms == 0:
            batch_size = client.max_batch_bytes or (1 << 62)
        if client.max_batch_bytes is not None:
            batch_size = min(batch_size, client.max_batch_bytes)
        if client.next_record == "upper":
            nxt_size = upper - BATCH_OVERHEAD  # rd_kafka_msg_wire_size: the record's worst case
        elif client.next_record == "size":
            nxt_size = sizes
        else:
            # the record joins while the bytes before it are below the limit, whatever its own size
            nxt_size = np.zeros(n, np.int64)
            batch_size -= 1
    nxt_size = np.ascontiguousarray(nxt_size)
    learns = bool(compressed and estimated)
    most = client.max_records or n + 1

    def cut(estimate: float) -> Tuple[np.ndarray, float]:
        # The loop is native (one C step per record tried); close() is the only Python call per batch.
        return replay_cuts(cum, nxt_size, upper, arrival, closes, int(batch_size), overhead, estimated, learns,
                           most, float(estimate), close)

    return cut


def time_limits(timestamps: np.ndarray, linger_ms: Optional[float], client: ClientRules = JAVA,
                sender: Optional[SenderModel] = None) -> Optional[np.ndarray]:
    """For each record, the first later record that arrives too late for the batch it would open.

    This is all that :func:`form_batches` takes from ``linger_ms`` and the sender: two of them
    that give the same limits give the same cuts for any batch.size, codec and estimate, so a
    replay under one stands for the other.  Empty where linger does not apply (``None``, not
    finite); None where arrivals are out of order or a close time is not a number, when only
    the replay itself tells.
    """
    if linger_ms is None or not np.isfinite(linger_ms):
        return np.zeros(0, np.int64)
    ts = np.asarray(timestamps, dtype=np.int64)
    n = len(ts)
    sender = sender or SenderModel.default(client)
    arrival = np.ascontiguousarray(arrival_ms(ts), dtype=np.float64)
    closes = np.ascontiguousarray(sender.close_times(arrival, ts, float(linger_ms)), dtype=np.float64)
    if n > 1 and (bool(np.any(arrival[1:] < arrival[:-1])) or bool(np.isnan(closes).any())):
        return None
    # In arrival order the first record at or after a close time is found by bisection; the replay
    # looks from the record after the one that opened the batch.
    return np.maximum(np.searchsorted(arrival, closes, side="left"), np.arange(1, n + 1))


#: Most rounds :func:`warm_estimate` replays a chunk's first records.
WARM_ROUNDS = 8
#: Records of a chunk :func:`warm_estimate` replays: enough for several batches of any batch.size.
WARM_BYTES = 1024 * 1024


def warm_estimate(timestamps: np.ndarray, sizes: np.ndarray, upper_bounds: np.ndarray, batch_size: int,
                  linger_ms: float, ratio: Callable[[int, int], float], client: ClientRules = JAVA,
                  sender: Optional[SenderModel] = None) -> float:
    """The ratio estimate of a producer that has been running, for replaying a sampled chunk.

    A producer's ``CompressionRatioEstimator`` starts at 1.0 once, then follows its batches; a
    chunk cut out of a topic must not start it again.  The chunk's first records (up to
    :data:`WARM_BYTES`) are replayed as the producer would, starting from the ratio of the
    first batch-sized group of them, and again from where each round ended, until a round
    moves the estimate by less than one improving step (or :data:`WARM_ROUNDS` rounds).
    ``ratio(a, b)`` is the observed ratio of records ``a:b`` built as one batch.
    """
    sizes = np.asarray(sizes, dtype=np.int64)
    if not client.learns_ratio or len(sizes) == 0:
        return 1.0
    n = warm_records(sizes)
    cum = np.cumsum(sizes)
    first = max(1, min(n, int(np.searchsorted(cum, batch_size, side="right"))))
    estimate = float(np.float32(ratio(0, first)))
    cut = _cutter(np.asarray(timestamps)[:n], sizes[:n], np.asarray(upper_bounds)[:n], batch_size, linger_ms,
                  True, ratio, client, sender)
    for _ in range(WARM_ROUNDS):
        last = cut(estimate)[1]
        moved = abs(last - estimate)
        estimate = last
        if moved < IMPROVING_STEP:
            break
    return estimate


def warm_records(sizes: np.ndarray) -> int:
    """How many of a chunk's first records :func:`warm_estimate` replays."""
    sizes = np.asarray(sizes, dtype=np.int64)
    n = int(np.searchsorted(np.cumsum(sizes), WARM_BYTES, side="right")) + 1
    return min(n, len(sizes))
