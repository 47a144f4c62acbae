"""What ``kcodec advise`` reads, checked before Spark starts, and the sampled chunks of log directories.

Every batch-carrying input becomes one DataFrame of raw chunks, ``CHUNK_DDL``:
a chunk is a run of whole record batches exactly as stored, ``chunk`` numbering
the sampled ranges within a partition.  Log directories are planned here on the
driver from file sizes and offset indexes (no ``.log`` is read) and the bytes are
read in Spark tasks.  A log directory may be a URL (``s3://`` ...; its
``storage_options`` reach the tasks with the work, never in the DataFrame) and
may be in Kafka's tiered-storage layout; each range is then one ranged read.
"""
from __future__ import annotations

import functools
import math
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from kcodec.advise.chunks import CHUNK_DDL, chunk_batch
from kcodec.errors import KcodecError
from kcodec.storage import Storage, resolve

__all__ = ["CHUNK_DDL", "ChunkRange", "InputPlan", "check_inputs", "chunk_batch", "plan_sample", "read_chunks",
           "cluster_input"]

RANGE_DDL = "topic string, partition int, chunk int, path string, start long, end long"
RECORD_SUFFIXES = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}


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


@dataclass
class InputPlan:
    """What the inputs are: ``kind`` is ``sample``, ``logs``, ``records`` or ``cluster``."""

    kind: str
    description: str
    ranges: List[ChunkRange] = field(default_factory=list)  # every range of every log directory
    topic_bytes: Dict[str, int] = field(default_factory=dict)  # stored bytes of each topic, all segments
    topic_partitions: Dict[str, int] = field(default_factory=dict)
    topic_span_ms: Dict[str, Tuple[int, int]] = field(default_factory=dict)  # first and largest timestamp
    topic_offsets: Dict[str, int] = field(default_factory=dict)  # a cluster's offsets, earliest to latest
    record_paths: List[str] = field(default_factory=list)
    record_format: Optional[str] = None
    seen: set = field(default_factory=set)
    storage_options: Optional[Dict[str, Any]] = field(default=None, repr=False)  # for URL inputs and --write
    timestamps: Optional[Any] = None  # record inputs: a kcodec.advise.timestamps.TimestampPlan
    topic_regex: Optional[str] = None  # --topic: only the topics it matches whole
    tails: List[Tuple[str, int, str, int, int]] = field(default_factory=list)  # (topic, partition, last segment,
    #: its last indexed batch's position, its size): where a partial batch a crash left would be


def check_inputs(paths: Sequence[str], fmt: Optional[str], chunk_bytes: int,
                 storage_options: Optional[Dict[str, Any]] = None) -> InputPlan:
    """Check every input path or URL and say what it is; errors name the path and what was expected."""
    if not paths:
        return InputPlan("sample", "generated sample", storage_options=storage_options)
    if fmt not in (None, "kafka-log", "parquet", "json"):
        raise KcodecError(f"--format {fmt}: choose kafka-log, parquet or json")
    kinds = []
    for path in paths:
        storage, inner = resolve(path, storage_options)
        if not storage.exists(inner):
            raise KcodecError(f"{path}: no such file or directory")
        kinds.append(fmt or _guess(storage, inner, storage_options))
    if len(set(kinds)) > 1:
        raise KcodecError(f"inputs of different kinds ({', '.join(sorted(set(kinds)))}): give one kind at a time")
    if kinds[0] != "kafka-log":
        return InputPlan("records", f"{kinds[0]} {', '.join(paths)}", record_paths=list(paths),
                         record_format=kinds[0], storage_options=storage_options)
    plan = InputPlan("logs", f"log director{'ies' if len(paths) > 1 else 'y'} {', '.join(paths)}",
                     storage_options=storage_options)
    for path in paths:
        _add_log_dir(plan, path, chunk_bytes)
    return plan


