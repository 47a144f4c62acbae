"""Kafka log directories and segment files (spec section 13).

A log directory holds one folder per partition, named ``<topic>-<partition>``;
each holds segments named by their base offset in 20 digits:
``00000000000000012345.log`` with its ``.index`` and ``.timeindex``.

Reading memory-maps ``.log`` files and uses the offset index to start near a
wanted offset.  Writing (:class:`LogWriter`) keeps the broker's index rules,
rolls by segment size, and makes every file appear atomically.
"""
from __future__ import annotations

import mmap
import os
import re
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple, Union

from kcodec.errors import CorruptDataError, InvalidNameError, InvalidNameWarning, KcodecError
from kcodec.log._atomic import atomic_write_bytes
from kcodec.log.index import IndexBuilder, OffsetIndex, TimeIndex
from kcodec.log.names import (
    KAFKA_DIR_SUFFIXES,
    STAGING_PREFIX,
    check_base_offset,
    check_partition,
    check_topic,
    offset_from_file_name,
    parse_partition_dir_name,
    partition_dir_name,
    safe_join,
    segment_file_name,
)
from kcodec.records import batch_header, message_header
from kcodec.records.framing import Entry, iter_entries

__all__ = [
    "segment_file_name",
    "offset_from_file_name",
    "batch_index_info",
    "LogSegment",
    "Partition",
    "LogDir",
    "SkippedFolder",
    "open_log_dir",
    "open_partition",
    "LogWriter",
    "write_partition",
    "rebuild_indexes",
]

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
DEFAULT_INDEX_INTERVAL_BYTES = 4096
_SEGMENT_LOG = re.compile(r"^(?P<offset>\d{20})\.log$")


def batch_index_info(buf, entry: Entry) -> Tuple[int, int]:
    """(last offset, max timestamp) of one entry, read from its header without decoding.

    v2: ``baseOffset + lastOffsetDelta`` and ``maxTimestamp``; v1: the
    (wrapper) message offset and timestamp; v0: the offset and -1.
    """
    header = batch_header if entry.magic >= 2 else message_header
    return header.last_offset_and_max_timestamp(buf, entry.position, entry.magic)


class LogSegment:
    """One segment: ``.log`` memory-mapped, indexes loaded on demand."""

    def __init__(self, log_path: PathLike) -> None:
        self.path = Path(log_path)
        self.base_offset = offset_from_file_name(self.path.name)
        self._mmap: Optional[mmap.mmap] = None
        self._file = None
        self._offset_index: Optional[OffsetIndex] = None
        self._time_index: Optional[TimeIndex] = None

    def __repr__(self) -> str:
        return f"LogSegment({str(self.path)!r})"

    @property
    def index_path(self) -> Path:
        return self.path.with_suffix(".index")

    @property
    def time_index_path(self) -> Path:
        return self.path.with_suffix(".timeindex")

    @property
    def size(self) -> int:
        return self.path.stat().st_size

    @property
    def data(self):
        """The ``.log`` bytes as a read-only buffer (a memory map; ``b""`` when empty)."""
        if self._mmap is None:
            if self.size == 0:
                return b""
            self._file = open(self.path, "rb")
            self._mmap = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._mmap

    def close(self) -> None:
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:
                # Batches handed out still view the map; it unmaps when the last one goes.
                pass
            self._mmap = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "LogSegment":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @property
    def offset_index(self) -> OffsetIndex:
        if self._offset_index is None:
            if self.index_path.exists():
                self._offset_index = OffsetIndex.open(self.index_path, self.base_offset)
            else:
                import numpy as np
                from kcodec.log.index import _OFFSET_DTYPE
                self._offset_index = OffsetIndex(self.base_offset, np.empty(0, _OFFSET_DTYPE), "")
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        if self._time_index is None:
            if self.time_index_path.exists():
                self._time_index = TimeIndex.open(self.time_index_path, self.base_offset)
            else:
                import numpy as np
                from kcodec.log.index import _TIME_DTYPE
                self._time_index = TimeIndex(self.base_offset, np.empty(0, _TIME_DTYPE), "")
        return self._time_index

    def start_position(self, offset: Optional[int]) -> int:
        """Byte position to start scanning for ``offset`` (the offset index lookup)."""
        if offset is None or offset <= self.base_offset:
            return 0
        return self.offset_index.lookup(offset).position

    def entries(self, start_position: int = 0, end_position: Optional[int] = None) -> Iterator[Entry]:
        """Complete entries of the file, with errors naming the file."""
        try:
            yield from iter_entries(self.data, start_position, end_position)
        except KcodecError as exc:
            raise exc.with_context(source=str(self.path))

    def batches(self, start_offset: Optional[int] = None, *, validate: bool = True,
                start_position: Optional[int] = None, end_position: Optional[int] = None):
        """Batches whose last offset is >= ``start_offset``, found through the offset index."""
        from kcodec.records import read_batches

        pos = self.start_position(start_offset) if start_position is None else start_position
        data = self.data
        view = memoryview(data)[pos:end_position] if end_position is not None else memoryview(data)[pos:]
        try:
            for batch in read_batches(view, validate=validate):
                if start_offset is not None and batch.last_offset < start_offset:
                    continue
                yield batch
        except KcodecError as exc:
            raise exc.with_context(position=pos, source=str(self.path))

    def byte_ranges(self, target_bytes: int) -> List[Tuple[int, int]]:
        """Split the file into ``[start, end)`` ranges of about ``target_bytes`` on batch boundaries.

        Boundaries come from the offset index (each entry is a batch start),
        so the ``.log`` is not scanned.
        """
        size = self.size
        if size <= target_bytes or len(self.offset_index) == 0:
            return [(0, size)] if size else []
        cuts = [0]
        for pos in self.offset_index.positions.tolist():
            if pos - cuts[-1] >= target_bytes and pos < size:
                cuts.append(int(pos))
        cuts.append(size)
        return list(zip(cuts[:-1], cuts[1:]))

    def sanity_check(self) -> None:
        """Kafka's index checks, plus: every index entry points at a batch start holding its offset."""
        self.offset_index.sanity_check()
        self.time_index.sanity_check()
        starts = {e.position: e for e in self.entries()}
        data = self.data
        for off, pos in zip(self.offset_index.offsets.tolist(), self.offset_index.positions.tolist()):
            entry = starts.get(pos)
            if entry is None:
                raise CorruptDataError(
                    f"offset index entry ({off}, {pos}) does not point at a batch", source=str(self.index_path))
            last, _ = batch_index_info(data, entry)
            if last != off:
                raise CorruptDataError(
                    f"offset index entry ({off}, {pos}) points at a batch ending at offset {last}",
                    source=str(self.index_path))


