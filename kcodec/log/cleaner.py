"""Log compaction of a partition directory: Kafka's ``LogCleaner`` run offline.

:func:`compact` applies the cleaner's rules (spec section 12) to the
segments of one partition directory:

* the dirty range is ``[firstDirtyOffset, firstUncleanableOffset)``; the
  uncleanable point is the active segment, the last stable offset (first
  offset of a still-open transaction) and ``min.compaction.lag.ms``, rounded
  down to a segment boundary; the active segment is never touched;
* an offset map ``key -> latest offset`` is built over the dirty range,
  skipping control batches and aborted transactional data.  kcodec keys the
  map by the **exact key bytes** (a dict), not by Kafka's MD5 digest in a
  fixed-size table: there are no hash collisions and no "map full" partial
  rounds, at the price of memory proportional to the distinct keys (the
  Spark variant in :mod:`kcodec.spark.ops` builds the map across a cluster);
* every segment from the log start to the end of the round is rewritten
  through :func:`kcodec.log.filter.filter_batch` with the cleaner's filter:
  superseded records and null-key records go; tombstones stay until the
  batch's delete horizon (KIP-534: stamped ``now + delete.retention.ms`` on
  the first clean that keeps them, removed by a clean after it; v0/v1
  tombstones follow the legacy last-modified rule); aborted transactional
  data goes at once; transaction markers follow section 12.5; the last batch
  of every active producer and the last batch of the round stay as empty
  headers;
* aborted transactions are found by **reading the ABORT markers** in the log
  (a transaction spans from its producer's first transactional batch after
  the previous marker to its ABORT marker), not from ``.txnindex`` files,
  which may be missing; the cleaned segments get ``.txnindex`` files
  rebuilt from what is still needed, with Kafka's last-stable-offset values;
* consecutive segments are grouped by size (``segment.bytes``,
  ``segment.index.bytes``, 2^31 offsets) and each group is written as one
  new segment, indexes rebuilt, last-modified time of the group's last
  segment kept.

Crash safety follows Kafka's swap protocol: the new segment is written as
``*.cleaned`` files, renamed to ``*.swap`` (indexes first, the ``.log``
last: the ``.log.swap`` rename is the commit point), the replaced segments'
files are renamed to ``*.deleted``, the swap files renamed to their final
names (``.log`` last) and the ``.deleted`` files removed.  :func:`recover_log_dir`
finishes or rolls back whatever a crash left; every operation calls it first.
Every file operation goes through :class:`FileOps`, whose hook tests use to
stop the process after any single step.
"""
from __future__ import annotations

import re
import struct
import time
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Set, Tuple

from kcodec.errors import CorruptDataError, KcodecError
from kcodec.log.filter import (
    BatchRetention,
    BatchRetentionResult,
    FilterResult,
    RecordFilter,
    filter_batch,
)
from kcodec.log.index import relative_offset
from kcodec.log.names import parse_partition_dir_name, segment_file_name
from kcodec.records import batch_header, message_header
from kcodec.records.framing import iter_entries, valid_bytes
from kcodec.storage import LOCAL, Storage, is_url, resolve


class PartialTailError(CorruptDataError):
    """A segment that would be rewritten ends in an incomplete batch."""

__all__ = [
    "FileOps",
    "CleanerConfig",
    "CleanResult",
    "SegmentInfo",
    "compact",
    "recover_log_dir",
    "list_segments",
    "build_indexes",
    "read_txn_index",
    "encode_txn_index",
    "replace_segments",
    "delete_segments",
    "segment_file_name",
    "cli_add_parser",
    "cli_run",
]

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
INDEX_SUFFIXES = (".index", ".timeindex", ".txnindex")
CLEANED, SWAP, DELETED = ".cleaned", ".swap", ".deleted"
_NAME = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex|\.txnindex)(\.cleaned|\.swap|\.deleted)?$")
_TXN_ENTRY = struct.Struct(">hqqqq")
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


# --------------------------------------------------------------------------------------------
# file operations with a hook

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

    @contextmanager
    def writer(self, path: str) -> Iterator["_Writer"]:
        """Write a new file chunk by chunk; it is fsynced (an object: completed) when the block ends.

        A local file replaces whatever link was at ``path`` rather than writing through it.
        """
        with self.storage.open_write(path, self.fsync) as f:
            yield _Writer(self, f, path)
        self._done("write", path)

    def write(self, path: str, data) -> None:
        data = memoryview(data).cast("B") if not isinstance(data, bytes) else data
        with self.writer(path) as w:
            half = len(data) // 2
            if half:
                w.write(data[:half])
                w.checkpoint()
            w.write(data[half:])

    def rename(self, src: str, dst: str) -> None:
        if self.storage.remote:
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
    def __init__(self, ops: FileOps, f, path: str) -> None:
        self._ops, self._f, self.path = ops, f, path
        self.size = 0
        self._partial_done = False

    def write(self, data) -> None:
        self._f.write(data)
        self.size += len(data)

    def checkpoint(self) -> None:
        """Mark a point where a crash would leave a partially written file (reported once)."""
        if not self._partial_done:
            self._partial_done = True
            self._f.flush()
            self._ops._done("write-partial", self.path)


# --------------------------------------------------------------------------------------------
# segments, indexes

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
    files = [(f, _NAME.match(f.name)) for f in storage.list(log_dir) if not f.is_dir]
    sizes: Dict[int, Dict[str, int]] = {}
    for f, m in files:
        if m and m.group(3) is None and m.group(2) != ".log":
            sizes.setdefault(int(m.group(1)), {})[m.group(2)] = f.size
    out = [SegmentInfo(int(m.group(1)), log_dir, f.size, f.mtime, storage,
                       sizes.get(int(m.group(1)), {}) if storage.remote else {})
           for f, m in files if m and m.group(2) == ".log" and m.group(3) is None]
    out.sort(key=lambda s: s.base_offset)
    return out


