"""What a cleaner round cleans: the dirty range, whether the log is due, and the groups it rewrites.

Kafka's ``LogCleanerManager`` decides this: the dirty range is
``[firstDirtyOffset, firstUncleanableOffset)``; the uncleanable point is the
active segment, the last stable offset (first offset of a still-open
transaction) and ``min.compaction.lag.ms``, rounded down to a segment
boundary; a log is cleaned when its cleanable ratio exceeds
``min.cleanable.dirty.ratio`` or ``max.compaction.lag.ms`` demands it.  The
first dirty offset is kept between rounds in the log directory's
``cleaner-offset-checkpoint``.  Consecutive segments are grouped by size
(``segment.bytes``, ``segment.index.bytes``, 2^31 offsets), each group
becoming one new segment.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

from kcodec.log.files import FileOps
from kcodec.log.log_state import LogState, scan_log
from kcodec.log.names import parse_partition_dir_name
from kcodec.log.segment_list import SegmentInfo, list_segments
from kcodec.storage import LOCAL, Storage

__all__ = [
    "CleanerConfig",
    "CleanPlan",
    "plan_clean",
    "group_segments_by_size",
    "legacy_delete_horizon",
    "read_cleaner_checkpoint",
    "write_cleaner_checkpoint",
    "checkpoint_key",
]

INT32_MAX = (1 << 31) - 1
INT64_MAX = (1 << 63) - 1


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

    def skip_reason(self, config: CleanerConfig, force: bool = False) -> str:
        """Why this round cleans nothing, or ``""`` when the log is due (or ``force``)."""
        if not self.dirty:
            return "nothing cleanable (only the active segment, or the dirty range is empty)"
        if not (force or self.needs_compaction_now or self.cleanable_ratio > config.min_cleanable_dirty_ratio):
            return (f"cleanable ratio {self.cleanable_ratio:.3f} does not exceed "
                    f"min.cleanable.dirty.ratio {config.min_cleanable_dirty_ratio}")
        return ""


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


def legacy_delete_horizon(segments: Sequence[SegmentInfo], first_dirty: int, delete_retention_ms: int) -> int:
    """Legacy (v0/v1) tombstones in segments last modified before this time (ms) go: the last clean
    segment's time minus ``delete.retention.ms`` (0 when nothing is clean yet)."""
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


def _checkpoint_path(log_dir: str, storage: Storage = LOCAL) -> str:
    return storage.join(storage.parent(log_dir), "cleaner-offset-checkpoint")


def checkpoint_key(log_dir: str, storage: Storage = LOCAL) -> Tuple[str, int]:
    """``(topic, partition)`` the checkpoint file records ``log_dir`` under (from the folder's name)."""
    return parse_partition_dir_name(storage.basename(log_dir), source=storage.url(log_dir))


def read_cleaner_checkpoint(log_dir: str, storage: Storage = LOCAL) -> Optional[int]:
    """This partition's first dirty offset from ``../cleaner-offset-checkpoint``, if recorded."""
    path = _checkpoint_path(log_dir, storage)
    try:
        topic, part = checkpoint_key(log_dir, storage)
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
    topic, part = checkpoint_key(log_dir, ops.storage)
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
    ops.replace(path, text.encode())
