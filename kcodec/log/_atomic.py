"""Replace files so that a crash leaves either the old file or the new one."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import BinaryIO, Iterator, Union

__all__ = ["atomic_write", "fsync_dir", "atomic_write_bytes", "open_new"]

PathLike = Union[str, "os.PathLike[str]"]


def fsync_dir(path: PathLike) -> None:
    """Make a rename or unlink in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_new(path: PathLike) -> BinaryIO:
    """Open ``path`` as a new, empty file for writing, never through whatever was there.

    A stale file, hard link or symlink at ``path`` is unlinked first (which
    removes the link, not its target) and the file is created exclusively
    without following symlinks, so a link planted inside a target directory
    can never redirect a write outside it.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    return os.fdopen(fd, "wb")


@contextlib.contextmanager
def atomic_write(path: PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file beside ``path``; on success fsync it and rename it over ``path``.

    The temporary name starts with a dot and ends in ``.tmp`` so log readers,
    which look only at ``NNN.log``-style names, never see a partial file.  On
    an exception the temporary file is removed and ``path`` is untouched.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    f = open_new(tmp)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        f.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: PathLike, data) -> None:
    with atomic_write(path) as f:
        f.write(data)
