"""Log directories and their URLs as an input of ``kcodec advise``, Kafka's tiered-storage layout included.

Each directory is listed once (:func:`kcodec.log.segment.open_log_dir`), on the driver,
from file sizes and offset indexes: no ``.log`` is read there.  The sampled ranges
are read in Spark tasks, each range of whole batches one ranged read, so a URL input
(``s3://`` ...) costs one request a range; its ``storage_options`` reach the tasks
with the work, never in the DataFrame.
"""
from __future__ import annotations

import functools
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from kcodec.advise.inputs.chunks import CHUNK_DDL, chunk_batch
from kcodec.advise.inputs.source import RoundSampledSource, Sampling
from kcodec.errors import KcodecError
from kcodec.storage import resolve

__all__ = ["ChunkRange", "LogSource", "plan_sample", "read_chunks", "task_count", "TASK_BYTES"]

RANGE_DDL = "topic string, partition int, chunk int, path string, start long, end long"

#: Bytes of sampled ranges a measuring task is given at least: small topics share a task, since a
#: Spark task's own cost (scheduling, a Python worker's round trip) is far more than a small range's.
TASK_BYTES = 4 << 20


@dataclass(frozen=True)
class ChunkRange:
    topic: str
    partition: int
    chunk: int
    path: str
    start: int
    end: int

    @property
    def size(self) -> int:
        return self.end - self.start


