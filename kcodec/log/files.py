"""File operations that a crash cannot leave half done, on a local disk and in an object store.

Locally a new file is written under a temporary name, fsynced and renamed
over its target (:func:`atomic_write`), and a rename is made durable by
fsyncing its directory.  :class:`FileOps` is the one door every log
operation's file change goes through: a local rename is ``os.replace``, an
object-store rename a copy followed by a delete, and after each step a hook
runs, which is how the fault-injection tests stop a run at every point.
The swap protocol built from these steps is in :mod:`kcodec.log.swap`; the local
primitives (:func:`atomic_write`, :func:`fsync_dir`, :func:`open_new`) live with the
storage layer below, in :mod:`kcodec.storage`.
"""
from __future__ import annotations

import contextlib
import os
from typing import Any, Callable, Dict, Iterator, Optional, Tuple, Union

from kcodec.storage import LOCAL, ObjectStorage, Storage, atomic_write, atomic_write_bytes, fsync_dir, open_new, resolve

__all__ = ["atomic_write", "fsync_dir", "atomic_write_bytes", "open_new", "FileOps", "ops_for"]

PathLike = Union[str, "os.PathLike[str]"]


class FileOps:
    """Every file change the log operations make, each followed by ``hook(op, path)``.

    ``op`` is ``write-partial`` (half of a file's bytes written), ``write``
    (file complete and fsynced; an object uploaded), ``rename``, ``copy``
    and ``delete`` (an object store renames by copying, then deleting) or
    ``utime``.  A hook that raises stops the operation right after that step,
    which is how the fault-injection tests simulate a crash at every point.
    ``storage`` is where the files live (default: the local file system).
    """

    def __init__(self, hook: Optional[Callable[[str, str], None]] = None, fsync: bool = True,
                 storage: Optional[Storage] = None) -> None:
        self.hook = hook
        self.fsync = fsync
        self.count = 0
        self.storage = storage or LOCAL

    def _done(self, op: str, path: str) -> None:
        self.count += 1
        if self.hook is not None:
            self.hook(op, path)

    @contextlib.contextmanager
    def writer(self, path: str) -> Iterator["_Writer"]:
        """Write a new file chunk by chunk; it is fsynced (an object: completed) when the block ends.

        A local file replaces whatever link was at ``path`` rather than writing through it.
        """
        with self.storage.open_write(path, self.fsync) as f:
            yield _Writer(self, f, path)
        self._done("write", path)

    def write(self, path: str, data: Any) -> None:
        data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        with self.writer(path) as w:
            half = len(data) // 2
            if half:
                w.write(data[:half])
                w.checkpoint()
            w.write(data[half:])

    def replace(self, path: str, data: Any, temp_suffix: str = ".tmp") -> None:
        """Give ``path`` new contents that a reader sees whole or not at all: an object is put in one
        piece; a local file is written as ``path + temp_suffix`` and renamed over ``path``."""
        if self.storage.remote:
            self.write(path, data)
            return
        tmp = path + temp_suffix
        self.write(tmp, data)
        self.rename(tmp, path)

    def rename(self, src: str, dst: str) -> None:
        if isinstance(self.storage, ObjectStorage):
            self.storage.copy(src, dst)
            self._done("copy", dst)
            self.storage.delete(src)
            self._done("delete", src)
            return
        self.storage.rename(src, dst, self.fsync)
        self._done("rename", dst)

    def delete(self, path: str) -> None:
        if self.storage.delete(path):
            self._done("delete", path)

    def set_mtime(self, path: str, mtime: float) -> None:
        if self.storage.set_mtime(path, mtime):
            self._done("utime", path)


class _Writer:
    def __init__(self, ops: FileOps, f: Any, path: str) -> None:
        self._ops, self._f, self.path = ops, f, path
        self.size = 0
        self._partial_done = False

    def write(self, data: Any) -> None:
        self._f.write(data)
        self.size += len(data)

    def checkpoint(self) -> None:
        """Mark a point where a crash would leave a partially written file (reported once)."""
        if not self._partial_done:
            self._partial_done = True
            self._f.flush()
            self._ops._done("write-partial", self.path)


def ops_for(log_dir: str, ops: Optional[FileOps], storage_options: Optional[Dict[str, Any]]) -> Tuple[FileOps, str]:
    """(file operations on the storage of ``log_dir``, the path inside that storage)."""
    storage, inner = resolve(log_dir, storage_options)
    ops = ops or FileOps()
    ops.storage = storage
    if not storage.isdir(inner):
        raise FileNotFoundError(f"no such partition directory: {storage.url(inner)}")
    return ops, inner
