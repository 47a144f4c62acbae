"""Kafka tiered storage (LocalTieredStorage's layout) and object storage read like a broker log directory.

LocalTieredStorage names a partition folder ``<topic>-<partition>-<topic id>``
and a segment's files ``<20-digit start offset>-<segment id>.<type>`` with
``.log``, ``.index``, ``.timeindex``, ``.txnindex`` (when the segment has
aborted transactions), ``.snapshot`` and ``.leader_epoch_checkpoint``; ids are
Kafka Uuids in unpadded base64url (22 characters).
"""
import base64
import os
import shutil
import uuid

import pytest

from builders import PID, PID2, T0, batch, kv, make_log, marker
from kcodec.cli import main
from kcodec.log import open_log_dir
from kcodec.log.cleaner import AbortedTxn, encode_txn_index, list_segments, segment_file_name
from kcodec.storage import io_stats
from s3_server import KEY, SECRET, s3  # noqa: F401  (the session fixture)

ABORTED_VALUES = {b"aborted-1", b"aborted-2", b"aborted-3"}


def kafka_uuid() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def broker_partition(root):
    """``payments-0``: an aborted transaction whose data spans two segments (its marker and .txnindex
    entry in the second), a committed one, and plain data."""
    d = os.path.join(root, "payments-0")
    txn = dict(producer_id=PID, producer_epoch=0, is_transactional=True)
    make_log(d, [
        [batch(0, [kv(b"a%d" % i, b"plain-%d" % i) for i in range(10)], codec="lz4"),
         batch(10, [kv(b"t1", b"aborted-1"), kv(b"t2", b"aborted-2")], base_sequence=0, **txn),
         batch(12, [kv(b"c1", b"committed-1")], producer_id=PID2, producer_epoch=0, base_sequence=0,
               is_transactional=True)],
        [batch(13, [kv(b"t3", b"aborted-3")], base_sequence=2, **txn),
         marker(14, PID, 0, commit=False), marker(15, PID2, 0, commit=True),
         batch(16, [kv(b"b%d" % i, b"after-%d" % i) for i in range(20)], codec="zstd", ts=T0 + 100)],
        [batch(36, [kv(b"z", b"last")], ts=T0 + 200)],
    ])
    with open(os.path.join(d, segment_file_name(13, ".txnindex")), "wb") as f:
        f.write(encode_txn_index([AbortedTxn(PID, 10, 14, 12)]))
    return d


def tiered_copy(partition_dir, root, topic_id=None):
    """The same segments as LocalTieredStorage stores them once offloaded."""
    topic_id = topic_id or kafka_uuid()
    name = os.path.basename(partition_dir)
    out = os.path.join(root, f"{name}-{topic_id}")
    os.makedirs(out)
    for seg in list_segments(partition_dir):
        prefix = os.path.join(out, f"{seg.base_offset:020d}-{kafka_uuid()}")
        for suffix in (".log", ".index", ".timeindex", ".txnindex"):
            if os.path.exists(seg.path(suffix)):
                shutil.copyfile(seg.path(suffix), prefix + suffix)
        with open(prefix + ".snapshot", "wb") as f:  # a producer snapshot: not needed to read records
            f.write(b"\x00\x01" + b"\x00" * 8)
        with open(prefix + ".leader_epoch_checkpoint", "w") as f:
            f.write("0\n1\n0 0\n")
    return out


def rows(df):
    return sorted((r.topic, r.partition, r.offset, bytes(r.key or b""), bytes(r.value or b""))
                  for r in df.collect())


def test_tiered_layout_found_and_read(tmp_path):
    broker = broker_partition(str(tmp_path / "broker"))
    tiered = tiered_copy(broker, str(tmp_path / "remote"))
    parts = open_log_dir(tmp_path / "remote")
    part = parts[("payments", 0)]
    assert part.layout == "tiered" and part.topic_id == os.path.basename(tiered)[-22:]
    assert [s.base_offset for s in part.segments] == [0, 13, 36]
    assert part.segments[1].aborted_transactions() == [(PID, 10, 14)]
    local = open_log_dir(broker)[("payments", 0)]
    assert [(b.base_offset, bytes(b.raw)) for b in part.batches()] == \
        [(b.base_offset, bytes(b.raw)) for b in local.batches()]
    log = part.segments[1].path
    assert main(["dump", str(log)]) == 0


