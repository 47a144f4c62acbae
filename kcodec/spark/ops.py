"""Recompression and compaction of partition directories with Spark.

Both run the same code as :mod:`kcodec.log.recompress` and
:mod:`kcodec.log.cleaner`; Spark only spreads the expensive parts:

* :func:`recompress_spark` -- one task per segment file rewrites and verifies
  it as ``*.cleaned`` files; the driver then swaps each segment in with the
  crash-safe protocol (so a failed task leaves nothing swapped);
* :func:`compact_spark` -- one task per dirty segment emits ``(key, offset)``
  for every record the offset map takes; a key-partitioned aggregation keeps
  the latest offset per key; the map is then broadcast and one task per
  segment group writes the cleaned group; the driver swaps the groups in.

The directories must be visible at the same path to the driver and every
executor (a local run, or a shared file system).
"""
from __future__ import annotations

import time
from typing import List, Optional, Sequence, Union

from kcodec.compression import CompressionType
from kcodec.log.cleaner import (
    CleanerConfig,
    CleanResult,
    FileOps,
    OffsetMap,
    SegmentInfo,
    _TxnMeta,
    clean_group,
    list_segments,
    open_log,
    plan_clean,
    recover_log_dir,
    replace_segments,
    run_clean,
)
from kcodec.log.recompress import RecompressOptions, RecompressResult, recompress_segment

__all__ = ["recompress_spark", "compact_spark", "offset_map_spark"]


def recompress_spark(spark, log_dirs: Union[str, Sequence[str]], compression: Union[CompressionType, int, str],
                     level: Optional[int] = None, *, to_magic: Optional[int] = None, skip_same_codec: bool = False,
                     include_active: bool = True, dry_run: bool = False, verify: bool = True,
                     index_interval_bytes: int = 4096) -> List[RecompressResult]:
    """Recompress the segments of one or more partition directories, one Spark task per segment."""
    t0 = time.perf_counter()
    dirs = [log_dirs] if isinstance(log_dirs, str) else list(log_dirs)
    options = RecompressOptions(compression, level, to_magic, skip_same_codec)
    options.check()
    tasks = []
    for d in dirs:
        if not dry_run:
            recover_log_dir(d, FileOps(), index_interval_bytes)
        segs = list_segments(d)
        if not include_active and segs:
            segs = segs[:-1]
        tasks.extend((d, s) for s in segs)
    results = {d: RecompressResult(d, dry_run) for d in dirs}
    if not tasks:
        return [results[d] for d in dirs]

    def work(task):
        d, seg = task
        return d, seg, recompress_segment(d, seg, options, dry_run=dry_run, verify=verify,
                                          index_interval_bytes=index_interval_bytes)

    sc = spark.sparkContext
    try:
        done = sc.parallelize(tasks, len(tasks)).map(work).collect()
    except Exception:
        if not dry_run:
            for d in dirs:
                recover_log_dir(d, FileOps(), index_interval_bytes)  # drops every .cleaned file
        raise
    done.sort(key=lambda x: (dirs.index(x[0]), x[1].base_offset))
    ops = FileOps()
    for d, seg, res in done:
        if not dry_run:
            replace_segments(ops, d, seg.base_offset, [seg], mtime=seg.mtime)
            res.swapped = True
        results[d].segments.append(res)
    elapsed = time.perf_counter() - t0
    for r in results.values():
        r.seconds = elapsed
    return [results[d] for d in dirs]


def _segment_keys(args):
    """(key, offset) of every record of one dirty segment that the offset map takes."""
    from kcodec.records import read_batches
    path, aborted, start = args
    meta = _TxnMeta()
    meta.add(aborted)
    out = []
    with open_log(path) as buf:
        for batch in read_batches(buf, validate=False):
            if batch.is_control:
                meta.on_control_batch(batch)
            elif not meta.on_batch(batch):
                for rec in batch:
                    if rec.key is not None and rec.offset >= start:
                        out.append((bytes(rec.key), rec.offset))
    return out


def offset_map_spark(spark, plan) -> OffsetMap:
    """The cleaner's key -> latest offset map over the plan's dirty segments, built by Spark."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    end = plan.first_uncleanable
    args = []
    for i, seg in enumerate(plan.dirty):
        seg_end = plan.dirty[i + 1].base_offset if i + 1 < len(plan.dirty) else end
        args.append((seg.path(), plan.state.aborted_overlapping(seg.base_offset, seg_end), plan.first_dirty))
    omap = OffsetMap()
    if args:
        rdd = spark.sparkContext.parallelize(args, len(args)).flatMap(_segment_keys)
        schema = StructType([StructField("key", BinaryType(), False), StructField("offset", LongType(), False)])
        latest = spark.createDataFrame(rdd, schema).groupBy("key").agg(F.max("offset").alias("offset"))
        for row in latest.toLocalIterator():
            omap.put(bytes(row["key"]), int(row["offset"]))
    omap.update_latest(end - 1)
    return omap


def compact_spark(spark, log_dir: str, *, config: Optional[CleanerConfig] = None, now_ms: Optional[int] = None,
                  first_dirty_offset: Optional[int] = None, force: bool = False,
                  dry_run: bool = False) -> CleanResult:
    """:func:`kcodec.log.cleaner.compact` with the offset map and the group rewrites on Spark."""
    t0 = time.perf_counter()
    config = config or CleanerConfig()
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    ops = FileOps()
    if not dry_run:
        recover_log_dir(log_dir, ops, config.index_interval_bytes)
    plan = plan_clean(log_dir, config, now, first_dirty_offset)
    res = CleanResult(log_dir, False, "", plan.first_dirty, plan.first_uncleanable, plan.cleanable_ratio,
                      plan.clean_bytes, plan.cleanable_bytes, segments_before=len(plan.state.segments))
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

    omap = offset_map_spark(spark, plan)
    sc = spark.sparkContext
    state_b = sc.broadcast(plan.state)
    map_b = sc.broadcast(omap)

    def runner(groups: List[List[SegmentInfo]], _omap, legacy_horizon: int, end: int):
        def work(group):
            return clean_group(log_dir, group, state_b.value, map_b.value, config, now, legacy_horizon, end)
        try:
            return sc.parallelize(groups, len(groups)).map(work).collect()
        except Exception:
            recover_log_dir(log_dir, FileOps(), config.index_interval_bytes)
            raise

    try:
        run_clean(log_dir, plan, config, now, ops, res, offset_map=omap, group_runner=runner)
    finally:
        state_b.unpersist()
        map_b.unpersist()
    res.seconds = time.perf_counter() - t0
    return res
