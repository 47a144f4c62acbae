"""Daily volumes: what the user knows better than a short sample can tell (``--bytes-per-day``, ``--volumes FILE``),
and the ladder of bytes per day a topic is priced at (:func:`daily_volume`).

A volumes file holds one topic a line, its name and the bytes its producers send a
day, separated by a comma or white space (``orders,120GB`` or ``orders 120GiB``);
blank lines and lines starting with ``#`` are skipped.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Tuple

from kcodec.advise.cost import TopicEconomics
from kcodec.advise.grid import format_size, parse_size
from kcodec.errors import KcodecError

__all__ = ["load_volumes", "parse_volume", "given_volume", "DailyVolume", "daily_volume", "span_text", "MS_PER_DAY"]


def parse_volume(flag: str, text: str) -> int:
    try:
        n = parse_size(text)
    except ValueError as exc:
        raise KcodecError(f"{flag} {text}: {exc}") from None
    if n <= 0:
        raise KcodecError(f"{flag} {text}: bytes per day must be more than 0")
    return n


def load_volumes(path: Optional[str]) -> Dict[str, int]:
    """topic -> bytes per day, from ``path``; errors name the file and line."""
    if not path:
        return {}
    p = Path(path)
    if not p.is_file():
        raise KcodecError(f"--volumes {path}: no such file")
    try:
        text = p.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise KcodecError(f"--volumes {path}: not UTF-8 text (byte {exc.start})") from None
    out: Dict[str, int] = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        parts = re.split(r"\s*,\s*|\s+", line)
        if len(parts) != 2 or not parts[0]:
            raise KcodecError(f"--volumes {path}: line {n}: expected 'topic,bytes per day', e.g. orders,120GB")
        topic, size = parts
        if topic in out:
            raise KcodecError(f"--volumes {path}: line {n}: topic {topic} given twice")
        out[topic] = parse_volume(f"--volumes {path}: line {n}:", size)
    return out


def given_volume(topic: str, econ: TopicEconomics, volumes: Mapping[str, int], volumes_file: Optional[str],
                 per_topic: Mapping[str, TopicEconomics], bytes_per_day: Optional[int]) -> Tuple[TopicEconomics, str]:
    """The topic's economics with the bytes per day the user gave, and which flag or file gave it:
    its line of ``--volumes`` first, then its ``--prices`` entry, then ``--bytes-per-day``."""
    if topic in volumes:
        return replace(econ, bytes_per_day=float(volumes[topic])), f"--volumes {volumes_file}"
    if topic in per_topic and per_topic[topic].bytes_per_day is not None:
        return econ, "--prices"
    if bytes_per_day is not None:
        return replace(econ, bytes_per_day=float(bytes_per_day)), "--bytes-per-day"
    return econ, "--prices"


MS_PER_DAY = 86_400_000


@dataclass(frozen=True)
class DailyVolume:
    """The bytes a topic's producers store a day, and what that figure rests on."""

    per_day: float
    source: str  #: where the figure comes from, in a sentence
    tag: str  #: the same in a few words
    priced: bool  #: False: the span is too short to tell a daily volume, the topic is left out of the dollars
    notes: Tuple[str, ...] = ()


def daily_volume(stored_bytes: int, records: int, known_bytes: Optional[int], topic_offsets: Optional[int],
                 sampled_partitions: Optional[int], partition_rate: Optional[float], span_ms: float,
                 bytes_per_day: Optional[float], given: str, min_span_ms: float) -> DailyVolume:
    """The ladder of bytes per day, first rung that applies: ``bytes_per_day`` when given (``given`` names the
    flag or file); a live cluster's ``topic_offsets`` at the sample's stored bytes per record over the span;
    the sampled chunks' rate times ``sampled_partitions``; ``known_bytes`` (all segments) or the measured
    ``stored_bytes`` over the timestamps' span; else the data as one day.  A span shorter than
    ``min_span_ms`` marks the volume not priced."""
    notes: List[str] = []
    per_day: float
    stored_total: float = known_bytes if known_bytes else stored_bytes
    if topic_offsets is not None and records:
        stored_total = topic_offsets * stored_bytes / records
    priced = True
    if bytes_per_day is not None:
        per_day, source, tag = float(bytes_per_day), f"given ({given})", f"given, {given}"
    elif topic_offsets is not None and span_ms > 0:
        per_day = stored_total / (span_ms / MS_PER_DAY)
        source = (f"{topic_offsets} offsets from each partition's earliest (ListOffsets) to its high watermark at the "
                  f"sample's {stored_bytes / max(1, records):.0f} stored bytes per record, "
                  f"over their timestamps' span of {span_text(span_ms)}")
        tag = f"offsets over {span_text(span_ms)}"
    elif sampled_partitions and partition_rate:
        per_day = partition_rate * MS_PER_DAY * sampled_partitions
        source = f"the sampled chunks' mean rate x {sampled_partitions} partitions"
        tag = "sampled chunks' rate"
    elif span_ms > 0:
        per_day = stored_total / (span_ms / MS_PER_DAY)
        source = (f"{'all segments' if known_bytes else 'the measured records'} over their timestamps' span "
                  f"of {span_text(span_ms)}")
        tag = f"{'segments' if known_bytes else 'records'} over {span_text(span_ms)}"
    else:
        per_day, source = float(stored_total), "no timestamps: the data is taken as one day of traffic"
        tag = "no timestamps"
        notes.append("no usable timestamps: linger.ms cannot be replayed and bytes per day are a guess; "
                     "give bytes_per_day in --prices")
    if bytes_per_day is None and min_span_ms > 0 and span_ms < min_span_ms:
        priced = False
        tag = f"not priced: span {span_text(span_ms)}"
        notes.append(f"not priced: the timestamps span {span_text(span_ms)}, too short to know a daily volume "
                     f"(--min-span-hours {min_span_ms / 3_600_000:g}); the dollars shown extrapolate "
                     f"{format_size(stored_total)} to {format_size(per_day)}/day and are left out of the "
                     f"estate's total: give --bytes-per-day or a --volumes file")
    return DailyVolume(per_day, source, tag, priced, tuple(notes))


def span_text(ms: float) -> str:
    """A span of milliseconds in its largest whole unit, to three figures."""
    for unit, div in (("days", MS_PER_DAY), ("h", 3_600_000), ("min", 60_000), ("s", 1000)):
        if ms >= div:
            return f"{ms / div:.3g} {unit}"
    return f"{ms:.0f} ms"