@dataclass
class Partition:
    """The segments of one ``topic-partition`` folder, in offset order."""

    topic: str
    partition: int
    path: Path
    segments: List[LogSegment] = field(default_factory=list)

    @property
    def active_segment(self) -> Optional[LogSegment]:
        return self.segments[-1] if self.segments else None

    def segment_for(self, offset: int) -> Optional[LogSegment]:
        found = None
        for seg in self.segments:
            if seg.base_offset <= offset:
                found = seg
        return found

    def batches(self, start_offset: Optional[int] = None, *, validate: bool = True):
        for i, seg in enumerate(self.segments):
            nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if start_offset is not None and nxt is not None and nxt <= start_offset:
                continue
            yield from seg.batches(start_offset, validate=validate)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()


def open_partition(path: PathLike, topic: Optional[str] = None, partition: Optional[int] = None) -> Partition:
    """A partition folder; topic and partition come from its name unless given (both are checked)."""
    p = Path(path)
    if topic is None or partition is None:
        name_topic, name_partition = parse_partition_dir_name(p.name, source=str(p))
        topic = name_topic if topic is None else topic
        partition = name_partition if partition is None else partition
    topic = check_topic(topic, source=str(p))
    partition = check_partition(partition, source=str(p))
    logs = sorted((f for f in p.iterdir() if _SEGMENT_LOG.match(f.name)), key=lambda f: f.name)
    return Partition(topic, partition, p, [LogSegment(f) for f in logs])


@dataclass(frozen=True)
class SkippedFolder:
    """A folder holding segments that :func:`open_log_dir` did not read, and why."""

    path: str
    reason: str


class LogDir(Dict[Tuple[str, int], Partition]):
    """The partitions of a log directory by ``(topic, partition)``; ``skipped`` lists the folders
    holding segments whose names are not ``<topic>-<partition>``."""

    def __init__(self) -> None:
        super().__init__()
        self.skipped: List[SkippedFolder] = []


def _holds_segments(p: Path) -> bool:
    return p.is_dir() and any(_SEGMENT_LOG.match(f.name) for f in p.iterdir())


def _is_bookkeeping(name: str) -> bool:
    # folders a broker or a kcodec writer is still moving; they are not partitions to read
    return name.endswith(KAFKA_DIR_SUFFIXES) or name.startswith(STAGING_PREFIX)


def _add_partition(out: LogDir, folder: Path) -> None:
    try:
        topic, partition = parse_partition_dir_name(folder.name, source=str(folder))
    except InvalidNameError as exc:
        out.skipped.append(SkippedFolder(str(folder), exc.message))
        warnings.warn(f"kcodec: skipped {str(folder)!r}: {exc.message}", InvalidNameWarning, stacklevel=3)
        return
    out[(topic, partition)] = open_partition(folder, topic, partition)


def open_log_dir(path: PathLike) -> LogDir:
    """Every partition under ``path``: a broker log dir, a topic's partition folder, or one partition.

    A folder holding segments whose name is not a valid ``<topic>-<partition>``
    is not guessed at: it is left out, listed in the result's ``skipped`` and
    reported with an :class:`~kcodec.errors.InvalidNameWarning`.
    """
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"no such log directory: {p}")
    out = LogDir()
    if _holds_segments(p):
        _add_partition(out, p)
        return out
    for child in sorted(p.iterdir()):
        if not _is_bookkeeping(child.name) and _holds_segments(child):
            _add_partition(out, child)
    return out