def open_log(path: str, storage: Optional[Storage] = None):
    """A read-only buffer over a whole ``.log`` file (memory-mapped; empty files give b"")."""
    return (storage or LOCAL).open_read(path)


def check_complete(buf, source: str) -> None:
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


def _entry_header(buf, pos: int, magic: int) -> Tuple[int, int]:
    """(lastOffset, maxTimestamp) of the entry at ``pos`` without decoding it."""
    header = batch_header if magic >= 2 else message_header
    return header.last_offset_and_max_timestamp(buf, pos, magic)


def build_indexes(log_buf, base_offset: int, index_interval_bytes: int = 4096) -> Tuple[bytes, bytes]:
    """Offset and time index bytes for a ``.log``, as ``LogSegment.recover`` rebuilds them.

    An offset entry ``(lastOffset, position)`` is added for a batch when more
    than ``index_interval_bytes`` were written since the previous entry; the
    time index tracks the largest timestamp so far and appends only strictly
    larger values, plus the final entry a closed segment gets.
    """
    index = bytearray()
    tindex = bytearray()
    last_entry = 0
    valid = 0
    max_ts, max_ts_offset = -1, -1
    last_time = -1  # TimeIndex.lastEntry of an empty index is (NO_TIMESTAMP, baseOffset)

    def time_append(ts: int, off: int) -> None:
        nonlocal last_time
        if ts > last_time:
            tindex.extend(_TIME_ENTRY.pack(ts, relative_offset(off, base_offset)))
            last_time = ts

    for e in iter_entries(log_buf):
        last, ts = _entry_header(log_buf, e.position, e.magic)
        if ts > max_ts:
            max_ts, max_ts_offset = ts, last
        if valid - last_entry > index_interval_bytes:
            index.extend(_OFFSET_ENTRY.pack(relative_offset(last, base_offset), valid))
            time_append(max_ts, max_ts_offset)
            last_entry = valid
        valid += e.size
    time_append(max_ts, max_ts_offset)
    return bytes(index), bytes(tindex)


@dataclass(frozen=True)
class AbortedTxn:
    """A ``.txnindex`` entry."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def read_txn_index(data: bytes) -> List[AbortedTxn]:
    out = []
    for pos in range(0, len(data) - len(data) % _TXN_ENTRY.size, _TXN_ENTRY.size):
        _v, pid, first, last, lso = _TXN_ENTRY.unpack_from(data, pos)
        out.append(AbortedTxn(pid, first, last, lso))
    return out


def encode_txn_index(entries: Sequence[AbortedTxn]) -> bytes:
    return b"".join(_TXN_ENTRY.pack(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in entries)


def _next_offset_of(log_buf, base_offset: int) -> int:
    """``LogSegment.readNextOffset``: one past the last batch's lastOffset (the base when empty)."""
    nxt = base_offset
    for e in iter_entries(log_buf):
        last, _ = _entry_header(log_buf, e.position, e.magic)
        nxt = last + 1
    return nxt


def ops_for(log_dir: str, ops: Optional[FileOps], storage_options: Optional[Dict[str, Any]]) -> Tuple[FileOps, str]:
    """(file operations on the storage of ``log_dir``, the path inside that storage)."""
    storage, inner = resolve(log_dir, storage_options)
    ops = ops or FileOps()
    ops.storage = storage
    if not storage.isdir(inner):
        raise FileNotFoundError(f"no such partition directory: {storage.url(inner)}")
    return ops, inner


def _write_segment_files(ops: FileOps, log_dir: str, base: int, chunks_or_path, txn: bytes,
                         index_interval_bytes: int, suffix: str = CLEANED, log_buf=None) -> None:
    """Write ``base.{log,index,timeindex,txnindex}<suffix>``; the log may be given as a path
    already written (``str``, its bytes in ``log_buf`` when the caller holds them) or as bytes."""
    join = ops.storage.join
    log_path = join(log_dir, segment_file_name(base, ".log") + suffix)
    if not isinstance(chunks_or_path, str):
        ops.write(log_path, chunks_or_path)
    if log_buf is None:
        with open_log(log_path, ops.storage) as buf:
            index, tindex = build_indexes(buf, base, index_interval_bytes)
    else:
        index, tindex = build_indexes(log_buf, base, index_interval_bytes)
    # The .log is complete before its indexes, as a broker's tiered storage uploads them.
    ops.write(join(log_dir, segment_file_name(base, ".index") + suffix), index)
    ops.write(join(log_dir, segment_file_name(base, ".timeindex") + suffix), tindex)
    # Always written, even empty: recovery relies on a swap carrying all four files.
    ops.write(join(log_dir, segment_file_name(base, ".txnindex") + suffix), txn)


# --------------------------------------------------------------------------------------------
# swap protocol and recovery

