"""Compression type 4: zstd as zstd-jni's streams write and read it (``ZstdCompression``).  Magic 2 only.

Writing produces one frame the way Kafka's ``ZstdOutputStream`` does: no
content size (the size is never pledged), no checksum, a window descriptor,
the data flushed as a block and then the frame ended -- Java's stream is
flushed before it is closed, which leaves an empty last block.  Levels are
-131072..22; 0 is libzstd's default (3).

Reading accepts frames with or without a content size, several concatenated
frames, skippable frames and checksums (verified), and refuses what zstd-jni
refuses: a frame cut short (``Truncated source``), bytes after the last
frame (``Unknown frame descriptor``) and windows above 128 MiB
(``Frame requires too much memory for decoding``).  The frames are walked
first; the output is then read in bounded pieces so that a bomb stops at
``max_size``.

Where python-zstandard's CFFI extension exports libzstd's functions (its
wheels do), kcodec calls them directly, with the GIL released: a single
frame is decoded straight into its ``bytes``, and a frame is compressed into
its result -- from the caller's buffer in place (libzstd's stable-buffer
modes) up to the level's window (2 MiB at the default level), and beyond it
through libzstd's input ring buffer, as zstd-jni's stream does, because
there the ring buffer finds other matches than an input read in place.
Direct calls also turn off the block pre-splitting libzstd 1.5.7 added: it
ends blocks of inputs over 128 KiB where zstd-jni 1.5.6 does not, so frames
would still be valid but no longer Java's bytes.  python-zstandard's own
API, which the codec falls back to without direct calls
(``KCODEC_ZSTD_NATIVE=0``), cannot turn it off.
"""
from __future__ import annotations

import ctypes
import importlib.util
import os
import threading
from collections import OrderedDict
from types import ModuleType
from typing import Any, Callable, List, Optional, Tuple, cast

from kcodec._native.codecs import (
    ZSTD_ENTRY_POINTS,
    ZSTD_KEPT_CONTEXT_MAX_LEVEL,
    ZstdContext,
    zstd_native_codec,
    zstd_scan,
    zstd_without_empty_blocks,
)
from kcodec.compression._lib import byte_view, import_library, library_version, native_library
from kcodec.compression.base import DEFAULT_MAX_DECOMPRESSED_SIZE, Buffer, _LibraryCodec, _native_of
from kcodec.errors import CorruptCompressedDataError, LimitExceededError

__all__ = ["ZstdCodec", "ZSTD_WINDOW_LOG_MAX"]

#: zstd-jni decodes with libzstd's default ``ZSTD_d_windowLogMax``: windows up to 128 MiB.
ZSTD_WINDOW_LOG_MAX = 27
_MAX_PIECE = 64 * 1024 * 1024
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
_CACHED_LEVELS = 4


