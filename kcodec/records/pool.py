"""``BufferPool``: reusable buffers for builders (Kafka's BufferSupplier).

Two kinds of memory are reused.  Output buffers are kept by size class
(powers of two from 4 KiB), so a steady stream of similar batches reuses the
same few bytearrays: ``get()`` hands out a bytearray and ``wrap()`` turns a
filled one into a :class:`PooledBuffer` that the caller reads and then
releases.  A builder's working memory (the native records buffer it encodes
into) is taken with ``take_writer()`` and given back by ``build()``.
"""
from __future__ import annotations

import threading
from typing import Dict, List, Optional

from kcodec._native.records import PooledBuffer, RecordsWriter

__all__ = ["BufferPool", "PooledBuffer"]

_MIN_CLASS = 4096


def _size_class(n: int) -> int:
    c = _MIN_CLASS
    while c < n:
        c <<= 1
    return c


class BufferPool:
    """Thread-safe pool of bytearrays by size class.

    ``max_cached_per_class`` bounds what the pool keeps; buffers returned
    beyond it are dropped for the garbage collector.
    """

    def __init__(self, max_cached_per_class: int = 8) -> None:
        self._free: Dict[int, List[bytearray]] = {}
        self._lock = threading.Lock()
        self.max_cached_per_class = max_cached_per_class
        self.allocations = 0  #: bytearrays created (for tests and tuning)
        self._writers: List[RecordsWriter] = []
        self.writer_allocations = 0  #: native record writers created

    def take_writer(self, base_offset: int = 0, delete_horizon_ms: Optional[int] = None,
                    log_append_time: Optional[int] = None, is_control: bool = False) -> RecordsWriter:
        """A reset records writer, reused when one was given back."""
        with self._lock:
            writer = self._writers.pop() if self._writers else None
        if writer is None:
            self.writer_allocations += 1
            return RecordsWriter(4096, base_offset, delete_horizon_ms, log_append_time, is_control)
        writer.reset(base_offset, delete_horizon_ms, log_append_time, is_control)
        return writer

    def give_writer(self, writer: RecordsWriter) -> None:
        """Return a writer whose records are no longer needed."""
        writer.clear()
        with self._lock:
            if len(self._writers) < self.max_cached_per_class and all(w is not writer for w in self._writers):
                self._writers.append(writer)

    def get(self, size: int) -> bytearray:
        """A bytearray of at least ``size`` bytes (contents undefined)."""
        cls = _size_class(size)
        with self._lock:
            free = self._free.get(cls)
            if free:
                return free.pop()
        self.allocations += 1
        return bytearray(cls)

    def _give_back(self, buf: bytearray) -> None:
        cls = len(buf)
        with self._lock:
            free = self._free.setdefault(cls, [])
            if len(free) < self.max_cached_per_class and all(b is not buf for b in free):
                free.append(buf)

    def put(self, buf: bytearray) -> None:
        """Return a bytearray obtained from :meth:`get`."""
        self._give_back(buf)

    def wrap(self, buf: bytearray, length: int) -> PooledBuffer:
        """Lend the first ``length`` bytes of a pooled bytearray to a caller until it releases them."""
        return PooledBuffer(buf, length, self)

    def cached_bytes(self) -> int:
        with self._lock:
            return sum(cls * len(v) for cls, v in self._free.items())
