"""Log compaction of a partition directory: Kafka's ``LogCleaner`` run offline.

:func:`compact` runs one cleaner round over the segments of one partition
directory (Kafka's ``LogCleaner`` and its ``Cleaner``), from parts that each have their own module:

* :mod:`~kcodec.log.cleaner_plan` -- the dirty range, whether the log is
  due, the segment groups, the checkpoint;
* :mod:`~kcodec.log.log_state` -- producers and aborted transactions,
  read from the log's markers (not from ``.txnindex`` files, which may be
  missing), and :mod:`~kcodec.log.transaction_index` -- which
  transactional batches and markers a clean removes;
* :mod:`~kcodec.log.offset_map` -- ``key -> latest offset`` over the dirty
  range, skipping control batches and aborted transactional data;
* here, :class:`CleanerFilter` -- the rewrite: every segment from the log
  start to the end of the round goes through
  :func:`kcodec.log.filter.filter_batch`; superseded and null-key records
  go; tombstones stay until the batch's delete horizon (KIP-534: stamped
  ``now + delete.retention.ms`` on the first clean that keeps them, removed
  by a clean after it; v0/v1 tombstones follow the legacy last-modified
  rule); aborted transactional data goes at once; transaction markers
  follow ``Cleaner.isBatchRetained``; the last batch of every active producer and the last
  batch of the round stay as empty headers.  Each group becomes one new
  segment, indexes and ``.txnindex`` rebuilt (with Kafka's last-stable-offset
  values), the group's last modification time kept;
* :mod:`~kcodec.log.swap` and :mod:`~kcodec.log.recovery` -- the crash-safe
  swap of the new segments for the old, and the recovery every operation
  runs first.

The offset map and the group rewrites run through a :class:`CleanerRunner`:
this process by default, Spark tasks in :mod:`kcodec.spark.ops`.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from kcodec.errors import KcodecError
from kcodec.log.cleaner_plan import (
    CleanerConfig,
    CleanPlan,
    checkpoint_key,
    group_segments_by_size,
    legacy_delete_horizon,
    plan_clean,
    read_cleaner_checkpoint,
    write_cleaner_checkpoint,
)
from kcodec.log.files import FileOps, ops_for
from kcodec.log.filter import (
    BatchRetention,
    BatchRetentionResult,
    FilterResult,
    RecordFilter,
    filter_batch,
)
from kcodec.log.index import build_indexes
from kcodec.log.lock import rewrite_lock
from kcodec.log.log_state import LogState
from kcodec.log.names import CLEANED, SEGMENT_SUFFIXES, segment_file_name
from kcodec.log.offset_map import OffsetMap, build_offset_map
from kcodec.log.recovery import recover_log_dir
from kcodec.log.segment_list import PartialTailError, SegmentInfo, check_complete, list_segments, open_log
from kcodec.log.swap import delete_segments, replace_segments, write_segment_files
from kcodec.log.transaction_index import AbortedTxn, CleanedTransactionMetadata, encode_txn_index, read_txn_index

__all__ = [
    "FileOps",
    "CleanerConfig",
    "CleanResult",
    "GroupOutput",
    "clean_group",
    "CleanerRunner",
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
    "AbortedTxn",
    "PartialTailError",
    "group_segments_by_size",
    "read_cleaner_checkpoint",
    "cli_add_parser",
    "cli_run",
]


class CleanerFilter(RecordFilter):
    """The cleaner's ``RecordFilter`` (``cleanInto.logCleanerFilter``)."""

    def __init__(self, now: int, config: CleanerConfig, offset_map: OffsetMap, meta: CleanedTransactionMetadata,
                 active_producers: Dict[int, Tuple[Optional[int], int]], upper_bound: int) -> None:
        super().__init__(now, config.delete_retention_ms)
        self.map = offset_map
        self.meta = meta
        self.active = active_producers
        self.upper_bound = upper_bound
        self.retain_legacy_deletes = True
        self.discard_batch_records = False
        self.invalid_records = 0

    def _last_of_producer(self, batch: Any) -> bool:
        last = self.active.get(batch.producer_id)
        if last is None:
            return False
        data_offset, epoch = last
        if data_offset is not None:
            return batch.last_offset == data_offset
        return batch.is_control and batch.producer_epoch == epoch

    def check_batch_retention(self, batch: Any) -> BatchRetentionResult:
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

    def should_retain_record(self, batch: Any, record: Any) -> bool:
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
    ops = ops or FileOps(storage=group[0].storage)
    base = group[0].base_offset
    meta = CleanedTransactionMetadata()
    flt = CleanerFilter(now, config, offset_map, meta,
                        state.active_producers(now, config.producer_id_expiration_ms), upper_bound)
    result = FilterResult()
    try:
        return _clean_group_files(log_dir, group, state, config, legacy_horizon, ops, base, meta, flt, result)
    except KcodecError:
        # Bad data, not a crash: nothing of this run is left for recovery to sort out.
        for suffix in SEGMENT_SUFFIXES:
            ops.delete(ops.storage.join(log_dir, segment_file_name(base, suffix) + CLEANED))
        raise


