"""Compression type 1: gzip, framed byte for byte as Java's ``GZIPOutputStream`` (``GzipCompression``).

Writing: one member with the JDK's 10-byte header ``1f8b 0800 00000000 00 ff``,
raw deflate at the requested level (memLevel 8, default strategy, as
``java.util.zip.Deflater``), then CRC-32 and ISIZE.  With the same zlib
version the output equals Java's byte for byte.

Reading follows ``GZIPInputStream``: optional FEXTRA/FNAME/FCOMMENT/FHCRC
header fields (FHCRC verified), the trailer verified, further members read as
one continuous stream, and anything after a member that does not parse as a
gzip header silently ignored.  zlib-wrapped or raw deflate data is rejected.

The deflate engine is zlib: compression by kcodec's C functions over the
zlib library (the codec's :meth:`~GzipCodec.native_codec`), which the
builder, ``from_arrow``, ``to_arrow`` and the readers call without the GIL.
Subclasses (the ``kcodec-isal`` plugin) swap in any module with zlib's API by
overriding :attr:`GzipCodec.engine_module` and :meth:`GzipCodec.engine_level`;
they then work through the Python methods.
"""
from __future__ import annotations

import struct
from types import ModuleType
from typing import List, Optional, cast

from kcodec._native.codecs import gzip_native_codec
from kcodec.compression._lib import byte_view, import_library, library_version
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer, _LibraryCodec, _native_of
from kcodec.errors import CorruptCompressedDataError, LimitExceededError

__all__ = ["GzipCodec", "JAVA_GZIP_HEADER"]

#: The header every JDK 16+ ``GZIPOutputStream`` writes: no flags, MTIME 0, XFL 0, OS 255.
JAVA_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"

_FHCRC, _FEXTRA, _FNAME, _FCOMMENT = 0x02, 0x04, 0x08, 0x10
_EOF = "Unexpected end of ZLIB input stream"
_TRAILER = struct.Struct("<II")


class _NotAHeader(Exception):
    def __init__(self, message: str, position: int) -> None:
        super().__init__(message)
        self.message = message
        self.position = position


def _skip_zero_terminated(view: memoryview, pos: int) -> int:
    n = len(view)
    while pos < n:
        if view[pos] == 0:
            return pos + 1
        pos += 1
    raise _NotAHeader(_EOF, n)


