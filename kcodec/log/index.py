"""Kafka's ``.index`` (offset) and ``.timeindex`` (time) files: reading them and building them.

``.index``: 8-byte entries ``relativeOffset:int32, position:int32``;
``.timeindex``: 12-byte entries ``timestamp:int64, relativeOffset:int32``;
big-endian, offsets relative to the segment's base offset (``OffsetIndex``, ``TimeIndex``).
Every index kcodec writes comes from :class:`IndexBuilder`, fed while
appending (:class:`~kcodec.log.segment.LogWriter`), while recovering a
segment, or from a finished ``.log`` by :func:`build_indexes`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Iterable, Iterator, List, NamedTuple, Optional, Tuple, Type, TypeVar, Union

import numpy as np

from kcodec.errors import CorruptDataError
from kcodec.records import batch_header, message_header
from kcodec.records.framing import Entry, iter_entries

__all__ = ["OffsetIndex", "TimeIndex", "IndexBuilder", "CorruptIndexError", "OffsetPosition", "TimestampOffset",
           "relative_offset", "batch_index_info", "build_indexes", "NO_TIMESTAMP"]

_OFFSET_DTYPE = np.dtype([("relative_offset", ">i4"), ("position", ">i4")])
_TIME_DTYPE = np.dtype([("timestamp", ">i8"), ("relative_offset", ">i4")])
NO_TIMESTAMP = -1
MAX_RELATIVE = 2 ** 31 - 1


def relative_offset(offset: int, base_offset: int) -> int:
    """``offset - base_offset`` as an index entry stores it (Kafka's ``AbstractIndex.relativeOffset``):
    CorruptDataError unless it fits an int32 at or above the base."""
    if not 0 <= offset - base_offset <= MAX_RELATIVE:
        raise CorruptDataError(f"offset {offset} cannot be stored relative to base offset {base_offset}")
    return offset - base_offset


class CorruptIndexError(CorruptDataError):
    """An index file fails Kafka's sanity check."""


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


_I = TypeVar("_I", bound="_Index")


@dataclass
class _Index:
    """A loaded index file: its entries as a structured array of ``DTYPE``."""

    DTYPE: ClassVar[np.dtype]
    WHAT: ClassVar[str]
    base_offset: int
    entries: np.ndarray
    path: str = ""

    @classmethod
    def open(cls: Type[_I], path: Union[str, Path], base_offset: int, data: Optional[bytes] = None) -> _I:
        """Load ``path``, or parse ``data`` already fetched from it."""
        data = Path(path).read_bytes() if data is None else data
        size = cls.DTYPE.itemsize
        if len(data) % size:
            raise CorruptIndexError(f"{cls.WHAT} file size {len(data)} is not a multiple of {size}", source=str(path))
        return cls(base_offset, np.frombuffer(data, dtype=cls.DTYPE), str(path))

    @classmethod
    def empty(cls: Type[_I], base_offset: int) -> _I:
        """The index of a segment without the file (Kafka rebuilds it; readers start at position 0)."""
        return cls(base_offset, np.empty(0, cls.DTYPE), "")

    def __len__(self) -> int:
        return len(self.entries)


@dataclass
class OffsetIndex(_Index):
    """A loaded ``.index``: absolute offsets and byte positions of sparse entries."""

    DTYPE: ClassVar[np.dtype] = _OFFSET_DTYPE  # (relative_offset, position)
    WHAT: ClassVar[str] = "offset index"

    @property
    def offsets(self) -> np.ndarray:
        return self.entries["relative_offset"].astype(np.int64) + self.base_offset

    @property
    def positions(self) -> np.ndarray:
        return self.entries["position"].astype(np.int64)

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The entry with the largest offset <= target, else ``(base_offset, 0)`` (Kafka's lookup)."""
        offsets = self.offsets
        i = int(np.searchsorted(offsets, target_offset, side="right")) - 1
        if i < 0:
            return OffsetPosition(self.base_offset, 0)
        return OffsetPosition(int(offsets[i]), int(self.entries["position"][i]))

    def sanity_check(self, log_size: Optional[int] = None) -> None:
        """Kafka's checks: last offset >= base offset; plus strictly increasing offsets and positions,
        none negative, and with ``log_size`` every position inside the ``.log`` (an entry names a batch
        start, so a position at or past the end is as corrupt as one before the start)."""
        if len(self.entries) == 0:
            return
        rel = self.entries["relative_offset"]
        if int(rel[-1]) < 0:
            raise CorruptIndexError(
                f"Corrupt index found, index file ({self.path}) has non-zero size but the last offset "
                f"is {self.base_offset + int(rel[-1])} which is less than the base offset {self.base_offset}.",
                source=self.path)
        if len(rel) > 1 and not np.all(np.diff(rel.astype(np.int64)) > 0):
            i = int(np.argmin(np.diff(rel.astype(np.int64)) > 0)) + 1
            raise CorruptIndexError(f"offset index entry {i} does not increase the offset", source=self.path)
        pos = self.entries["position"].astype(np.int64)
        if len(pos) > 1 and not np.all(np.diff(pos) > 0):
            i = int(np.argmin(np.diff(pos) > 0)) + 1
            raise CorruptIndexError(f"offset index entry {i} does not increase the position", source=self.path)
        if int(pos[0]) < 0:
            raise CorruptIndexError(f"offset index entry 0 has the negative position {int(pos[0])}", source=self.path)
        if log_size is not None and int(pos[-1]) >= log_size:
            raise CorruptIndexError(
                f"offset index entry {len(pos) - 1} has position {int(pos[-1])}, past the end of the "
                f"{log_size}-byte log", source=self.path)


@dataclass
class TimeIndex(_Index):
    """A loaded ``.timeindex``."""

    DTYPE: ClassVar[np.dtype] = _TIME_DTYPE  # (timestamp, relative_offset)
    WHAT: ClassVar[str] = "time index"

    def lookup(self, timestamp: int) -> TimestampOffset:
        """The entry with the largest timestamp <= ``timestamp``, else ``(-1, base_offset)``."""
        ts = self.entries["timestamp"].astype(np.int64)
        i = int(np.searchsorted(ts, timestamp, side="right")) - 1
        if i < 0:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return TimestampOffset(int(ts[i]), self.base_offset + int(self.entries["relative_offset"][i]))

    def sanity_check(self) -> None:
        if len(self.entries) == 0:
            return
        ts = self.entries["timestamp"].astype(np.int64)
        rel = self.entries["relative_offset"].astype(np.int64)
        if rel[-1] < 0:
            raise CorruptIndexError(
                f"Corrupt time index found, time index file ({self.path}) has non-zero size but the last "
                f"offset is {self.base_offset + int(rel[-1])} which is less than the base offset "
                f"{self.base_offset}.", source=self.path)
        if len(ts) > 1 and not (np.all(np.diff(ts) > 0) and np.all(np.diff(rel) >= 0)):
            raise CorruptIndexError("time index entries are not increasing", source=self.path)


@dataclass
class IndexBuilder:
    """Builds both indexes while batches are appended, with the broker's rules (``LogSegment.append``).

    Call :meth:`append` once per appended message set (a produce request's
    batches, or one batch), or :meth:`extend` with many: an offset entry
    ``(largest offset, position before the append)`` is added when more than
    ``index_interval_bytes`` were appended since the last entry; a time entry
    only when the max timestamp so far grew.  :meth:`finish` adds the final
    time entry a broker writes when the segment becomes inactive or closes.
    """

    base_offset: int
    index_interval_bytes: int = 4096
    offset_entries: List[Tuple[int, int]] = field(default_factory=list)
    time_entries: List[Tuple[int, int]] = field(default_factory=list)
    bytes_since_last_entry: int = 0
    max_timestamp_so_far: int = NO_TIMESTAMP
    shallow_offset_of_max: int = -1

    def append(self, position: int, size: int, largest_offset: int, max_timestamp: int,
               shallow_offset_of_max: int) -> None:
        self.extend(((position, size, largest_offset, max_timestamp, shallow_offset_of_max),))

    def extend(self, appends: Iterable[Tuple[int, int, int, int, int]]) -> None:
        """:meth:`append` for each ``(position, size, largest offset, max timestamp, shallow offset of
        max)``; one call per segment when an index is built from a whole ``.log``, so state is local."""
        base, interval = self.base_offset, self.index_interval_bytes
        offsets, times = self.offset_entries, self.time_entries
        since, max_ts, shallow = self.bytes_since_last_entry, self.max_timestamp_so_far, self.shallow_offset_of_max
        try:
            for position, size, largest, ts, shallow_of_ts in appends:
                if not 0 <= largest - base <= MAX_RELATIVE:
                    relative_offset(largest, base)  # raises, naming both offsets
                if ts > max_ts:
                    max_ts, shallow = ts, shallow_of_ts
                if since > interval:
                    if not offsets or largest > offsets[-1][0]:
                        offsets.append((largest, position))
                    if max_ts > (times[-1][0] if times else NO_TIMESTAMP):
                        times.append((max_ts, shallow))
                    since = 0
                since += size
        finally:
            self.bytes_since_last_entry, self.max_timestamp_so_far, self.shallow_offset_of_max = since, max_ts, shallow

    def finish(self) -> None:
        last_ts = self.time_entries[-1][0] if self.time_entries else NO_TIMESTAMP
        if self.max_timestamp_so_far > last_ts:
            self.time_entries.append((self.max_timestamp_so_far, self.shallow_offset_of_max))

    def offset_index_bytes(self) -> bytes:
        base = self.base_offset
        return np.array([(off - base, pos) for off, pos in self.offset_entries], dtype=_OFFSET_DTYPE).tobytes()

    def time_index_bytes(self) -> bytes:
        base = self.base_offset
        return np.array([(ts, off - base) for ts, off in self.time_entries], dtype=_TIME_DTYPE).tobytes()


def batch_index_info(buf: Any, entry: Entry) -> Tuple[int, int]:
    """(last offset, max timestamp) of one entry, read from its header without decoding.

    v2: ``baseOffset + lastOffsetDelta`` and ``maxTimestamp``; v1: the
    (wrapper) message offset and timestamp; v0: the offset and -1.
    """
    header = batch_header if entry.magic >= 2 else message_header
    return header.last_offset_and_max_timestamp(buf, entry.position, entry.magic)


def _appends(log_buf: Any) -> Iterator[Tuple[int, int, int, int, int]]:
    """Each entry of a ``.log`` as an :meth:`IndexBuilder.append` of its own."""
    for e in iter_entries(log_buf):
        header = batch_header if e.magic >= 2 else message_header
        last, ts = header.last_offset_and_max_timestamp(log_buf, e.position, e.magic)
        yield e.position, e.size, last, ts, last


def build_indexes(log_buf: Any, base_offset: int, index_interval_bytes: int = 4096) -> Tuple[bytes, bytes]:
    """Offset and time index bytes for a finished ``.log``, as ``LogSegment.recover`` rebuilds them.

    Only batch headers are read; the entries are those :class:`IndexBuilder`
    makes when each batch is appended on its own, plus the final time entry
    of a closed segment.
    """
    idx = IndexBuilder(base_offset, index_interval_bytes)
    idx.extend(_appends(log_buf))
    idx.finish()
    return idx.offset_index_bytes(), idx.time_index_bytes()