def replace_segments(ops: FileOps, log_dir: str, new_base: int, old: Sequence[SegmentInfo],
                     mtime: Optional[float] = None) -> None:
    """Swap the ``new_base.*.cleaned`` files in for the ``old`` segments (``LocalLog.replaceSegments``)."""
    def name(suffix: str, extra: str = "") -> str:
        return ops.storage.join(log_dir, segment_file_name(new_base, suffix) + extra)

    # One listing instead of a check per file: only this run changes these names meanwhile.
    present = _names(ops, log_dir)
    cleaned = [s for s in INDEX_SUFFIXES if segment_file_name(new_base, s) + CLEANED in present]
    if mtime is not None and not ops.storage.remote:
        for s in (".log",) + tuple(cleaned):
            ops.set_mtime(name(s, CLEANED), mtime)
    for s in cleaned:
        ops.rename(name(s, CLEANED), name(s, SWAP))
    ops.rename(name(".log", CLEANED), name(".log", SWAP))  # commit point
    for seg in old:
        _rename_to_deleted(ops, seg, present)
    for s in cleaned:
        ops.rename(name(s, SWAP), name(s))
    ops.rename(name(".log", SWAP), name(".log"))
    for seg in old:
        for s in SEGMENT_SUFFIXES:
            ops.delete(seg.path(s) + DELETED)


def _names(ops: FileOps, log_dir: str) -> Set[str]:
    return {f.name for f in ops.storage.list(log_dir) if not f.is_dir}


def _rename_to_deleted(ops: FileOps, seg: SegmentInfo, present: Set[str]) -> None:
    # The .log goes first: once it is renamed the segment no longer exists for any reader,
    # and recovery treats index files without a .log as orphans.
    for s in SEGMENT_SUFFIXES:
        if segment_file_name(seg.base_offset, s) in present:
            p = seg.path(s)
            ops.rename(p, p + DELETED)


def delete_segments(ops: FileOps, segments: Sequence[SegmentInfo]) -> None:
    """Delete whole segments as Kafka does: rename to ``.deleted``, then remove."""
    if not segments:
        return
    present = _names(ops, segments[0].dir)
    for seg in segments:
        _rename_to_deleted(ops, seg, present)
    for seg in segments:
        for s in SEGMENT_SUFFIXES:
            ops.delete(seg.path(s) + DELETED)


def recover_log_dir(log_dir: str, ops: Optional[FileOps] = None,
                    index_interval_bytes: int = 4096, *,
                    storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, int]:
    """Finish or roll back interrupted swaps and deletions (``LogLoader``'s temp-file pass).

    * ``*.cleaned`` files are uncommitted output: deleted;
    * a ``.log.swap`` is committed: the files it replaces (other segments
      whose base offset lies in ``[swap base, swap next offset)``, and old
      files of its own base that still have a swap counterpart) are deleted
      and the swap files renamed into place; index ``.swap`` files without a
      ``.log.swap`` belong to an uncommitted swap and are deleted;
    * ``*.deleted`` files are removed, index files without a ``.log`` too;
    * a segment missing its offset or time index gets them rebuilt.

    ``log_dir`` may be a URL (with ``storage_options``).  In an object store
    a rename is a copy and then a delete, so a crash between the two leaves
    the file under both names; every rule above already resolves that state
    (a ``.cleaned`` or ``.deleted`` copy is dropped, a ``.swap`` copy is
    renamed in again).  Returns counts of what was done.
    """
    if ops is None or is_url(log_dir):
        ops, log_dir = ops_for(log_dir, ops, storage_options)
    join = ops.storage.join
    stats = {"cleaned_removed": 0, "swaps_completed": 0, "deleted_removed": 0, "orphans_removed": 0,
             "indexes_rebuilt": 0}

    def scan() -> List[Tuple[str, int, str, Optional[str]]]:
        out = []
        for f in ops.storage.list(log_dir):
            m = _NAME.match(f.name)
            if m and not f.is_dir:
                out.append((f.name, int(m.group(1)), m.group(2), m.group(3)))
        return out

    for name, _b, _s, extra in scan():
        if extra == CLEANED:
            ops.delete(join(log_dir, name))
            stats["cleaned_removed"] += 1

    files = scan()
    swaps = sorted(b for _n, b, s, e in files if s == ".log" and e == SWAP)
    swap_set = set(swaps)
    for _n, b, s, e in files:
        if e == SWAP and s != ".log" and b not in swap_set:
            ops.delete(join(log_dir, _n))
    for base in swaps:
        swap_log = join(log_dir, segment_file_name(base, ".log") + SWAP)
        with open_log(swap_log, ops.storage) as buf:
            nxt = _next_offset_of(buf, base)
        end = max(nxt, base + 1)
        current = scan()
        swap_suffixes = {s for _n, b, s, e in current if b == base and e == SWAP}
        for name, b, s, e in current:
            if e is not None or not (base <= b < end):
                continue
            if b != base or s in swap_suffixes:
                ops.delete(join(log_dir, name))
        for s in INDEX_SUFFIXES:
            if s in swap_suffixes:
                ops.rename(join(log_dir, segment_file_name(base, s) + SWAP),
                           join(log_dir, segment_file_name(base, s)))
        ops.rename(swap_log, join(log_dir, segment_file_name(base, ".log")))
        stats["swaps_completed"] += 1

    files = scan()
    logs = {b for _n, b, s, e in files if s == ".log" and e is None}
    for name, b, s, e in files:
        if e == DELETED:
            ops.delete(join(log_dir, name))
            stats["deleted_removed"] += 1
        elif e is None and s != ".log" and b not in logs:
            ops.delete(join(log_dir, name))
            stats["orphans_removed"] += 1
    names = {n for n, _b, _s, _e in scan()}
    for seg in list_segments(log_dir, ops.storage):
        if segment_file_name(seg.base_offset, ".index") not in names \
                or segment_file_name(seg.base_offset, ".timeindex") not in names:
            with open_log(seg.path(), ops.storage) as buf:
                try:
                    index, tindex = build_indexes(buf, seg.base_offset, index_interval_bytes)
                except KcodecError as exc:
                    raise exc.with_context(source=ops.storage.url(seg.path()))
            for suffix, data in ((".index", index), (".timeindex", tindex)):
                tmp = seg.path(suffix) + CLEANED
                ops.write(tmp, data)
                ops.rename(tmp, seg.path(suffix))
            stats["indexes_rebuilt"] += 1
    return stats


