"""Kafka's ``CompressionType`` and ``TimestampType`` enums."""
from __future__ import annotations

import enum
from typing import FrozenSet, Optional, Union

from kcodec.errors import UnsupportedCodecError

__all__ = ["CompressionType", "TimestampType"]

_LEVELS = {
    # id: (min, max, default, extra allowed values) -- KIP-390 (Kafka 3.8+)
    0: None,
    1: (1, 9, -1, (-1,)),  # -1 = Deflater.DEFAULT_COMPRESSION (zlib 6)
    2: None,
    3: (1, 17, 9, ()),
    4: (-131072, 22, 3, ()),
}


class CompressionType(enum.IntEnum):
    """Kafka's compression types: the id stored in bits 0-2 of a batch's attributes."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def kafka_name(self) -> str:
        """Kafka's name for the type: ``none``, ``gzip``, ``snappy``, ``lz4`` or ``zstd``."""
        return self.name.lower()

    @property
    def min_level(self) -> Optional[int]:
        lv = _LEVELS[self.value]
        return None if lv is None else lv[0]

    @property
    def max_level(self) -> Optional[int]:
        lv = _LEVELS[self.value]
        return None if lv is None else lv[1]

    @property
    def default_level(self) -> Optional[int]:
        """Kafka's default level, or None for types without levels."""
        lv = _LEVELS[self.value]
        return None if lv is None else lv[2]

    @property
    def magics(self) -> FrozenSet[int]:
        """Message format versions (magic) that may carry this type: zstd needs v2."""
        return frozenset({2}) if self is CompressionType.ZSTD else frozenset({0, 1, 2})

    def supports_magic(self, magic: int) -> bool:
        return magic in self.magics

    def validate_level(self, level: Optional[int]) -> Optional[int]:
        """Return the effective level (the default for None); raise on a level Kafka rejects."""
        lv = _LEVELS[self.value]
        if level is None:
            return None if lv is None else lv[2]
        if lv is None:
            raise UnsupportedCodecError(f"compression type {self.kafka_name} has no levels (got {level!r})")
        lo, hi, _default, extra = lv
        if isinstance(level, bool) or not isinstance(level, int):
            raise UnsupportedCodecError(f"{self.kafka_name} level must be an int, got {level!r}")
        if not (lo <= level <= hi or level in extra):
            also = f" or equal to {extra[0]}" if extra else ""
            raise UnsupportedCodecError(
                f"invalid {self.kafka_name} level {level}: must be between {lo} and {hi}{also}")
        return level

    @classmethod
    def from_id(cls, type_id: int) -> "CompressionType":
        try:
            return cls(type_id)
        except ValueError:
            raise UnsupportedCodecError(
                f"Unknown compression type id: {type_id!r}; valid ids are "
                + ", ".join(f"{c.value} ({c.kafka_name})" for c in cls)) from None

    @classmethod
    def from_name(cls, name: str) -> "CompressionType":
        key = name.strip().lower() if isinstance(name, str) else name
        if key == "uncompressed":  # the topic-level spelling of none
            return cls.NONE
        for c in cls:
            if c.kafka_name == key:
                return c
        raise UnsupportedCodecError(
            f"unknown compression type name: {name!r}; valid names are "
            + ", ".join(c.kafka_name for c in cls))

    @classmethod
    def of(cls, value: Union["CompressionType", int, str]) -> "CompressionType":
        """Accept an enum member, an id or a (case-insensitive) name."""
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            return cls.from_name(value)
        if isinstance(value, int) and not isinstance(value, bool):
            return cls.from_id(value)
        raise UnsupportedCodecError(f"not a compression type: {value!r}")


class TimestampType(enum.IntEnum):
    """How a batch's timestamps were assigned."""

    NO_TIMESTAMP_TYPE = -1
    CREATE_TIME = 0
    LOG_APPEND_TIME = 1

    @property
    def kafka_name(self) -> str:
        return {-1: "NoTimestampType", 0: "CreateTime", 1: "LogAppendTime"}[self.value]
