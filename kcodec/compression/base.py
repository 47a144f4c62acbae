"""The ``Codec`` interface every compression implementation provides."""
from __future__ import annotations

import abc
from typing import Any, FrozenSet, Optional, Tuple

from kcodec.errors import LimitExceededError, UnsupportedCodecError

__all__ = ["Codec", "Buffer", "DEFAULT_MAX_DECOMPRESSED_SIZE"]

#: Any object exporting the buffer protocol: bytes, bytearray, memoryview, mmap, numpy array.
Buffer = Any

#: Default cap on the output of one decompression (one batch's records, or one
#: legacy wrapper's inner messages).  Kafka has none; 256 MiB is far above
#: Kafka's default max.message.bytes (1 MiB) and still bounds a hostile input.
DEFAULT_MAX_DECOMPRESSED_SIZE = 256 * 1024 * 1024


class Codec(abc.ABC):
    """A compression codec as Kafka frames it.

    Subclasses set the class attributes and implement :meth:`compress` and
    :meth:`decompress`.  Implementations accept any buffer without copying
    it first, import their compression library only when first used, and
    stop decompressing with :class:`~kcodec.errors.LimitExceededError` as
    soon as the output would exceed ``max_size``, without allocating it.

    A codec with C functions returns them from :meth:`native_codec` (the
    struct of ``kcodec/codec.h``, see :func:`kcodec.get_include`); kcodec's
    builder, readers, ``from_arrow`` and ``to_arrow`` then call them without
    the GIL, and :meth:`compress_into` and :meth:`decompress_into` use them
    too.  Levels and the magics a codec may be used with are this class's
    attributes; :class:`~kcodec.CompressionType` asks the active codec.
    """

    #: Id stored in bits 0-2 of the batch attributes: 0-4 are Kafka's, 5-7 are free.
    id: int = -1
    #: Lower-case name (``"gzip"``); plugins for new ids choose their own.
    name: str = ""
    min_level: Optional[int] = None
    max_level: Optional[int] = None
    default_level: Optional[int] = None
    #: Level values allowed outside ``[min_level, max_level]`` (gzip's -1).
    extra_levels: tuple = ()
    #: Message format versions that may carry this codec.
    magics: FrozenSet[int] = frozenset({0, 1, 2})
    #: Python distribution to install when the library is missing (for the error message).
    requires: Optional[str] = None

    @abc.abstractmethod
    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        """Compress ``data`` into Kafka's framing for ``magic``."""

    @abc.abstractmethod
    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        """Decompress Kafka-framed ``data``; raise LimitExceededError past ``max_size`` bytes."""

    def native_codec(self) -> Optional[Any]:
        """A PyCapsule named ``kcodec.native_codec.v1`` holding this codec's ``kcodec_codec_v1``, or None.

        None (the default) means the Python methods do all the work.  The
        capsule must stay valid as long as it is referenced; kcodec asks once
        per codec object and keeps it.
        """
        return None

    def compress_into(self, data: Buffer, out: Buffer, level: Optional[int] = None, magic: int = 2, *,
                      headroom: int = 0) -> int:
        """Compress ``data`` into the writable buffer ``out`` after ``headroom`` bytes; the bytes written.

        The first ``headroom`` bytes of ``out`` are left as they are, for a
        header the caller writes (a batch header).  Raises LimitExceededError
        when the frame does not fit.
        """
        self.check_magic(magic)
        level = self.resolve_level(level)
        native = _native_of(self)
        if native is not None:
            return native.compress_into(data, out, _native_level(level), magic, headroom)
        frame = self.compress(data, level, magic)
        return _copy_into(frame, out, headroom, f"{self.name}: the output buffer is too small for the frame")

    def decompress_into(self, data: Buffer, out: Buffer, magic: int = 2) -> int:
        """Decompress ``data`` into the writable buffer ``out``, whose size is the limit; the bytes written."""
        self.check_magic(magic)
        native = _native_of(self)
        if native is not None:
            return native.decompress_into(data, out, magic)
        size = memoryview(out).nbytes
        return _copy_into(self.decompress(data, magic, max_size=size), out, 0,
                          f"{self.name}: decompressed data exceeds the {size}-byte output")

    def available(self) -> bool:
        """Whether the library this codec needs can be imported (imports it)."""
        try:
            self.load()
        except ImportError:
            return False
        return True

    def load(self) -> None:
        """Import the compression library now (raises CodecLibraryMissingError)."""

    # -- helpers for implementations --------------------------------------
    def resolve_level(self, level: Optional[int]) -> Optional[int]:
        if level is None:
            return self.default_level
        if self.min_level is None or self.max_level is None:
            raise UnsupportedCodecError(f"codec {self.name} has no levels (got {level!r})")
        if isinstance(level, bool) or not isinstance(level, int):
            raise UnsupportedCodecError(f"{self.name} level must be an int, got {level!r}")
        if not (self.min_level <= level <= self.max_level or level in self.extra_levels):
            also = f" or equal to {self.extra_levels[0]}" if self.extra_levels else ""
            raise UnsupportedCodecError(
                f"invalid {self.name} level {level}: must be between "
                f"{self.min_level} and {self.max_level}{also}")
        return level

    def check_magic(self, magic: int) -> None:
        if magic not in self.magics:
            raise UnsupportedCodecError(
                f"{self.name} compression is not supported for magic {magic} "
                f"(allowed: {', '.join(map(str, sorted(self.magics)))})")

    @staticmethod
    def check_limit(size: int, max_size: int, what: str = "decompressed data") -> None:
        if size > max_size:
            raise LimitExceededError(f"{what} exceeds the limit of {max_size} bytes")

    def __repr__(self) -> str:
        return f"<{type(self).__module__}.{type(self).__qualname__} id={self.id} name={self.name!r}>"


class _LibraryCodec(Codec):
    """A codec over a compression library that :meth:`load` imports once, choosing the engine.

    ``load()`` keeps the engine's C functions (kcodec/codec.h) in ``_capsule``
    where the library provides them, and leaves it None where the Python
    methods do the work.
    """

    _capsule: Any = None

    def __reduce__(self) -> Tuple[Any, ...]:
        # Library handles and per-thread contexts are not picklable; a fresh instance reloads them.
        return (type(self), ())

    def native_codec(self) -> Any:
        """The C functions of the engine :meth:`load` chose; None where the Python methods do the work."""
        self.load()
        return self._capsule

    @property
    def native(self) -> bool:
        """Whether frames are coded by C functions (:meth:`native_codec` is not None)."""
        return self.native_codec() is not None


def _native_level(level: Optional[int]) -> int:
    """The level a native codec receives: the resolved level, 0 for codecs without levels."""
    return 0 if level is None else level


def _copy_into(data: Buffer, out: Buffer, offset: int, too_small: str) -> int:
    src = memoryview(data).cast("B")
    dst = memoryview(out).cast("B")
    n = src.nbytes
    if offset < 0 or offset + n > dst.nbytes:
        raise LimitExceededError(too_small)
    dst[offset:offset + n] = src
    return n


def _native_of(codec: Codec) -> Any:
    from kcodec._native.native_codec import native_of

    return native_of(codec)
