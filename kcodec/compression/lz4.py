"""Compression type 3: Kafka's LZ4 frame (``Lz4BlockOutputStream`` / ``Lz4BlockInputStream``).

Writing: magic ``04 22 4d 18``, FLG 0x60 (version 1, independent blocks, no
checksums, no content size), BD 0x40 (64 KiB blocks), the header checksum
byte, the blocks, and the end mark ``00 00 00 00``.  The header checksum is
``(XXH32(FLG, BD) >> 8) & 0xFF`` = 0x82, except for magic 0, where Kafka keeps
the pre-KIP-57 value computed over the magic bytes too (0x1A) because old
readers expect it.  Each 64 KiB of input is one block; a block that does not
shrink is stored raw with bit 31 of its size set.

Levels are Kafka's 1-17, default 9.  Level 9 selects lz4-java's *fast*
compressor (plain LZ4, not LZ4HC, whatever the number suggests); every other
level selects LZ4HC at that level, which liblz4 caps at 12.

Where python-lz4's extension exports liblz4's functions (Linux wheels do),
whole frames are coded in one native call with the GIL released, and the
fast compressor is ``LZ4_compress_default``, the function lz4-java calls, so
level-9 output is Java's byte for byte.  Otherwise each 64 KiB block goes
through python-lz4 (whose default mode writes other, equally valid, bytes).

Reading applies Kafka's checks with Kafka's messages: reserved bits,
dependent (linked) blocks refused, version 1, block size id 4-7 (64 KiB to
4 MiB), content size skipped, header checksum verified except for magic 0,
block checksums verified, the content checksum read but not verified, and
anything after the end mark ignored.
"""
from __future__ import annotations

import ctypes
import os
import struct
from types import ModuleType
from typing import Any, Dict, List, Optional, Tuple, Union, cast

from kcodec._native.codecs import lz4_frame_compress, lz4_frame_decompress, lz4_native_codec, lz4_scan, xxh32
from kcodec.compression._lib import byte_view, import_library, library_version, native_library
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer, _LibraryCodec, _native_of
from kcodec.errors import CorruptCompressedDataError, LimitExceededError

__all__ = ["Lz4Codec", "LZ4_FRAME_HEADER", "LZ4_FRAME_HEADER_V0", "LZ4_BLOCK_SIZE", "LZ4_HC_MAX_LEVEL"]

_MAGIC = b"\x04\x22\x4d\x18"
_FLG, _BD = 0x60, 0x40
#: Frame header for magic 1 and 2: the checksum covers FLG and BD (LZ4 frame spec).
LZ4_FRAME_HEADER = _MAGIC + bytes((_FLG, _BD, (xxh32(bytes((_FLG, _BD))) >> 8) & 0xFF))
#: Frame header for magic 0: the checksum Kafka wrote before KIP-57, over magic+FLG+BD.
LZ4_FRAME_HEADER_V0 = _MAGIC + bytes((_FLG, _BD, (xxh32(_MAGIC + bytes((_FLG, _BD))) >> 8) & 0xFF))
#: Input bytes per block (BD 0x40).
LZ4_BLOCK_SIZE = 65536
#: liblz4's highest HC level; lz4-java passes higher ones through and liblz4 clamps them.
LZ4_HC_MAX_LEVEL = 12
#: The level Kafka maps to lz4-java's fast (non-HC) compressor.
FAST_LEVEL = 9

_END_MARK = b"\x00\x00\x00\x00"
_LE32 = struct.Struct("<I")
_RAW = 0x80000000


