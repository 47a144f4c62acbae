"""The order in which a buffer of batches is tried on the paths into Arrow columns, written once.

1. the native pass over uncompressed v2 batches (``columns_uncompressed_v2``);
2. the native pass over v2 batches whose codecs all have native functions (``columns_v2``);
3. the general path (:mod:`kcodec.arrow.gather`): any magic, any codec, the batch fields, and the
   errors of damaged input with Kafka's message and position.

A native pass declines a buffer it cannot take whole (a legacy batch, damage, another codec), and
the next step takes it from its start.  Two targets run the cascade: :class:`Chunks` converts one
buffer into chunks, in parts on threads when it is large; :class:`IntoOne` adds each of several
buffers into one accumulator, where they lie.
"""
from __future__ import annotations

from typing import Any, List, Optional, Protocol, Tuple, TypeVar

from kcodec._native.columnar import RecordChunk, columns_uncompressed_v2, columns_v2, compression_ids
from kcodec._native.native_codec import native_of
from kcodec.arrow import threads
from kcodec.arrow.gather import Gathered, gather
from kcodec.arrow.options import DecodeOptions
from kcodec.compression import get_codec
from kcodec.errors import KcodecError
from kcodec.records.pool import BufferPool
from kcodec.records.reader import read_batches

__all__ = ["Passes", "cascade", "native_codecs", "Chunks", "IntoOne", "general_parts"]

R = TypeVar("R", covariant=True)


class Passes(Protocol[R]):
    """The three steps of the cascade on one target; a native step gives None when it declines the buffer."""

    def uncompressed(self, buffer: Any) -> Optional[R]: ...

    def compressed(self, buffer: Any, codecs: Tuple[Any, ...]) -> Optional[R]: ...

    def general(self, buffer: Any) -> R: ...


def native_codecs(buffer: Any, max_decompressed_size: int) -> Optional[Tuple[Any, ...]]:
    """The NativeCodec of each codec id (0-7) the buffer's batches use, or None when the native pass
    over compressed v2 batches cannot take the buffer (legacy batches, damage, a codec without native
    functions, a size limit outside what it takes); the general path then decodes it."""
    if not 0 < max_decompressed_size < 2 ** 63:
        return None
    mask = compression_ids(buffer)
    if mask <= 1:  # not only v2 batches, or nothing compressed (the uncompressed pass judged it)
        return None
    codecs: List[Any] = [None] * 8
    for cid in range(1, 8):
        if mask >> cid & 1:
            try:
                codecs[cid] = native_of(get_codec(cid))
            except KcodecError:
                return None
            if codecs[cid] is None:
                return None
    return tuple(codecs)


def cascade(buffer: Any, options: DecodeOptions, passes: Passes[R]) -> R:
    """``buffer`` through the first step of ``passes`` that takes it (see the module's docstring).

    Batch fields are gathered by the general path only.
    """
    if not options.batch_fields:
        done = passes.uncompressed(buffer)
        if done is None:
            codecs = native_codecs(buffer, options.max_decompressed_size)
            if codecs is not None:
                done = passes.compressed(buffer, codecs)
        if done is not None:
            return done
    return passes.general(buffer)


class Chunks:
    """The cascade's target for one buffer: a chunk for each part of it (one part without threads).

    The native passes hold the GIL for no batch, so they cut a large buffer
    into parts of any mean batch size; the general path only where batches
    are large enough (:data:`~kcodec.arrow.threads.MIN_THREAD_MEAN_BATCH`).
    """

    __slots__ = ("options", "unsized", "cuts")  # one is made on every call: a small batch feels its cost

    def __init__(self, buffer: Any, unsized: int, options: DecodeOptions) -> None:
        self.options = options
        self.unsized = unsized  # the buffer's size while the columns are not yet sized for it
        # A buffer too small for two parts is not walked for cuts (split_batches would give it whole).
        self.cuts = (threads.cuts(buffer, 0) if options.use_threads and not options.batch_fields
                     and unsized >= 2 * threads.MIN_THREAD_PART else None)

    # In one piece, the native pass is called directly: a small batch feels a closure and two calls more.
    def uncompressed(self, buffer: Any) -> Optional[List[RecordChunk]]:
        o = self.options
        if self.cuts is None:
            chunk = columns_uncompressed_v2(buffer, o.validate, o.include_control, o.headers, 0, -1, o.views)
            return None if chunk is None else [chunk]
        return threads.on_threads(lambda a, b: columns_uncompressed_v2(buffer, o.validate, o.include_control,
                                                                       o.headers, a, b, o.views), self.cuts)

    def compressed(self, buffer: Any, codecs: Tuple[Any, ...]) -> Optional[List[RecordChunk]]:
        o = self.options
        if self.cuts is None:
            chunk = columns_v2(buffer, codecs, o.validate, o.include_control, o.headers, o.max_decompressed_size,
                               0, -1, o.views)
            return None if chunk is None else [chunk]
        return threads.on_threads(lambda a, b: columns_v2(buffer, codecs, o.validate, o.include_control, o.headers,
                                                          o.max_decompressed_size, a, b, o.views), self.cuts)

    def general(self, buffer: Any) -> List[RecordChunk]:
        o = self.options
        if self.cuts is not None:
            parts = general_parts(buffer, o)
            if parts is not None:
                return parts
        batches = read_batches(buffer, validate=o.validate, max_decompressed_size=o.max_decompressed_size,
                               pool=BufferPool())
        return [gather(batches, self.unsized, o)]


class IntoOne:
    """The cascade's target for several buffers: each added, where it lies, into one accumulator."""

    __slots__ = ("options", "gathered", "pool")

    def __init__(self, options: DecodeOptions) -> None:
        self.options = options
        self.gathered = Gathered(options)
        self.pool = BufferPool()

    def uncompressed(self, buffer: Any) -> Optional[bool]:
        o = self.options
        return True if self.gathered.acc.add_uncompressed(buffer, o.validate, o.include_control) else None

    def compressed(self, buffer: Any, codecs: Tuple[Any, ...]) -> Optional[bool]:
        o = self.options
        added = self.gathered.acc.add_v2(buffer, codecs, o.validate, o.include_control, o.max_decompressed_size)
        return True if added else None

    def general(self, buffer: Any) -> bool:
        o = self.options
        self.gathered.add(read_batches(buffer, validate=o.validate, max_decompressed_size=o.max_decompressed_size,
                                       pool=self.pool))
        return True


def general_parts(buffer: Any, options: DecodeOptions) -> Optional[List[RecordChunk]]:
    """The general path over parts of the buffer on threads, or None to convert it in one piece.

    Decompression and the record gather release the GIL, so compressed
    batches convert in parallel.  A part that raises kcodec's error gives
    None: the one-piece pass then reports it, positioned in the whole buffer.
    """
    cuts = threads.cuts(buffer, threads.MIN_THREAD_MEAN_BATCH)
    if cuts is None:
        return None
    try:
        view = memoryview(buffer)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
    except TypeError:  # not C-contiguous: converted in one piece
        return None

    def part(a: int, b: int) -> Optional[RecordChunk]:
        try:
            batches = read_batches(view[a:b], validate=options.validate,
                                   max_decompressed_size=options.max_decompressed_size, pool=BufferPool())
            return gather(batches, b - a, options)
        except KcodecError:
            return None

    return threads.on_threads(part, cuts)