class ZstdCodec(_LibraryCodec):
    """zstd in one streaming frame, as Kafka's Java client writes it; levels -131072..22."""

    id = 4
    name = "zstd"
    min_level = -131072
    max_level = 22
    default_level = 3
    magics = frozenset({2})
    requires = "zstandard"

    def __init__(self) -> None:
        self._zstd: Optional[ModuleType] = None
        self._native: Optional[Tuple[int, ...]] = None
        # the engine, chosen by load(), which every call runs first
        self._frame: Callable[[memoryview, int], bytes]
        self._decode_frame: Callable[..., Any]
        # Compression and decompression contexts are costly to create and
        # not safe to share between threads: one set per thread.
        self._local = threading.local()

    def load(self) -> None:
        # The engine is chosen here, once: libzstd's functions called directly
        # when python-zstandard's extension exports them, else its streaming API.
        if self._zstd is None:
            zstd = import_library("zstandard", self.requires, self.name)
            native = _native_entry_points(zstd, lambda data, level: self._stream(zstd, data, level))
            if native is not None:
                windows = [zstd.ZstdCompressionParameters.from_level(level).window_log for level in range(-1, 23)]
                self._capsule = zstd_native_codec(native, windows)
                self._frame, self._decode_frame = self._direct_frame, self._direct_decode
            else:
                self._frame, self._decode_frame = self._stream_compress, self._api_decode
            self._native = native
            self._zstd = zstd  # last: another thread takes a loaded codec as ready

    @property
    def backend(self) -> str:
        """``zstandard <version> (libzstd <version>, <c|cffi> backend[, direct calls])``."""
        self.load()
        z = self._zstd
        lib = ".".join(map(str, z.ZSTD_VERSION))  # type: ignore[union-attr]
        direct = ", direct calls" if self._native is not None else ""
        return f"{library_version(z)} (libzstd {lib}, {z.backend} backend{direct})"  # type: ignore[union-attr]

    def _compressor(self, z: ModuleType, level: int) -> Any:
        if level > ZSTD_KEPT_CONTEXT_MAX_LEVEL:
            return _java_compressor(z, level)
        cache = getattr(self._local, "compressors", None)
        if cache is None:
            cache = self._local.compressors = OrderedDict()
        cctx = cache.get(level)
        if cctx is None:
            cctx = cache[level] = _java_compressor(z, level)
            if len(cache) > _CACHED_LEVELS:
                cache.popitem(last=False)
        else:
            cache.move_to_end(level)
        return cctx

    def _context(self) -> ZstdContext:
        ctx = getattr(self._local, "context", None)
        if ctx is None:
            ctx = self._local.context = ZstdContext(self._native)
        return ctx

    def _direct_decode(self, view: memoryview, capacity: int, ceiling: Optional[int]) -> Optional[bytes]:
        ctx = self._context()
        got = ctx.decompress(view, capacity, ceiling is not None and capacity < ceiling)
        if got is None:  # the frame decoded past the plausible size: its bound then
            got = ctx.decompress(view, ceiling)
        return got

    def _api_decode(self, view: memoryview, capacity: int, ceiling: Optional[int]) -> Optional[bytes]:
        if ceiling is not None and capacity < ceiling:
            return None  # python-zstandard says no more than "did not decompress full frame": stream it
        try:
            return self._decompressor().decompress(view, max_output_size=capacity)
        except self._zstd.ZstdError as exc:  # type: ignore[union-attr]
            raise CorruptCompressedDataError(f"zstd: {exc}", position=0) from None

    def _decompressor(self) -> Any:
        dctx = getattr(self._local, "decompressor", None)
        if dctx is None:
            dctx = self._local.decompressor = self._zstd.ZstdDecompressor(  # type: ignore[union-attr]
                max_window_size=1 << ZSTD_WINDOW_LOG_MAX)
        return dctx

    def compress(self, data: Buffer, level: Optional[int] = None, magic: int = 2) -> bytes:
        self.check_magic(magic)
        level = cast(int, self.resolve_level(level))  # never None: the codec has levels
        self.load()
        return self._frame(byte_view(data), level)

    def _direct_frame(self, view: memoryview, level: int) -> bytes:
        return _native_of(self).compress(view, level, 2)

    def _stream_compress(self, data: Buffer, level: int) -> bytes:
        return self._stream(cast(ModuleType, self._zstd), data, level)  # loaded: load() chose this engine

    def _stream(self, z: ModuleType, data: Buffer, level: int) -> bytes:
        # python-zstandard's streaming API, as zstd-jni drives libzstd: any size, any level
        # (with libzstd 1.5.7's pre-splitting, which the direct calls turn off).
        view = byte_view(data)
        cobj = self._compressor(z, level).compressobj()
        return b"".join((cobj.compress(view),
                         cobj.flush(z.COMPRESSOBJ_FLUSH_BLOCK),
                         cobj.flush(z.COMPRESSOBJ_FLUSH_FINISH)))

    def decompress(self, data: Buffer, magic: int = 2,
                   max_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE) -> bytes:
        self.check_magic(magic)
        self.load()
        view = byte_view(data)
        frames, content_size, bound, empty_blocks = zstd_scan(view, ZSTD_WINDOW_LOG_MAX)
        if frames == 0:
            return b""
        if empty_blocks:
            # zstd-jni's stream steps over them; libzstd's one-shot calls and
            # python-zstandard's would not all agree, so every engine reads them as empty raw blocks.
            view = byte_view(zstd_without_empty_blocks(view))
        if content_size > max_size:
            raise LimitExceededError(
                f"zstd: the frames declare {content_size} bytes, more than the limit of {max_size}",
                position=0)
        error = self._zstd.ZstdError  # type: ignore[union-attr]
        # The blocks' bound counts 128 KiB for every compressed block, however
        # short: trusted only up to what the input can plausibly hold.
        plausible = max(_FIRST_GUESS, _FIRST_RATIO * len(view))
        if frames == 1 and 0 <= bound <= max_size and view[:4] == _ZSTD_MAGIC and (content_size or not bound):
            # One frame first (as Java writes per batch; zstd_scan allows only skippable frames after
            # it) whose blocks cannot decode to more than the limit: one call into an output at its
            # declared size (no more than the blocks hold, zstd_scan checks), else from a plausible
            # size growing up to that bound.  A declared 0 over blocks is streamed, as zstd-jni reads
            # it: python-zstandard's one-shot call returns b"" for it without decoding the blocks.
            if content_size >= 0:
                return self._decode_frame(view, max(content_size, 1), None)
            got = self._decode_frame(view, max(min(bound, plausible), 1), max(bound, 1))
            if got is not None:
                return got
        reader = self._decompressor().stream_reader(view, read_across_frames=True)
        # First read: the declared size, else the blocks' upper bound (tight
        # for zstd's 128 KiB blocks) as far as it is plausible; never more
        # than the budget + 1.  Later reads double.
        expected = content_size if content_size >= 0 else bound
        want = expected if content_size >= 0 else min(expected, plausible)
        pieces: List[bytes] = []
        total = 0
        try:
            with reader:
                while True:
                    requested = max(1, min(want, max_size - total + 1, _MAX_PIECE))
                    piece = reader.read(requested)
                    if not piece:
                        break
                    total += len(piece)
                    if total > max_size:
                        raise LimitExceededError(
                            f"zstd: decompressed data exceeds the limit of {max_size} bytes")
                    pieces.append(piece)
                    if requested == 1:
                        want = 65536  # more than the frames promised: keep reading in earnest
                    elif len(piece) < requested or total >= expected:
                        want = 1  # the input looks used up; one more byte confirms it
                    else:
                        want = requested * 2
        except error as exc:
            raise CorruptCompressedDataError(f"zstd: {exc}", position=0) from None
        if len(pieces) == 1:
            return pieces[0]
        return b"".join(pieces)


