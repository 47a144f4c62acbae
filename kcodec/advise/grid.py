"""The settings ``kcodec advise`` measures: codec x level x batch size."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import List, Optional

from kcodec.compression import CompressionType
from kcodec.errors import UnsupportedCodecError

__all__ = ["Setting", "parse_codecs", "parse_batch_sizes", "parse_size", "format_size",
           "DEFAULT_CODECS", "DEFAULT_BATCH_SIZES"]

DEFAULT_CODECS = "none,gzip,snappy,lz4,zstd:1,3,9"
DEFAULT_BATCH_SIZES = "16k,256k,1m"
_UNITS = {"": 1, "b": 1, "k": 1024, "kb": 1024, "kib": 1024, "m": 1024 ** 2, "mb": 1024 ** 2,
          "mib": 1024 ** 2, "g": 1024 ** 3, "gb": 1024 ** 3, "gib": 1024 ** 3, "t": 1024 ** 4,
          "tb": 1024 ** 4, "tib": 1024 ** 4}


@dataclass(frozen=True, order=True)
class Setting:
    codec: str
    level: Optional[int]
    batch_bytes: int

    @property
    def label(self) -> str:
        lvl = "" if self.level is None else f":{self.level}"
        return f"{self.codec}{lvl}@{format_size(self.batch_bytes)}"

    @property
    def codec_label(self) -> str:
        return self.codec if self.level is None else f"{self.codec}:{self.level}"


def parse_size(text: str) -> int:
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 16k, 1m, 10GB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def format_size(n: float) -> str:
    for unit, div in (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(n) >= div:
            v = n / div
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}B"


def parse_codecs(spec: str) -> List[tuple]:
    """``"none,gzip,zstd:1,3,19,lz4:9"`` -> [(codec, level or None), ...] (levels validated).

    A bare number after a ``codec:level`` item continues that codec's level list.
    """
    out: List[tuple] = []
    current = None
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        if re.fullmatch(r"-?\d+", item):
            if current is None:
                raise UnsupportedCodecError(f"level {item} without a codec in {spec!r}")
            out.append((current, current_type.validate_level(int(item))))
            continue
        name, _, level = item.partition(":")
        current_type = CompressionType.of(name)
        current = current_type.kafka_name
        lvl = current_type.validate_level(int(level)) if level else None
        out.append((current, lvl))
    seen, unique = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def parse_batch_sizes(spec: str) -> List[int]:
    return sorted({parse_size(s) for s in spec.split(",") if s.strip()})