def _clean_group_files(log_dir: str, group: Sequence[SegmentInfo], state: LogState, config: CleanerConfig,
                       legacy_horizon: int, ops: FileOps, base: int, meta: CleanedTransactionMetadata,
                       flt: CleanerFilter, result: FilterResult) -> GroupOutput:
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
    write_segment_files(ops, log_dir, base, log_path, txn, config.index_interval_bytes)
    return GroupOutput(base, replaced, emptied, result, flt.invalid_records, True)


class CleanerRunner:
    """Where a round's two costly parts run: building the offset map and rewriting the groups.

    This one runs both in this process, rewriting each group just before it
    is swapped in; :mod:`kcodec.spark.ops` runs them as Spark tasks.
    """

    def offset_map(self, plan: CleanPlan) -> OffsetMap:
        return build_offset_map(plan.state, plan.dirty, plan.first_dirty, plan.first_uncleanable)

    def clean_groups(self, log_dir: str, groups: List[List[SegmentInfo]], plan: CleanPlan, offset_map: OffsetMap,
                     config: CleanerConfig, now: int, legacy_horizon: int, ops: FileOps) -> Iterator[GroupOutput]:
        """Each group's ``.cleaned`` files (:func:`clean_group`), in order."""
        for group in groups:
            yield clean_group(log_dir, group, plan.state, offset_map, config, now, legacy_horizon,
                              plan.first_uncleanable, ops)


def compact(log_dir: str, *, config: Optional[CleanerConfig] = None, now_ms: Optional[int] = None,
            first_dirty_offset: Optional[int] = None, use_checkpoint: bool = False, force: bool = False,
            dry_run: bool = False, ops: Optional[FileOps] = None,
            offset_map: Optional[OffsetMap] = None,
            storage_options: Optional[Dict[str, Any]] = None,
            runner: Optional[CleanerRunner] = None) -> CleanResult:
    """Compact the partition directory ``log_dir`` once, as a Kafka cleaner round.

    The log is cleaned when its cleanable ratio exceeds
    ``min_cleanable_dirty_ratio``, when ``max_compaction_lag_ms`` demands it,
    or with ``force``.  ``first_dirty_offset`` is the cleaner checkpoint
    (default: the log start, i.e. everything is dirty; ``use_checkpoint``
    reads and updates Kafka's ``cleaner-offset-checkpoint`` in the parent
    directory).  ``offset_map`` lets a caller supply a map built elsewhere;
    ``runner`` runs the map build and the group rewrites elsewhere (the
    Spark variant).  ``dry_run`` reports without writing.  ``log_dir`` may
    be a URL, with ``storage_options`` for its file system.
    """
    t0 = time.perf_counter()
    config = config or CleanerConfig()
    ops, log_dir = ops_for(log_dir, ops, storage_options)
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if use_checkpoint:
        # the checkpoint is keyed by the folder's name: refuse a bad one first
        checkpoint_key(log_dir, ops.storage)
    with (contextlib.nullcontext() if dry_run else rewrite_lock(log_dir, ops.storage)):
        if not dry_run:
            recover_log_dir(log_dir, ops, config.index_interval_bytes)
        if first_dirty_offset is None and use_checkpoint:
            first_dirty_offset = read_cleaner_checkpoint(log_dir, ops.storage)
        plan = plan_clean(log_dir, config, now, first_dirty_offset, ops.storage)
        res = CleanResult(ops.storage.url(log_dir), False, "", plan.first_dirty, plan.first_uncleanable,
                          plan.cleanable_ratio, plan.clean_bytes, plan.cleanable_bytes,
                          segments_before=len(plan.state.segments))
        res.reason = plan.skip_reason(config, force)
        if res.reason or dry_run:
            res.reason = res.reason or "dry run"
            res.segments_after = res.segments_before
            res.seconds = time.perf_counter() - t0
            return res
        run_clean(log_dir, plan, config, now, ops, res, offset_map, runner)
        if use_checkpoint:
            write_cleaner_checkpoint(log_dir, plan.first_uncleanable, ops)
    res.seconds = time.perf_counter() - t0
    return res