class LogSource(RoundSampledSource):
    """Log directories (paths or URLs), each listed once: every range of every segment, each topic's
    stored bytes and time span, and where each partition's last batch could be cut short."""

    def __init__(self, paths: Sequence[str], listings: Sequence[Any], chunk_bytes: int,
                 storage_options: Optional[Dict[str, Any]] = None) -> None:
        """``listings``: each path's :class:`~kcodec.log.segment.LogDir`, as opened when its kind was told."""
        super().__init__(f"log director{'ies' if len(paths) > 1 else 'y'} {', '.join(paths)}", storage_options)
        self.paths = list(paths)
        self.ranges: List[ChunkRange] = []  #: every range of every log directory
        #: (topic, partition, last segment, its last indexed batch's position, its size):
        #: where a partial batch a crash left would be
        self.tails: List[Tuple[str, int, str, int, int]] = []
        seen: set = set()
        try:
            for path, listing in zip(paths, listings):
                self._add_log_dir(path, listing, chunk_bytes, seen)
        finally:
            for listing in listings:
                for part in listing.values():
                    part.close()

    def _keep(self, pattern: "re.Pattern[str]") -> None:
        super()._keep(pattern)
        self.ranges = [r for r in self.ranges if pattern.fullmatch(r.topic)]
        self.tails = [t for t in self.tails if pattern.fullmatch(t[0])]

    def _add_log_dir(self, path: str, listing, chunk_bytes: int, seen: set) -> None:
        for (topic, partition), part in sorted(listing.items()):
            if (topic, partition) in seen:  # another broker's replica of the same partition
                continue
            seen.add((topic, partition))
            self.topic_partitions[topic] = self.topic_partitions.get(topic, 0) + 1
            n = 0
            try:
                segments = [seg for seg in part.segments if seg.size]  # a freshly rolled segment holds nothing
                self._add_span(topic, segments)
                self._add_tail(topic, partition, segments)
                for seg in segments:
                    self.topic_bytes[topic] = self.topic_bytes.get(topic, 0) + seg.size
                    for start, end in seg.byte_ranges(chunk_bytes):
                        self.ranges.append(ChunkRange(topic, partition, n, seg.url, start, end))
                        n += 1
            except KcodecError as exc:
                raise exc.with_context(source=part.storage.url(str(part.path)))
        if not self.ranges:
            raise KcodecError(f"{path}: the log directory holds no records (every segment is empty)")

    def _add_tail(self, topic: str, partition: int, segments) -> None:
        """Where the partition's last segment would end in a partial batch (a crash while the broker appended):
        from its last indexed batch to its end, read in a Spark task (:mod:`kcodec.advise.inputs.logs.tails`)."""
        if not segments:
            return
        seg = segments[-1]
        positions = seg.offset_index.positions
        start = int(positions[-1]) if len(positions) and positions[-1] < seg.size else 0
        self.tails.append((topic, partition, seg.url, start, seg.size))

    def _add_span(self, topic: str, segments) -> None:
        """The partition's first batch timestamp (its header) and largest one (the last time index entry)."""
        if not segments:
            return
        from kcodec.records import batch_header

        end = batch_header.BASE_TIMESTAMP + 8
        head = bytes(segments[0].read_range(0, end))
        if len(head) < end or head[batch_header.MAGIC] != 2:  # v0/v1 message sets: the span comes from the sample
            return
        first = int.from_bytes(head[batch_header.BASE_TIMESTAMP:end], "big", signed=True)
        try:
            stamps = segments[-1].time_index.entries["timestamp"]
        except (KcodecError, OSError):
            return
        if len(stamps) == 0 or first < 0:
            return
        last = int(stamps[-1])
        lo, hi = self.topic_span_ms.get(topic, (first, last))
        self.topic_span_ms[topic] = (min(lo, first), max(hi, last))

    def chunk_place(self, topic: str, partition: int, chunk: int) -> Optional[Tuple[str, int]]:
        r = next((r for r in self.ranges if (r.topic, r.partition, r.chunk) == (topic, partition, chunk)), None)
        return None if r is None else (r.path, r.start)

    def tail_notes(self, spark, topics: Sequence[str]) -> Dict[str, List[str]]:
        from kcodec.advise.inputs.logs.tails import partial_tails

        wanted = set(topics)
        return partial_tails(spark, [t for t in self.tails if t[0] in wanted], self.storage_options)

    def chunks(self, spark, sampling: Sampling) -> Tuple[Any, Optional[int]]:
        picked = plan_sample(self.ranges, sampling.sample_bytes)
        frame = read_chunks(spark, picked, task_count([r.size for r in picked], sampling.tasks), self.storage_options)
        return frame, len(picked)

    def check_chunks(self, spark, sampling: Sampling, since_ms: Optional[int]) -> Tuple[Any, Optional[int]]:
        """The ranges from the change on, and before it, each sampled at ``--sample`` on its own: a sample spread
        over a whole log would reach a change made an hour ago in a week's log in one range of its hundreds, or
        in none."""
        if since_ms is None:
            return self.chunks(spark, sampling)
        picked = self.check_ranges(since_ms, sampling.sample_bytes)
        frame = read_chunks(spark, picked, task_count([r.size for r in picked], sampling.tasks), self.storage_options)
        return frame, len(picked)

    def check_ranges(self, since_ms: int, sample_bytes: Optional[int]) -> List[ChunkRange]:
        """:meth:`check_chunks`'s ranges: ``sample_bytes`` per topic of those before the change, and as much of
        those that may hold a batch stamped at or after ``since_ms``."""
        starts = self._change_positions(since_ms)
        after = [r for r in self.ranges if r.end > starts[r.path]]
        before = [r for r in self.ranges if r.end <= starts[r.path]]
        return plan_sample(before, sample_bytes) + plan_sample(after, sample_bytes)

    def _change_positions(self, since_ms: int) -> Dict[str, int]:
        """Each segment's byte from which a batch may be stamped at or after ``since_ms``, from its time index,
        whose entries are the largest timestamp so far and its offset.  A segment rolled before the change (one
        a later segment follows, its last entry below ``since_ms``: a broker writes the segment's largest
        timestamp as it rolls) holds none: its size.  Else the indexed batch at or before the last entry below
        ``since_ms``; 0 where there is none, or no usable time index."""
        from kcodec.log.segment import LogSegment

        last = {(r.topic, r.partition): r.path for r in self.ranges}  # ranges are listed in segment order
        out: Dict[str, int] = {}
        for r in self.ranges:
            if r.path in out:
                continue
            storage, inner = resolve(r.path, self.storage_options)
            seg = LogSegment(inner, storage)
            try:
                stamps = seg.time_index.entries["timestamp"]
                if r.path != last[(r.topic, r.partition)] and len(stamps) and int(stamps.max()) < since_ms:
                    out[r.path] = seg.size
                    continue
                entry = seg.time_index.lookup(since_ms - 1)
                out[r.path] = 0 if entry.timestamp < 0 else seg.start_position(entry.offset)
            except KcodecError as exc:
                raise exc.with_context(source=r.path)
            finally:
                seg.close()
        return out

    def sample_candidates(self, cap_bytes: int) -> Tuple[Dict[str, List[ChunkRange]], Dict[str, int]]:
        candidates: Dict[str, List[ChunkRange]] = {}
        for r in plan_sample(self.ranges, cap_bytes):
            candidates.setdefault(r.topic, []).append(r)
        population: Dict[str, int] = {}
        for r in self.ranges:
            population[r.topic] = population.get(r.topic, 0) + 1
        return candidates, population

    def read_sampled(self, spark, sampling: Sampling, chunks: Sequence[ChunkRange]):
        return read_chunks(spark, chunks, task_count([r.size for r in chunks], sampling.tasks), self.storage_options)

    def write_records(self, spark, sampling: Sampling):
        reader = spark.read.format("kafka-log")
        if self.storage_options:  # URL inputs
            reader = reader.option("storageOptions", json.dumps(self.storage_options))
        return reader.load(self.paths[0] if len(self.paths) == 1 else list(self.paths))