class GzipCodec(_LibraryCodec):
    """gzip as Kafka writes and reads it; levels 1-9 or -1 (zlib's default, 6)."""

    id = 1
    name = "gzip"
    min_level = 1
    max_level = 9
    default_level = -1
    extra_levels = (-1,)
    requires = None  # zlib ships with CPython

    #: Module with zlib's API (``compressobj``, ``decompressobj``, ``crc32``, ``error``).
    engine_module: str = "zlib"
    #: Distribution to install when :attr:`engine_module` is missing.
    engine_package: str = "zlib"

    def __init__(self) -> None:
        self._engine: Optional[ModuleType] = None

    # -- engine hooks ---------------------------------------------------------
    def engine_level(self, level: int) -> int:
        """The engine's level for a Kafka level (1-9, or -1 for the default)."""
        return 6 if level == -1 else level

    def load(self) -> None:
        # The engine is chosen here, once: kcodec's C functions over zlib for
        # the zlib engine, the engine module's compressobj for another.
        if self._engine is None:
            engine = import_library(self.engine_module, self.requires or self.engine_package, self.name)
            if self.engine_module == "zlib" and type(self).engine_level is GzipCodec.engine_level:
                self._capsule = gzip_native_codec()
                self._deflate = self._native_deflate
            else:
                self._deflate = self._engine_deflate
            self._engine = engine  # last: another thread takes a loaded codec as ready

    @property
    def backend(self) -> str:
        """Which deflate implementation runs, with its version (``zlib 1.2.13``)."""
        self.load()
        return library_version(self._engine)

    def _z(self) -> ModuleType:
        if self._engine is None:
            self.load()
        return self._engine  # type: ignore[return-value]

    # -- writing --------------------------------------------------------------
    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        level = cast(int, self.resolve_level(level))  # never None: the codec has levels
        self.load()
        return self._deflate(data, level)

    def _native_deflate(self, data: Buffer, level: int) -> bytes:
        return _native_of(self).compress(data, level, 2)

    def _engine_deflate(self, data: Buffer, level: int) -> bytes:
        z = self._z()
        view = byte_view(data)
        # wbits -15: raw deflate, the framing is written here; memLevel 8 is
        # what java.util.zip.Deflater uses, and it shapes the output bytes.
        c = z.compressobj(self.engine_level(level), z.DEFLATED, -15, 8)
        body = c.compress(view)
        tail = c.flush()
        trailer = _TRAILER.pack(z.crc32(view) & 0xFFFFFFFF, view.nbytes & 0xFFFFFFFF)
        return b"".join((JAVA_GZIP_HEADER, body, tail, trailer))

    # -- reading --------------------------------------------------------------
    def _header_end(self, view: memoryview, pos: int) -> int:
        """Position after the gzip member header at ``pos`` (``GZIPInputStream.readHeader``)."""
        n = len(view)
        start = pos
        if n - pos < 2:
            raise _NotAHeader(_EOF, n)
        if view[pos] != 0x1F or view[pos + 1] != 0x8B:
            raise _NotAHeader("Not in GZIP format", pos)
        if n - pos < 10:
            raise _NotAHeader(_EOF, n)
        if view[pos + 2] != 8:
            raise _NotAHeader("Unsupported compression method", pos + 2)
        flags = view[pos + 3]
        pos += 10
        if flags & _FEXTRA:
            if n - pos < 2:
                raise _NotAHeader(_EOF, n)
            pos += 2 + (view[pos] | (view[pos + 1] << 8))
            if pos > n:
                raise _NotAHeader(_EOF, n)
        if flags & _FNAME:
            pos = _skip_zero_terminated(view, pos)
        if flags & _FCOMMENT:
            pos = _skip_zero_terminated(view, pos)
        if flags & _FHCRC:
            if n - pos < 2:
                raise _NotAHeader(_EOF, n)
            expected = self._z().crc32(view[start:pos]) & 0xFFFF
            if (view[pos] | (view[pos + 1] << 8)) != expected:
                raise _NotAHeader("Corrupt GZIP header", pos)
            pos += 2
        return pos

    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        z = self._z()
        view = byte_view(data)
        n = len(view)
        try:
            pos = self._header_end(view, 0)
        except _NotAHeader as exc:
            raise CorruptCompressedDataError(f"gzip: {exc.message}", position=exc.position) from None
        pieces: List[bytes] = []
        total = 0
        while True:
            budget = max_size - total
            d = z.decompressobj(-15)
            try:
                # max_length caps the output: the engine stops one byte past
                # the budget, so a bomb costs at most max_size of memory.
                out = d.decompress(view[pos:], budget + 1)
            except z.error as exc:
                raise CorruptCompressedDataError(f"gzip: invalid deflate data: {exc}", position=pos) from None
            if len(out) > budget:
                raise LimitExceededError(
                    f"gzip: decompressed data exceeds the limit of {max_size} bytes", position=pos)
            if not d.eof:
                raise CorruptCompressedDataError(f"gzip: {_EOF}", position=n)
            end = n - len(d.unused_data)
            if n - end < 8:
                raise CorruptCompressedDataError(f"gzip: {_EOF} (trailer)", position=n)
            crc, isize = _TRAILER.unpack_from(view, end)
            if crc != (z.crc32(out) & 0xFFFFFFFF) or isize != (len(out) & 0xFFFFFFFF):
                raise CorruptCompressedDataError("gzip: Corrupt GZIP trailer", position=end)
            pieces.append(out)
            total += len(out)
            pos = end + 8
            if pos >= n:
                break
            try:
                pos = self._header_end(view, pos)
            except _NotAHeader:
                break  # the JDK ignores whatever follows a member unless it is another member
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)
