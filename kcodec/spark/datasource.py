"""The ``kafka-log`` Spark data source: Kafka segment files in and out.

Reading::

    kcodec.spark.register(spark)
    df = spark.read.format("kafka-log").load("/var/lib/kafka/data")          # every partition
    df = spark.read.format("kafka-log").option("startingOffset", 1000).load("/data/orders-0")

Each input partition is one segment file, or a byte range of a large one
cut at batch boundaries found through the offset index (``splitBytes``,
default 64 MiB on local disk, 256 MiB in an object store).  Options:
``startingOffset``/``endingOffset`` (inclusive / exclusive),
``startingTimestamp``/``endingTimestamp`` (ms; inclusive / exclusive),
``topic`` (keep one topic), ``includeControl``, ``validate``,
``onInvalidFolder`` (``warn``, the default: a folder of segments whose name
is not ``<topic>-<partition>`` is skipped with an ``InvalidNameWarning``;
``fail``: the read fails with ``InvalidNameError``).

``columns`` (comma-separated names of Spark's Kafka schema, in any order)
makes the source's schema, and the batches it yields, those columns in that
order: Spark's Python data sources have no column-pruning hook, so a query
that uses only ``key`` and ``value`` names them here.  ``=``, ``<``, ``<=``,
``>``, ``>=`` and ``IN`` filters on ``offset``, ``timestamp``, ``topic``
and ``partition`` are pushed into the reader: topic and partition filters
choose partition folders, offset and timestamp filters choose segments and
byte ranges through the indexes, and all of them drop rows exactly (they
combine with the options above).  Spark takes filters from a Python source
only with ``spark.sql.python.filterPushdown.enabled``, which :func:`register`
sets (a session that turns it off again cannot read ``kafka-log``).

Paths may be URLs (``s3://``, ``gs://``, ``abfs://``, ``hdfs://``, ``file://``)
read through fsspec; file-system options go in ``storage.<name>`` options
(string values; ``true``/``false`` become booleans) or in one JSON
``storageOptions`` option (typed or nested values, and names with capitals,
which Spark lower-cases in ordinary option keys).  In an object store the
planner cuts each task's range to what the offset or timestamp options need
through the ``.index`` and ``.timeindex``, and into ranged reads of about
``fetchBytes`` (default 64 MiB) starting at batches the offset index names:
each byte is fetched once, in few large requests, and a task keeps two reads
in flight while it decodes.  ``isolationLevel`` ``read_committed`` leaves
out the records of aborted transactions, found in the ``.txnindex`` files.

Writing (rows with Spark's Kafka schema; ``topic`` and ``partition`` columns)::

    df.repartition("partition").write.format("kafka-log") \
        .option("compression", "zstd").option("level", 3).save("/tmp/out")

Each task writes its Kafka partitions into a staging folder; the driver
renames them into place when the job commits, so readers never see a half
written partition.  Every Kafka partition must be written by one task.
"""
from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from dataclasses import dataclass
from typing import Any, Iterator, List, Optional, Tuple

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from kcodec.log.names import STAGING_PREFIX
from kcodec.spark.pushdown import PushedFilters, columns_ddl, selected_columns
from kcodec.spark.transforms import KAFKA_DDL, rows_by_partition
from kcodec.storage import storage_options_from

__all__ = ["KafkaLogDataSource", "KafkaLogReader", "register"]


#: Spark refuses a Python reader that takes filters while this is false, so registering sets it.
FILTER_PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"


def register(spark: Any) -> None:
    """Make ``format("kafka-log")`` available in ``spark``, with filter pushdown enabled."""
    spark.conf.set(FILTER_PUSHDOWN_CONF, "true")
    spark.dataSource.register(KafkaLogDataSource)


