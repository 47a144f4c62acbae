"""Kafka log directories and segment files (``LogSegment``, ``LocalLog``).

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
import struct
import warnings
from dataclasses import dataclass, field
from pathlib import Path, PurePath, PurePosixPath
from typing import Any, BinaryIO, Dict, Iterable, Iterator, List, Optional, Tuple, Union

from kcodec.errors import CorruptDataError, CorruptIndexWarning, InvalidNameError, InvalidNameWarning, KcodecError
from kcodec.log.files import atomic_write_bytes
from kcodec.log.index import (
    CorruptIndexError,
    IndexBuilder,
    OffsetIndex,
    TimeIndex,
    batch_index_info,
    build_indexes,
    relative_offset,
)
from kcodec.log.lock import check_no_broker
from kcodec.log.names import (
    KAFKA_DIR_SUFFIXES,
    STAGING_PREFIX,
    check_base_offset,
    check_partition,
    check_topic,
    offset_from_file_name,
    parse_partition_dir_name,
    parse_tiered_dir_name,
    partition_dir_name,
    safe_join,
    segment_file_name,
    segment_log_offset,
)
from kcodec.log.transaction_index import read_txn_index
from kcodec.records.batch_header import LAST_OFFSET_DELTA
from kcodec.records.framing import MAGIC_OFFSET, Entry, iter_entries
from kcodec.storage import LOCAL as _LOCAL
from kcodec.storage import FileInfo, Storage, resolve

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
    "find_partitions",
    "require_partitions",
    "partition_path",
    "NoSegmentsError",
    "LogWriter",
    "write_partition",
    "rebuild_indexes",
]

PathLike = Union[str, "os.PathLike[str]"]
_I64, _I32 = struct.Struct(">q"), struct.Struct(">i")
_LAST_OFFSET_END = LAST_OFFSET_DELTA + 4  # a v2 header up to lastOffsetDelta; v0/v1 need their offset and magic
DEFAULT_SEGMENT_BYTES = 1024 * 1024 * 1024
DEFAULT_INDEX_INTERVAL_BYTES = 4096


class NoSegmentsError(KcodecError, FileNotFoundError):
    """A path given as a log directory holds no Kafka segments."""


class LogSegment:
    """One segment: ``.log`` memory-mapped (or fetched in ranges from an object store), indexes on demand.

    ``base_offset`` comes from the file name (``00000000000000012345.log``, or
    tiered storage's ``00000000000000012345-<segment id>.log``) unless given.
    """

    def __init__(self, log_path: PathLike, storage: Optional[Storage] = None, *,
                 base_offset: Optional[int] = None, size: Optional[int] = None) -> None:
        self.storage = storage or _LOCAL
        self.path = PurePosixPath(str(log_path)) if self.storage.remote else Path(log_path)
        self.base_offset = offset_from_file_name(self.path.name) if base_offset is None else base_offset
        self._size = size
        self._buf: Any = None  # bytes from an object store, else a memory map
        self._file: Optional[BinaryIO] = None
        self._offset_index: Optional[OffsetIndex] = None
        self._time_index: Optional[TimeIndex] = None

    def __repr__(self) -> str:
        return f"LogSegment({self.url!r})"

    @property
    def url(self) -> str:
        """The path or URL, for messages."""
        return self.storage.url(str(self.path))

    @property
    def index_path(self) -> PurePath:
        return self.path.with_suffix(".index")

    @property
    def time_index_path(self) -> PurePath:
        return self.path.with_suffix(".timeindex")

    @property
    def txn_index_path(self) -> PurePath:
        return self.path.with_suffix(".txnindex")

    @property
    def size(self) -> int:
        if self._size is None or not self.storage.remote:
            self._size = os.stat(self.path).st_size if not self.storage.remote else self.storage.size(str(self.path))
        return self._size

    @property
    def data(self) -> Any:
        """The ``.log`` bytes as a read-only buffer (a memory map; ``b""`` when empty).

        From an object store this downloads the whole object; readers of a
        part use :meth:`read_range`.
        """
        if self._buf is None:
            if self.storage.remote:
                self._buf = self.storage.read_bytes(str(self.path))
                return self._buf
            if self.size == 0:
                return b""
            self._file = open(self.path, "rb")
            self._buf = mmap.mmap(self._file.fileno(), 0, access=mmap.ACCESS_READ)
        return self._buf

    def read_range(self, start: int, end: int) -> Any:
        """Bytes ``[start, end)`` of the ``.log``: a view of the map, or one ranged read."""
        if self.storage.remote and self._buf is None:
            return self.storage.read_range(str(self.path), start, end)
        return memoryview(self.data)[start:end]

    def close(self) -> None:
        if self._buf is not None and not isinstance(self._buf, bytes):  # a memory map
            try:
                self._buf.close()
            except BufferError:
                # Batches handed out still view the map; it unmaps when the last one goes.
                pass
        self._buf = None
        if self._file is not None:
            self._file.close()
            self._file = None

    def __enter__(self) -> "LogSegment":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _load_index(self, cls: Any, path: Any) -> Any:
        if self.storage.remote:
            try:
                data = self.storage.read_bytes(str(path))
            except FileNotFoundError:
                data = None
            if data is not None:
                return cls.open(self.storage.url(str(path)), self.base_offset, data)
        elif path.exists():
            return cls.open(path, self.base_offset)
        return cls.empty(self.base_offset)

    def _usable_index(self, cls: Any, path: Any, check: Any) -> Any:
        """The index file if it passes ``check``; else, with a :class:`CorruptIndexWarning`, none.

        A broker meeting a ``CorruptIndexException`` rebuilds the index from
        the ``.log`` (``LogLoader.loadSegmentFiles``); a reader does the same
        in effect by scanning from position 0, so it never reads less than
        the segment holds.
        """
        try:
            index = self._load_index(cls, path)
            check(index)
            return index
        except CorruptIndexError as exc:
            warnings.warn(f"kcodec: not using {self.storage.url(str(path))!r}, reading the segment from its "
                          f"start: {exc.message}", CorruptIndexWarning, stacklevel=_stacklevel())
            return cls.empty(self.base_offset)

    @property
    def offset_index(self) -> OffsetIndex:
        """The ``.index`` readers start from; empty when the file is missing, or fails
        :meth:`OffsetIndex.sanity_check` against this ``.log`` (then with a :class:`CorruptIndexWarning`)."""
        if self._offset_index is None:
            self._offset_index = self._usable_index(OffsetIndex, self.index_path,
                                                    lambda index: index.sanity_check(self.size))
        return self._offset_index

    @property
    def time_index(self) -> TimeIndex:
        """The ``.timeindex``, checked as :attr:`offset_index` is."""
        if self._time_index is None:
            self._time_index = self._usable_index(TimeIndex, self.time_index_path,
                                                  lambda index: index.sanity_check())
        return self._time_index

    def aborted_transactions(self) -> List[Tuple[int, int, int]]:
        """``(producer id, first offset, last offset)`` of each ``.txnindex`` entry (none without the file)."""
        try:
            if self.storage.remote:
                data = self.storage.read_bytes(str(self.txn_index_path))
            else:
                data = Path(self.txn_index_path).read_bytes()
        except FileNotFoundError:
            return []
        return [(t.producer_id, t.first_offset, t.last_offset) for t in read_txn_index(data)]

    def start_position(self, offset: Optional[int]) -> int:
        """Byte position to start scanning for ``offset`` (the offset index lookup).

        The batch at the entry's position must end at or before the entry's
        offset, as in every index a broker writes (``LogSegment.append``
        indexes an append's largest offset at its first byte); an entry that
        does not would skip records, so the index is then not used, with a
        :class:`CorruptIndexWarning`, and the scan starts at 0.
        """
        if offset is None or offset <= self.base_offset:
            return 0
        entry = self.offset_index.lookup(offset)
        if entry.position == 0 or self._vouches(entry.offset, entry.position):
            return entry.position
        warnings.warn(f"kcodec: not using {self.storage.url(str(self.index_path))!r}, reading the segment from "
                      f"its start: its entry ({entry.offset}, {entry.position}) does not point at a batch ending "
                      f"by offset {entry.offset}", CorruptIndexWarning, stacklevel=_stacklevel())
        self._offset_index = OffsetIndex.empty(self.base_offset)
        return 0

    def _vouches(self, offset: int, position: int) -> bool:
        """Whether a batch starts at ``position`` (as far as its header shows) with its last offset <= ``offset``."""
        head = bytes(self.read_range(position, min(position + _LAST_OFFSET_END, self.size)))
        if len(head) <= MAGIC_OFFSET:
            return False
        last = _I64.unpack_from(head)[0]
        if head[MAGIC_OFFSET] >= 2:
            if len(head) < _LAST_OFFSET_END:
                return False
            last += _I32.unpack_from(head, LAST_OFFSET_DELTA)[0]
        return last <= offset

    def entries(self, start_position: int = 0, end_position: Optional[int] = None) -> Iterator[Entry]:
        """Complete entries of the file, with errors naming the file."""
        try:
            yield from iter_entries(self.data, start_position, end_position)
        except KcodecError as exc:
            raise exc.with_context(source=self.url)

    def batches(self, start_offset: Optional[int] = None, *, validate: bool = True,
                start_position: Optional[int] = None, end_position: Optional[int] = None) -> Iterator[Any]:
        """Batches whose last offset is >= ``start_offset``, found through the offset index."""
        from kcodec.records import read_batches

        pos = self.start_position(start_offset) if start_position is None else start_position
        end = self.size if end_position is None else end_position
        view = self.read_range(pos, end)
        try:
            for batch in read_batches(view, validate=validate):
                if start_offset is not None and batch.last_offset < start_offset:
                    continue
                yield batch
        except KcodecError as exc:
            raise exc.with_context(position=pos, source=self.url)

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
        """Kafka's index checks, plus: every index entry points at a batch start holding its offset.

        Raises :class:`~kcodec.log.index.CorruptIndexError` (or CorruptDataError) where the readers
        would warn and not use the index.
        """
        index = self._load_index(OffsetIndex, self.index_path)
        index.sanity_check(self.size)
        self._load_index(TimeIndex, self.time_index_path).sanity_check()
        starts = {e.position: e for e in self.entries()}
        data = self.data
        for off, pos in zip(index.offsets.tolist(), index.positions.tolist()):
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
    path: Union[Path, PurePosixPath]
    segments: List[LogSegment] = field(default_factory=list)
    storage: Storage = field(default_factory=lambda: _LOCAL)
    layout: str = "broker"  #: ``broker`` (a log directory) or ``tiered`` (LocalTieredStorage)
    topic_id: Optional[str] = None

    @property
    def active_segment(self) -> Optional[LogSegment]:
        return self.segments[-1] if self.segments else None

    def segment_for(self, offset: int) -> Optional[LogSegment]:
        found = None
        for seg in self.segments:
            if seg.base_offset <= offset:
                found = seg
        return found

    def batches(self, start_offset: Optional[int] = None, *, validate: bool = True) -> Iterator[Any]:
        for i, seg in enumerate(self.segments):
            nxt = self.segments[i + 1].base_offset if i + 1 < len(self.segments) else None
            if start_offset is not None and nxt is not None and nxt <= start_offset:
                continue
            yield from seg.batches(start_offset, validate=validate)

    def close(self) -> None:
        for seg in self.segments:
            seg.close()


def partition_path(parent: str, topic: object, partition: object, storage: Optional[Storage] = None, *,
                   source: Optional[str] = None) -> str:
    """The folder of ``topic``-``partition`` under the log directory ``parent`` (a path in ``storage``).

    Topic and partition are checked by Kafka's rules, and a local folder must
    resolve inside ``parent`` (not through a symlink leading out of it); an
    :class:`~kcodec.errors.InvalidNameError` naming ``source`` otherwise.
    """
    storage = storage or _LOCAL
    name = partition_dir_name(topic, partition, source=source)
    if storage.remote:
        # an object key cannot lead out of its prefix once the name is one checked component
        return storage.join(str(parent), name)
    return safe_join(str(parent), name, source=source)


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


def _segment_logs(files: Iterable[FileInfo]) -> Tuple[str, List[Tuple[int, FileInfo]]]:
    """(layout, [(base offset, .log file)]) of one folder's listing."""
    found: Dict[str, List[Tuple[int, FileInfo]]] = {"broker": [], "tiered": []}
    for f in files:
        named = None if f.is_dir else segment_log_offset(f.name)
        if named is not None:
            found[named[0]].append((named[1], f))
    if found["tiered"] and not found["broker"]:
        return "tiered", sorted(found["tiered"], key=lambda t: (t[0], t[1].name))
    return "broker", sorted(found["broker"], key=lambda t: t[0])


def _folder_name(storage: Storage, path: str, layout: str) -> Tuple[str, int, Optional[str]]:
    """(topic, partition, topic id) from a partition folder's name, by Kafka's rules."""
    name, where = storage.basename(path), storage.url(path)
    if layout == "tiered":
        return parse_tiered_dir_name(name, source=where)
    return parse_partition_dir_name(name, source=where) + (None,)


def _partition_from(storage: Storage, path: str, layout: str, logs: List[Tuple[int, FileInfo]],
                    topic: Optional[str] = None, partition: Optional[int] = None) -> Partition:
    topic_id = None
    if topic is None or partition is None or layout == "tiered":
        name_topic, name_partition, topic_id = _folder_name(storage, path, layout)
        topic = name_topic if topic is None else topic
        partition = name_partition if partition is None else partition
    where = storage.url(path)
    topic = check_topic(topic, source=where)
    partition = check_partition(partition, source=where)
    local = not storage.remote
    root = Path(path) if local else PurePosixPath(path)
    segments = [LogSegment(root / f.name, storage, base_offset=off, size=None if local else f.size)
                for off, f in logs]
    return Partition(topic, partition, root, segments, storage, layout, topic_id)


def open_partition(path: PathLike, topic: Optional[str] = None, partition: Optional[int] = None, *,
                   storage_options: Optional[Dict[str, Any]] = None) -> Partition:
    """A partition folder (path or URL); topic and partition come from its name unless given (both are
    checked by Kafka's rules)."""
    storage, inner = resolve(path, storage_options)
    layout, logs = _segment_logs(storage.list(inner))
    return _partition_from(storage, inner, layout, logs, topic, partition)


def _is_bookkeeping(name: str) -> bool:
    # folders a broker or a kcodec writer is still moving; they are not partitions to read
    return name.endswith(KAFKA_DIR_SUFFIXES) or name.startswith(STAGING_PREFIX)


def _add_partition(out: LogDir, storage: Storage, path: str, layout: str,
                   logs: List[Tuple[int, FileInfo]]) -> None:
    try:
        part = _partition_from(storage, path, layout, logs)
    except InvalidNameError as exc:
        where = storage.url(path)
        out.skipped.append(SkippedFolder(where, exc.message))
        warnings.warn(f"kcodec: skipped {where!r}: {exc.message}", InvalidNameWarning, stacklevel=_stacklevel())
        return
    out[(part.topic, part.partition)] = part


def open_log_dir(path: PathLike, *, topic: Optional[str] = None,
                 storage_options: Optional[Dict[str, Any]] = None) -> LogDir:
    """Every partition under ``path`` (a path or URL): a broker log dir, a topic's partition folder,
    one partition, or a tiered-storage directory; empty when it holds no segments.

    ``topic`` is a regular expression the whole topic name must match.
    Folders Kafka is deleting (``*-delete``) or moving (``*-future``,
    ``*-stray``) and kcodec's staging folders are not read.  A folder holding
    segments whose name is not a valid ``<topic>-<partition>`` (for tiered
    storage ``<topic>-<partition>-<topic id>``) is not guessed at: it is left
    out, listed in the result's ``skipped`` and reported with an
    :class:`~kcodec.errors.InvalidNameWarning`.
    """
    storage, inner = resolve(path, storage_options)
    if not storage.isdir(inner):
        raise FileNotFoundError(f"no such log directory: {storage.url(inner)}")
    pattern = re.compile(topic) if topic is not None else None
    out = LogDir()
    listing = storage.list(inner)
    layout, logs = _segment_logs(listing)
    if logs:
        _add_partition(out, storage, inner, layout, logs)
    else:
        for child in sorted(f.name for f in listing if f.is_dir and not _is_bookkeeping(f.name)):
            sub = storage.join(inner, child)
            layout, logs = _segment_logs(storage.list(sub))
            if logs:
                _add_partition(out, storage, sub, layout, logs)
    if pattern is not None:
        for key in [k for k in out if not pattern.fullmatch(k[0])]:
            del out[key]
    return out


def find_partitions(path: PathLike, *, topic: Optional[str] = None,
                    storage_options: Optional[Dict[str, Any]] = None) -> List[Partition]:
    """The partitions of :func:`open_log_dir`, in ``(topic, partition)`` order."""
    found = open_log_dir(path, topic=topic, storage_options=storage_options)
    return [found[k] for k in sorted(found)]


def require_partitions(path: PathLike, *, topic: Optional[str] = None,
                       storage_options: Optional[Dict[str, Any]] = None) -> List[Partition]:
    """:func:`find_partitions`, but a path without Kafka segments (for ``topic``) is an error naming it."""
    found = find_partitions(path, topic=topic, storage_options=storage_options)
    if not found:
        what = f" of a topic matching {topic!r}" if topic is not None else ""
        raise NoSegmentsError(
            f"no Kafka segments{what} under {path} (expected a partition folder <topic>-<partition> holding "
            "NNNNNNNNNNNNNNNNNNNN.log files, or a log directory of such folders)", source=str(path))
    return found


class LogWriter:
    """Appends batches to a partition folder (a path or URL) as a broker would store them.

    Each :meth:`append` is one message set (its offsets already assigned and
    increasing).  Segments roll when the next append would pass
    ``segment_bytes`` (or its offsets no longer fit relative to the base);
    each segment's files are written whole when it rolls or on
    :meth:`close`.  On a local disk the ``.index`` and ``.timeindex`` come
    first and the ``.log`` last, each renamed into place, so a crash never
    leaves a ``.log`` without its indexes being at least absent (Kafka and
    kcodec rebuild missing ones).  In an object store each file is one put,
    the ``.log`` before its indexes, as a broker's tiered storage uploads.
    A local folder in a broker log directory whose ``.lock`` a running
    process holds is refused (:class:`~kcodec.log.lock.LogDirInUseError`).
    """

    def __init__(self, path: PathLike, *, segment_bytes: int = DEFAULT_SEGMENT_BYTES,
                 index_interval_bytes: int = DEFAULT_INDEX_INTERVAL_BYTES,
                 storage_options: Optional[Dict[str, Any]] = None) -> None:
        self.storage, inner = resolve(path, storage_options)
        self.path = PurePosixPath(inner) if self.storage.remote else Path(inner)
        check_no_broker(inner, self.storage)
        self.storage.makedirs(str(self.path))
        self.segment_bytes = segment_bytes
        self.index_interval_bytes = index_interval_bytes
        self._buf = bytearray()
        self._index: Optional[IndexBuilder] = None
        self._last_offset: Optional[int] = None
        self.segments_written: List[PurePath] = []

    @classmethod
    def in_log_dir(cls, log_dir: PathLike, topic: str, partition: int, *, source: Optional[str] = None,
                   **options: Any) -> "LogWriter":
        """A writer for the ``<topic>-<partition>`` folder of ``log_dir`` (a path or URL).

        The names are checked by Kafka's rules and a local folder must resolve
        inside ``log_dir`` (not through a symlink leading out of it); an
        :class:`~kcodec.errors.InvalidNameError` naming ``source`` (where the
        names came from) is raised before anything is created.
        """
        storage, inner = resolve(log_dir, options.get("storage_options"))
        return cls(storage.url(partition_path(inner, topic, partition, storage, source=source)), **options)

    def append(self, data: Any) -> None:
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
            check_base_offset(first_offset, source=self.storage.url(str(self.path)))
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
        base = str(self.path / segment_file_name(idx.base_offset, ""))
        files = [(".index", idx.offset_index_bytes()), (".timeindex", idx.time_index_bytes()), (".log", self._buf)]
        if self.storage.remote:
            files = files[2:] + files[:2]
        for suffix, data in files:
            self.storage.put(base + suffix, data)
        self.segments_written.append(type(self.path)(base + ".log"))
        self._buf = bytearray()
        self._index = None

    def close(self) -> List[PurePath]:
        """Write the last segment; returns the ``.log`` paths written."""
        self._roll()
        return self.segments_written

    def __enter__(self) -> "LogWriter":
        return self

    def __exit__(self, exc_type: Any, *exc: Any) -> None:
        if exc_type is None:
            self.close()


def write_partition(path: PathLike, message_sets: Iterable, **options: Any) -> List[PurePath]:
    """Write message sets (each bytes of one or more batches) into a partition folder (a path or URL;
    ``storage_options`` among the options)."""
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
    with open(seg.path, "rb") as f:
        data = f.read()
    valid, beyond = 0, None
    try:
        # size and checksum, as LogSegment.recover's ensureValid: it does not parse the records
        for batch in read_batches(data, validate=True):
            try:
                relative_offset(batch.last_offset, seg.base_offset)  # an index must be able to hold it
            except CorruptDataError as exc:
                beyond = exc
                break
            valid += batch.size_in_bytes
    except CorruptDataError:  # LogSegment.recover truncates at CorruptRecordException/InvalidRecordException only
        pass
    if beyond is not None:
        # LogSegment.ensureOffsetInRange throws past the truncation (LogLoader splits such a segment)
        raise beyond.with_context(source=str(seg.path), position=valid)
    size = len(data)
    if truncate and valid < size:
        with open(log_path, "r+b") as f:
            f.truncate(valid)
            os.fsync(f.fileno())
    index, time_index = build_indexes(memoryview(data)[:valid], seg.base_offset, index_interval_bytes)
    atomic_write_bytes(seg.index_path, index)
    atomic_write_bytes(seg.time_index_path, time_index)
    return valid


def _stacklevel() -> int:
    """``stacklevel`` for a ``warnings.warn`` in the calling function: the first frame outside kcodec.

    The same warning is reached through properties, generators and other kcodec modules (the
    partition reader, ``read_arrow``), so no constant depth names the user's line every time.
    """
    import sys
    frame: Any = sys._getframe(1)  # None past the outermost frame
    level = 1
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] == "kcodec":
        frame, level = frame.f_back, level + 1
    return level