def _guess(storage: Storage, path: str, storage_options: Optional[Dict[str, Any]]) -> str:
    from kcodec.log.names import segment_log_offset
    from kcodec.log.segment import open_log_dir

    p = storage.url(path)
    if storage.isfile(path):
        name = storage.basename(path)
        suffix = os.path.splitext(name)[1]
        if segment_log_offset(name) is not None or suffix in (".log", ".index", ".timeindex"):
            log_dir = storage.url(storage.parent(storage.parent(path)))
            raise KcodecError(f"{p}: a segment file; give the log directory holding its "
                              f"<topic>-<partition> folder (here {log_dir})")
        if suffix in RECORD_SUFFIXES:
            return RECORD_SUFFIXES[suffix]
        raise KcodecError(f"{p}: not a Kafka log directory, .parquet or .json file")
    if open_log_dir(p, storage_options=storage_options):
        return "kafka-log"
    suffixes = {os.path.splitext(f.name)[1] for f in storage.list(path) if not f.is_dir}
    found = {RECORD_SUFFIXES[ext] for ext in suffixes if ext in RECORD_SUFFIXES}
    if len(found) == 1:
        return found.pop()
    raise KcodecError(f"{p}: not a Kafka log directory (no <topic>-<partition> folder holding "
                      f"NNNNNNNNNNNNNNNNNNNN.log segments) and no .parquet or .json files")


def _add_log_dir(plan: InputPlan, path: str, chunk_bytes: int) -> None:
    from kcodec.log.segment import open_log_dir

    for (topic, partition), part in sorted(open_log_dir(path, storage_options=plan.storage_options).items()):
        if (topic, partition) in plan.seen:  # another broker's replica of the same partition
            part.close()
            continue
        plan.seen.add((topic, partition))
        plan.topic_partitions[topic] = plan.topic_partitions.get(topic, 0) + 1
        n = 0
        try:
            _add_span(plan, topic, [seg for seg in part.segments if seg.size])
            _check_tail(plan, topic, partition, [seg for seg in part.segments if seg.size])
            for seg in part.segments:
                if seg.size == 0:  # a freshly rolled active segment holds nothing yet
                    continue
                plan.topic_bytes[topic] = plan.topic_bytes.get(topic, 0) + seg.size
                for start, end in seg.byte_ranges(chunk_bytes):
                    plan.ranges.append(ChunkRange(topic, partition, n, seg.url, start, end))
                    n += 1
        except KcodecError as exc:
            raise exc.with_context(source=part.storage.url(str(part.path)))
        finally:
            part.close()
    if not plan.ranges:
        raise KcodecError(f"{path}: the log directory holds no records (every segment is empty)")


def _check_tail(plan: InputPlan, topic: str, partition: int, segments) -> None:
    """Where the partition's last segment would end in a partial batch (a crash while the broker appended):
    from its last indexed batch to its end, read in a Spark task (:mod:`kcodec.advise.tails`)."""
    if not segments:
        return
    seg = segments[-1]
    positions = seg.offset_index.positions
    start = int(positions[-1]) if len(positions) and positions[-1] < seg.size else 0
    plan.tails.append((topic, partition, seg.url, start, seg.size))


def _add_span(plan: InputPlan, topic: str, segments) -> None:
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
    lo, hi = plan.topic_span_ms.get(topic, (first, last))
    plan.topic_span_ms[topic] = (min(lo, first), max(hi, last))


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


def cluster_input(bootstrap: str, topic_regex: Optional[str], timeout_s: float) -> InputPlan:
    """Check a live cluster before Spark starts (the reader lives in :mod:`kcodec.advise.cluster`)."""
    try:
        from kcodec.advise.cluster import check_cluster
    except ImportError as exc:
        raise KcodecError(f"--bootstrap-server {bootstrap}: the cluster reader is not available ({exc})") from None

    found: List[Tuple[str, int]] = list(check_cluster(bootstrap, topic_regex, timeout_s=timeout_s))
    if not found:
        raise KcodecError(f"--bootstrap-server {bootstrap}: no topic matches "
                          f"{topic_regex!r}" if topic_regex else f"--bootstrap-server {bootstrap}: no topics")
    plan = InputPlan("cluster", f"cluster {bootstrap}" + (f" topics /{topic_regex}/" if topic_regex else ""))
    for topic, _ in found:
        plan.topic_partitions[topic] = plan.topic_partitions.get(topic, 0) + 1
    return plan
