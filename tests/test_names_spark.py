"""Spark writers and the kafka-log reader with hostile topic and partition names (real local Spark)."""
from __future__ import annotations

import os

import pytest

import kcodec
from kcodec.errors import InvalidNameError
from kcodec.log import open_log_dir, write_partition
from test_names import HOSTILE_FOLDERS, HOSTILE_TOPICS, batch, tree

pytest.importorskip("pyarrow")

ROWS_DDL = "key binary, value binary, topic string, partition bigint"


@pytest.fixture
def root(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "keep.txt").write_bytes(b"untouched")
    return tmp_path


def _rows(spark, topic, partition=1):
    # a valid row beside the hostile one: its task may stage files, which must vanish with the job
    return spark.createDataFrame([(b"k0", b"v0", "ok", 0), (b"k1", b"v1", topic, partition)], ROWS_DDL)


@pytest.mark.parametrize("topic", HOSTILE_TOPICS, ids=repr)
def test_write_log_refuses_hostile_topics(spark, root, topic):
    before = tree(root)
    with pytest.raises(InvalidNameError) as info:
        kcodec.spark.write_log(_rows(spark, topic), str(root / "out"))
    assert "invalid Kafka topic name" in str(info.value) and "nothing was written" in str(info.value)
    assert tree(root) == before


@pytest.mark.parametrize("partition", [-1, 2 ** 31], ids=repr)
def test_write_log_refuses_hostile_partitions(spark, root, partition):
    before = tree(root)
    with pytest.raises(InvalidNameError, match="invalid Kafka partition"):
        kcodec.spark.write_log(_rows(spark, "orders", partition), str(root / "out"))
    assert tree(root) == before


def test_write_log_checks_on_the_driver_first(spark, root):
    before = tree(root)
    text_parts = spark.createDataFrame([(b"v", "t", "0")], "value binary, topic string, partition string")
    with pytest.raises(InvalidNameError, match="partition column 'partition' is string"):
        kcodec.spark.write_log(text_parts, str(root / "out"))
    no_topic = spark.createDataFrame([(b"v", 0)], "value binary, partition int")
    with pytest.raises(InvalidNameError, match="'../x'"):
        kcodec.spark.write_log(no_topic, str(root / "out"), topic="../x")
    with pytest.raises(InvalidNameError, match="at most 2\\^31 partitions"):
        kcodec.spark.write_log(no_topic.drop("partition"), str(root / "out"), topic="t", partitions=2 ** 31 + 1)
    assert tree(root) == before


def test_write_log_refuses_a_symlinked_partition_folder(spark, root):
    (root / "out").mkdir()
    os.symlink(root / "elsewhere", root / "out" / "orders-0")
    before = tree(root)
    df = spark.createDataFrame([(b"k", b"v", "orders", 0)], ROWS_DDL)
    with pytest.raises(InvalidNameError, match="leads outside"):
        kcodec.spark.write_log(df, str(root / "out"), mode="overwrite")
    assert tree(root) == before


def test_data_source_writer_gives_kcodecs_error(spark, root):
    from pyspark.errors import PythonException

    before = tree(root)
    # One task holds both rows: it checks every name before it writes anything.  (With the rows
    # in several tasks, a task of valid rows that Spark has not cancelled yet may still stage
    # files under the target's staging folder after the job is aborted; write_log checks every
    # name on the driver first for that reason.)
    with pytest.raises(PythonException) as info:
        _rows(spark, "a/b").coalesce(1).write.format("kafka-log").mode("append").save(str(root / "out"))
    assert "kcodec.errors.InvalidNameError: invalid Kafka topic name 'a/b'" in str(info.value)
    assert tree(root) == before


def test_valid_names_round_trip(spark, root):
    df = spark.createDataFrame([(b"k", b"v", "my-topic.v1", 12), (b"k", b"w", "t-", 2 ** 31 - 1)], ROWS_DDL)
    kcodec.spark.write_log(df, str(root / "out"))
    assert sorted(open_log_dir(root / "out")) == [("my-topic.v1", 12), ("t-", 2 ** 31 - 1)]


def test_encode_checks_names(spark):
    from pyspark.errors import PythonException

    df = spark.createDataFrame([(b"k", b"v", "..")], "key binary, value binary, topic string")
    with pytest.raises(InvalidNameError, match="'\\.\\.'"):
        kcodec.spark.encode(df.drop("topic"), topic="..", partitions=1)
    with pytest.raises(PythonException) as info:
        kcodec.spark.encode(df, partitions=1).collect()
    assert "kcodec.errors.InvalidNameError: invalid Kafka topic name '..'" in str(info.value)
    # rows of several topics sharing a partition number keep their own topic
    two = spark.createDataFrame([(b"k", b"v", "a", 0), (b"k", b"v", "b", 0)], ROWS_DDL)
    out = kcodec.spark.encode(two, partition_column="partition").collect()
    assert sorted((r["topic"], r["partition"], r["record_count"]) for r in out) == [("a", 0, 1), ("b", 0, 1)]


def test_reader_skips_hostile_folders(spark, root):
    logs = root / "logs"
    write_partition(logs / "orders-0", [batch(0)])
    for name in HOSTILE_FOLDERS:
        write_partition(logs / name, [batch(0, n=5)])
    df = spark.read.format("kafka-log").load(str(logs))
    assert [(r["topic"], r["partition"]) for r in df.select("topic", "partition").distinct().collect()] == [
        ("orders", 0)]
    assert df.count() == 3
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:  # raised while Spark plans the read
        spark.read.format("kafka-log").option("onInvalidFolder", "fail").load(str(logs)).count()
    assert "kcodec.errors.InvalidNameError: kafka-log: 9 folder(s) with invalid names" in str(info.value)


def test_check_topic_column_before_a_job(spark):
    from kcodec.spark.transforms import check_topic_column

    good = spark.createDataFrame([("orders",), ("a-b.c_d",), ("x" * 249,)], "topic string")
    check_topic_column(good)
    for bad in ["ok\n", "..", "", "x" * 250, None, "caf\u00e9"]:
        df = good.union(spark.createDataFrame([(bad,)], "topic string"))
        with pytest.raises(InvalidNameError) as info:
            check_topic_column(df)
        assert info.value.value == bad
