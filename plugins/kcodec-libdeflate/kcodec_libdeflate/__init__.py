"""kcodec-libdeflate: Kafka's gzip (compression id 1) on libdeflate, as a native codec.

Installing this distribution makes kcodec use :class:`LibdeflateGzipCodec` for
gzip, through the ``kcodec.codecs`` entry point named ``gzip``.

Writing: one gzip member with the header every JDK 16+ ``GZIPOutputStream``
writes (``1f8b 0800 00000000 00ff``), libdeflate's raw deflate, then CRC-32
and ISIZE, so Kafka's Java client reads it; the deflate bytes are
libdeflate's, not zlib's.  Kafka's levels 1-9 are libdeflate's levels 1-9,
and -1 (zlib's default) is 6.

Reading follows ``GZIPInputStream`` as kcodec's built-in gzip does: header
fields (FHCRC checked), every trailer checked, concatenated members read as
one stream, and whatever follows a member that is not a gzip header ignored.
libdeflate inflates whole buffers: the output is sized from the member's
ISIZE and grown, up to ``max_size``, when that guess is short.

The C functions (compiled by cffi into ``kcodec_libdeflate._kafka_gzip``)
also fill kcodec's native codec interface, ``kcodec/codec.h``:
:meth:`LibdeflateGzipCodec.native_codec` returns it as a capsule.  Each
thread keeps its own libdeflate compressors and decompressor, so the
functions are marked thread safe and run without the GIL.
"""
from __future__ import annotations

import ctypes
from typing import Any, Optional

from kcodec.compression._lib import byte_view, import_library
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer
from kcodec.compression.gzip import GzipCodec
from kcodec.errors import CorruptCompressedDataError, KcodecError, LimitExceededError, UnsupportedCodecError

__all__ = ["LibdeflateGzipCodec", "__version__"]

__version__ = "0.1.0"

# kcodec/codec.h's return codes
_CORRUPT = -2
_DST_TOO_SMALL = -3
_BAD_LEVEL = -4
_BAD_MAGIC = -5
_ERR_CAP = 256
#: The first output buffer when a member's ISIZE is no use, and the least one.
_MIN_GUESS = 64 * 1024

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p)


class LibdeflateGzipCodec(GzipCodec):
    """gzip in Kafka's framing, deflated and inflated by libdeflate through cffi."""

    requires = "kcodec-libdeflate"

    def __init__(self) -> None:
        super().__init__()
        self._mod: Any = None

    def load(self) -> None:
        if self._mod is None:
            self._mod = import_library("kcodec_libdeflate._kafka_gzip", self.requires, self.name)

    def _lib(self) -> Any:
        if self._mod is None:
            self.load()
        return self._mod

    @property
    def backend(self) -> str:
        """``libdeflate <version> (kcodec-libdeflate <version>, cffi)``."""
        mod = self._lib()
        return f"libdeflate {mod.ffi.string(mod.lib.kgz_libdeflate_version).decode()} " \
               f"(kcodec-libdeflate {__version__}, cffi)"

    def native_codec(self) -> Any:
        """kcodec's native codec interface (``kcodec/codec.h``, version 1) as a PyCapsule."""
        mod = self._lib()
        ffi, lib = mod.ffi, mod.lib
        address = int(ffi.cast("uintptr_t", lib.kgz_codec()))
        # The struct and the name are static in the extension, which stays loaded.
        name = int(ffi.cast("uintptr_t", lib.kgz_capsule_name))
        return _capsule_new(address, name, None)

    # -- writing --------------------------------------------------------------
    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        level = self.resolve_level(level)
        mod = self._lib()
        ffi, lib = mod.ffi, mod.lib
        view = byte_view(data)
        n = view.nbytes
        out = bytearray(lib.kgz_compress_bound(ffi.NULL, n, level, magic))
        err = ffi.new("char[]", _ERR_CAP)
        size = lib.kgz_compress(ffi.NULL, ffi.from_buffer(view), n, ffi.from_buffer(out), len(out), level, magic,
                                err, _ERR_CAP)
        if size < 0:
            raise self._error(size, ffi.string(err).decode("utf-8", "replace"), None)
        del out[size:]
        return bytes(out)

    # -- reading --------------------------------------------------------------
    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        mod = self._lib()
        ffi, lib = mod.ffi, mod.lib
        view = byte_view(data)
        n = view.nbytes
        src = ffi.from_buffer(view)
        err = ffi.new("char[]", _ERR_CAP)
        where = ffi.new("int64_t *")
        guess = lib.kgz_decompressed_size(ffi.NULL, src, n, magic)
        cap = guess if 0 <= guess <= max_size else min(max_size, max(4 * n, _MIN_GUESS))
        while True:
            out = bytearray(cap)
            size = lib.kgz_gunzip(src, n, ffi.from_buffer(out), cap, err, _ERR_CAP, where)
            if size >= 0:
                del out[size:]
                return bytes(out)
            if size != _DST_TOO_SMALL:
                raise self._error(size, ffi.string(err).decode("utf-8", "replace"), where[0])
            if cap >= max_size:
                raise LimitExceededError(
                    f"gzip: decompressed data exceeds the limit of {max_size} bytes", position=where[0])
            cap = min(max_size, max(2 * cap, _MIN_GUESS))

    def _error(self, code: int, message: str, position: Optional[int]) -> KcodecError:
        if code == _CORRUPT:
            return CorruptCompressedDataError(message, position=position)
        if code in (_BAD_LEVEL, _BAD_MAGIC):
            return UnsupportedCodecError(message)
        return KcodecError(message, position=position)
