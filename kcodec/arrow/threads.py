"""Converting a large buffer in parts on threads: where to cut it, and the one shared pool that runs the parts."""
from __future__ import annotations

import os
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import Any, Callable, List, Optional, Tuple, TypeVar

from kcodec._native.columnar import split_batches

__all__ = ["MIN_THREAD_PART", "MIN_THREAD_MEAN_BATCH", "thread_count", "cuts", "on_threads"]

#: The least bytes of batches one thread of to_arrow(use_threads=True) converts.
MIN_THREAD_PART = 4 << 20
#: The least mean batch size for which threads speed up the general path (legacy batches, Python-only
#: codecs): below it the per-batch Python steps, which hold the GIL, outweigh the decompression they overlap.
MIN_THREAD_MEAN_BATCH = 64 << 10

T = TypeVar("T")
#: ``convert(start, stop)``: one part of the buffer converted, or None when it must take another path.
Convert = Callable[[int, int], Optional[T]]

_pool_lock = threading.Lock()
_pool: Optional[ThreadPoolExecutor] = None
_pool_key: Tuple[int, int] = (0, 0)


def _executor(threads: int) -> ThreadPoolExecutor:
    """One shared pool, made on first use and again in a forked child (a fork copies no threads)."""
    global _pool, _pool_key
    key = (os.getpid(), threads)
    with _pool_lock:
        if _pool is None or _pool_key != key:
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kcodec-to-arrow")
            _pool_key = key
        return _pool


def thread_count() -> int:
    """pyarrow's CPU count where pyarrow is loaded (so ``pyarrow.set_cpu_count`` applies), else the usable cores."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        return pa.cpu_count()
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def cuts(buffer: Any, min_mean_batch: int) -> Optional[List[int]]:
    """Where to cut the buffer into one part per thread, or None to convert it in one piece."""
    threads = thread_count()
    if threads < 2:
        return None
    found = split_batches(buffer, threads, MIN_THREAD_PART, min_mean_batch)
    return found if len(found) > 2 else None


def on_threads(convert: Convert[T], parts: List[int]) -> Optional[List[T]]:
    """``convert(start, stop)`` of every part between the cuts ``parts``, the first on the calling thread;
    None if any gave None."""
    others = [_executor(len(parts) - 2).submit(convert, a, b) for a, b in zip(parts[1:-1], parts[2:])]
    try:
        results = [convert(parts[0], parts[1])]
    finally:
        futures_wait(others)  # no thread still reads the buffer once this returns or raises
    results += [f.result() for f in others]
    return None if any(r is None for r in results) else results  # type: ignore[return-value]
