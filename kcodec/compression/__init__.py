"""Kafka's compression types, the ``Codec`` interface and the codec registry."""
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Codec
from kcodec.compression.registry import (
    ENTRY_POINT_GROUP,
    CodecInfo,
    codecs,
    get_codec,
    register_codec,
    unregister_codec,
)
from kcodec.compression.types import CompressionType, TimestampType

__all__ = [
    "Codec",
    "CodecInfo",
    "CompressionType",
    "TimestampType",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "ENTRY_POINT_GROUP",
    "codecs",
    "get_codec",
    "register_codec",
    "unregister_codec",
]
