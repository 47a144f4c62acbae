"""``BufferPool``: reusable buffers for builders (Kafka's BufferSupplier).

Buffers are bytearrays kept by size class (powers of two from 4 KiB), so a
steady stream of similar batches reuses the same few of them.  A
:class:`~kcodec.records.RecordBatchBuilder` given a pool borrows its working
buffer with :meth:`BufferPool.get`, writes the batch into it and lends it to
the caller as a :class:`PooledBuffer`; the caller's ``release()`` gives it
back to the pool for the next batch.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional, Tuple

from kcodec._native.records import PooledBuffer
from kcodec._native.records import builder_cache as _builder_cache

__all__ = ["BufferPool", "PooledBuffer", "builder_cache"]

_MIN_CLASS = 4096


def _size_class(n: int) -> int:
    c = _MIN_CLASS
    while c < n:
        c <<= 1
    return c


class BufferPool:
    """Thread-safe pool of bytearrays by size class.

    ``get(size)`` hands out a bytearray of at least ``size`` bytes (the
    caller owns it until it gives it back with ``put``); ``wrap`` lends a
    filled one to a reader as a :class:`PooledBuffer` that gives it back
    on ``release()``.  ``max_cached_per_class`` bounds what the pool keeps;
    buffers returned beyond it are left to the garbage collector.
    ``allocations`` counts the bytearrays the pool had to create.
    """

    def __init__(self, max_cached_per_class: int = 8) -> None:
        self._free: Dict[int, List[bytearray]] = {}
        self._lock = threading.Lock()
        self.max_cached_per_class = max_cached_per_class
        self.allocations = 0  #: bytearrays created (for tests and tuning)

    def get(self, size: int) -> bytearray:
        """A bytearray of at least ``size`` bytes (contents undefined)."""
        cls = _size_class(size)
        with self._lock:
            free = self._free.get(cls)
            if free:
                return free.pop()
            self.allocations += 1
        return bytearray(cls)

    def put(self, buf: bytearray) -> None:
        """Give back a bytearray obtained from :meth:`get`; nobody may use it afterwards."""
        cls = len(buf)
        with self._lock:
            free = self._free.setdefault(cls, [])
            if len(free) < self.max_cached_per_class and all(b is not buf for b in free):
                free.append(buf)

    _give_back = put  # PooledBuffer.release() calls this

    def wrap(self, buf: bytearray, length: int) -> PooledBuffer:
        """Lend the first ``length`` bytes of a pooled bytearray to a caller until it releases them."""
        return PooledBuffer(buf, length, self)

    def cached_bytes(self) -> int:
        """Bytes held in the pool's free lists."""
        with self._lock:
            return sum(cls * len(v) for cls, v in self._free.items())


def builder_cache(limit: Optional[int] = None, min_block: Optional[int] = None) -> Tuple[int, int, int]:
    """``(limit, held, min_block)`` of the blocks builders reuse for compressed batches.

    A :class:`~kcodec.records.RecordBatchBuilder` with a codec and no pool
    writes its records in a block kept from an earlier build (the smallest
    held of at least ``min_block`` bytes, 1 MiB by default) and gives it
    back after compressing, up to ``limit`` bytes held in all (64 MiB by
    default): batch after batch of 1 MiB then fills memory that is already
    mapped, without page faults or growth copies.  Uncompressed batches are
    the caller's ``bytes`` (or a pool's buffers), not kept here.  Passing
    ``limit`` and/or ``min_block`` changes them (``limit=0`` frees the
    blocks and turns the reuse off); the values in force before the call are
    returned.
    """
    return _builder_cache(limit, min_block)
