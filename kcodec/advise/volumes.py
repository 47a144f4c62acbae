"""Daily volumes the user knows better than a short sample can tell: ``--bytes-per-day`` and ``--volumes FILE``.

A volumes file holds one topic a line, its name and the bytes its producers send a
day, separated by a comma or white space (``orders,120GB`` or ``orders 120GiB``);
blank lines and lines starting with ``#`` are skipped.
"""
from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import Dict, Mapping, Optional, Tuple

from kcodec.advise.cost import TopicEconomics
from kcodec.advise.grid import parse_size
from kcodec.errors import KcodecError

__all__ = ["load_volumes", "parse_volume", "given_volume"]


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
