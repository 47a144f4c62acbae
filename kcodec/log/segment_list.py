"""The segments of one partition directory as the log operations see them.

:func:`list_segments` lists the ``NNNN.log`` files of a folder (a path in a
:class:`~kcodec.storage.Storage`) with their sizes and modification times;
:func:`open_log` reads one whole; :func:`check_complete` refuses one that
ends in a partial batch before anything rewrites it.
"""
from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional

from kcodec.errors import CorruptDataError, KcodecError
from kcodec.log.names import parse_segment_file_name, segment_file_name
from kcodec.records.framing import valid_bytes
from kcodec.storage import LOCAL, Storage

__all__ = ["PartialTailError", "SegmentInfo", "list_segments", "open_log", "check_complete", "errors_name"]


class PartialTailError(CorruptDataError):
    """A segment that would be rewritten ends in an incomplete batch."""


@dataclass
class SegmentInfo:
    """One segment of a partition directory."""

    base_offset: int
    dir: str
    size: int
    mtime: float
    storage: Storage = field(default=LOCAL, repr=False, compare=False)
    index_sizes: Dict[str, int] = field(default_factory=dict, repr=False, compare=False)

    def path(self, suffix: str = ".log") -> str:
        return self.storage.join(self.dir, segment_file_name(self.base_offset, suffix))

    def file_size(self, suffix: str) -> int:
        if suffix in self.index_sizes:
            return self.index_sizes[suffix]
        try:
            return self.storage.size(self.path(suffix))
        except OSError:
            return 0


def list_segments(log_dir: str, storage: Optional[Storage] = None) -> List[SegmentInfo]:
    """The segments (``NNNN.log`` files) of ``log_dir``, by base offset."""
    storage = storage or LOCAL
    files = [(f, parse_segment_file_name(f.name)) for f in storage.list(log_dir) if not f.is_dir]
    sizes: Dict[int, Dict[str, int]] = {}
    for f, named in files:
        if named and named[2] is None and named[1] != ".log":
            sizes.setdefault(named[0], {})[named[1]] = f.size
    out = [SegmentInfo(named[0], log_dir, f.size, f.mtime, storage,
                       sizes.get(named[0], {}) if storage.remote else {})
           for f, named in files if named and named[1] == ".log" and named[2] is None]
    out.sort(key=lambda s: s.base_offset)
    return out


def open_log(path: str, storage: Optional[Storage] = None) -> Any:
    """A read-only buffer over a whole ``.log`` file (memory-mapped; empty files give b"")."""
    return (storage or LOCAL).open_read(path)


def check_complete(buf: Any, source: str) -> None:
    """CorruptDataError unless ``buf`` ends with a complete batch.

    A partial last batch (a crash while the broker appended) is what broker
    recovery truncates; a rewrite would silently drop it, so it is refused.
    """
    size = len(buf)
    try:
        valid = valid_bytes(buf)
    except KcodecError as exc:
        raise exc.with_context(source=source)
    if valid < size:
        raise PartialTailError(
            f"the segment ends in {size - valid} bytes that are not a complete batch (a partial write a broker "
            "truncates when it recovers the log); nothing was changed", position=valid, source=source)


@contextmanager
def errors_name(seg: SegmentInfo) -> Iterator[None]:
    """A kcodec error raised while reading ``seg`` names its file."""
    try:
        yield
    except KcodecError as exc:
        raise exc.with_context(source=seg.storage.url(seg.path()))
