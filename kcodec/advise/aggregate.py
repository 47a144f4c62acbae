"""Each topic's measured chunks summed into one line per setting, on the driver, in a fixed order.

The measuring tasks give one metrics row per chunk and setting
(:data:`kcodec.advise.task.METRICS_DDL`).  A topic is tens of chunks and a grid
is tens of settings, so the rows are few: they come back to the driver as one
Arrow table and are summed here, sorted by (topic, setting, partition, chunk)
and with exactly rounded float sums, so the same rows give the same figures
to the last bit whatever order Spark's tasks finished in.  Sampling to a
target (:mod:`kcodec.advise.auto_sample`) reads the same rows between its
rounds.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.task import TODAY
from kcodec.advise.today import TODAY_COLUMNS, today_profiles
from kcodec.advise.topic_profile import TopicProfile

__all__ = ["aggregate_rows", "TopicAggregate", "SETTING_COLUMNS", "sample_std"]

#: The metrics columns a setting's line is summed from.
SETTING_COLUMNS = ("topic", "partition", "chunk", "setting", "codec", "level", "batch_size", "linger_ms", "records",
                   "payload_bytes", "plain_bytes", "batches", "stored_bytes", "compress_seconds", "read_seconds",
                   "worst_stored_bytes")

_SUMMED = ("records", "payload_bytes", "plain_bytes", "batches", "stored_bytes")
_TIMED = ("compress_seconds", "read_seconds")


@dataclass(frozen=True)
class TopicAggregate:
    """One topic's measurement on the driver: today's profile and one line per measured setting.

    A line (today's has ``setting`` :data:`~kcodec.advise.task.TODAY`) is the columns of
    :data:`SETTING_COLUMNS` summed over the chunks, with the ratio's mean and spread and the chunks and
    partitions measured.  It stays a dict under the metrics schema's names: ``--check`` reads the lines of
    a new measurement beside the settings of a previous ``results.json``, by the same names.
    """

    profile: TopicProfile
    settings: Tuple[Dict[str, Any], ...]


def sample_std(values: Sequence[float]) -> Optional[float]:
    """The sample standard deviation (n - 1), None below two values; two passes over exact sums."""
    n = len(values)
    if n < 2:
        return None
    mean = math.fsum(values) / n
    return math.sqrt(math.fsum((v - mean) ** 2 for v in values) / (n - 1))


def _spread(seconds: List[float], payload: List[int]) -> float:
    """A measured time's spread as seconds: the relative spread of its seconds per payload byte over the
    chunks, times the summed seconds; 0 where fewer than two chunks tell."""
    per_byte = [s / p for s, p in zip(seconds, payload) if p > 0]
    std = sample_std(per_byte)
    mean = math.fsum(per_byte) / len(per_byte) if per_byte else 0.0
    if std is None or mean <= 0:
        return 0.0
    return std / mean * math.fsum(seconds)


def _setting_line(key: tuple, rows: List[Dict[str, Any]]) -> Dict[str, Any]:
    topic, setting, codec, level, batch_size, linger_ms = key
    line: Dict[str, Any] = {"topic": topic, "setting": setting, "codec": codec, "level": level,
                            "batch_size": batch_size, "linger_ms": linger_ms}
    for col in _SUMMED:
        line[col] = sum(r[col] for r in rows)
    payload = [r["payload_bytes"] for r in rows]
    for col in _TIMED:
        seconds = [r[col] for r in rows]
        line[col] = math.fsum(seconds)
        line[col.replace("seconds", "spread")] = _spread(seconds, payload)
    worst = [r["worst_stored_bytes"] for r in rows]
    # a worst case holds for the topic only where every chunk has one
    line["worst_stored_bytes"] = sum(worst) if worst and all(w is not None for w in worst) else None
    ratios = [r["plain_bytes"] / r["stored_bytes"] for r in rows if r["stored_bytes"]]
    line["ratio_mean"] = math.fsum(ratios) / len(ratios) if ratios else None
    line["ratio_std"] = sample_std(ratios)
    line["chunks"] = len(rows)
    line["partitions"] = len({r["partition"] for r in rows})
    return line


def aggregate_rows(table) -> Dict[str, TopicAggregate]:
    """Per topic: the profile of today's batches and one line per setting (sums, the ratio's mean and
    spread over the chunks, the chunks and partitions measured).

    ``table`` is the Arrow table of every measured chunk's metrics rows.
    """
    import pyarrow.compute as pc

    today = table.filter(pc.equal(table["setting"], TODAY)).select(list(TODAY_COLUMNS))
    profiles = today_profiles(today)
    rows = table.select(list(SETTING_COLUMNS)).to_pylist()
    rows.sort(key=lambda r: (r["topic"], r["setting"], r["partition"], r["chunk"]))
    groups: Dict[tuple, List[Dict[str, Any]]] = {}
    for r in rows:
        key = (r["topic"], r["setting"], r["codec"], r["level"], r["batch_size"], r["linger_ms"])
        groups.setdefault(key, []).append(r)
    lines: Dict[str, List[Dict[str, Any]]] = {topic: [] for topic in profiles}
    for key, group in groups.items():
        if key[0] in lines:
            lines[key[0]].append(_setting_line(key, group))
    return {topic: TopicAggregate(profile, tuple(lines[topic])) for topic, profile in profiles.items()}