# --------------------------------------------------------------------------------------------
# cleaner state: producers, transactions

@dataclass
class CleanerConfig:
    """The topic and cleaner settings compaction reads (Kafka's names in comments)."""

    delete_retention_ms: int = 86_400_000  # delete.retention.ms
    min_cleanable_dirty_ratio: float = 0.5  # min.cleanable.dirty.ratio
    min_compaction_lag_ms: int = 0  # min.compaction.lag.ms
    max_compaction_lag_ms: int = INT64_MAX  # max.compaction.lag.ms
    segment_bytes: int = 1 << 30  # segment.bytes
    segment_index_bytes: int = 10 * 1024 * 1024  # segment.index.bytes
    index_interval_bytes: int = 4096  # index.interval.bytes
    max_message_bytes: int = 1048588  # max.message.bytes
    producer_id_expiration_ms: int = 86_400_000  # producer.id.expiration.ms


@dataclass
class _Producer:
    epoch: int = -1
    last_data_offset: int = -1
    last_timestamp: int = -1
    txn_first_offset: Optional[int] = None


@dataclass
class LogState:
    """What one header pass over the whole log finds: producers, transactions, segment facts."""

    segments: List[SegmentInfo]
    log_end_offset: int
    last_stable_offset: int
    aborted: List[AbortedTxn]
    producers: Dict[int, _Producer]
    largest_timestamp: Dict[int, int]
    first_batch_timestamp: Dict[int, int]
    next_offset: Dict[int, int]

    def active_producers(self, now: int, expiration_ms: int) -> Dict[int, Tuple[Optional[int], int]]:
        """``lastRecordsOfActiveProducers``: pid -> (last data offset or None, epoch)."""
        out = {}
        for pid, p in self.producers.items():
            if p.txn_first_offset is None and now - p.last_timestamp >= expiration_ms:
                continue
            out[pid] = (p.last_data_offset if p.last_data_offset >= 0 else None, p.epoch)
        return out

    def aborted_overlapping(self, start: int, end: int) -> List[AbortedTxn]:
        """``collectAbortedTransactions(start, end)``: aborted txns touching ``[start, end)``."""
        return [t for t in self.aborted if t.last_offset >= start and t.first_offset < end]


def _control_type(batch) -> Optional[int]:
    for rec in batch:
        ct = getattr(rec, "control_type", None)
        return None if ct is None else int(ct)
    return None


@contextmanager
def _naming(seg: SegmentInfo) -> Iterator[None]:
    """Errors from reading ``seg`` name its file."""
    try:
        yield
    except KcodecError as exc:
        raise exc.with_context(source=seg.storage.url(seg.path()))


def scan_log(log_dir: str, segments: Optional[List[SegmentInfo]] = None,
             storage: Optional[Storage] = None) -> LogState:
    """Read every batch header of the log (and the record of each control batch)."""
    from kcodec.records import read_batches
    segments = list_segments(log_dir, storage) if segments is None else segments
    producers: Dict[int, _Producer] = {}
    ongoing: Dict[int, int] = {}  # pid -> first offset of its open transaction
    aborted: List[AbortedTxn] = []
    largest: Dict[int, int] = {}
    first_ts: Dict[int, int] = {}
    nxt: Dict[int, int] = {}
    end = segments[0].base_offset if segments else 0
    for seg in segments:
        seg_max = -1
        seg_next = seg.base_offset
        with open_log(seg.path(), seg.storage) as buf, _naming(seg):
            for batch in read_batches(buf, validate=False):
                last = batch.last_offset
                seg_next = last + 1
                if batch.max_timestamp > seg_max:
                    seg_max = batch.max_timestamp
                if seg.base_offset not in first_ts:
                    first_ts[seg.base_offset] = batch.max_timestamp
                pid = batch.producer_id
                if batch.magic < 2 or pid < 0:
                    continue
                p = producers.setdefault(pid, _Producer())
                if batch.producer_epoch != p.epoch:
                    # ProducerStateEntry.maybeUpdateProducerEpoch drops the cached batches.
                    p.last_data_offset = -1
                    p.epoch = batch.producer_epoch
                p.last_timestamp = batch.max_timestamp
                if batch.is_control:
                    ctype = _control_type(batch)
                    if ctype in (0, 1):
                        first = ongoing.pop(pid, None)
                        p.txn_first_offset = None
                        if ctype == 0 and first is not None:
                            lso = min(ongoing.values()) if ongoing else last + 1
                            aborted.append(AbortedTxn(pid, first, last, lso))
                else:
                    p.last_data_offset = last
                    if batch.is_transactional and pid not in ongoing:
                        ongoing[pid] = batch.base_offset
                        p.txn_first_offset = batch.base_offset
        largest[seg.base_offset] = seg_max if seg_max >= 0 else int(seg.mtime * 1000)
        nxt[seg.base_offset] = seg_next
        end = max(end, seg_next)
    lso = min(ongoing.values()) if ongoing else end
    return LogState(segments, end, lso, aborted, producers, largest, first_ts, nxt)


