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
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.grid import Setting
from kcodec.advise.task import TODAY
from kcodec.advise.today import TODAY_COLUMNS, today_profiles
from kcodec.advise.topic_profile import TopicProfile

__all__ = ["aggregate_rows", "TopicAggregate", "SettingLine", "SETTING_COLUMNS", "sample_std"]

#: The metrics columns a setting's line is summed from.
SETTING_COLUMNS = ("topic", "partition", "chunk", "setting", "codec", "level", "batch_size", "linger_ms", "records",
                   "payload_bytes", "plain_bytes", "batches", "stored_bytes", "compress_seconds", "read_seconds",
                   "worst_stored_bytes")


@dataclass(frozen=True)
class SettingLine:
    """One setting's metrics summed over a topic's measured chunks (today's batches: ``setting`` is
    :data:`~kcodec.advise.task.TODAY` and the setting's own fields are None)."""

    topic: str
    setting: str  #: the setting's label
    codec: Optional[str]
    level: Optional[int]
    batch_size: Optional[int]
    linger_ms: Optional[int]
    records: int
    payload_bytes: int
    plain_bytes: int
    batches: int
    stored_bytes: int
    compress_seconds: float  #: summed exactly (``math.fsum``) over the chunks
    compress_spread: float  #: the spread of its seconds per payload byte over the chunks, as seconds
    read_seconds: float
    read_spread: float
    worst_stored_bytes: Optional[int]  #: None unless every chunk has a worst case
    ratio_mean: Optional[float]  #: the mean and sample deviation of the chunks' compression ratios
    ratio_std: Optional[float]
    chunks: int
    partitions: int

    @property
    def grid_setting(self) -> Optional[Setting]:
        """The setting of the grid this line measured; None on today's line."""
        if self.codec is None or self.batch_size is None or self.linger_ms is None:
            return None
        return Setting(self.codec, self.level, self.batch_size, self.linger_ms)

    def doc(self) -> Dict[str, Any]:
        """The line under the metrics schema's names, which a previous ``results.json``'s settings also use:
        ``--check`` reads the two side by side."""
        return asdict(self)


@dataclass(frozen=True)
class TopicAggregate:
    """One topic's measurement on the driver: today's profile and one line per measured setting."""

    profile: TopicProfile
    settings: Tuple[SettingLine, ...]

    @property
    def today(self) -> SettingLine:
        """The line of today's batches (every measured chunk has one)."""
        return next(line for line in self.settings if line.setting == TODAY)


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


def _setting_line(key: tuple, rows: List[Dict[str, Any]]) -> SettingLine:
    topic, setting, codec, level, batch_size, linger_ms = key
    payload = [r["payload_bytes"] for r in rows]
    compress, read = [r["compress_seconds"] for r in rows], [r["read_seconds"] for r in rows]
    worst = [r["worst_stored_bytes"] for r in rows]
    ratios = [r["plain_bytes"] / r["stored_bytes"] for r in rows if r["stored_bytes"]]
    return SettingLine(
        topic, setting, codec, level, batch_size, linger_ms, records=sum(r["records"] for r in rows),
        payload_bytes=sum(payload), plain_bytes=sum(r["plain_bytes"] for r in rows),
        batches=sum(r["batches"] for r in rows), stored_bytes=sum(r["stored_bytes"] for r in rows),
        compress_seconds=math.fsum(compress), compress_spread=_spread(compress, payload),
        read_seconds=math.fsum(read), read_spread=_spread(read, payload),
        # a worst case holds for the topic only where every chunk has one
        worst_stored_bytes=sum(worst) if worst and all(w is not None for w in worst) else None,
        ratio_mean=math.fsum(ratios) / len(ratios) if ratios else None, ratio_std=sample_std(ratios),
        chunks=len(rows), partitions=len({r["partition"] for r in rows}))


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
    lines: Dict[str, List[SettingLine]] = {topic: [] for topic in profiles}
    for key, group in groups.items():
        if key[0] in lines:
            lines[key[0]].append(_setting_line(key, group))
    return {topic: TopicAggregate(profile, tuple(lines[topic])) for topic, profile in profiles.items()}