class SegmentRange(InputPartition):
    """``[start, end)`` bytes of one ``.log`` (a path or URL) and the aborted transactions that touch it."""

    def __init__(self, path: str, topic: str, partition: int, start: int, end: int,
                 aborted: Tuple[Tuple[int, int, int], ...] = (), cuts: Tuple[int, ...] = ()) -> None:
        super().__init__((path, start, end))
        self.path, self.topic, self.partition, self.start, self.end = path, topic, partition, start, end
        self.aborted = aborted
        #: From an object store: the batch starts (first ``start``, last ``end``) between ranged reads.
        self.cuts = cuts


def _options(options: Any) -> dict:
    # Spark hands options over case-insensitively (keys may arrive lower-cased).
    return {str(k).lower(): v for k, v in dict(options).items()}


def _int_option(options: Any, name: str) -> Optional[int]:
    value = options.get(name.lower())
    return None if value in (None, "") else int(value)


def _bool_option(options: Any, name: str, default: bool) -> bool:
    value = options.get(name.lower())
    return default if value is None else str(value).lower() in ("1", "true", "yes")


def _read_committed(options: Any) -> bool:
    level = str(options.get("isolationlevel") or "read_uncommitted").lower()
    if level not in ("read_committed", "read_uncommitted"):
        raise ValueError(f"kafka-log: isolationLevel is read_committed or read_uncommitted, not {level!r}")
    return level == "read_committed"


class KafkaLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> str:
        columns = selected_columns(_options(self.options))
        return KAFKA_DDL if columns is None else columns_ddl(columns)

    def reader(self, schema: Any) -> "KafkaLogReader":
        return KafkaLogReader(self.options)

    def writer(self, schema: Any, overwrite: bool) -> "KafkaLogWriter":
        return KafkaLogWriter(self.options, overwrite)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options: Any) -> None:
        self.options = _options(options)
        path = self.options.get("path")
        if not path:
            raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(PATH)")
        self.path: str = path
        self.storage_options = storage_options_from(self.options)
        self.read_committed = _read_committed(self.options)
        self.columns = selected_columns(self.options)
        self.pushed = PushedFilters()

    def pushFilters(self, filters: Any) -> Iterator[Any]:
        """Keep the filters :class:`PushedFilters` applies exactly; give the others back to Spark."""
        for f in filters:
            if not self.pushed.add(f):
                yield f

    def _range(self) -> Any:
        from kcodec.log.selection import RecordRange

        return self.pushed.narrow(RecordRange(
            _int_option(self.options, "startingOffset"), _int_option(self.options, "endingOffset"),
            _int_option(self.options, "startingTimestamp"),
            _int_option(self.options, "endingTimestamp")))

    def partitions(self) -> List[InputPartition]:
        from kcodec.log import open_log_dir

        split = _int_option(self.options, "splitBytes")
        fetch = _int_option(self.options, "fetchBytes") or FETCH_BYTES
        only_topic = self.options.get("topic")
        log_dir = open_log_dir(self.path, storage_options=self.storage_options)
        if log_dir.skipped and str(self.options.get("oninvalidfolder", "warn")).lower() == "fail":
            from kcodec.errors import InvalidNameError

            first = log_dir.skipped[0]
            raise InvalidNameError(f"kafka-log: {len(log_dir.skipped)} folder(s) with invalid names "
                                   f"(onInvalidFolder=fail); the first: {first.reason}",
                                   value=first.path, source=self.path)
        out: List[InputPartition] = []
        wanted = self._range()
        for (topic, partition), part in log_dir.items():
            if only_topic and topic != only_topic or not self.pushed.keeps_partition(topic, partition):
                continue
            segs = part.segments
            aborted: Tuple[Tuple[int, int, int], ...] = ()
            if self.read_committed:
                # An aborted transaction's entry sits in the .txnindex of the segment holding its marker,
                # which may come after the segments holding its data.
                aborted = tuple(t for seg in segs for t in seg.aborted_transactions())
            for seg in wanted.segments(part):
                # the bytes that can hold the wanted records, found through the indexes
                lo, hi = wanted.byte_range(seg) or (0, 0)
                nxt = next((s.base_offset for s in segs if s.base_offset > seg.base_offset), None)
                mine = tuple(t for t in aborted if t[2] >= seg.base_offset and (nxt is None or t[1] < nxt))
                remote = seg.storage.remote
                task_bytes = split or (REMOTE_SPLIT_BYTES if remote else SPLIT_BYTES)
                for cuts in _task_cuts(seg, lo, hi, task_bytes, fetch) if lo < hi else ():
                    out.append(SegmentRange(seg.url, topic, partition, cuts[0], cuts[-1], mine,
                                            cuts if remote else ()))
                seg.close()
        return out or [SegmentRange("", "", 0, 0, 0)]

    def read(self, partition: SegmentRange) -> Iterator:  # type: ignore[override]  # Spark hands back partitions()
        import pyarrow as pa

        from kcodec.arrow.decode import to_arrow
        from kcodec.arrow.schema import kafka_schema
        from kcodec.errors import KcodecError
        from kcodec.log import LogSegment
        from kcodec.storage import resolve

        if not partition.path:
            return
        include_control = _bool_option(self.options, "includeControl", False)
        validate = _bool_option(self.options, "validate", True)
        schema = kafka_schema()
        if self.columns is not None:
            schema = pa.schema([schema.field(name) for name in self.columns])
        wanted = self._range()
        fields = ("producer_id", "is_transactional") if partition.aborted else ()
        # Columns the query leaves out cost nothing: no headers decoded, no constant topic and partition.
        headers = "headers" in schema.names
        topic = partition.topic if "topic" in schema.names else None
        number = partition.partition if "partition" in schema.names else None
        storage, inner = resolve(partition.path, self.storage_options)
        with LogSegment(inner, storage, base_offset=0) as seg:
            for position, view in _pieces(seg, partition.start, partition.end, partition.cuts):
                try:
                    table = to_arrow(view, topic=topic, partition=number,
                                     include_control=include_control, validate=validate,
                                     headers=headers, batch_fields=fields,
                                     use_threads=False)  # one task per core
                except KcodecError as exc:
                    raise exc.with_context(position=position, source=partition.path) from None
                del view
                if partition.aborted:
                    table = table.filter(_aborted_mask(table, partition.aborted))
                table = self.pushed.filter(wanted.filter(table))
                yield from table.select(schema.names).cast(schema).to_batches(max_chunksize=65536)