class _TxnMeta:
    """``CleanedTransactionMetadata``: which transactional batches and markers may go."""

    def __init__(self) -> None:
        self._pending: List[AbortedTxn] = []
        self._added: Set[AbortedTxn] = set()
        self.ongoing_committed: Set[int] = set()
        self.ongoing_aborted: Dict[int, List[Any]] = {}  # pid -> [txn, last observed batch offset]
        self.kept_aborted: List[AbortedTxn] = []

    def add(self, txns: Sequence[AbortedTxn]) -> None:
        for t in txns:
            if t not in self._added:
                self._added.add(t)
                self._pending.append(t)
        self._pending.sort(key=lambda t: t.first_offset)

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0].first_offset <= offset:
            t = self._pending.pop(0)
            self.ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_control_batch(self, batch) -> bool:
        self._consume_up_to(batch.last_offset)
        recs = iter(batch)
        rec = next(recs, None)
        if rec is None:
            return True  # an emptied marker from an earlier clean
        ctype = getattr(rec, "control_type", None)
        ctype = None if ctype is None else int(ctype)
        pid = batch.producer_id
        if ctype == 0:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                self.kept_aborted.append(meta[0])
                return False
            return True
        if ctype == 1:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch) -> bool:
        self._consume_up_to(batch.last_offset)
        if batch.is_transactional:
            meta = self.ongoing_aborted.get(batch.producer_id)
            if meta is not None:
                meta[1] = batch.last_offset
                return True
            self.ongoing_committed.add(batch.producer_id)
        return False


class OffsetMap:
    """Latest offset of every key in the dirty range (exact keys)."""

    def __init__(self) -> None:
        self.map: Dict[bytes, int] = {}
        self.latest_offset = -1

    def put(self, key: bytes, offset: int) -> None:
        self.map[key] = offset

    def get(self, key: bytes) -> int:
        return self.map.get(key, -1)

    def update_latest(self, offset: int) -> None:
        if offset > self.latest_offset:
            self.latest_offset = offset

    def __len__(self) -> int:
        return len(self.map)


def build_offset_map(state: LogState, dirty: Sequence[SegmentInfo], start: int, end: int) -> OffsetMap:
    """``buildOffsetMap`` over the dirty segments ``[start, end)``."""
    from kcodec.records import read_batches
    omap = OffsetMap()
    meta = _TxnMeta()
    meta.add(state.aborted_overlapping(start, end))
    for i, seg in enumerate(dirty):
        seg_end = dirty[i + 1].base_offset if i + 1 < len(dirty) else end
        with open_log(seg.path(), seg.storage) as buf:
            for batch in read_batches(buf, validate=False):
                if batch.is_control:
                    meta.on_control_batch(batch)
                elif not meta.on_batch(batch):
                    for rec in batch:
                        if rec.key is not None and rec.offset >= start:
                            omap.put(bytes(rec.key), rec.offset)
                if batch.last_offset >= start:
                    omap.update_latest(batch.last_offset)
        omap.update_latest(seg_end - 1)
    return omap


class CleanerFilter(RecordFilter):
    """The cleaner's ``RecordFilter`` (``cleanInto.logCleanerFilter``)."""

    def __init__(self, now: int, config: CleanerConfig, offset_map: OffsetMap, meta: _TxnMeta,
                 active_producers: Dict[int, Tuple[Optional[int], int]], upper_bound: int) -> None:
        super().__init__(now, config.delete_retention_ms)
        self.map = offset_map
        self.meta = meta
        self.active = active_producers
        self.upper_bound = upper_bound
        self.retain_legacy_deletes = True
        self.discard_batch_records = False
        self.invalid_records = 0

    def _last_of_producer(self, batch) -> bool:
        last = self.active.get(batch.producer_id)
        if last is None:
            return False
        data_offset, epoch = last
        if data_offset is not None:
            return batch.last_offset == data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def check_batch_retention(self, batch) -> BatchRetentionResult:
        can_discard = self.meta.on_control_batch(batch) if batch.is_control else self.meta.on_batch(batch)
        if batch.is_control:
            horizon = batch.delete_horizon_ms
            self.discard_batch_records = can_discard and horizon is not None and horizon <= self.current_time
        else:
            self.discard_batch_records = can_discard
        if batch.producer_id > -1 and self._last_of_producer(batch):
            retention = BatchRetention.RETAIN_EMPTY
        elif batch.next_offset == self.upper_bound:
            retention = BatchRetention.RETAIN_EMPTY
        elif self.discard_batch_records:
            retention = BatchRetention.DELETE
        else:
            retention = BatchRetention.DELETE_EMPTY
        return BatchRetentionResult(retention, can_discard and batch.is_control)

    def should_retain_record(self, batch, record) -> bool:
        if self.discard_batch_records:
            return False
        if batch.is_control:
            return True
        if record.offset > self.map.latest_offset:
            return True
        if record.key is None:
            self.invalid_records += 1
            return False
        latest = record.offset >= self.map.get(bytes(record.key))
        if record.value is not None:
            return latest
        if batch.magic >= 2:
            horizon = batch.delete_horizon_ms
            retain_deletes = horizon is None or self.current_time < horizon
        else:
            retain_deletes = self.retain_legacy_deletes
        return latest and retain_deletes


# --------------------------------------------------------------------------------------------
# planning and cleaning

@dataclass
class CleanResult:
    """What a compaction did (or, for a dry run or an ineligible log, would do)."""

    log_dir: str
    cleaned: bool
    reason: str
    first_dirty_offset: int
    first_uncleanable_offset: int
    cleanable_ratio: float
    clean_bytes: int
    cleanable_bytes: int
    map_keys: int = 0
    groups: List[List[int]] = field(default_factory=list)
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_records: int = 0
    batches_rebuilt: int = 0
    batches_emptied: int = 0
    segments_before: int = 0
    segments_after: int = 0
    seconds: float = 0.0