#: The first output buffer for zstd frames that declare no content size: at least this many bytes,
#: and this many per compressed byte (above most Kafka batches' compression ratios).
_FIRST_GUESS = 65536
_FIRST_RATIO = 256


def _java_compressor(z: ModuleType, level: int) -> Any:
    return z.ZstdCompressor(level=level, write_content_size=False, write_checksum=False, write_dict_id=False)


def _native_entry_points(zstd: ModuleType, stream_compress: Any) -> Optional[Tuple[int, ...]]:
    """Addresses of :data:`ZSTD_ENTRY_POINTS` in python-zstandard's CFFI extension.

    That extension links libzstd in and exports its functions; it is loaded
    as a shared library, not imported, so the ``cffi`` package is not
    needed.  Its libzstd must be the version python-zstandard reports, and
    frames on a sample (below the 128 KiB where pre-splitting could start),
    read in place and through the ring buffer, must equal the streaming
    path's bytes at several levels and read back, before it is trusted.
    None (python-zstandard's API alone) when the extension is missing or
    anything disagrees, and when ``KCODEC_ZSTD_NATIVE=0``.
    """
    if os.environ.get("KCODEC_ZSTD_NATIVE", "1") == "0":
        return None
    try:
        spec = importlib.util.find_spec("zstandard._cffi")
        if spec is None or not spec.origin:
            return None
        lib = native_library(spec.origin)
        addresses = tuple(ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0
                          for name in ZSTD_ENTRY_POINTS)
        lib.ZSTD_versionNumber.restype = ctypes.c_uint
        major, minor, patch = zstd.ZSTD_VERSION
        if lib.ZSTD_versionNumber() != major * 10000 + minor * 100 + patch or not all(addresses):
            return None
        ctx = ZstdContext(addresses)
    except (OSError, AttributeError, TypeError, ValueError, ImportError):
        return None
    sample = (b"kcodec zstd self-check " * 600 + bytes(range(256)) * 40) * 2 + os.urandom(2048)
    for level in (-5, 3, 9):
        for data in (sample, sample[:1000], b""):
            frame = ctx.compress(data, level)
            if (frame != stream_compress(data, level) or ctx.compress(data, level, 0, True) != frame
                    or ctx.decompress(frame, len(data) + 1) != data):
                return None
    return addresses
