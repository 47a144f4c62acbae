"""Compression type 2: snappy in snappy-java's stream format (``SnappyCompression``).

Writing produces exactly what ``SnappyOutputStream`` writes: the 16-byte
header ``82 53 4e 41 50 50 59 00 | BE32 1 | BE32 1`` and then, for every
32768 input bytes or fewer, ``BE32 compressed length`` + one raw snappy block.
The blocks are compressed by kcodec's own C encoder (csrc/kc_snappy.h), which
chooses the matches libsnappy 1.1.10 (inside snappy-java) chooses: the same
bytes as Kafka's Java client.

Reading accepts what ``SnappyInputStream`` accepts: the stream above
(detected by its 8-byte magic only; the version fields are not checked),
several such streams concatenated, up to three trailing bytes, and any other
payload as one raw (unframed) snappy block, which is what librdkafka writes.
Each block's declared uncompressed length is read before anything is
decompressed; their sum is checked against ``max_size`` and the output is
allocated once, at its exact size, and filled in place.

Library: ``cramjam`` (a dependency of python-snappy 0.7+, and the engine
python-snappy itself calls) decodes blocks for error reports; a python-snappy
older than 0.7, which carries its own C extension, compresses and decodes
block by block when cramjam is absent.
"""
from __future__ import annotations

import struct
from types import ModuleType
from typing import Any, Callable, List, Optional

from kcodec._native.codecs import alloc_bytes, snappy_native_codec, snappy_scan
from kcodec.compression._lib import byte_view, import_library, library_version
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer, _LibraryCodec, _native_of
from kcodec.errors import CodecLibraryMissingError, CorruptCompressedDataError

__all__ = ["SnappyCodec", "SNAPPY_JAVA_HEADER", "SNAPPY_JAVA_BLOCK_SIZE"]

#: snappy-java's stream header: magic, version 1, compatible version 1.
SNAPPY_JAVA_HEADER = b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1)
#: ``SnappyOutputStream``'s default block size: input is cut every 32 KiB.
SNAPPY_JAVA_BLOCK_SIZE = 32768

_BE32 = struct.Struct(">I")


class SnappyCodec(_LibraryCodec):
    """snappy framed as snappy-java (Kafka's Java client) frames it; no levels."""

    id = 2
    name = "snappy"
    requires = "python-snappy"

    def __init__(self) -> None:
        self._module: Optional[ModuleType] = None
        # set by load(), which every call runs first
        self._compress_block: Callable[[Any], Any]
        self._decompress_into: Callable[[memoryview, memoryview], int]
        self._errors: tuple = ()

    def load(self) -> None:
        if self._module is not None:
            return
        try:
            cj = import_library("cramjam", self.requires, self.name)
        except CodecLibraryMissingError:
            legacy = import_library("snappy", self.requires, self.name)
            self._use_legacy(legacy)
            return
        # kcodec/codec.h's functions compress and decode the blocks in C, choosing the
        # matches snappy-java's libsnappy chooses; python-snappy before 0.7 block by block.
        self._compress_block = cj.snappy.compress_raw
        self._capsule = snappy_native_codec()
        self._frame = self._native_frame
        self._decompress_into = cj.snappy.decompress_raw_into
        self._errors = (cj.DecompressionError,)
        self._module = cj  # last: another thread takes a loaded codec as ready

    def _use_legacy(self, snappy: ModuleType) -> None:
        def decompress_into(src: memoryview, dst: memoryview) -> int:
            out = snappy.uncompress(src)
            if len(out) != len(dst):
                raise ValueError(f"block decompressed to {len(out)} bytes, its header says {len(dst)}")
            dst[:] = out
            return len(out)

        self._compress_block = snappy.compress
        self._frame = self._block_frame
        self._decompress_into = decompress_into
        self._errors = (Exception,)
        self._module = snappy

    @property
    def backend(self) -> str:
        """``cramjam <version>`` or ``snappy <version>`` (python-snappy before 0.7)."""
        self.load()
        return library_version(self._module)

    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        self.resolve_level(level)
        self.load()
        return self._frame(data)

    def _native_frame(self, data: Buffer) -> bytes:
        return _native_of(self).compress(data, 0, 2)

    def _block_frame(self, data: Buffer) -> bytes:
        view = byte_view(data)
        compress_block = self._compress_block
        pieces: List[Any] = [SNAPPY_JAVA_HEADER]
        for start in range(0, len(view), SNAPPY_JAVA_BLOCK_SIZE):
            block = compress_block(view[start:start + SNAPPY_JAVA_BLOCK_SIZE])
            pieces.append(_BE32.pack(len(block)))
            pieces.append(block)
        return b"".join(pieces)

    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        self.load()
        view = byte_view(data)
        _framed, blocks, total = snappy_scan(view, max_size)
        out, dst = alloc_bytes(total)
        decompress_into = self._decompress_into
        pos = 0
        try:
            for offset, size, usize in blocks:
                try:
                    written = decompress_into(view[offset:offset + size], dst[pos:pos + usize])
                except self._errors as exc:
                    raise CorruptCompressedDataError(
                        f"snappy: [FAILED_TO_UNCOMPRESS] corrupt block: {exc}", position=offset) from None
                if written != usize:
                    raise CorruptCompressedDataError(
                        f"snappy: block decompressed to {written} bytes, its header says {usize}",
                        position=offset)
                pos += usize
        finally:
            dst.release()
        return out