def _legacy_horizon(segments: Sequence[SegmentInfo], first_dirty: int, delete_retention_ms: int) -> int:
    clean = [s for s in segments if s.base_offset < first_dirty]
    if not clean:
        return 0
    return int(clean[-1].mtime * 1000) - delete_retention_ms


def group_segments_by_size(segments: Sequence[SegmentInfo], max_size: int, max_index_size: int,
                           first_uncleanable: int) -> List[List[SegmentInfo]]:
    """``groupSegmentsBySize``."""
    groups: List[List[SegmentInfo]] = []
    i = 0
    n = len(segments)
    while i < n:
        group = [segments[i]]
        log_size = segments[i].size
        idx = segments[i].file_size(".index")
        tidx = segments[i].file_size(".timeindex")
        i += 1
        while i < n:
            s = segments[i]
            last_for_first = (segments[i + 1].base_offset - 1) if i + 1 < n else first_uncleanable - 1
            if (log_size + s.size <= max_size and idx + s.file_size(".index") <= max_index_size
                    and tidx + s.file_size(".timeindex") <= max_index_size
                    and (s.size == 0 or last_for_first - group[0].base_offset <= INT32_MAX)):
                group.append(s)
                log_size += s.size
                idx += s.file_size(".index")
                tidx += s.file_size(".timeindex")
                i += 1
            else:
                break
        groups.append(group)
    return groups


@dataclass
class GroupOutput:
    """The result of writing one group's ``.cleaned`` files."""

    base_offset: int
    replaced: List[SegmentInfo]
    emptied: List[SegmentInfo]
    stats: FilterResult
    invalid_records: int
    written: bool


def clean_group(log_dir: str, group: Sequence[SegmentInfo], state: LogState, offset_map: OffsetMap,
                config: CleanerConfig, now: int, legacy_horizon: int, upper_bound: int,
                ops: Optional[FileOps] = None) -> GroupOutput:
    """``cleanSegments``: filter a group of segments into ``<first base>.*.cleaned``.

    Trailing members that keep nothing are not part of the swap (their
    offsets would lie past the new segment's end, where recovery could not
    tell them from segments outside the group); the caller deletes them.
    """
    ops = ops or FileOps()
    base = group[0].base_offset
    meta = _TxnMeta()
    flt = CleanerFilter(now, config, offset_map, meta,
                        state.active_producers(now, config.producer_id_expiration_ms), upper_bound)
    result = FilterResult()
    try:
        return _clean_group_files(log_dir, group, state, config, legacy_horizon, ops, base, meta, flt, result)
    except KcodecError:
        # Bad data, not a crash: nothing of this run is left for recovery to sort out.
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            ops.delete(ops.storage.join(log_dir, segment_file_name(base, suffix) + CLEANED))
        raise


def _clean_group_files(log_dir: str, group: Sequence[SegmentInfo], state: LogState, config: CleanerConfig,
                       legacy_horizon: int, ops: FileOps, base: int, meta: "_TxnMeta", flt: "CleanerFilter",
                       result: FilterResult) -> GroupOutput:
    from kcodec.records import read_batches
    log_path = ops.storage.join(log_dir, segment_file_name(base, ".log") + CLEANED)
    produced: List[bool] = []
    with ops.writer(log_path) as w:
        for i, seg in enumerate(group):
            start = seg.base_offset
            upper = group[i + 1].base_offset if i + 1 < len(group) else state.next_offset.get(start, start)
            meta.add(state.aborted_overlapping(start, upper))
            flt.retain_legacy_deletes = int(seg.mtime * 1000) > legacy_horizon
            before = w.size
            with open_log(seg.path(), seg.storage) as buf:
                check_complete(buf, seg.storage.url(seg.path()))
                for batch in read_batches(buf, validate=False):
                    try:
                        kept = filter_batch(batch, flt, result)
                    except KcodecError as exc:
                        raise exc.with_context(batch_offset=batch.base_offset, source=seg.path())
                    if kept is not None:
                        w.write(kept)
                        del kept
            produced.append(w.size > before)
            if w.size > before:
                w.checkpoint()
    keep = len(produced)
    while keep > 0 and not produced[keep - 1]:
        keep -= 1
    replaced, emptied = list(group[:keep]), list(group[keep:])
    if keep == 0:
        ops.delete(log_path)
        return GroupOutput(base, [], emptied, result, flt.invalid_records, False)
    txn = encode_txn_index(sorted(meta.kept_aborted, key=lambda t: t.first_offset))
    _write_segment_files(ops, log_dir, base, log_path, txn, config.index_interval_bytes)
    return GroupOutput(base, replaced, emptied, result, flt.invalid_records, True)


@dataclass
class CleanPlan:
    state: LogState
    first_dirty: int
    first_uncleanable: int
    cleanable_ratio: float
    clean_bytes: int
    cleanable_bytes: int
    dirty: List[SegmentInfo]
    to_clean: List[SegmentInfo]
    needs_compaction_now: bool