def run_clean(log_dir: str, plan: CleanPlan, config: CleanerConfig, now: int, ops: FileOps, res: CleanResult,
              offset_map: Optional[OffsetMap] = None, runner: Optional[CleanerRunner] = None) -> None:
    """Build the map (unless given), write every group's ``.cleaned`` files, swap them in."""
    runner = runner or CleanerRunner()
    end = plan.first_uncleanable
    omap = offset_map if offset_map is not None else runner.offset_map(plan)
    if offset_map is not None and omap.latest_offset < end - 1:
        omap.update_latest(end - 1)
    res.map_keys = len(omap)
    legacy_horizon = legacy_delete_horizon(plan.state.segments, plan.first_dirty, config.delete_retention_ms)
    groups = group_segments_by_size(plan.to_clean, config.segment_bytes, config.segment_index_bytes, end)
    res.groups = [[s.base_offset for s in g] for g in groups]
    outputs = runner.clean_groups(log_dir, groups, plan, omap, config, now, legacy_horizon, ops)
    for group, out in zip(groups, outputs):
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

#: compact's settings: (CleanerConfig field, the topic or broker config it mirrors, type, help)
_SETTINGS = (
    ("delete_retention_ms", "delete.retention.ms", int, "how long tombstones and transaction markers are kept"),
    ("min_cleanable_dirty_ratio", "min.cleanable.dirty.ratio", float,
     "clean only when this share of the log is dirty (see --force)"),
    ("min_compaction_lag_ms", "min.compaction.lag.ms", int, "records younger than this stay uncompacted"),
    ("max_compaction_lag_ms", "max.compaction.lag.ms", int,
     "clean regardless of the dirty ratio once a dirty record is this old"),
    ("segment_bytes", "segment.bytes", int, "the largest cleaned segment"),
    ("index_interval_bytes", "index.interval.bytes", int, "bytes between offset index entries"),
    ("producer_id_expiration_ms", "producer.id.expiration.ms", int,
     "a producer idle this long no longer keeps its last batch"),
)


def cli_add_parser(subparsers: Any) -> Any:
    """Register ``kcodec compact``."""
    from kcodec.log.arguments import add_partition_command
    p = add_partition_command(
        subparsers, "compact", metadata_log=True, help="compact partitions as Kafka's log cleaner does",
        description="One round of Kafka's log cleaner on each partition: the latest record of each key is kept, "
                    "offsets unchanged, tombstones until delete.retention.ms. Settings come from the flags, else "
                    "from --metadata-log (the topic's own), else Kafka's defaults. A log directory that a running "
                    "broker holds locked is refused.")
    defaults = CleanerConfig()
    for name, config, kind, text in _SETTINGS:
        p.add_argument("--" + config.replace(".", "-"), dest=name, type=kind, default=None,
                       help=f"{config}: {text} (default {getattr(defaults, name)})")
    p.add_argument("--now-ms", type=int, default=None, help="clock for horizons and expirations (default: now)")
    p.add_argument("--first-dirty-offset", type=int, default=None,
                   help="where the dirty part of the log starts (default: the log start, or --checkpoint's)")
    p.add_argument("--checkpoint", action="store_true",
                   help="read and update ../cleaner-offset-checkpoint as the broker does")
    p.add_argument("--force", action="store_true", help="clean even below min.cleanable.dirty.ratio")
    p.add_argument("--dry-run", action="store_true", help="report what a round would do; change nothing")
    p.set_defaults(func=cli_run)
    return p


