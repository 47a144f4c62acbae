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
from typing import Dict, List

from kcodec._native.records import PooledBuffer

__all__ = ["BufferPool", "PooledBuffer"]

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