def task_count(sizes: Sequence[int], parallelism: int) -> int:
    """Spark tasks for ranges of ``sizes`` bytes: about :data:`TASK_BYTES` each, at least two per core
    while there are ranges enough, a multiple of the cores (so no last task runs alone while the
    other cores wait), never more than ranges."""
    if not sizes:
        return 1
    want = max(2 * parallelism, -(-sum(sizes) // TASK_BYTES))
    want = -(-want // max(1, parallelism)) * max(1, parallelism)
    return max(1, min(len(sizes), want))


def plan_sample(ranges: Sequence[ChunkRange], sample_bytes: Optional[int]) -> List[ChunkRange]:
    """Whole-batch ranges of about ``sample_bytes`` per topic, spread over partitions and time.

    Each partition gets a share of the chunks in proportion to its bytes (at
    least one while there are chunks enough for every partition): the middle
    range of each of that many equal stretches of the partition, so every
    period of the topic's time weighs alike.
    """
    by_topic: Dict[str, Dict[int, List[ChunkRange]]] = {}
    for r in ranges:
        by_topic.setdefault(r.topic, {}).setdefault(r.partition, []).append(r)
    out: List[ChunkRange] = []
    for topic, parts in sorted(by_topic.items()):
        total = sum(r.size for rs in parts.values() for r in rs)
        count = sum(len(rs) for rs in parts.values())
        if sample_bytes is None or total <= sample_bytes:
            out.extend(r for p in sorted(parts) for r in parts[p])
            continue
        want = max(1, math.ceil(sample_bytes / (total / count)))
        keys = sorted(parts)
        if want < len(keys):  # fewer chunks than partitions: partitions spread evenly
            keys = [keys[i] for i in np.unique(((np.arange(want) + 0.5) * len(keys) / want).astype(int))]
            shares = {k: 1 for k in keys}
        else:
            weight = np.array([sum(r.size for r in parts[k]) for k in keys], dtype=float)
            raw = want * weight / weight.sum()
            base = np.maximum(1, np.floor(raw)).astype(int)
            for i in np.argsort(-(raw - np.floor(raw)))[:max(0, want - int(base.sum()))]:
                base[i] += 1
            shares = dict(zip(keys, base.tolist()))
        for k in keys:
            rs = parts[k]
            take = min(shares[k], len(rs))
            idx = np.unique(((np.arange(take) + 0.5) * len(rs) / take).astype(int))
            out.extend(rs[i] for i in idx)
    return out


def read_chunks(spark, ranges: Sequence[ChunkRange], tasks: int,
                storage_options: Optional[Dict[str, Any]] = None):
    """The chunk DataFrame of ``ranges``, each range read in a Spark task (paths or URLs)."""
    rows = [(r.topic, r.partition, r.chunk, r.path, r.start, r.end) for r in ranges]
    plan = spark.createDataFrame(rows, RANGE_DDL).repartition(max(1, min(tasks, len(rows))))
    return plan.mapInArrow(functools.partial(_read_ranges, storage_options=storage_options), CHUNK_DDL)


def _read_ranges(batches, storage_options: Optional[Dict[str, Any]] = None):
    for b in batches:
        for r in b.to_pylist():  # one row per chunk (megabytes), not per record
            storage, inner = resolve(r["path"], storage_options)
            data = storage.read_range(inner, r["start"], r["end"])  # one ranged read from an object store
            yield chunk_batch(r["topic"], r["partition"], r["chunk"], data)
