"""Time- and size-based retention of a partition directory (``UnifiedLog.deleteOldSegments``).

Kafka deletes whole segments from the start of the log, in this order:

1. segments entirely below ``log_start_offset`` (when one is given);
2. ``retention.bytes``: while the log is larger than the limit, the oldest
   segments whose removal keeps it at or above the limit
   (``diff - segment.size >= 0``);
3. ``retention.ms``: the oldest segments whose largest timestamp is more
   than ``retention.ms`` old (``now - largestTimestamp > retention.ms``);
   the largest timestamp is the maximum batch timestamp, or the file's
   last-modified time when the segment holds none (v0 data).

Each rule stops at the first segment it keeps.  A negative limit disables
the rule.  Unlike a broker, which rolls a new segment and may then delete
the old active one, kcodec never deletes the newest (active) segment.
Deletion renames the segment's files to ``.deleted`` and then removes them,
so a crash leaves either the segment or nothing of it.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from kcodec.log.files import FileOps, ops_for
from kcodec.log.recovery import recover_log_dir
from kcodec.log.segment_list import SegmentInfo, list_segments
from kcodec.log.swap import delete_segments
from kcodec.log.log_state import scan_log

__all__ = ["RetentionResult", "retain", "deletable_segments", "cli_add_parser", "cli_run"]


@dataclass
class RetentionResult:
    log_dir: str
    dry_run: bool
    deleted: List[int] = field(default_factory=list)  #: base offsets of deleted segments
    reasons: List[str] = field(default_factory=list)
    bytes_deleted: int = 0
    bytes_remaining: int = 0
    log_start_offset: int = 0


def deletable_segments(segments: List[SegmentInfo], largest_timestamp, *, now_ms: int, retention_ms: int,
                       retention_bytes: int, log_start_offset: Optional[int] = None,
                       next_offsets=None) -> List[tuple]:
    """(segment, reason) pairs Kafka's three rules would delete, oldest first."""
    remaining = list(segments)
    out = []

    def take(predicate, reason) -> None:
        # LocalLog.deletableSegments: the active segment is excluded here, and the scan
        # stops at the first segment the predicate keeps.
        while len(remaining) > 1 and predicate(remaining[0], remaining[1]):
            out.append((remaining.pop(0), reason))

    if log_start_offset is not None:
        take(lambda seg, nxt: nxt.base_offset <= log_start_offset, "log start offset")
    if retention_bytes >= 0:
        size = sum(s.size for s in remaining)
        if size >= retention_bytes:
            diff = [size - retention_bytes]

            def by_size(seg, _nxt) -> bool:
                if diff[0] - seg.size >= 0:
                    diff[0] -= seg.size
                    return True
                return False
            take(by_size, "retention.bytes")
    if retention_ms >= 0:
        take(lambda seg, _nxt: now_ms - largest_timestamp[seg.base_offset] > retention_ms, "retention.ms")
    return out


def retain(log_dir: str, *, retention_ms: int = 604_800_000, retention_bytes: int = -1,
           log_start_offset: Optional[int] = None, now_ms: Optional[int] = None, dry_run: bool = False,
           ops: Optional[FileOps] = None, storage_options: Optional[Dict[str, Any]] = None) -> RetentionResult:
    """Delete the segments of ``log_dir`` (a path or URL) that Kafka's retention would delete (never the newest).

    In object storage a segment's last-modified time (the ``retention.ms``
    fallback for segments without timestamps) is when its objects were last
    written.
    """
    ops, log_dir = ops_for(log_dir, ops, storage_options)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if not dry_run:
        recover_log_dir(log_dir, ops)
    segments = list_segments(log_dir, ops.storage)
    state = scan_log(log_dir, segments)
    victims = deletable_segments(segments, state.largest_timestamp, now_ms=now, retention_ms=retention_ms,
                                 retention_bytes=retention_bytes, log_start_offset=log_start_offset)
    res = RetentionResult(ops.storage.url(log_dir), dry_run)
    res.deleted = [s.base_offset for s, _ in victims]
    res.reasons = [r for _, r in victims]
    res.bytes_deleted = sum(s.size for s, _ in victims)
    res.bytes_remaining = sum(s.size for s in segments) - res.bytes_deleted
    kept = [s for s in segments if s.base_offset not in set(res.deleted)]
    res.log_start_offset = kept[0].base_offset if kept else 0
    if log_start_offset is not None:
        res.log_start_offset = max(res.log_start_offset, log_start_offset)
    if not dry_run and victims:
        delete_segments(ops, [s for s, _ in victims])
    return res


def cli_add_parser(subparsers) -> Any:
    """Register ``kcodec retain``."""
    from kcodec.log._cli import add_target_arguments
    p = subparsers.add_parser("retain", help="delete old segments by retention.ms / retention.bytes")
    add_target_arguments(p)
    p.add_argument("--retention-ms", type=int, default=604_800_000, help="-1 disables (default 7 days)")
    p.add_argument("--retention-bytes", type=int, default=-1, help="-1 disables (default); per partition")
    p.add_argument("--log-start-offset", type=int, default=None)
    p.add_argument("--now-ms", type=int, default=None)
    p.add_argument("--dry-run", action="store_true")
    p.set_defaults(func=cli_run)
    return p


def cli_run(args) -> int:
    from kcodec.log._cli import storage_options, target_partitions
    opts = storage_options(args)
    for part in target_partitions(args):
        r = retain(part.storage.url(str(part.path)), retention_ms=args.retention_ms,
                   retention_bytes=args.retention_bytes, log_start_offset=args.log_start_offset,
                   now_ms=args.now_ms, dry_run=args.dry_run, storage_options=opts)
        verb = "would delete" if r.dry_run else "deleted"
        detail = ", ".join(f"{b} ({why})" for b, why in zip(r.deleted, r.reasons)) or "nothing"
        print(f"{r.log_dir}: {verb} {len(r.deleted)} segments, {r.bytes_deleted} bytes: {detail}; "
              f"{r.bytes_remaining} bytes remain, log start offset {r.log_start_offset}")
    return 0
