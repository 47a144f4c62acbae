"""Today's batches of each topic, summed over its sampled chunks: the profile the advice starts from.

Each chunk's metrics row for today (:data:`kcodec.advise.task.TODAY`) carries
the chunk's profile: its codecs and message formats, timestamps, record size
histogram, the records and bytes of each of its batches, and the sender the
replay calibrated.  There is one such row per chunk, so they are summed here,
on the driver, in one pass over an Arrow table in a fixed order (topic,
partition, chunk): the same rows give the same figures to the last bit,
whatever order Spark's tasks finished in.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from kcodec.advise.profile import CODEC_NAMES, HIST_BINS
from kcodec.advise.replay import DEFAULT_CLIENT
from kcodec.advise.topic_profile import ReplayProfile, Spread, TopicProfile

__all__ = ["TODAY_COLUMNS", "today_profiles", "percentile", "median_element"]

#: The metrics columns this module reads.
TODAY_COLUMNS = ("topic", "partition", "chunk", "min_ts", "max_ts", "stored_bytes", "batches", "log_append_batches",
                 "codec_bytes", "magic_batches", "record_size_hist", "batch_records", "batch_bytes", "client",
                 "sender_delay_ms", "sender_calibrated", "replay_batches", "producer_ids", "producers_replayed",
                 "client_recognised")


def percentile(values: np.ndarray, p: float) -> float:
    """The exact percentile ``p`` (0..1) of ``values``, interpolated between the two nearest ranks."""
    v = np.sort(np.asarray(values, dtype=np.float64))
    position = (len(v) - 1) * p
    lower, higher = math.floor(position), math.ceil(position)
    if lower == higher:
        return float(v[lower])
    return float((higher - position) * v[lower] + (position - lower) * v[higher])


def median_element(values: Sequence[float]) -> float:
    """The middle value itself (the lower of two): a chunk's calibrated sender delay, not a blend of two."""
    v = sorted(values)
    return float(v[max(1, math.ceil(0.5 * len(v))) - 1])


def _spread(arrays: List[Any]) -> Optional[Spread]:
    v = np.concatenate([np.asarray(a, dtype=np.int64) for a in arrays]) if arrays else np.zeros(0, np.int64)
    if len(v) == 0:
        return None
    return Spread(percentile(v, 0.1), percentile(v, 0.5), percentile(v, 0.9), float(v.sum()) / len(v))


def today_profiles(table) -> Dict[str, TopicProfile]:
    """Per topic: today's profile (timestamps, ``partition_rate``, codec bytes, message formats, record
    sizes, records and bytes per batch) and the replay's sender calibration.

    ``table`` holds today's metrics rows (:data:`TODAY_COLUMNS`), one per chunk.
    """
    rows = table.select(list(TODAY_COLUMNS)).to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["partition"], r["chunk"]))
    by_topic: Dict[str, List[Dict[str, Any]]] = {}
    for r in rows:
        by_topic.setdefault(r["topic"], []).append(r)
    out: Dict[str, TopicProfile] = {}
    for topic, rs in by_topic.items():
        rates = [r["stored_bytes"] / (r["max_ts"] - r["min_ts"]) for r in rs if r["max_ts"] - r["min_ts"] > 0]
        today_batches = sum(r["batches"] for r in rs)
        replay_batches = sum(r["replay_batches"] for r in rs)
        clients = sorted({r["client"] for r in rs if r["client"] is not None})
        replay = ReplayProfile(
            client=clients[0] if len(clients) == 1 else DEFAULT_CLIENT.name, clients=tuple(clients),
            # a chunk whose framing no single client writes was replayed with Java's rules
            recognised=len(clients) == 1 and all(r["client_recognised"] is not False for r in rs),
            sender_delay_ms=median_element([r["sender_delay_ms"] for r in rs]),
            calibrated_share=sum(1.0 for r in rs if r["sender_calibrated"]) / len(rs),
            calibration_error=today_batches / max(1, replay_batches) - 1.0,
            producer_ids=max(r["producer_ids"] for r in rs),
            producers_replayed=max(r["producers_replayed"] for r in rs))
        out[topic] = TopicProfile(
            min_ts=min(r["min_ts"] for r in rs), max_ts=max(r["max_ts"] for r in rs),
            log_append_batches=sum(r["log_append_batches"] for r in rs),
            partition_rate=math.fsum(rates) / len(rates) if rates else None,
            codec_bytes={CODEC_NAMES[i]: sum(r["codec_bytes"][i] for r in rs) for i in range(len(CODEC_NAMES))},
            magic_batches={i: sum(r["magic_batches"][i] for r in rs) for i in range(3)},
            record_size_hist=tuple(sum(r["record_size_hist"][i] for r in rs) for i in range(HIST_BINS)),
            batch_records=_spread([r["batch_records"] for r in rs if r["batch_records"]]),
            batch_bytes=_spread([r["batch_bytes"] for r in rs if r["batch_bytes"]]),
            replay=replay)
    return out
