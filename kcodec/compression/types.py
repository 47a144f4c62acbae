"""Kafka's ``CompressionType`` and ``TimestampType`` enums."""
from __future__ import annotations

import enum
from typing import TYPE_CHECKING, FrozenSet, Optional, Union

from kcodec.errors import UnsupportedCodecError

if TYPE_CHECKING:
    from kcodec.compression.base import Codec

__all__ = ["CompressionType", "TimestampType"]

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
    def codec(self) -> "Codec":
        """The active codec for this type (a plugin replaces a built-in); levels and magics are its own."""
        from kcodec.compression.registry import get_codec

        return get_codec(self.value)

    @property
    def min_level(self) -> Optional[int]:
        return self.codec.min_level

    @property
    def max_level(self) -> Optional[int]:
        return self.codec.max_level

    @property
    def default_level(self) -> Optional[int]:
        """The codec's default level (Kafka's for the built-ins), or None for types without levels."""
        return self.codec.default_level

    @property
    def magics(self) -> FrozenSet[int]:
        """Message format versions (magic) that may carry this type: zstd needs v2."""
        return self.codec.magics

    def supports_magic(self, magic: int) -> bool:
        return magic in self.magics

    def validate_level(self, level: Optional[int]) -> Optional[int]:
        """Return the effective level (the default for None); raise on a level the codec rejects."""
        return self.codec.resolve_level(level)

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
