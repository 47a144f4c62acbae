"""Recompression and compaction of partition directories with Spark.

Both run the same code as :mod:`kcodec.log.recompression` and
:mod:`kcodec.log.cleaner`; Spark only spreads the expensive parts:

* :func:`recompress_spark` -- one task per segment file rewrites and verifies
  it as ``*.cleaned`` files; the driver then swaps each segment in with the
  crash-safe protocol (so a failed task leaves nothing swapped);
* :func:`compact_spark` -- one task per dirty segment collects the latest
  offset of each key the offset map takes; a key-partitioned aggregation
  keeps the latest offset per key; the map is then broadcast and one task per
  segment group writes the cleaned group; the driver swaps the groups in.

Directories are paths or URLs (``s3://...`` with ``storage_options``, as
for :func:`kcodec.log.recompress`); a local path must be visible at the same
place to the driver and every executor (a local run, or a shared file
system).
"""
from __future__ import annotations

import contextlib
import time
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from kcodec.compression import CompressionType
from kcodec.log.cleaner import CleanerConfig, CleanerRunner, CleanResult, GroupOutput, clean_group, compact
from kcodec.log.cleaner_plan import CleanPlan
from kcodec.log.files import FileOps, ops_for
from kcodec.log.lock import rewrite_locks
from kcodec.log.offset_map import OffsetMap, dirty_ranges
from kcodec.log.recompression import (
    RecompressOptions,
    RecompressResult,
    recompress_segment,
    segments_to_recompress,
    swap_in,
)
from kcodec.log.recovery import recover_log_dir
from kcodec.log.segment_list import SegmentInfo
from kcodec.log.transaction_index import CleanedTransactionMetadata

__all__ = ["recompress_spark", "compact_spark", "offset_map_spark"]


def recompress_spark(spark: Any, log_dirs: Union[str, Sequence[str]], compression: Union[CompressionType, int, str],
                     level: Optional[int] = None, *, to_magic: Optional[int] = None, skip_same_codec: bool = False,
                     include_active: bool = True, dry_run: bool = False, verify: bool = True,
                     index_interval_bytes: int = 4096,
                     storage_options: Optional[Dict[str, Any]] = None) -> List[RecompressResult]:
    """Recompress the segments of one or more partition directories (paths or URLs), one Spark task per segment."""
    t0 = time.perf_counter()
    dirs = [log_dirs] if isinstance(log_dirs, str) else list(log_dirs)
    options = RecompressOptions(compression, level, to_magic, skip_same_codec)
    options.check()
    where = [ops_for(d, None, storage_options) for d in dirs]
    with (contextlib.nullcontext() if dry_run else rewrite_locks(dirs, storage_options)):
        return _recompress_tasks(spark, where, options, include_active=include_active, dry_run=dry_run,
                                 verify=verify, index_interval_bytes=index_interval_bytes, t0=t0)


def _recompress_tasks(spark: Any, where: List[Tuple[FileOps, str]], options: RecompressOptions, *, include_active: bool,
                      dry_run: bool, verify: bool, index_interval_bytes: int, t0: float) -> List[RecompressResult]:
    results = [RecompressResult(ops.storage.url(inner), dry_run) for ops, inner in where]
    tasks = [(i, inner, seg) for i, (ops, inner) in enumerate(where)
             for seg in segments_to_recompress(ops, inner, include_active=include_active, dry_run=dry_run,
                                               index_interval_bytes=index_interval_bytes)]
    if not tasks:
        return results

    def work(task: Any) -> Any:
        i, inner, seg = task
        return i, seg, recompress_segment(inner, seg, options, dry_run=dry_run, verify=verify,
                                          index_interval_bytes=index_interval_bytes)

    try:
        done = spark.sparkContext.parallelize(tasks, len(tasks)).map(work).collect()
    except Exception:
        if not dry_run:
            for ops, inner in where:
                recover_log_dir(inner, ops, index_interval_bytes)  # drops every .cleaned file
        raise
    done.sort(key=lambda x: (x[0], x[1].base_offset))
    for i, seg, res in done:
        ops, inner = where[i]
        results[i].segments.append(swap_in(ops, inner, seg, res, dry_run))
    elapsed = time.perf_counter() - t0
    for r in results:
        r.seconds = elapsed
    return results


def _segment_keys(args: Any) -> Any:
    """(key, latest offset) of the records of one dirty segment that the offset map takes."""
    seg, aborted, start = args
    meta = CleanedTransactionMetadata()
    meta.add(aborted)
    omap = OffsetMap()
    omap.add_segment(seg, meta, start)
    return list(omap.map.items())


def offset_map_spark(spark: Any, plan: CleanPlan) -> OffsetMap:
    """The cleaner's key -> latest offset map over the plan's dirty segments, built by Spark."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import BinaryType, LongType, StructField, StructType

    end = plan.first_uncleanable
    args = [(seg, plan.state.aborted_overlapping(seg.base_offset, seg_end), plan.first_dirty)
            for seg, seg_end in dirty_ranges(plan.dirty, end)]
    omap = OffsetMap()
    if args:
        rdd = spark.sparkContext.parallelize(args, len(args)).flatMap(_segment_keys)
        schema = StructType([StructField("key", BinaryType(), False), StructField("offset", LongType(), False)])
        latest = spark.createDataFrame(rdd, schema).groupBy("key").agg(F.max("offset").alias("offset"))
        for row in latest.toLocalIterator():
            omap.put(bytes(row["key"]), int(row["offset"]))
    omap.update_latest(end - 1)
    return omap


class SparkCleanerRunner(CleanerRunner):
    """Builds the offset map and rewrites the segment groups as Spark tasks."""

    def __init__(self, spark: Any) -> None:
        self.spark = spark

    def offset_map(self, plan: CleanPlan) -> OffsetMap:
        return offset_map_spark(self.spark, plan)

    def clean_groups(self, log_dir: str, groups: List[List[SegmentInfo]], plan: CleanPlan, offset_map: OffsetMap,
                     config: CleanerConfig, now: int, legacy_horizon: int, ops: FileOps) -> Iterator[GroupOutput]:
        sc = self.spark.sparkContext
        state_b = sc.broadcast(plan.state)
        map_b = sc.broadcast(offset_map)
        end = plan.first_uncleanable

        def work(group: Any) -> Any:
            return clean_group(log_dir, group, state_b.value, map_b.value, config, now, legacy_horizon, end)

        try:
            outputs = sc.parallelize(groups, len(groups)).map(work).collect()
        except Exception:
            recover_log_dir(log_dir, FileOps(storage=ops.storage), config.index_interval_bytes)
            raise
        finally:
            state_b.unpersist()
            map_b.unpersist()
        return iter(outputs)


def compact_spark(spark: Any, log_dir: str, *, config: Optional[CleanerConfig] = None, now_ms: Optional[int] = None,
                  first_dirty_offset: Optional[int] = None, force: bool = False, dry_run: bool = False,
                  storage_options: Optional[Dict[str, Any]] = None) -> CleanResult:
    """:func:`kcodec.log.cleaner.compact` with the offset map and the group rewrites on Spark."""
    return compact(log_dir, config=config, now_ms=now_ms, first_dirty_offset=first_dirty_offset, force=force,
                   dry_run=dry_run, storage_options=storage_options, runner=SparkCleanerRunner(spark))
