"""The ``kafka-log`` Spark data source: Kafka segment files in and out.

Reading::

    kcodec.spark.register(spark)
    df = spark.read.format("kafka-log").load("/var/lib/kafka/data")          # every partition
    df = spark.read.format("kafka-log").option("startingOffset", 1000).load("/data/orders-0")

Each input partition is one segment file, or a byte range of a large one
cut at batch boundaries found through the offset index (``splitBytes``,
default 64 MiB).  Options: ``startingOffset``/``endingOffset`` (inclusive /
exclusive), ``startingTimestamp``/``endingTimestamp`` (ms; inclusive /
exclusive), ``topic`` (keep one topic), ``includeControl``, ``validate``,
``onInvalidFolder`` (``warn``, the default: a folder of segments whose name
is not ``<topic>-<partition>`` is skipped with an ``InvalidNameWarning``;
``fail``: the read fails with ``InvalidNameError``).

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
from pathlib import Path
from typing import Iterator, List, Optional, Tuple

from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)

from kcodec.log.names import STAGING_PREFIX
from kcodec.spark.transforms import KAFKA_DDL

__all__ = ["KafkaLogDataSource", "register"]


def register(spark) -> None:
    """Make ``format("kafka-log")`` available in ``spark``."""
    spark.dataSource.register(KafkaLogDataSource)


class SegmentRange(InputPartition):
    def __init__(self, path: str, topic: str, partition: int, start: int, end: int) -> None:
        super().__init__((path, start, end))
        self.path, self.topic, self.partition, self.start, self.end = path, topic, partition, start, end


def _options(options) -> dict:
    # Spark hands options over case-insensitively (keys may arrive lower-cased).
    return {str(k).lower(): v for k, v in dict(options).items()}


def _int_option(options, name: str) -> Optional[int]:
    value = options.get(name.lower())
    return None if value in (None, "") else int(value)


def _bool_option(options, name: str, default: bool) -> bool:
    value = options.get(name.lower())
    return default if value is None else str(value).lower() in ("1", "true", "yes")


class KafkaLogDataSource(DataSource):
    @classmethod
    def name(cls) -> str:
        return "kafka-log"

    def schema(self) -> str:
        return KAFKA_DDL

    def reader(self, schema) -> "KafkaLogReader":
        return KafkaLogReader(self.options)

    def writer(self, schema, overwrite: bool) -> "KafkaLogWriter":
        return KafkaLogWriter(self.options, overwrite)


class KafkaLogReader(DataSourceReader):
    def __init__(self, options) -> None:
        self.options = _options(options)
        self.path = self.options.get("path")
        if not self.path:
            raise ValueError("kafka-log: give a path: spark.read.format('kafka-log').load(PATH)")

    def partitions(self) -> List[InputPartition]:
        from kcodec.log import open_log_dir
        from kcodec.log.selection import RecordRange

        split = _int_option(self.options, "splitBytes") or 64 * 1024 * 1024
        start = _int_option(self.options, "startingOffset")
        end = _int_option(self.options, "endingOffset")
        only_topic = self.options.get("topic")
        log_dir = open_log_dir(self.path)
        if log_dir.skipped and str(self.options.get("oninvalidfolder", "warn")).lower() == "fail":
            from kcodec.errors import InvalidNameError

            first = log_dir.skipped[0]
            raise InvalidNameError(f"kafka-log: {len(log_dir.skipped)} folder(s) with invalid names "
                                   f"(onInvalidFolder=fail); the first: {first.reason}",
                                   value=first.path, source=self.path)
        out: List[InputPartition] = []
        wanted = RecordRange(start, end)
        for (topic, partition), part in log_dir.items():
            if only_topic and topic != only_topic:
                continue
            for seg in wanted.segments(part):
                ranges = seg.byte_ranges(split)
                seg.close()
                out.extend(SegmentRange(str(seg.path), topic, partition, a, b) for a, b in ranges)
        return out or [SegmentRange("", "", 0, 0, 0)]

    def read(self, partition: SegmentRange) -> Iterator:
        import kcodec
        from kcodec.errors import KcodecError
        from kcodec.log import LogSegment
        from kcodec.log.selection import RecordRange

        if not partition.path:
            return
        start = _int_option(self.options, "startingOffset")
        end = _int_option(self.options, "endingOffset")
        ts_start = _int_option(self.options, "startingTimestamp")
        ts_end = _int_option(self.options, "endingTimestamp")
        include_control = _bool_option(self.options, "includeControl", False)
        validate = _bool_option(self.options, "validate", True)
        schema = kcodec.kafka_schema()
        with LogSegment(partition.path) as seg:
            view = memoryview(seg.data)[partition.start:partition.end]
            try:
                table = kcodec.to_arrow(view, topic=partition.topic, partition=partition.partition,
                                        include_control=include_control, validate=validate,
                                        use_threads=False)  # Spark runs one task per core
            except KcodecError as exc:
                raise exc.with_context(position=partition.start, source=partition.path) from None
            del view
        table = RecordRange(start, end, ts_start, ts_end).filter(table)
        yield from table.select(schema.names).cast(schema).to_batches(max_chunksize=65536)


@dataclass
class _Written(WriterCommitMessage):
    staged: List[Tuple[str, str]]  # (staging partition folder, final partition folder)


def _task_label() -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return f"Spark partition {ctx.partitionId()}" if ctx is not None else "this task"


def _rows_by_partition(topics: list, parts: list, what: str, after: str = "") -> List[Tuple[str, int, list, str]]:
    """``(topic, partition, row indexes, source)`` of each Kafka partition among a task's rows,
    sorted; every name is checked (the error naming its first row) before any is returned."""
    from kcodec.log.names import partition_dir_name

    groups: dict = {}
    for i, tp in enumerate(zip(topics, parts)):
        groups.setdefault(tp, []).append(i)
    task = _task_label()
    out = []
    for (topic, partition), rows in groups.items():
        source = f"{what}, row {rows[0]} of {task}{after}"
        partition_dir_name(topic, partition, source=source)
        out.append((topic, int(partition), rows, source))
    return sorted(out, key=lambda g: g[:2])


class KafkaLogWriter(DataSourceArrowWriter):
    def __init__(self, options, overwrite: bool) -> None:
        from kcodec.log.names import check_topic

        self.options = _options(options)
        self.path = self.options.get("path")
        if not self.path:
            raise ValueError("kafka-log: give a path: df.write.format('kafka-log').save(PATH)")
        if self.options.get("topic") is not None:
            check_topic(self.options["topic"], source="the kafka-log writer's 'topic' option")
        self.overwrite = overwrite
        self.job_id = uuid.uuid4().hex
        # abort() removes the target folder again when this job was the one to create it
        self.created_path = not os.path.lexists(self.path)

    def _final(self, name: str, source: str) -> str:
        from kcodec.log.names import safe_join

        return safe_join(self.path, name, source=source)

    def write(self, iterator) -> _Written:
        import numpy as np
        import pyarrow as pa

        import kcodec
        from kcodec.log import LogWriter

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
        plan = []
        for topic, partition, rows, source in _rows_by_partition(topics, parts, "kafka-log writer",
                                                                 "; nothing was written"):
            name = f"{topic}-{partition}"
            plan.append((name, self._final(name, source), rows))
        plan.sort()
        staging_root = Path(self.path) / f"{STAGING_PREFIX}{self.job_id}" / uuid.uuid4().hex
        staged = []
        for name, final, rows in plan:
            sub = table.select(keep).take(pa.array(np.asarray(rows)))
            if "offset" in sub.column_names:
                sub = sub.sort_by("offset")
            with LogWriter(staging_root / name, segment_bytes=segment_bytes) as w:
                for batch in kcodec.from_arrow(sub, compression=compression, level=level,
                                               max_batch_bytes=batch_bytes):
                    w.append(batch)
            staged.append((str(staging_root / name), final))
        return _Written(staged)

    def commit(self, messages) -> None:
        finals = [final for m in messages if m for _, final in m.staged]
        dupes = {f for f in finals if finals.count(f) > 1}
        if dupes:
            self.abort(messages)
            raise ValueError(
                "kafka-log writer: these Kafka partitions were written by several tasks: "
                f"{sorted(dupes)}; repartition by the partition column first "
                "(kcodec.spark.write_log does this)")
        try:
            # checked again here: a symlink may have appeared in the target since the tasks ran
            for final in finals:
                self._final(os.path.basename(final), "kafka-log writer commit; nothing was replaced")
        except Exception:
            self.abort(messages)
            raise
        for m in messages:
            if not m:
                continue
            for staging, final in m.staged:
                if os.path.lexists(final):
                    if not self.overwrite:
                        self.abort(messages)
                        raise FileExistsError(f"kafka-log writer: {final} exists (use mode('overwrite'))")
                    old = f"{final}.{self.job_id}-delete"
                    os.replace(final, old)
                    os.replace(staging, final)
                    shutil.rmtree(old, ignore_errors=True)
                else:
                    os.replace(staging, final)
        shutil.rmtree(Path(self.path) / f"{STAGING_PREFIX}{self.job_id}", ignore_errors=True)

    def abort(self, messages) -> None:
        shutil.rmtree(Path(self.path) / f"{STAGING_PREFIX}{self.job_id}", ignore_errors=True)
        if self.created_path:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)  # only if empty: nothing but this job's staging was ever in it