def plan_clean(log_dir: str, config: CleanerConfig, now: int, first_dirty_offset: Optional[int] = None,
               storage: Optional[Storage] = None) -> CleanPlan:
    """Dirty range and cleanable ratio (``LogCleanerManager.cleanableOffsets`` / ``calculateCleanableBytes``)."""
    segments = list_segments(log_dir, storage)
    state = scan_log(log_dir, segments)
    if not segments:
        return CleanPlan(state, 0, 0, 0.0, 0, 0, [], [], False)
    log_start = segments[0].base_offset
    first_dirty = log_start if first_dirty_offset is None else first_dirty_offset
    if first_dirty < log_start or first_dirty > state.log_end_offset:
        first_dirty = log_start
    active = segments[-1]

    def floor(offset: int) -> int:
        idx = 0
        for i, s in enumerate(segments):
            if s.base_offset <= offset:
                idx = i
        return idx

    uncleanable = min(state.last_stable_offset, active.base_offset)
    if config.min_compaction_lag_ms > 0:
        for seg in segments[floor(first_dirty):-1]:
            if state.largest_timestamp[seg.base_offset] > now - config.min_compaction_lag_ms:
                uncleanable = min(uncleanable, seg.base_offset)
                break
    # rounded down to the start of the segment holding it (calculateCleanableBytes)
    first_uncleanable = segments[floor(uncleanable)].base_offset
    clean_bytes = sum(s.size for s in segments if s.base_offset < first_dirty)
    lo = segments[floor(min(first_dirty, first_uncleanable))].base_offset
    dirty = [s for s in segments if lo <= s.base_offset < first_uncleanable]
    cleanable_bytes = sum(s.size for s in dirty)
    total = clean_bytes + cleanable_bytes
    ratio = cleanable_bytes / total if total else 0.0
    needs_now = False
    if config.max_compaction_lag_ms < INT64_MAX and dirty:
        ts = state.first_batch_timestamp.get(dirty[0].base_offset, -1)
        needs_now = 0 <= ts < now - config.max_compaction_lag_ms
    to_clean = [s for s in segments if s.base_offset < first_uncleanable]
    return CleanPlan(state, first_dirty, first_uncleanable, ratio, clean_bytes, cleanable_bytes, dirty,
                     to_clean, needs_now)


def _checkpoint_path(log_dir: str, storage: Storage = LOCAL) -> str:
    return storage.join(storage.parent(log_dir), "cleaner-offset-checkpoint")


def _topic_partition(log_dir: str, storage: Storage = LOCAL) -> Tuple[str, int]:
    return parse_partition_dir_name(storage.basename(log_dir), source=storage.url(log_dir))


def read_cleaner_checkpoint(log_dir: str, storage: Storage = LOCAL) -> Optional[int]:
    """This partition's first dirty offset from ``../cleaner-offset-checkpoint``, if recorded."""
    path = _checkpoint_path(log_dir, storage)
    try:
        topic, part = _topic_partition(log_dir, storage)
        lines = storage.read_bytes(path).decode().split("\n")
    except (OSError, ValueError):
        return None
    for line in lines[2:]:
        fields = line.split()
        if len(fields) == 3 and fields[0] == topic and fields[1] == str(part):
            return int(fields[2])
    return None


def write_cleaner_checkpoint(log_dir: str, offset: int, ops: Optional[FileOps] = None) -> None:
    """Record ``offset`` for this partition in ``../cleaner-offset-checkpoint`` (atomically)."""
    ops = ops or FileOps()
    path = _checkpoint_path(log_dir, ops.storage)
    topic, part = _topic_partition(log_dir, ops.storage)
    entries: Dict[Tuple[str, str], str] = {}
    try:
        for line in ops.storage.read_bytes(path).decode().split("\n")[2:]:
            fields = line.split()
            if len(fields) == 3:
                entries[(fields[0], fields[1])] = fields[2]
    except OSError:
        pass
    entries[(topic, str(part))] = str(offset)
    text = "0\n%d\n%s" % (len(entries), "".join(f"{t} {p} {o}\n" for (t, p), o in sorted(entries.items())))
    if ops.storage.remote:
        ops.write(path, text.encode())  # one put: the object is replaced whole
        return
    tmp = path + ".tmp"
    ops.write(tmp, text.encode())
    ops.rename(tmp, path)


def compact(log_dir: str, *, config: Optional[CleanerConfig] = None, now_ms: Optional[int] = None,
            first_dirty_offset: Optional[int] = None, use_checkpoint: bool = False, force: bool = False,
            dry_run: bool = False, ops: Optional[FileOps] = None,
            offset_map: Optional[OffsetMap] = None,
            storage_options: Optional[Dict[str, Any]] = None) -> CleanResult:
    """Compact the partition directory ``log_dir`` once, as a Kafka cleaner round.

    The log is cleaned when its cleanable ratio exceeds
    ``min_cleanable_dirty_ratio``, when ``max_compaction_lag_ms`` demands it,
    or with ``force``.  ``first_dirty_offset`` is the cleaner checkpoint
    (default: the log start, i.e. everything is dirty; ``use_checkpoint``
    reads and updates Kafka's ``cleaner-offset-checkpoint`` in the parent
    directory).  ``offset_map`` lets a caller supply a map built elsewhere
    (the Spark variant).  ``dry_run`` reports without writing.  ``log_dir``
    may be a URL, with ``storage_options`` for its file system.
    """
    t0 = time.perf_counter()
    config = config or CleanerConfig()
    ops, log_dir = ops_for(log_dir, ops, storage_options)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if use_checkpoint:
        # the checkpoint is keyed by the folder's name: refuse a bad one first
        _topic_partition(log_dir, ops.storage)
    if not dry_run:
        recover_log_dir(log_dir, ops, config.index_interval_bytes)
    if first_dirty_offset is None and use_checkpoint:
        first_dirty_offset = read_cleaner_checkpoint(log_dir, ops.storage)
    plan = plan_clean(log_dir, config, now, first_dirty_offset, ops.storage)
    res = CleanResult(ops.storage.url(log_dir), False, "", plan.first_dirty, plan.first_uncleanable,
                      plan.cleanable_ratio, plan.clean_bytes, plan.cleanable_bytes, segments_before=len(plan.state.segments))
    if not plan.dirty:
        res.reason = "nothing cleanable (only the active segment, or the dirty range is empty)"
    elif not (force or plan.needs_compaction_now or plan.cleanable_ratio > config.min_cleanable_dirty_ratio):
        res.reason = (f"cleanable ratio {plan.cleanable_ratio:.3f} does not exceed "
                      f"min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}")
    if res.reason or dry_run:
        res.reason = res.reason or "dry run"
        res.segments_after = res.segments_before
        res.seconds = time.perf_counter() - t0
        return res
    run_clean(log_dir, plan, config, now, ops, res, offset_map)
    if use_checkpoint:
        write_cleaner_checkpoint(log_dir, plan.first_uncleanable, ops)
    res.seconds = time.perf_counter() - t0
    return res