class LogWriter:
    """Appends batches to a partition folder as a broker would store them.

    Each :meth:`append` is one message set (its offsets already assigned and
    increasing).  Segments roll when the next append would pass
    ``segment_bytes`` (or its offsets no longer fit relative to the base);
    each segment's ``.index``, ``.timeindex`` and ``.log`` are written
    atomically when it rolls or on :meth:`close` (``.log`` last, so a crash
    never leaves a ``.log`` without its indexes being at least absent, which
    Kafka and kcodec both handle by rebuilding them).
    """

    def __init__(self, path: PathLike, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES) -> None:
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self._buf = bytearray()
        self._index: Optional[IndexBuilder] = None
        self._last_offset: Optional[int] = None
        self.segments_written: List[Path] = []

    @classmethod
    def in_log_dir(cls, log_dir: PathLike, topic: str, partition: int, *, source: Optional[str] = None,
                   **options) -> "LogWriter":
        """A writer for the ``<topic>-<partition>`` folder of ``log_dir``.

        The names are checked by Kafka's rules and the folder must resolve
        inside ``log_dir`` (not through a symlink leading out of it); an
        :class:`~kcodec.errors.InvalidNameError` naming ``source`` (where the
        names came from) is raised before anything is created.
        """
        folder = safe_join(Path(log_dir), partition_dir_name(topic, partition, source=source), source=source)
        return cls(folder, **options)

    def append(self, data) -> None:
        view = memoryview(data).cast("B")
        entries = list(iter_entries(view, strict=True))
        if not entries:
            return
        infos = [batch_index_info(view, e) for e in entries]
        first_offset = entries[0].offset if entries[0].magic >= 2 else infos[0][0]
        if self._last_offset is not None and first_offset <= self._last_offset:
            raise CorruptDataError(
                f"batches must be appended in offset order: offset {first_offset} after {self._last_offset}")
        largest = max(i[0] for i in infos)
        size = len(view)
        if self._index is not None and (
                len(self._buf) + size > self.segment_bytes or largest - self._index.base_offset > 2 ** 31 - 1):
            self._roll()
        if self._index is None:
            check_base_offset(first_offset, source=str(self.path))
            self._index = IndexBuilder(first_offset, self.index_interval_bytes)
        max_ts, shallow = -1, largest
        for (last, ts) in infos:
            if ts > max_ts:
                max_ts, shallow = ts, last
        self._index.append(len(self._buf), size, largest, max_ts, shallow)
        self._buf += view
        self._last_offset = largest

    def _roll(self) -> None:
        idx = self._index
        if idx is None:
            return
        idx.finish()
        base = self.path / segment_file_name(idx.base_offset, "")
        atomic_write_bytes(str(base) + ".index", idx.offset_index_bytes())
        atomic_write_bytes(str(base) + ".timeindex", idx.time_index_bytes())
        atomic_write_bytes(str(base) + ".log", self._buf)
        self.segments_written.append(Path(str(base) + ".log"))
        self._buf = bytearray()
        self._index = None

    def close(self) -> List[Path]:
        """Write the last segment; returns the ``.log`` paths written."""
        self._roll()
        return self.segments_written

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, exc_type, *exc) -> None:
        if exc_type is None:
            self.close()


def write_partition(path: PathLike, message_sets: Iterable, **options) -> List[Path]:
    """Write message sets (each bytes of one or more batches) into a partition folder."""
    with LogWriter(path, **options) as w:
        for ms in message_sets:
            w.append(ms)
    return w.segments_written


def rebuild_indexes(log_path: PathLike, *, index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                    truncate: bool = True) -> int:
    """Kafka's segment recovery: validate every batch, rebuild both indexes.

    At the first corrupt or partial batch the ``.log`` is truncated there
    (when ``truncate``), as the broker does.  Returns the valid byte count.
    """
    from kcodec.records import read_batches

    seg = LogSegment(log_path)
    data = seg.path.read_bytes()
    idx = IndexBuilder(seg.base_offset, index_interval_bytes)
    valid = 0
    try:
        for batch in read_batches(data, validate=True):
            for _ in batch:  # deep validation, as recovery iterates records
                pass
            idx.append(valid, batch.size_in_bytes, batch.last_offset, batch.max_timestamp, batch.last_offset)
            valid += batch.size_in_bytes
    except KcodecError:
        pass
    size = len(data)
    if truncate and valid < size:
        with open(log_path, "r+b") as f:
            f.truncate(valid)
            os.fsync(f.fileno())
    idx.finish()
    atomic_write_bytes(seg.index_path, idx.offset_index_bytes())
    atomic_write_bytes(seg.time_index_path, idx.time_index_bytes())
    return valid
