"""The settings ``kcodec advise`` measures: codec x level x batch size."""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from typing import List, Optional

from kcodec.compression import CompressionType
from kcodec.errors import UnsupportedCodecError

__all__ = ["Setting", "parse_codecs", "parse_batch_sizes", "parse_lingers", "parse_size", "parse_share",
           "format_size", "DEFAULT_CODECS", "DEFAULT_BATCH_SIZES", "DEFAULT_LINGERS", "DEFAULT_CHUNK", "DEFAULT_SAMPLE",
           "CLUSTER_SAMPLE"]

DEFAULT_CODECS = "none,gzip,snappy,lz4,zstd:1,3,9"
DEFAULT_BATCH_SIZES = "16k,1m"
DEFAULT_LINGERS = "0,5,20,100"
DEFAULT_SAMPLE = "auto"  # per topic, from logs: until the answer is known (kcodec.advise.auto_sample)
# per topic, from a cluster under --sample auto: its topics' sizes are not known before a fetch
CLUSTER_SAMPLE = "64MiB"
DEFAULT_CHUNK = "4MiB"  # a sampled range holds several of the largest default batch.size
# IEC units (KiB, MiB, ...) and the one-letter forms Kafka users write for batch.size (16k) are
# powers of 1024; SI units (kB, MB, GB, TB) are powers of 1000, as storage is sold.
_UNITS = {"": 1, "b": 1}
for _i, _p in enumerate("kmgtp", 1):
    _UNITS.update({_p: 1024 ** _i, _p + "ib": 1024 ** _i, _p + "b": 1000 ** _i})


@functools.total_ordering
@dataclass(frozen=True)
class Setting:
    """A producer's compression.type (+ level), batch.size and linger.ms."""

    codec: str
    level: Optional[int]
    batch_bytes: int
    linger_ms: int = 0

    @property
    def label(self) -> str:
        lvl = "" if self.level is None else f":{self.level}"
        return f"{self.codec}{lvl}@{format_size(self.batch_bytes)}/{self.linger_ms}ms"

    @classmethod
    def parse(cls, text: str, batch_bytes: int, linger_ms: int) -> "Setting":
        """``zstd:3@256k/5ms`` (batch size and linger optional, defaulting to the given ones)."""
        codec_part, _, rest = str(text).partition("@")
        size_part, _, linger_part = rest.partition("/")
        codec, level = parse_codecs(codec_part)[0]
        if size_part:
            batch_bytes = parse_size(size_part)
        if linger_part:
            linger_ms = parse_lingers(linger_part.removesuffix("ms"))[0]
        return cls(codec, level, batch_bytes, linger_ms)

    @property
    def codec_label(self) -> str:
        return self.codec if self.level is None else f"{self.codec}:{self.level}"

    @property
    def default_level(self) -> bool:
        """Whether a client without KIP-390 levels gets this setting: no level, or the codec's default."""
        from kcodec.compression import get_codec

        return self.level is None or self.level == get_codec(self.codec).default_level

    def __lt__(self, other: "Setting") -> bool:
        # the codec's default level (None) first: a grid such as zstd,zstd:19 holds both
        return self._order() < other._order()

    def _order(self) -> tuple:
        return (self.codec, self.level is not None, self.level or 0, self.batch_bytes, self.linger_ms)


def parse_size(text: str) -> int:
    """Bytes in ``text``: ``16k``/``16KiB`` = 16384, ``10GB`` = 10**10, ``40TB`` = 4*10**13."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(text))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a size: {text!r} (examples: 16k, 256KiB, 1m, 10GB, 40TB)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


def parse_share(text) -> float:
    """A share between 0 and 1: ``0.05``, ``5%`` or ``5 %`` = 0.05."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?|\.\d+)\s*(%?)\s*", str(text))
    if not m:
        raise ValueError(f"not a share: {text!r} (examples: 0.05, 5%)")
    value = float(m.group(1)) / (100 if m.group(2) else 1)
    if value > 1:
        raise ValueError("a share is at most 1 (100%)")
    return value


def format_size(n: float) -> str:
    for unit, div in (("TiB", 1024 ** 4), ("GiB", 1024 ** 3), ("MiB", 1024 ** 2), ("KiB", 1024)):
        if abs(n) >= div:
            v = n / div
            return f"{v:.0f}{unit}" if v == int(v) else f"{v:.1f}{unit}"
    return f"{int(n)}B"


def _levels(c: CompressionType, text: str, spec: str) -> List[Optional[int]]:
    """``3`` or a range ``1-19`` of ``c``'s levels, each validated."""
    m = re.fullmatch(r"(-?\d+)-(-?\d+)", text)
    if m is None:
        return [c.validate_level(int(text))]
    lo, hi = int(m.group(1)), int(m.group(2))
    if lo > hi:
        raise UnsupportedCodecError(f"{c.kafka_name}:{text} in {spec!r}: a level range runs from low to high")
    return [c.validate_level(v) for v in range(lo, hi + 1)]


def parse_codecs(spec: str) -> List[tuple]:
    """``"none,gzip,zstd:1,3,19,lz4:9"`` -> [(codec, level or None), ...] (levels validated).

    A bare number after a ``codec:level`` item continues that codec's level list; ``zstd:1-19`` (or a bare
    ``1-19``) is every level from 1 to 19.
    """
    out: List[tuple] = []
    current: Optional[CompressionType] = None
    for item in [s.strip() for s in spec.split(",") if s.strip()]:
        if re.fullmatch(r"-?\d+(?:--?\d+)?", item):
            if current is None:
                raise UnsupportedCodecError(f"level {item} without a codec in {spec!r}")
            out.extend((current.kafka_name, v) for v in _levels(current, item, spec))
            continue
        name, _, level = item.partition(":")
        current = CompressionType.of(name)
        if level:
            out.extend((current.kafka_name, v) for v in _levels(current, level, spec))
        else:
            out.append((current.kafka_name, None))
    seen, unique = set(), []
    for c in out:
        if c not in seen:
            seen.add(c)
            unique.append(c)
    return unique


def parse_batch_sizes(spec: str) -> List[int]:
    return sorted({parse_size(s) for s in spec.split(",") if s.strip()})


def parse_lingers(spec: str) -> List[int]:
    """``"0,5,100"`` -> linger.ms values."""
    out = set()
    for item in (s.strip() for s in str(spec).split(",") if s.strip()):
        if not re.fullmatch(r"\d+", item):
            raise ValueError(f"not a linger.ms value: {item!r} (milliseconds, e.g. 0,5,100)")
        out.add(int(item))
    if not out:
        raise ValueError("no linger.ms value given")
    return sorted(out)