def run_clean(log_dir: str, plan: CleanPlan, config: CleanerConfig, now: int, ops: FileOps, res: CleanResult,
              offset_map: Optional[OffsetMap] = None,
              group_runner: Optional[Callable[[List[List[SegmentInfo]], OffsetMap, int, int], List[GroupOutput]]] = None
              ) -> None:
    """Build the map (unless given), write every group's ``.cleaned`` files, swap them in."""
    end = plan.first_uncleanable
    omap = offset_map if offset_map is not None else build_offset_map(plan.state, plan.dirty, plan.first_dirty, end)
    if offset_map is not None and omap.latest_offset < end - 1:
        omap.update_latest(end - 1)
    res.map_keys = len(omap)
    legacy_horizon = _legacy_horizon(plan.state.segments, plan.first_dirty, config.delete_retention_ms)
    groups = group_segments_by_size(plan.to_clean, config.segment_bytes, config.segment_index_bytes, end)
    res.groups = [[s.base_offset for s in g] for g in groups]
    if group_runner is not None:
        outputs = group_runner(groups, omap, legacy_horizon, end)
        for out, group in zip(outputs, groups):
            _swap_group(ops, log_dir, group, out, res)
    else:
        for group in groups:
            out = clean_group(log_dir, group, plan.state, omap, config, now, legacy_horizon, end, ops)
            _swap_group(ops, log_dir, group, out, res)
    res.cleaned = True
    res.reason = "cleaned"
    res.segments_after = len(list_segments(log_dir, ops.storage))


def _swap_group(ops: FileOps, log_dir: str, group: Sequence[SegmentInfo], out: GroupOutput,
                res: CleanResult) -> None:
    if out.written:
        replace_segments(ops, log_dir, out.base_offset, out.replaced, mtime=group[-1].mtime)
    if out.emptied:
        delete_segments(ops, out.emptied)
    st = out.stats
    res.bytes_read += st.bytes_read
    res.bytes_written += st.bytes_retained
    res.messages_read += st.messages_read
    res.messages_written += st.messages_retained
    res.batches_rebuilt += st.batches_rebuilt
    res.batches_emptied += st.batches_emptied
    res.invalid_records += out.invalid_records


# --------------------------------------------------------------------------------------------
# command line

def cli_add_parser(subparsers) -> Any:
    """Register ``kcodec compact``."""
    from kcodec.log._cli import add_target_arguments
    p = subparsers.add_parser("compact", help="compact partitions as Kafka's log cleaner does")
    add_target_arguments(p)
    p.add_argument("--delete-retention-ms", type=int, default=86_400_000)
    p.add_argument("--min-cleanable-dirty-ratio", type=float, default=0.5)
    p.add_argument("--min-compaction-lag-ms", type=int, default=0)
    p.add_argument("--max-compaction-lag-ms", type=int, default=INT64_MAX)
    p.add_argument("--segment-bytes", type=int, default=1 << 30)
    p.add_argument("--index-interval-bytes", type=int, default=4096)
    p.add_argument("--producer-id-expiration-ms", type=int, default=86_400_000)
    p.add_argument("--now-ms", type=int, default=None, help="clock for horizons and expirations (default: now)")
    p.add_argument("--first-dirty-offset", type=int, default=None)
    p.add_argument("--checkpoint", action="store_true",
                   help="read and update ../cleaner-offset-checkpoint as the broker does")
    p.add_argument("--force", action="store_true", help="clean even below min.cleanable.dirty.ratio")
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cli_run)
    return p


def cli_run(args) -> int:
    cfg = CleanerConfig(delete_retention_ms=args.delete_retention_ms,
                        min_cleanable_dirty_ratio=args.min_cleanable_dirty_ratio,
                        min_compaction_lag_ms=args.min_compaction_lag_ms,
                        max_compaction_lag_ms=args.max_compaction_lag_ms, segment_bytes=args.segment_bytes,
                        index_interval_bytes=args.index_interval_bytes,
                        producer_id_expiration_ms=args.producer_id_expiration_ms)
    from kcodec.log._cli import storage_options, target_partitions
    opts = storage_options(args)
    for part in target_partitions(args):
        r = compact(part.storage.url(str(part.path)), config=cfg, now_ms=args.now_ms,
                    first_dirty_offset=args.first_dirty_offset, use_checkpoint=args.checkpoint, force=args.force,
                    dry_run=args.dry_run, storage_options=opts)
        print(f"{r.log_dir}: {r.reason}")
        print(f"  dirty range [{r.first_dirty_offset}, {r.first_uncleanable_offset}), cleanable ratio "
              f"{r.cleanable_ratio:.3f} ({r.cleanable_bytes} cleanable of {r.clean_bytes + r.cleanable_bytes} bytes)")
        if r.cleaned:
            print(f"  {r.messages_read} records read, {r.messages_written} kept; {r.bytes_read} -> "
                  f"{r.bytes_written} bytes; {r.map_keys} keys; segments {r.segments_before} -> "
                  f"{r.segments_after}; {r.seconds:.2f} s")
    return 0