def cleaner_config(args: Any, topic: Any = None) -> Tuple[CleanerConfig, List[str]]:
    """The config of one partition's round, and where each setting not at its default came from.

    Flags win; then, with ``topic`` (a :class:`~kcodec.log.cluster_metadata.TopicPolicy`), the
    values the metadata log holds for the topic; then Kafka's defaults.
    """
    from kcodec.log.cluster_metadata import KAFKA_DEFAULT

    typed = {} if topic is None else {"delete_retention_ms": topic.delete_retention_ms,
                                      "min_compaction_lag_ms": topic.min_compaction_lag_ms}
    values: Dict[str, Any] = {}
    sources = []
    for name, config, kind, _ in _SETTINGS:
        flag = getattr(args, name, None)
        if flag is not None:
            values[name] = flag
            sources.append(f"{config} {flag} (--{config.replace('.', '-')})")
        elif name in typed and typed[name].source.kind != KAFKA_DEFAULT:
            values[name] = typed[name].value
            sources.append(str(typed[name]))
        elif topic is not None and config in topic.configs:
            values[name] = kind(topic.configs[config])
            sources.append(f"{config} = {values[name]} (topic config in the metadata log)")
    return CleanerConfig(**values), sources


def cli_run(args: Any) -> int:
    from kcodec.log.arguments import partition_policy, storage_options, target_partitions
    from kcodec.log.cluster_metadata import KAFKA_DEFAULT
    from kcodec.log.lock import rewrite_locks
    opts = storage_options(args)
    plans = []
    for part in target_partitions(args):  # every topic's settings are read before anything is locked
        url = part.storage.url(str(part.path))
        topic = partition_policy(args, part)
        try:
            cfg, sources = cleaner_config(args, topic)
        except ValueError as exc:
            raise KcodecError(f"--metadata-log {args.metadata_log}: topic {part.topic}: {exc}") from None
        skip = None
        if topic is not None and "compact" not in topic.cleanup_policy.value:
            skip = (f"not compacted: {topic.cleanup_policy}"
                    + (" (the brokers' server.properties may say otherwise: compact without --metadata-log to "
                       "clean it anyway)" if topic.cleanup_policy.source.kind == KAFKA_DEFAULT else ""))
        plans.append((url, cfg, sources, skip))
    with (contextlib.nullcontext() if args.dry_run else rewrite_locks([p[0] for p in plans if not p[3]], opts)):
        for url, cfg, sources, skip in plans:
            if skip:
                print(f"{url}: {skip}")
                continue
            _compact_one(args, url, cfg, opts, sources)
    return 0


def _compact_one(args: Any, url: str, cfg: CleanerConfig, opts: Dict[str, Any], sources: List[str]) -> None:
    r = compact(url, config=cfg, now_ms=args.now_ms,
                first_dirty_offset=args.first_dirty_offset, use_checkpoint=args.checkpoint, force=args.force,
                dry_run=args.dry_run, storage_options=opts)
    print(f"{r.log_dir}: {r.reason}" + (f" [{'; '.join(sources)}]" if sources else ""))
    print(f"  dirty range [{r.first_dirty_offset}, {r.first_uncleanable_offset}), cleanable ratio "
          f"{r.cleanable_ratio:.3f} ({r.cleanable_bytes} cleanable of {r.clean_bytes + r.cleanable_bytes} bytes)")
    if r.cleaned:
        print(f"  {r.messages_read} records read, {r.messages_written} kept; {r.bytes_read} -> "
              f"{r.bytes_written} bytes; {r.map_keys} keys; segments {r.segments_before} -> "
              f"{r.segments_after}; {r.seconds:.2f} s")
