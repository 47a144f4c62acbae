"""Compression type 0: records stored as they are."""
from __future__ import annotations

from typing import Optional

from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer, Codec

__all__ = ["NoneCodec"]


class NoneCodec(Codec):
    id = 0
    name = "none"

    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        self.resolve_level(level)
        return bytes(data)

    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        view = memoryview(data).cast("B")
        self.check_limit(view.nbytes, max_size)
        return bytes(view)
