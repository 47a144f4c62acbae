"""Names from data in object storage: writers to ``s3://`` refuse hostile names before any object is
written, and an ``s3://`` log directory with a hostile-named prefix is read with it reported and skipped.

The bucket lives in a moto S3 server on 127.0.0.1, reached over HTTP by s3fs; every check lists
the whole bucket before and after.
"""
from __future__ import annotations

import base64
import uuid
import warnings

import pytest

import kcodec
from kcodec.errors import InvalidNameError, InvalidNameWarning
from kcodec.log import LogWriter, open_log_dir, write_partition
from s3_server import SECRET, s3  # noqa: F401  (the session fixture)
from test_names import HOSTILE_PARTITIONS, HOSTILE_TOPICS, batch

# Folder names that are valid object keys (S3's XML listings cannot carry control characters).
HOSTILE_PREFIXES = ["bad topic-0", "t-01", "..-0", "a\\b-0", "caf\u00e9-0", "t-2147483648", "noname"]


def bucket_listing(s3, bucket):
    """Every object of the bucket with its size and bytes."""
    fs = s3.filesystem()
    return sorted((key, fs.cat_file(key)) for key in fs.find(bucket))


@pytest.fixture
def bucket(s3):
    name = s3.new_bucket()
    s3.filesystem().pipe_file(f"{name}/elsewhere/keep.txt", b"untouched")
    return name


@pytest.mark.parametrize("topic", HOSTILE_TOPICS, ids=repr)
def test_log_writer_refuses_hostile_topics_on_s3(s3, bucket, topic):
    before = bucket_listing(s3, bucket)
    with pytest.raises(InvalidNameError, match="invalid Kafka topic name") as info:
        LogWriter.in_log_dir(f"s3://{bucket}/out", topic, 0, source="test row", storage_options=s3.storage_options)
    assert info.value.source == "test row" and SECRET not in str(info.value)
    assert bucket_listing(s3, bucket) == before


@pytest.mark.parametrize("partition", HOSTILE_PARTITIONS, ids=repr)
def test_log_writer_refuses_hostile_partitions_on_s3(s3, bucket, partition):
    before = bucket_listing(s3, bucket)
    with pytest.raises(InvalidNameError, match="invalid Kafka partition"):
        LogWriter.in_log_dir(f"s3://{bucket}/out", "orders", partition, storage_options=s3.storage_options)
    assert bucket_listing(s3, bucket) == before


def test_log_writer_writes_valid_names_on_s3(s3, bucket):
    with LogWriter.in_log_dir(f"s3://{bucket}/out", "my-topic", 7, storage_options=s3.storage_options) as w:
        w.append(batch(0))
    assert list(open_log_dir(f"s3://{bucket}/out", storage_options=s3.storage_options)) == [("my-topic", 7)]


def test_log_writer_refuses_a_negative_base_offset_on_s3(s3, bucket):
    before = bucket_listing(s3, bucket)
    w = LogWriter(f"s3://{bucket}/out/t-0", storage_options=s3.storage_options)
    with pytest.raises(InvalidNameError, match="segment base offset"):
        w.append(batch(-5))
    assert bucket_listing(s3, bucket) == before


def _tiered_uuid() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def test_s3_log_dir_reports_and_skips_hostile_prefixes(tmp_path, s3, bucket):
    local = tmp_path / "logs"
    write_partition(local / "orders-0", [batch(0)])
    write_partition(local / "my-topic-1", [batch(0), batch(3)])
    for name in HOSTILE_PREFIXES:
        write_partition(local / name, [batch(0)])
    write_partition(local / "orders-0.0123abcd-delete", [batch(0)])  # Kafka's bookkeeping: not reported
    # a tiered-storage folder whose topic is hostile, its segment named as LocalTieredStorage names it
    tiered = local / f"bad topic-2-{_tiered_uuid()}"
    write_partition(tiered, [batch(0)])
    seg_id = _tiered_uuid()
    for f in list(tiered.iterdir()):
        f.rename(tiered / f.name.replace(".", f"-{seg_id}.", 1))
    url = f"s3://{bucket}/logs"
    s3.upload_dir(str(local), url)
    before = bucket_listing(s3, bucket)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        parts = open_log_dir(url, storage_options=s3.storage_options)
    assert sorted(parts) == [("my-topic", 1), ("orders", 0)]
    skipped = sorted(s.path for s in parts.skipped)
    assert skipped == sorted(f"{url}/{n}" for n in HOSTILE_PREFIXES + [tiered.name])
    assert all("partition folder name" in s.reason for s in parts.skipped)
    assert len([w for w in caught if issubclass(w.category, InvalidNameWarning)]) == len(skipped)
    assert not any(SECRET in str(w.message) for w in caught)
    # the stream reader reads the same directory: only the valid partitions' records
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InvalidNameWarning)
        table = kcodec.read_arrow(url, storage_options=s3.storage_options).read_all()
    assert sorted(set(zip(table["topic"].to_pylist(), table["partition"].to_pylist()))) == \
        [("my-topic", 1), ("orders", 0)]
    assert table.num_rows == 9
    assert bucket_listing(s3, bucket) == before


def test_spark_writer_and_reader_with_hostile_names_on_s3(spark, s3, bucket, tmp_path):
    import json

    opts = s3.storage_options
    before = bucket_listing(s3, bucket)
    rows = spark.createDataFrame([(b"k0", b"v0", "ok", 0), (b"k1", b"v1", "../../escaped", 1)],
                                 "key binary, value binary, topic string, partition bigint")
    with pytest.raises(InvalidNameError, match="invalid Kafka topic name"):
        kcodec.spark.write_log(rows, f"s3://{bucket}/out", storage_options=opts)
    with pytest.raises(InvalidNameError, match="invalid Kafka partition"):
        big = rows.where("topic = 'ok'").selectExpr("key", "value", "topic", "2147483648L AS partition")
        kcodec.spark.write_log(big, f"s3://{bucket}/out", storage_options=opts)
    assert bucket_listing(s3, bucket) == before
    local = tmp_path / "logs"
    write_partition(local / "orders-0", [batch(0)])
    write_partition(local / "bad topic-0", [batch(0)])
    s3.upload_dir(str(local), f"s3://{bucket}/logs")
    reader = spark.read.format("kafka-log").option("storageOptions", json.dumps(opts))
    got = reader.load(f"s3://{bucket}/logs").select("topic", "partition").distinct().collect()
    assert [tuple(r) for r in got] == [("orders", 0)]
    from pyspark.errors import PySparkException

    with pytest.raises(PySparkException) as info:  # raised while Spark plans the read
        reader.option("onInvalidFolder", "fail").load(f"s3://{bucket}/logs").count()
    assert "kcodec.errors.InvalidNameError: kafka-log: 1 folder(s) with invalid names" in str(info.value)
    assert SECRET not in str(info.value)