class Lz4Codec(_LibraryCodec):
    """LZ4 in Kafka's frame; levels 1-17 (9 = fast compressor, others LZ4HC)."""

    id = 3
    name = "lz4"
    min_level = 1
    max_level = 17
    default_level = 9
    requires = "lz4"

    def __init__(self) -> None:
        self._lz4: Optional[ModuleType] = None
        self._block: Any = None
        self._native: Optional[Tuple[int, int, int]] = None

    def load(self) -> None:
        # The engine is chosen here, once: liblz4's functions when python-lz4's
        # extension exports them, else python-lz4's per-block API.
        if self._lz4 is None:
            lz4 = import_library("lz4", self.requires, self.name)
            self._block = import_library("lz4.block", self.requires, self.name)
            self._native = _native_entry_points(self._block)
            if self._native is not None:
                self._capsule = lz4_native_codec(*self._native, LZ4_FRAME_HEADER, LZ4_FRAME_HEADER_V0)
                self._frame, self._unframe = self._native_frame, self._native_unframe
            else:
                self._frame, self._unframe = self._block_frame, self._block_unframe
            self._lz4 = lz4  # last: another thread takes a loaded codec as ready

    @property
    def backend(self) -> str:
        """``lz4 <python-lz4 version> (liblz4 <version>)``."""
        self.load()
        lib = self._lz4.library_version_string()  # type: ignore[union-attr]
        return f"{library_version(self._lz4)} (liblz4 {lib})"

    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        level = cast(int, self.resolve_level(level))  # never None: the codec has levels
        self.load()
        return self._frame(data, level, magic)

    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        self.load()
        return self._unframe(data, magic, max_size)

    # -- the two engines, one chosen by load() ------------------------------------
    def _native_frame(self, data: Buffer, level: int, magic: int) -> bytes:
        return _native_of(self).compress(data, level, magic)

    def _native_unframe(self, data: Buffer, magic: int, max_size: int) -> bytes:
        native = cast(Tuple[int, int, int], self._native)  # load() chose this engine because it is set
        return lz4_frame_decompress(data, magic != 0, max_size, native[2])

    def _block_frame(self, data: Buffer, level: int, magic: int) -> bytes:
        # python-lz4 per 64 KiB block (its default mode writes other, equally valid, bytes).
        header = LZ4_FRAME_HEADER_V0 if magic == 0 else LZ4_FRAME_HEADER
        compress_block = self._block.compress
        options: Dict[str, Union[str, int]]
        if level == FAST_LEVEL:
            options = {"mode": "default"}
        else:
            options = {"mode": "high_compression", "compression": min(level, LZ4_HC_MAX_LEVEL)}
        view = byte_view(data)
        pieces: List[Any] = [header]
        for start in range(0, len(view), LZ4_BLOCK_SIZE):
            chunk = view[start:start + LZ4_BLOCK_SIZE]
            block = compress_block(chunk, store_size=False, **options)
            if len(block) >= len(chunk):
                pieces.append(_LE32.pack(len(chunk) | _RAW))
                pieces.append(chunk)
            else:
                pieces.append(_LE32.pack(len(block)))
                pieces.append(block)
        pieces.append(_END_MARK)
        return b"".join(pieces)

    def _block_unframe(self, data: Buffer, magic: int, max_size: int) -> bytes:
        view = byte_view(data)
        max_block, blocks, _end = lz4_scan(view, magic != 0)
        decompress_block = self._block.decompress
        block_error = self._block.LZ4BlockError
        pieces: List[Any] = []
        total = 0
        for offset, size, raw in blocks:
            src = view[offset:offset + size]
            budget = max_size - total
            if raw:
                if size > budget:
                    raise self._limit(max_size, offset)
                pieces.append(src)
                total += size
                continue
            # The output buffer is the block maximum or the remaining budget
            # plus one byte, whichever is smaller: a bomb cannot make it grow.
            cap = min(max_block, budget + 1)
            try:
                out = decompress_block(src, uncompressed_size=cap)
            except block_error:
                if cap < max_block and self._fits(decompress_block, block_error, src, max_block):
                    raise self._limit(max_size, offset) from None
                raise CorruptCompressedDataError(
                    "lz4: corrupt block (LZ4 decompression failed)", position=offset) from None
            if len(out) > budget:
                raise self._limit(max_size, offset)
            pieces.append(out)
            total += len(out)
        if len(pieces) == 1 and isinstance(pieces[0], bytes):
            return pieces[0]
        return b"".join(pieces)

    @staticmethod
    def _fits(decompress_block: Any, block_error: Any, src: memoryview, max_block: int) -> bool:
        # Tells "valid but over the limit" from "corrupt"; the buffer is one
        # block (4 MiB at most), never the whole expansion.
        try:
            decompress_block(src, uncompressed_size=max_block)
        except block_error:
            return False
        return True

    @staticmethod
    def _limit(max_size: int, offset: int) -> LimitExceededError:
        return LimitExceededError(f"lz4: decompressed data exceeds the limit of {max_size} bytes",
                                  position=offset)


def _native_entry_points(block_module: ModuleType) -> Optional[Tuple[int, int, int]]:
    """Addresses of ``LZ4_compress_default``, ``LZ4_compress_HC`` and ``LZ4_decompress_safe``.

    python-lz4 links liblz4 into its extension; where the platform exports
    those symbols, kcodec calls them for a whole frame at a time.  They are
    checked against the Python API on a sample before use; None (the
    per-block Python path) when they are missing, when they disagree, or
    when ``KCODEC_LZ4_NATIVE=0``.
    """
    if os.environ.get("KCODEC_LZ4_NATIVE", "1") == "0":
        return None
    extension = getattr(block_module, "_block", block_module)  # python-lz4's compiled module
    try:
        lib = native_library(str(extension.__file__))
        fast, hc, dec = (ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                         for name in ("LZ4_compress_default", "LZ4_compress_HC", "LZ4_decompress_safe"))
    except (OSError, AttributeError, TypeError):
        return None
    if not (fast and hc and dec):
        return None
    # A sample through both paths: the HC output must equal python-lz4's, and
    # each side must read the other's frames.  (The fast compressor is not
    # compared: python-lz4's "default" mode picks other matches than
    # LZ4_compress_default, which is what lz4-java, and so Kafka, calls.)
    sample = b"kcodec lz4 self-check " * 300 + bytes(range(256)) * 40
    for level, options in ((0, {"mode": "default"}), (9, {"mode": "high_compression", "compression": 9})):
        framed = lz4_frame_compress(sample, LZ4_FRAME_HEADER, level, fast, hc, LZ4_BLOCK_SIZE)
        expected = block_module.compress(sample, store_size=False, **options)
        if level and framed != LZ4_FRAME_HEADER + _LE32.pack(len(expected)) + expected + _END_MARK:
            return None
        size = _LE32.unpack_from(framed, 7)[0]
        if block_module.decompress(framed[11:11 + size], uncompressed_size=len(sample)) != sample:
            return None
        theirs = LZ4_FRAME_HEADER + _LE32.pack(len(expected)) + expected + _END_MARK
        if lz4_frame_decompress(theirs, True, len(sample), dec) != sample:
            return None
    return fast, hc, dec