def test_data_source_tiered_and_s3_equal_broker_dir(spark, tmp_path, s3):
    broker_root = tmp_path / "broker"
    broker = broker_partition(str(broker_root))
    tiered_copy(broker, str(tmp_path / "remote"))
    bucket = s3.new_bucket()
    s3.upload_dir(str(tmp_path / "remote"), f"s3://{bucket}/tiered")
    s3.upload_dir(str(broker_root), f"s3://{bucket}/kafka")
    reader = spark.read.format("kafka-log")
    committed = rows(reader.option("isolationLevel", "read_committed").load(str(broker_root)))
    everything = rows(spark.read.format("kafka-log").load(str(broker_root)))
    values = {r[4] for r in committed}
    assert not values & ABORTED_VALUES and b"committed-1" in values
    assert {r[4] for r in everything} >= ABORTED_VALUES and len(everything) == len(committed) + 3

    def s3_reader():
        return (spark.read.format("kafka-log").option("storage.key", KEY).option("storage.secret", SECRET)
                .option("storage.endpoint_url", s3.endpoint))
    assert rows(spark.read.format("kafka-log").option("isolationLevel", "read_committed")
                .load(str(tmp_path / "remote"))) == committed
    assert rows(s3_reader().option("isolationLevel", "read_committed").load(f"s3://{bucket}/tiered")) == committed
    assert rows(s3_reader().load(f"s3://{bucket}/kafka")) == everything
    json_opts = '{"key": "%s", "secret": "%s", "endpoint_url": "%s"}' % (KEY, SECRET, s3.endpoint)
    sub = (spark.read.format("kafka-log").option("storageOptions", json_opts).option("startingOffset", 16)
           .option("endingOffset", 20).load(f"s3://{bucket}/kafka"))
    assert [r[2] for r in rows(sub)] == [16, 17, 18, 19]


@pytest.mark.spark  # the data source's reader is PySpark's
def test_data_source_plans_ranged_reads(tmp_path, s3):
    """The planner cuts each split to the bytes the offset range needs; a task makes one ranged GET."""
    pytest.importorskip("pyspark")
    from kcodec.log import write_partition
    from kcodec.spark.datasource import KafkaLogReader
    d = tmp_path / "big-0"
    sets = [batch(i * 100, [kv(b"k%d" % j, os.urandom(200)) for j in range(100)]) for i in range(300)]
    write_partition(d, sets, segment_bytes=3_000_000)
    bucket = s3.new_bucket()
    s3.upload_dir(str(tmp_path), f"s3://{bucket}/data")
    opts = {"path": f"s3://{bucket}/data", "storage.key": KEY, "storage.secret": SECRET,
            "storage.endpoint_url": s3.endpoint, "startingOffset": "15000", "endingOffset": "15300",
            "splitBytes": str(1 << 20)}
    reader = KafkaLogReader(opts)
    io_stats.reset()
    parts = reader.partitions()
    planning = io_stats.snapshot()
    assert len(parts) == 1 and parts[0].end - parts[0].start <= 5 * len(sets[0])
    assert planning.bytes_read < 100_000  # index objects only
    io_stats.reset()
    got = [b for p in parts for b in reader.read(p)]
    assert sum(b.num_rows for b in got) == 300
    assert io_stats.requests == 1 and io_stats.bytes_read == parts[0].end - parts[0].start
    # without an offset range: one ranged GET per split, each about splitBytes
    reader = KafkaLogReader({k: v for k, v in opts.items() if not k.endswith("Offset")})
    parts = reader.partitions()
    io_stats.reset()
    total = sum(b.num_rows for p in parts for b in reader.read(p))
    assert total == 30_000 and io_stats.requests == len(parts) > 5
    assert io_stats.bytes_read == sum(os.path.getsize(d / f) for f in os.listdir(d) if f.endswith(".log"))


def test_rewriting_commands_refuse_tiered_storage(tmp_path, capsys):
    broker = broker_partition(str(tmp_path / "broker"))
    tiered = tiered_copy(broker, str(tmp_path / "remote"))
    before = sorted(os.listdir(tiered))
    for cmd in (["recompress", "--codec", "zstd"], ["compact", "--force"], ["retain", "--retention-bytes", "0"]):
        assert main([cmd[0], str(tmp_path / "remote")] + cmd[1:]) == 1
        err = capsys.readouterr().err
        assert f"{tiered} is Kafka tiered storage" in err
    assert sorted(os.listdir(tiered)) == before