#: Bytes per ranged read of an object store (the ``fetchBytes`` option); two reads are in flight.
FETCH_BYTES = 64 * 1024 * 1024
#: Bytes per task (``splitBytes``) on local disk.
SPLIT_BYTES = 64 * 1024 * 1024
#: Bytes per task in an object store: a task waits for its first read, and its later reads
#: arrive while the earlier ones are decoded.
REMOTE_SPLIT_BYTES = 4 * FETCH_BYTES


def _task_cuts(seg: Any, lo: int, hi: int, split: int, fetch: int) -> List[Tuple[int, ...]]:
    """Each task's byte positions in ``[lo, hi)`` of a segment: its start, then its ranged reads' ends.

    Tasks start and end at batch starts found through the offset index (or
    the file's ends), and so do reads wherever the index has an entry:
    reads are about ``fetch`` bytes (at most ``split``), and each task takes
    as many whole reads as make about ``split`` bytes.  Where the index has
    no entry for longer than a read (no index at all), reads are cut every
    ``fetch`` bytes and the reader carries the batch cut in two into the
    next read.  On local disk a task's range is one memory map: its reads
    are not used.
    """
    step = min(fetch, split) if seg.storage.remote else split
    reads = [(max(a, lo), min(b, hi)) for a, b in seg.byte_ranges(step)]
    reads = [(a, b) for a, b in reads if a < b]
    per_task = max(1, round(split / step))
    out = []
    for i in range(0, len(reads), per_task):
        group = reads[i:i + per_task]
        cuts = [group[0][0]]
        for a, b in group:
            cuts.extend(range(a + step, b - step // 2, step))
            cuts.append(b)
        out.append(tuple(cuts))
    return out


def _pieces(seg: Any, start: int, end: int, cuts: Tuple[int, ...] = ()) -> Iterator[Tuple[int, object]]:
    """``(position, buffer)`` pieces of ``[start, end)``, each ending at a batch boundary.

    Local files give one memory-mapped view.  From an object store the range
    is fetched in ranged reads between ``cuts`` (batch starts chosen by the
    planner; without them, every :data:`FETCH_BYTES`), two in flight.  A read
    that ends inside a batch (an offset index that points elsewhere, or no
    cuts) carries its incomplete batch into the next.
    """
    if not seg.storage.remote:
        yield start, seg.read_range(start, end)
        return
    from collections import deque
    from concurrent.futures import ThreadPoolExecutor

    from kcodec.records.framing import valid_bytes

    if not cuts:
        cuts = tuple(range(start, end, FETCH_BYTES)) + (end,)
    with ThreadPoolExecutor(2) as pool:
        pending = deque(pool.submit(seg.read_range, a, b) for a, b in zip(cuts[:2], cuts[1:3]))
        nxt = len(pending)
        carry, position = b"", start
        while pending:
            chunk = pending.popleft().result()
            if nxt + 1 < len(cuts):
                pending.append(pool.submit(seg.read_range, cuts[nxt], cuts[nxt + 1]))
                nxt += 1
            buf = carry + chunk if carry else chunk
            # The last piece goes whole: a partial tail there is the reader's to report.
            valid = valid_bytes(buf) if pending else len(buf)
            if valid:
                yield position, memoryview(buf)[:valid]
            carry, position = buf[valid:], position + valid


def _aborted_mask(table: Any, aborted: Any) -> "object":
    """True for rows outside every aborted transaction (Kafka's read_committed)."""
    import numpy as np
    import pyarrow as pa

    offsets = table["offset"].to_numpy()
    pids = table["producer_id"].to_numpy()
    txn = table["is_transactional"].to_numpy(zero_copy_only=False)
    drop = np.zeros(len(offsets), dtype=bool)
    for pid, first, last in aborted:
        drop |= txn & (pids == pid) & (offsets >= first) & (offsets <= last)
    return pa.array(~drop)


@dataclass
class _Written(WriterCommitMessage):
    staged: List[Tuple[str, str]]  # (staging partition folder, final partition folder), paths or URLs


class KafkaLogWriter(DataSourceArrowWriter):
    def __init__(self, options: Any, overwrite: bool) -> None:
        from kcodec.log.names import check_topic

        self.options = _options(options)
        path = self.options.get("path")
        if not path:
            raise ValueError("kafka-log: give a path: df.write.format('kafka-log').save(PATH)")
        self.path: str = path
        if self.options.get("topic") is not None:
            check_topic(self.options["topic"], source="the kafka-log writer's 'topic' option")
        self.storage_options = storage_options_from(self.options)
        self.overwrite = overwrite
        self.job_id = uuid.uuid4().hex
        storage, root = self._root()
        # abort() removes a local target folder again when this job was the one to create it
        self.created_path = not storage.remote and not os.path.lexists(root)

    def _root(self) -> Any:
        from kcodec.storage import resolve
        return resolve(self.path, self.storage_options)

    def write(self, iterator: Any) -> _Written:
        import numpy as np
        import pyarrow as pa

        from kcodec.arrow.encode import from_arrow
        from kcodec.log import LogWriter, partition_path

        compression = self.options.get("compression", "none")
        level = _int_option(self.options, "level")
        batch_bytes = _int_option(self.options, "batchBytes") or 16384
        segment_bytes = _int_option(self.options, "segmentBytes") or 1024 ** 3
        default_topic = self.options.get("topic")
        tables = [pa.Table.from_batches([b]) for b in iterator if b.num_rows]
        if not tables:
            return _Written([])
        table = pa.concat_tables(tables)
        if "partition" not in table.column_names:
            raise ValueError("kafka-log writer: the rows need a 'partition' column")
        topics = (table.column("topic").to_pylist() if "topic" in table.column_names
                  else [default_topic] * table.num_rows)
        parts = table.column("partition").to_pylist()
        keep = [c for c in ("key", "value", "timestamp", "headers", "offset") if c in table.column_names]
        # Every name is checked, and every target folder resolved, before anything is created.
        storage, root = self._root()
        plan = []
        for topic, partition, rows, source in rows_by_partition(topics, parts, "kafka-log writer",
                                                                 "; nothing was written"):
            final = partition_path(root, topic, partition, storage, source=source)
            plan.append((storage.basename(final), final, topic, partition, rows))
        plan.sort(key=lambda entry: entry[0])
        staging_root = storage.join(root, f"{STAGING_PREFIX}{self.job_id}", uuid.uuid4().hex)
        staged = []
        for _, final, topic, partition, rows in plan:
            sub = table.select(keep).take(pa.array(np.asarray(rows)))
            if "offset" in sub.column_names:
                sub = sub.sort_by("offset")
            staging = partition_path(staging_root, topic, partition, storage)
            with LogWriter(storage.url(staging), segment_bytes=segment_bytes,
                           storage_options=self.storage_options) as w:
                for batch in from_arrow(sub, compression=compression, level=level,
                                        max_batch_bytes=batch_bytes):
                    w.append(batch)
            staged.append((staging, final))
        return _Written(staged)

    def commit(self, messages: Any) -> None:
        finals = [final for m in messages if m for _, final in m.staged]
        dupes = {f for f in finals if finals.count(f) > 1}
        if dupes:
            self.abort(messages)
            raise ValueError(
                "kafka-log writer: these Kafka partitions were written by several tasks: "
                f"{sorted(dupes)}; repartition by the partition column first "
                "(kcodec.spark.write_log does this)")
        storage, root = self._root()
        try:
            # checked again here: a symlink may have appeared in the target since the tasks ran
            for final in finals:
                _recheck(storage, root, final)
        except Exception:
            self.abort(messages)
            raise
        for m in messages:
            if not m:
                continue
            for staging, final in m.staged:
                exists = storage.isdir(final) if storage.remote else os.path.lexists(final)
                if exists and not self.overwrite:
                    self.abort(messages)
                    raise FileExistsError(f"kafka-log writer: {storage.url(final)} exists (use mode('overwrite'))")
                if storage.remote:
                    _publish_objects(storage, staging, final, exists)
                elif exists:
                    old = f"{final}.{self.job_id}-delete"
                    os.replace(final, old)
                    os.replace(staging, final)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(staging, final)
        storage.delete_tree(storage.join(root, f"{STAGING_PREFIX}{self.job_id}"))

    def abort(self, messages: Any) -> None:
        storage, root = self._root()
        storage.delete_tree(storage.join(root, f"{STAGING_PREFIX}{self.job_id}"))
        if self.created_path and not storage.remote:
            with contextlib.suppress(OSError):
                os.rmdir(root)  # only if empty: nothing but this job's staging was ever in it


def _recheck(storage: Any, root: str, final: str) -> None:
    """InvalidNameError unless ``final`` still resolves inside ``root`` (a local target may have changed)."""
    from kcodec.log.names import safe_join

    if not storage.remote:
        safe_join(root, storage.basename(final), source="kafka-log writer commit; nothing was replaced")


def _publish_objects(storage: Any, staging: str, final: str, replace: bool) -> None:
    """Copy a staged partition into place in an object store, each segment's ``.log`` before its indexes.

    Objects cannot be renamed together, so a reader listing the folder
    meanwhile may see fewer segments, never a partial object; an overwrite
    deletes the old objects first.
    """
    if replace:
        storage.delete_tree(final)
    names = sorted((f.name for f in storage.list(staging) if not f.is_dir),
                   key=lambda n: (n.split(".", 1)[0], not n.endswith(".log"), n))
    for name in names:
        storage.copy(storage.join(staging, name), storage.join(final, name))
