"""``DataFrame.mapInArrow`` transforms between raw Kafka batches and Kafka-source rows.

Inside the workers everything is columnar: a batch's records become Arrow
arrays through :func:`kcodec.to_arrow` and go back through
:func:`kcodec.from_arrow`; no Python object is made per record.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Tuple

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

__all__ = ["KAFKA_DDL", "BATCH_DDL", "decode", "encode", "write_log", "batch_table", "check_topic_column",
           "rows_by_partition"]

#: Spark's Kafka source schema (with headers), which kcodec.to_arrow produces.
KAFKA_DDL = ("key binary, value binary, topic string, partition int, offset long, "
             "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>")
#: One row per encoded batch.
BATCH_DDL = ("topic string, partition int, base_offset long, last_offset long, record_count int, "
             "batch_size int, batch binary")
_PARTITION_COL = "__kcodec_partition"


def decode(df: DataFrame, column: str = "value", *, topic: Optional[str] = None, partition: Optional[int] = None,
           topic_column: Optional[str] = None, partition_column: Optional[str] = None,
           include_control: bool = False) -> DataFrame:
    """Rows holding raw batch bytes in ``column`` -> one row per record (Spark's Kafka schema).

    ``topic``/``partition`` (or per-row ``topic_column``/``partition_column``)
    fill those columns; a cell may hold several concatenated batches.
    """
    def fn(batches: Iterator) -> Iterator:
        from kcodec.arrow.decode import to_arrow
        for rb in batches:
            data = rb.column(column)
            topics = rb.column(topic_column).to_pylist() if topic_column else None
            parts = rb.column(partition_column).to_pylist() if partition_column else None
            for i in range(rb.num_rows):
                cell = data[i]
                if not cell.is_valid:
                    continue
                buf = cell.as_buffer()
                t = topics[i] if topics is not None else topic
                p = parts[i] if parts is not None else partition
                table = to_arrow(buf, topic=t, partition=p, include_control=include_control,
                                 use_threads=False)  # Spark runs one task per core
                yield from table.to_batches()

    return df.mapInArrow(fn, KAFKA_DDL)


def batch_table(batches: Any, topic: Optional[str], partition: int) -> Any:
    """Arrow table of :data:`BATCH_DDL` rows describing ``batches`` (bytes of single v2 batches)."""
    import pyarrow as pa

    from kcodec.records.batch_header import HEADER

    base, last, count, size = [], [], [], []
    for b in batches:
        fields = HEADER.unpack_from(b, 0)
        base.append(fields[0])
        last.append(fields[0] + fields[6])  # baseOffset + lastOffsetDelta
        count.append(fields[12])
        size.append(len(b))
    k = len(base)
    return pa.table({
        "topic": pa.array([topic] * k, pa.string()),
        "partition": pa.array([partition] * k, pa.int32()),
        "base_offset": pa.array(base, pa.int64()),
        "last_offset": pa.array(last, pa.int64()),
        "record_count": pa.array(count, pa.int32()),
        "batch_size": pa.array(size, pa.int32()),
        "batch": pa.array(batches, pa.binary()),
    })


_INTEGRAL = ("tinyint", "smallint", "int", "bigint")


def _check_columns(df: Any, partition_column: Optional[str], topic_column: Optional[str]) -> None:
    """What the driver can check before any task runs: the names' columns have the right types."""
    from kcodec.errors import InvalidNameError

    types = dict(df.dtypes)
    if partition_column is not None and types.get(partition_column) not in _INTEGRAL:
        raise InvalidNameError(
            f"the partition column {partition_column!r} is {types.get(partition_column, 'missing')}; "
            "Kafka partitions are integers (0 to 2^31 - 1): cast it to int first",
            value=partition_column)
    if topic_column is not None and types.get(topic_column) != "string":
        raise InvalidNameError(
            f"the topic column {topic_column!r} is {types.get(topic_column, 'missing')}; topics are strings",
            value=topic_column)


def check_topic_column(df: Any, column: str = "topic") -> None:
    """Raise kcodec's error for a row whose topic Kafka would refuse, with one Spark pass over the column.

    For a driver that would rather fail before a long job than in its last stage
    (the writers check every name again in their tasks).
    """
    from pyspark.sql import functions as F

    from kcodec.log.names import TOPIC_PATTERN, check_topic

    _check_columns(df, None, column)
    topic = F.col(column)
    bad = (df.where(topic.isNull() | ~topic.rlike(rf"\A{TOPIC_PATTERN}\z") | topic.isin(".", ".."))
           .select(column).limit(1).collect())
    if bad:
        check_topic(bad[0][0], source=f"column {column!r}; nothing was written")


def _with_partition(df: Any, partitions: Optional[int], partition_column: Optional[str]) -> Any:
    from pyspark.sql import functions as F
    from pyspark.sql.types import IntegerType, StructField, StructType

    from kcodec.errors import InvalidNameError
    from kcodec.log.names import MAX_PARTITION

    if partition_column is not None:
        _check_columns(df, partition_column, None)
        # bigint, not int: an out-of-range value must reach kcodec's check, not wrap or fail in a cast
        return df.withColumn(_PARTITION_COL, F.col(partition_column).cast("bigint"))
    if not partitions or partitions < 1:
        raise ValueError("give partitions=N (murmur2 key partitioning) or partition_column=")
    if partitions > MAX_PARTITION + 1:
        raise InvalidNameError(f"partitions={partitions}: a topic has at most 2^31 partitions", value=partitions)
    # A new StructType: StructType.add would change the DataFrame's cached schema in place.
    schema = StructType(list(df.schema.fields) + [StructField(_PARTITION_COL, IntegerType(), False)])
    n = int(partitions)

    def fn(batches: Any) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from kcodec.partitioner import partition_for_keys
        for rb in batches:
            if "key" in rb.schema.names:
                parts = partition_for_keys(rb.column("key"), n)
            else:
                parts = np.full(rb.num_rows, -1, dtype=np.int32)
            # null keys: Kafka's sticky partitioner spreads them; round-robin is the stateless equivalent
            nulls = parts < 0
            if nulls.any():
                parts = parts.copy()
                parts[nulls] = np.arange(int(nulls.sum()), dtype=np.int32) % n
            yield pa.RecordBatch.from_arrays(list(rb.columns) + [pa.array(parts, pa.int32())],
                                             schema=rb.schema.append(pa.field(_PARTITION_COL, pa.int32(), False)))

    return df.mapInArrow(fn, schema)


def encode(df: DataFrame, *, topic: Optional[str] = None, compression: Any = "none", level: Optional[int] = None,
           batch_bytes: int = 16384, partitions: Optional[int] = None,
           partition_column: Optional[str] = None, num_tasks: Optional[int] = None) -> DataFrame:
    """Kafka-source rows -> one row per Kafka batch (:data:`BATCH_DDL`).

    Records are placed by Kafka's default partitioner (murmur2 of the key,
    modulo ``partitions``) unless ``partition_column`` is given, then packed
    into batches of at most ``batch_bytes`` uncompressed bytes (Kafka's
    batch.size: a larger record still gets a batch of its own) and
    compressed.  Offsets start at 0 in each partition.  Each Kafka partition
    is encoded by one Spark task, which holds that partition's rows in memory.
    """
    from pyspark.sql import functions as F

    from kcodec.log.names import check_topic

    topic_col = "topic" if topic is None and "topic" in df.columns else None
    if topic is None and topic_col is None:
        raise ValueError("give topic= or a topic column")
    if topic is not None:
        check_topic(topic, source="encode(topic=...)")
    _check_columns(df, None, topic_col)
    staged = _with_partition(df, partitions, partition_column)
    n_tasks = num_tasks or partitions or staged.sparkSession.sparkContext.defaultParallelism
    staged = staged.repartition(int(n_tasks), F.col(_PARTITION_COL)).sortWithinPartitions(_PARTITION_COL)

    def fn(batches: Any) -> Iterator[Any]:
        import numpy as np
        import pyarrow as pa

        from kcodec.arrow.encode import from_arrow

        tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
        if not tables:
            return
        table = pa.concat_tables(tables)
        parts = table.column(_PARTITION_COL).to_pylist()
        topics = table.column(topic_col).to_pylist() if topic_col else [topic] * table.num_rows
        keep = [c for c in ("key", "value", "timestamp", "headers") if c in table.column_names]
        for t, p, rows, _ in rows_by_partition(topics, parts, "encode"):  # names checked before any batch
            sub = table.select(keep).take(pa.array(np.asarray(rows)))
            out = from_arrow(sub, compression=compression, level=level,
                             max_batch_bytes=batch_bytes, base_offset=0)
            yield from batch_table(out, t, p).to_batches()

    return staged.mapInArrow(fn, BATCH_DDL)


def write_log(df: DataFrame, path: str, *, mode: str = "append", **options: Any) -> None:
    """Write Kafka-source rows as segment folders with the ``kafka-log`` data source.

    Rows are first grouped so that each Kafka partition is written by one
    task (the data source requires it).  ``mode="append"`` adds new
    partition folders and refuses existing ones; ``"overwrite"`` replaces them.
    ``path`` may be a URL, with ``storage_options`` for its file system.
    """
    import json

    from pyspark.sql import functions as F

    from kcodec.log.names import check_topic
    from kcodec.spark.errors import raising_kcodec_errors

    if options.get("topic") is not None:
        check_topic(options["topic"], source="write_log(topic=...)")
    elif "topic" not in df.columns:
        raise ValueError("write_log: give topic= or a topic column")
    _check_columns(df, None, "topic" if "topic" in df.columns else None)
    storage_options = options.pop("storage_options", None)
    if storage_options:
        options["storageOptions"] = json.dumps(storage_options)
    part_col = options.pop("partition_column", "partition" if "partition" in df.columns else None)
    partitions = options.pop("partitions", None)
    staged = _with_partition(df, partitions, part_col)
    if "partition" in staged.columns:
        staged = staged.drop("partition")
    staged = staged.withColumnRenamed(_PARTITION_COL, "partition")
    staged = staged.repartition(F.col("partition"))
    writer = staged.write.format("kafka-log").mode(mode)
    for k, v in options.items():
        writer = writer.option(k, str(v))
    with raising_kcodec_errors():
        writer.save(path)


def _task_label() -> str:
    from pyspark import TaskContext

    ctx = TaskContext.get()
    return f"Spark partition {ctx.partitionId()}" if ctx is not None else "this task"


def rows_by_partition(topics: list, parts: list, what: str, after: str = "") -> List[Tuple[str, int, list, str]]:
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
