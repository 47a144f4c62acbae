"""Deleting a partition's oldest segments by the retention policy the user gives (``UnifiedLog.deleteOldSegments``).

Nothing is deleted by a limit nobody set: :func:`retain` applies only the
limits it is given (``retention_ms``, ``retention_bytes``, ``log_start_offset``),
each with where it came from, and refuses to run with none.  A size limit
alone applies no time limit.

Kafka deletes whole segments from the start of the log, rule after rule, in
this order (each rule stops at the first segment it keeps):

1. ``retention.ms``: segments whose largest timestamp is more than
   ``retention.ms`` before now (``now - largestTimestamp > retention.ms``); a
   segment holding no timestamp (v0 data) uses its file's last-modified time;
2. ``retention.bytes``: while the log is larger than the limit, the oldest
   segments whose removal keeps it at or above the limit
   (``diff - segment.size >= 0``);
3. the log start offset: segments whose successor starts at or below it.

A negative limit disables its rule.  When the topic's ``cleanup.policy`` does
not include ``delete``, only the log start offset rule applies, as in Kafka.

Where kcodec differs from a broker:

* it never deletes the newest (active) segment: a broker may, and then rolls
  a new empty one, which an offline tool must not create;
* it has no high watermark, so every segment counts as committed (a broker
  keeps segments at or beyond its high watermark);
* it does not apply the tiered-storage rules (``local.retention.*``, segments
  not yet uploaded): it refuses to delete from a topic with
  ``remote.storage.enable`` (see :func:`retain`'s ``remote_storage``);
* "now" is this machine's clock, or ``now_ms``.

Deletion renames the segment's files to ``.deleted`` and then removes them,
so a crash leaves either the segment or nothing of it.  While it runs, the
partition's lock (:mod:`kcodec.log.lock`) is held: a directory that a running
broker holds is refused before anything is changed.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from typing import Any, Dict, List, Optional, Tuple

from kcodec.errors import KcodecError
from kcodec.log.files import FileOps, ops_for
from kcodec.log.lock import rewrite_lock
from kcodec.log.log_state import scan_log
from kcodec.log.recovery import recover_log_dir
from kcodec.log.segment_list import SegmentInfo, list_segments
from kcodec.log.swap import delete_segments

__all__ = ["RetentionPolicy", "RetentionPolicyError", "RetentionResult", "DeletedSegment", "retain",
           "deletable_segments", "cli_add_parser", "cli_run"]

RETENTION_MS = "retention.ms"
RETENTION_BYTES = "retention.bytes"
LOG_START_OFFSET = "log start offset"


class RetentionPolicyError(KcodecError, ValueError):
    """No retention limit was given, or the one given cannot be applied here: nothing was deleted."""


@dataclass(frozen=True)
class RetentionPolicy:
    """The limits :func:`retain` applies, each ``None`` when nobody set it, and where each came from.

    ``sources`` maps ``"retention.ms"``, ``"retention.bytes"``, ``"log start
    offset"`` and ``"cleanup.policy"`` to a phrase such as ``"--retention-ms"``
    or ``"topic config in the metadata log"``.
    """

    retention_ms: Optional[int] = None
    retention_bytes: Optional[int] = None
    log_start_offset: Optional[int] = None
    cleanup_policy: Optional[str] = None
    remote_storage: bool = False
    sources: Dict[str, str] = field(default_factory=dict)

    @property
    def deletes(self) -> bool:
        """``cleanup.policy`` includes ``delete`` (Kafka's default when it is not known)."""
        if self.cleanup_policy is None:
            return True
        return "delete" in [p.strip() for p in self.cleanup_policy.split(",")]

    @property
    def given(self) -> bool:
        return any(v is not None for v in (self.retention_ms, self.retention_bytes, self.log_start_offset))

    def describe(self) -> str:
        """One line: every limit applied and its source."""
        parts = []
        for name, value in ((RETENTION_MS, self.retention_ms), (RETENTION_BYTES, self.retention_bytes),
                            (LOG_START_OFFSET, self.log_start_offset)):
            if value is None:
                continue
            src = self.sources.get(name)
            parts.append(f"{name} {value}" + (f" ({src})" if src else ""))
        if not self.deletes:
            parts.append(f"cleanup.policy {self.cleanup_policy} ({self.sources.get('cleanup.policy', 'given')}): "
                         "only the log start offset applies")
        return ", ".join(parts) or "no limit"


@dataclass
class DeletedSegment:
    """A segment :func:`retain` deleted (or would delete, in a dry run), and why."""

    base_offset: int
    file_name: str
    size: int
    rule: str  #: ``retention.ms``, ``retention.bytes`` or ``log start offset``
    detail: str  #: the numbers that broke the rule


@dataclass
class RetentionResult:
    log_dir: str
    dry_run: bool
    policy: RetentionPolicy = field(default_factory=RetentionPolicy)
    segments: List[DeletedSegment] = field(default_factory=list)
    bytes_deleted: int = 0
    bytes_remaining: int = 0
    log_start_offset: int = 0

    @property
    def deleted(self) -> List[int]:
        """Base offsets of the deleted segments, oldest first."""
        return [s.base_offset for s in self.segments]

    @property
    def reasons(self) -> List[str]:
        return [s.rule for s in self.segments]


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms"


def deletable_segments(segments: List[SegmentInfo], largest_timestamp: Dict[int, int], *, now_ms: int,
                       policy: RetentionPolicy) -> List[Tuple[SegmentInfo, str, str]]:
    """(segment, rule, detail) for each segment Kafka's rules would delete under ``policy``, oldest first."""
    remaining = list(segments)
    out: List[Tuple[SegmentInfo, str, str]] = []

    def take(predicate: Any, rule: Any) -> None:
        # LocalLog.deletableSegments: the scan stops at the first segment the predicate keeps;
        # kcodec also keeps the newest (active) segment.
        while len(remaining) > 1:
            detail = predicate(remaining[0], remaining[1])
            if detail is None:
                return
            out.append((remaining.pop(0), rule, detail))

    if policy.deletes and policy.retention_ms is not None and policy.retention_ms >= 0:
        limit = policy.retention_ms

        def by_time(seg: SegmentInfo, _nxt: SegmentInfo) -> Optional[str]:
            largest = largest_timestamp[seg.base_offset]
            if now_ms - largest <= limit:
                return None
            return (f"largest timestamp {_iso(largest)} is {now_ms - largest} ms before now {_iso(now_ms)}, "
                    f"more than retention.ms {limit}")
        take(by_time, RETENTION_MS)
    if policy.deletes and policy.retention_bytes is not None and policy.retention_bytes >= 0:
        size = sum(s.size for s in remaining)
        if size >= policy.retention_bytes:
            diff = [size - policy.retention_bytes]

            def by_size(seg: SegmentInfo, _nxt: SegmentInfo) -> Optional[str]:
                if diff[0] - seg.size < 0:
                    return None
                detail = (f"the log is {diff[0]} bytes over retention.bytes {policy.retention_bytes}, "
                          f"this segment is {seg.size}")
                diff[0] -= seg.size
                return detail
            take(by_size, RETENTION_BYTES)
    if policy.log_start_offset is not None:
        lso = policy.log_start_offset

        def by_start(seg: SegmentInfo, nxt: SegmentInfo) -> Optional[str]:
            if nxt.base_offset > lso:
                return None
            return f"the next segment starts at offset {nxt.base_offset}, at or below the log start offset {lso}"
        take(by_start, LOG_START_OFFSET)
    return out


def retain(log_dir: str, *, retention_ms: Optional[int] = None, retention_bytes: Optional[int] = None,
           log_start_offset: Optional[int] = None, policy: Optional[RetentionPolicy] = None,
           now_ms: Optional[int] = None, dry_run: bool = False, ops: Optional[FileOps] = None,
           storage_options: Optional[Dict[str, Any]] = None) -> RetentionResult:
    """Delete the oldest segments of the partition folder ``log_dir`` (a path or URL) that break the policy.

    The policy is the keyword limits given, or ``policy`` (which also carries
    ``cleanup.policy`` and where each limit came from); at least one limit is
    required (:class:`RetentionPolicyError` otherwise).  ``-1`` disables a
    limit.  The newest segment is never deleted.  Unless ``dry_run``, the
    partition is locked first (:func:`kcodec.log.lock.rewrite_lock`) and
    recovered from any earlier crash.  In object storage a segment's
    last-modified time (the ``retention.ms`` fallback for segments without
    timestamps) is when its objects were last written.
    """
    if policy is None:
        policy = RetentionPolicy(retention_ms, retention_bytes, log_start_offset, sources={
            k: "given" for k, v in ((RETENTION_MS, retention_ms), (RETENTION_BYTES, retention_bytes),
                                    (LOG_START_OFFSET, log_start_offset)) if v is not None})
    elif any(v is not None for v in (retention_ms, retention_bytes, log_start_offset)):
        raise TypeError("retain() takes either policy= or the retention keywords, not both")
    ops, log_dir = ops_for(log_dir, ops, storage_options)
    where = ops.storage.url(log_dir)
    if not policy.given:
        raise RetentionPolicyError(
            f"{where}: no retention policy given; pass --retention-ms, --retention-bytes or --log-start-offset "
            "(or --metadata-log for the topic's own settings). Nothing was deleted")
    if policy.remote_storage:
        raise RetentionPolicyError(
            f"{where}: the topic has remote.storage.enable=true; its local segments may be deleted only once "
            "the broker has uploaded them, which only the broker knows. Nothing was deleted")
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if dry_run:
        return _retain(ops, log_dir, policy, now, dry_run=True)
    with rewrite_lock(log_dir, ops.storage):
        recover_log_dir(log_dir, ops)
        return _retain(ops, log_dir, policy, now, dry_run=False)


def _retain(ops: FileOps, log_dir: str, policy: RetentionPolicy, now: int, *, dry_run: bool) -> RetentionResult:
    segments = list_segments(log_dir, ops.storage)
    state = scan_log(log_dir, segments)
    victims = deletable_segments(segments, state.largest_timestamp, now_ms=now, policy=policy)
    res = RetentionResult(ops.storage.url(log_dir), dry_run, policy)
    res.segments = [DeletedSegment(s.base_offset, ops.storage.basename(s.path()), s.size, rule, detail)
                    for s, rule, detail in victims]
    res.bytes_deleted = sum(s.size for s, _, _ in victims)
    res.bytes_remaining = sum(s.size for s in segments) - res.bytes_deleted
    gone = set(res.deleted)
    kept = [s for s in segments if s.base_offset not in gone]
    res.log_start_offset = kept[0].base_offset if kept else 0
    if policy.log_start_offset is not None:
        res.log_start_offset = max(res.log_start_offset, policy.log_start_offset)
    if not dry_run and victims:
        delete_segments(ops, [s for s, _, _ in victims])
    return res


def cli_add_parser(subparsers: Any) -> Any:
    """Register ``kcodec retain``."""
    from kcodec.log.arguments import add_partition_command
    p = add_partition_command(
        subparsers, "retain", metadata_log=True,
        help="delete a partition's oldest segments by the retention limits you give",
        description="Delete the oldest segments of each partition, as a broker's retention would, by the limits "
                    "given and no other: --retention-ms, --retention-bytes, --log-start-offset, or each topic's own "
                    "retention.ms, retention.bytes and cleanup.policy from --metadata-log. At least one is "
                    "required; a size limit alone applies no time limit; a flag wins over the metadata log. "
                    "The newest segment is never deleted. "
                    "A log directory that a running broker holds locked is refused.")
    p.add_argument("--retention-ms", type=int, default=None, metavar="MS",
                   help="delete segments whose newest timestamp is more than MS before now; -1 disables")
    p.add_argument("--retention-bytes", type=int, default=None, metavar="BYTES",
                   help="per partition: delete the oldest segments while the log stays at or above BYTES; "
                        "-1 disables")
    p.add_argument("--log-start-offset", type=int, default=None, metavar="OFFSET",
                   help="delete segments that lie wholly below OFFSET")
    p.add_argument("--now-ms", type=int, default=None, metavar="MS",
                   help="the clock retention.ms is measured from (default: now)")
    p.add_argument("--dry-run", action="store_true", help="list the segments that would go and why; delete nothing")
    p.set_defaults(func=cli_run)
    return p


_FLAGS = {RETENTION_MS: "--retention-ms", RETENTION_BYTES: "--retention-bytes", LOG_START_OFFSET: "--log-start-offset"}


def policy_from_flags(args: Any) -> RetentionPolicy:
    """The policy the command-line flags give, each limit marked with its flag."""
    values = {RETENTION_MS: args.retention_ms, RETENTION_BYTES: args.retention_bytes,
              LOG_START_OFFSET: args.log_start_offset}
    return RetentionPolicy(values[RETENTION_MS], values[RETENTION_BYTES], values[LOG_START_OFFSET],
                           sources={k: _FLAGS[k] for k, v in values.items() if v is not None})


def policy_for_topic(flags: RetentionPolicy, topic: Any) -> Tuple[RetentionPolicy, List[str]]:
    """``flags`` completed by a topic's settings from the metadata log (a
    :class:`~kcodec.log.cluster_metadata.TopicPolicy`), and what was left out and why.

    Only values the metadata log holds are applied: a setting at Kafka's
    default there is decided by the brokers' ``server.properties``, which the
    metadata log does not hold, so it is not guessed.
    """
    from kcodec.log.cluster_metadata import KAFKA_DEFAULT

    values = {RETENTION_MS: flags.retention_ms, RETENTION_BYTES: flags.retention_bytes}
    sources = dict(flags.sources)
    left_out = []
    for name, setting in ((RETENTION_MS, topic.retention_ms), (RETENTION_BYTES, topic.retention_bytes)):
        if values[name] is not None:
            continue
        if setting.source.kind == KAFKA_DEFAULT:
            left_out.append(f"{name} is not set in the metadata log (the brokers' server.properties decide; "
                            f"pass {_FLAGS[name]} to apply one)")
            continue
        values[name] = setting.value
        sources[name] = str(setting.source)
    cleanup = None
    if topic.cleanup_policy.source.kind != KAFKA_DEFAULT:
        cleanup = ",".join(topic.cleanup_policy.value)
        sources["cleanup.policy"] = str(topic.cleanup_policy.source)
    remote = str(topic.configs.get("remote.storage.enable", "false")).strip().lower() == "true"
    return RetentionPolicy(values[RETENTION_MS], values[RETENTION_BYTES], flags.log_start_offset, cleanup, remote,
                           sources), left_out


def cli_run(args: Any) -> int:
    import contextlib

    from kcodec.log.arguments import partition_policy, storage_options, target_partitions
    from kcodec.log.lock import rewrite_locks

    opts = storage_options(args)
    flags = policy_from_flags(args)
    parts = target_partitions(args)
    if not flags.given and getattr(args, "metadata_log", None) is None:
        named = args.log_dirs if isinstance(args.log_dirs, list) else [args.log_dirs]
        raise RetentionPolicyError(
            "no retention policy given: pass --retention-ms, --retention-bytes or --log-start-offset, or "
            f"--metadata-log for each topic's own (nothing was deleted in {', '.join(named)})")
    plans = []
    for part in parts:  # every topic's policy is settled before anything is locked or deleted
        topic = partition_policy(args, part)
        policy, left_out = (flags, []) if topic is None else policy_for_topic(flags, topic)
        if policy.remote_storage:
            raise RetentionPolicyError(
                f"{part.storage.url(str(part.path))}: topic {part.topic} has remote.storage.enable=true "
                f"(topic config in the metadata log); its local segments may be deleted only once the broker has "
                "uploaded them, which only the broker knows. Nothing was deleted")
        plans.append((part.storage.url(str(part.path)), policy, left_out))
    with (contextlib.nullcontext() if args.dry_run else rewrite_locks([u for u, p, _ in plans if p.given], opts)):
        for url, policy, left_out in plans:
            for why in left_out:
                print(f"{url}: {why}")
            if not policy.given:
                print(f"{url}: kept: no retention limit applies to it")
                continue
            r = retain(url, policy=policy, now_ms=args.now_ms, dry_run=args.dry_run, storage_options=opts)
            verb = "would delete" if r.dry_run else "deleted"
            print(f"{r.log_dir}: {verb} {len(r.segments)} segments, {r.bytes_deleted} bytes; {r.bytes_remaining} "
                  f"bytes remain, log start offset {r.log_start_offset} [{r.policy.describe()}]")
            for seg in r.segments:
                print(f"  {seg.file_name} ({seg.size} bytes) by {seg.rule}: {seg.detail}")
    return 0
