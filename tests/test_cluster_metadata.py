"""Reading a KRaft metadata log (``__cluster_metadata-0``) into each topic's policy."""
from __future__ import annotations

import argparse
import base64
import re
import struct
import uuid

import pytest

from kcodec.errors import CorruptDataError, CorruptRecordError, KcodecError, LogNotFoundError
from kcodec.log import Partition
from kcodec.log.arguments import add_metadata_log_argument, metadata_log, partition_policy, topic_policy
from kcodec.log.cluster_metadata import UnknownTopicError, partition_topic_id, read_cluster_metadata
from kcodec.log.metadata_records import decode_metadata_record
from kcodec.log.segment import NoSegmentsError
from kcodec.records import ControlRecordType
from kraft_metadata import (
    BROKER,
    TOPIC,
    abort_transaction_record,
    begin_transaction_record,
    config_record,
    control_batch,
    data_batch,
    end_transaction_record,
    feature_level_record,
    frame,
    leader_change,
    log_batches,
    no_op_record,
    partition_change_record,
    partition_record,
    remove_topic_record,
    snapshot_file,
    snapshot_footer,
    snapshot_header,
    tagged,
    topic_record,
    write_segment,
    write_snapshot,
)
from s3_server import s3  # noqa: F401  (the session fixture)

ID_A = uuid.UUID("11111111-1111-4111-8111-111111111111")
ID_B = uuid.UUID("22222222-2222-4222-8222-222222222222")
ID_A2 = uuid.UUID("33333333-3333-4333-8333-333333333333")


def meta_dir(tmp_path):
    return tmp_path / "__cluster_metadata-0"


def write_log(tmp_path, records, **kw):
    folder = meta_dir(tmp_path)
    write_segment(folder, 0, [control_batch(0, [(ControlRecordType.LEADER_CHANGE, leader_change())])]
                  + log_batches(records, start=1, **kw))
    return folder


# -- records as a Kafka controller wrote them ------------------------------------------------------------

# Values copied from a Kafka 3.7 controller's metadata log: the records that create __consumer_offsets.
CONSUMER_OFFSETS_ID = uuid.UUID("8129dfa4-46ed-41f4-83a7-1336961127f4")
KAFKA_WRITTEN = {
    "topic": "010200135f5f636f6e73756d65725f6f6666736574738129dfa446ed41f483a71336961127f400",
    "compression": "01040002135f5f636f6e73756d65725f6f66667365747311636f6d7072657373696f6e2e74797065"
                   "0970726f647563657200",
    "cleanup": "01040002135f5f636f6e73756d65725f6f6666736574730f636c65616e75702e706f6c69637908636f"
               "6d7061637400",
    "partition": "010301000000008129dfa446ed41f483a71336961127f402000000010200000001010100000001000000"
                 "0000000000025c7864af8b644ac0fdd34a4e43ca4f7e00",
    "feature": "010c00116d657461646174612e76657273696f6e001300",
    # the control record values of a Kafka 3.7 bootstrap.checkpoint (a snapshot)
    "snapshot header": "00000000000000000000" + "00",
    "snapshot footer": "0000" + "00",
}


def test_records_written_by_kafka_decode_and_match_the_test_encoder():
    topic = decode_metadata_record(bytes.fromhex(KAFKA_WRITTEN["topic"]))
    assert (topic.name, topic.version) == ("TopicRecord", 0)
    assert topic.fields == {"name": "__consumer_offsets", "topic_id": CONSUMER_OFFSETS_ID}
    cfg = decode_metadata_record(bytes.fromhex(KAFKA_WRITTEN["cleanup"])).fields
    assert cfg == {"resource_type": TOPIC, "resource_name": "__consumer_offsets", "name": "cleanup.policy",
                   "value": "compact"}
    part = decode_metadata_record(bytes.fromhex(KAFKA_WRITTEN["partition"]))
    assert (part.name, part.version) == ("PartitionRecord", 1)
    assert part.fields["partition_id"] == 0 and part.fields["replicas"] == (1,) and part.fields["leader"] == 1
    directory = uuid.UUID("5c7864af-8b64-4ac0-fdd3-4a4e43ca4f7e")
    assert part.fields["directories"] == (directory,)
    feature = decode_metadata_record(bytes.fromhex(KAFKA_WRITTEN["feature"]))
    assert (feature.name, feature.fields) == ("FeatureLevelRecord", None)

    # the tests' encoder writes the same bytes Kafka wrote
    assert topic_record("__consumer_offsets", CONSUMER_OFFSETS_ID).hex() == KAFKA_WRITTEN["topic"]
    assert config_record(TOPIC, "__consumer_offsets", "compression.type", "producer").hex() \
        == KAFKA_WRITTEN["compression"]
    assert partition_record(CONSUMER_OFFSETS_ID, 0, [1], version=1, directories=[directory]).hex() \
        == KAFKA_WRITTEN["partition"]
    assert feature_level_record("metadata.version", 19).hex() == KAFKA_WRITTEN["feature"]
    assert snapshot_header(0).hex() == KAFKA_WRITTEN["snapshot header"]
    assert snapshot_footer().hex() == KAFKA_WRITTEN["snapshot footer"]


# -- topics, configs, partitions -------------------------------------------------------------------------

def test_topics_configs_and_partitions(tmp_path):
    folder = write_log(tmp_path, [
        feature_level_record("metadata.version", 19),
        topic_record("clicks", ID_A),
        config_record(TOPIC, "clicks", "retention.ms", "86400000"),
        config_record(TOPIC, "clicks", "cleanup.policy", "compact, delete"),
        config_record(TOPIC, "clicks", "segment.bytes", "1048576"),
        partition_record(ID_A, 0, [1, 2, 3], version=2, elr=[2]),
        partition_record(ID_A, 1, [2, 3, 1]),
        topic_record("orders", ID_B),
        config_record(TOPIC, "orders", "compression.type", "zstd"),
        config_record(TOPIC, "orders", "retention.bytes", "1073741824"),
        config_record(TOPIC, "orders", "delete.retention.ms", "1000"),
        config_record(TOPIC, "orders", "min.compaction.lag.ms", "60000"),
        partition_record(ID_B, 0, [1, 2], version=1),
        no_op_record(),
    ])
    meta = read_cluster_metadata(folder)
    assert sorted(meta.topics) == ["clicks", "orders"]
    clicks = meta.topics["clicks"]
    assert clicks.topic_id == ID_A
    assert [p.replicas for p in clicks.partitions.values()] == [(1, 2, 3), (2, 3, 1)]
    assert clicks.configs == {"cleanup.policy": "compact, delete", "retention.ms": "86400000",
                              "segment.bytes": "1048576"}
    assert meta.end_offset == 15 and meta.problems == [] and meta.skipped == {}
    assert meta.ignored == {"FeatureLevelRecord": 1, "NoOpRecord": 1}
    assert meta.control_records == {"LEADER_CHANGE": 1}

    p = meta.policy("clicks")
    where = f"topic config in the metadata log {folder}"
    assert str(p.retention_ms) == f"retention.ms = 86400000 ({where})"
    assert p.retention_ms.value == 86_400_000
    assert p.cleanup_policy.value == ("compact", "delete")
    assert str(p.cleanup_policy) == f"cleanup.policy = compact,delete ({where})"
    assert p.retention_bytes.value == -1 and str(p.retention_bytes.source) == "Kafka default"
    assert p.replication_factor.value == 3
    # the record that set a value is named for a detailed report
    log = folder / "00000000000000000000.log"
    assert p.retention_ms.source.record == f"{log}, offset 3"

    o = meta.policy("orders")
    assert (o.compression_type.value, o.retention_bytes.value, o.delete_retention_ms.value,
            o.min_compaction_lag_ms.value, o.replication_factor.value) == ("zstd", 1073741824, 1000, 60000, 2)
    assert o.retention_ms.value == 604_800_000 and o.cleanup_policy.value == ("delete",)
    assert o.describe().splitlines()[0] == "retention.ms = 604800000 (Kafka default)"


def test_compressed_batches(tmp_path):
    folder = write_log(tmp_path, [topic_record("t", ID_A), config_record(TOPIC, "t", "retention.ms", "5"),
                                  partition_record(ID_A, 0, [4])], compression="zstd")
    p = read_cluster_metadata(folder).policy("t")
    assert (p.retention_ms.value, p.replication_factor.value) == (5, 1)


def test_the_folder_holding_the_metadata_log_is_accepted(tmp_path):
    write_log(tmp_path, [topic_record("t", ID_A)])
    meta = read_cluster_metadata(tmp_path)
    assert meta.path == str(meta_dir(tmp_path)) and list(meta.topics) == ["t"]


def test_partition_changes_and_reassignment(tmp_path):
    folder = write_log(tmp_path, [
        topic_record("t", ID_A),
        partition_record(ID_A, 0, [1, 2]),
        partition_record(ID_A, 1, [2, 1]),
        # a reassignment of partition 0 to [3, 4, 5] in progress, then a leader change that leaves replicas alone
        partition_change_record(ID_A, 0, replicas=[1, 2, 3, 4, 5], adding=[3, 4, 5], removing=[1, 2]),
        partition_change_record(ID_A, 0, version=1, leader=2, isr=[1, 2]),
    ])
    meta = read_cluster_metadata(folder)
    part = meta.topics["t"].partitions[0]
    assert (part.replicas, part.adding_replicas, part.removing_replicas) == ((1, 2, 3, 4, 5), (3, 4, 5), (1, 2))
    assert meta.topics["t"].replication_factor == 2  # TopicCommand: replicas less the adding ones

    folder2 = write_log(tmp_path / "done", [
        topic_record("t", ID_A), partition_record(ID_A, 0, [1, 2]),
        partition_change_record(ID_A, 0, replicas=[3, 4, 5], adding=[], removing=[]),
    ])
    assert read_cluster_metadata(folder2).policy("t").replication_factor.value == 3


# -- snapshots -------------------------------------------------------------------------------------------

def test_newest_snapshot_then_the_log_from_its_end_offset(tmp_path):
    folder = meta_dir(tmp_path)
    # an older snapshot that must not be used
    write_snapshot(folder, 4, 1, snapshot_file([topic_record("old", ID_B)]))
    write_snapshot(folder, 6, 1, snapshot_file([
        topic_record("t", ID_A),
        config_record(TOPIC, "t", "retention.ms", "1000"),
        config_record(TOPIC, "t", "cleanup.policy", "compact"),
        partition_record(ID_A, 0, [1, 2, 3]),
        config_record(BROKER, "", "log.retention.bytes", "500"),
    ]))
    # The log still holds offsets 0-5 (already in the snapshot) and goes on to 9.  The batch of offsets
    # 4-6 straddles the snapshot's end offset: only its offset 6 is applied.
    below = [topic_record("t", ID_A), topic_record("ghost", ID_B), config_record(TOPIC, "t", "retention.ms", "1"),
             config_record(TOPIC, "t", "retention.ms", "2"), config_record(TOPIC, "t", "retention.ms", "3"),
             remove_topic_record(ID_A)]
    above = [config_record(TOPIC, "t", "retention.ms", "2000"), config_record(TOPIC, "t", "cleanup.policy", None),
             partition_record(ID_A, 1, [2, 3, 1]), config_record(TOPIC, "t", "compression.type", "lz4")]
    write_segment(folder, 0, [data_batch(0, below[:4]), data_batch(4, below[4:] + above[:1])])
    write_segment(folder, 7, [data_batch(7, above[1:])])
    # snapshots being written or deleted (Snapshots.PARTIAL_SUFFIX, DELETE_SUFFIX) are not read
    (folder / "00000000000000000009-0000000001.checkpoint.part").write_bytes(b"partial")
    (folder / "00000000000000000008-0000000001.checkpoint.deleted").write_bytes(b"deleted")
    meta = read_cluster_metadata(folder)
    assert meta.snapshot == str(folder / "00000000000000000006-0000000001.checkpoint")
    assert meta.snapshot_end_offset == 6 and meta.end_offset == 10
    assert list(meta.topics) == ["t"]  # neither "old" nor "ghost"
    p = meta.policy("t")
    assert p.retention_ms.value == 2000 and p.retention_ms.source.offset == 6
    assert p.cleanup_policy.value == ("delete",) and str(p.cleanup_policy.source) == "Kafka default"
    assert p.compression_type.value == "lz4"
    assert sorted(meta.topics["t"].partitions) == [0, 1]
    assert p.retention_bytes.value == 500
    assert str(p.retention_bytes.source) == f"broker default in the metadata log {folder}"
    snap_cfg = meta.topics["t"].config_sources
    assert meta.control_records == {"SNAPSHOT_HEADER": 1, "SNAPSHOT_FOOTER": 1}
    assert meta.policy("t").replication_factor.value == 3
    assert "cleanup.policy" not in snap_cfg


def test_a_snapshot_alone(tmp_path):
    folder = meta_dir(tmp_path)
    write_snapshot(folder, 3, 2, snapshot_file([topic_record("t", ID_A),
                                                config_record(TOPIC, "t", "retention.ms", "7")]))
    meta = read_cluster_metadata(folder)
    src = meta.policy("t").retention_ms.source
    assert meta.end_offset == 3 and src.offset is None and src.file == meta.snapshot


def test_log_segments_wholly_below_the_snapshot_are_not_read(tmp_path):
    folder = meta_dir(tmp_path)
    write_snapshot(folder, 3, 1, snapshot_file([topic_record("t", ID_A)]))
    write_segment(folder, 0, [b"\0" * 80])  # garbage, never read: offset 3 starts in the next segment
    write_segment(folder, 3, [data_batch(3, [config_record(TOPIC, "t", "retention.ms", "9")])])
    meta = read_cluster_metadata(folder)
    assert meta.policy("t").retention_ms.value == 9
    assert meta.files == [meta.snapshot, str(folder / "00000000000000000003.log")]


def test_a_metadata_log_in_object_storage(tmp_path, s3):  # noqa: F811
    folder = meta_dir(tmp_path)
    write_snapshot(folder, 2, 1, snapshot_file([topic_record("t", ID_A),
                                                config_record(TOPIC, "t", "retention.ms", "7")]))
    write_segment(folder, 0, log_batches([topic_record("t", ID_A), no_op_record(),
                                          config_record(TOPIC, "t", "retention.bytes", "8")]))
    url = f"s3://{s3.new_bucket()}/meta/{folder.name}"
    s3.upload_dir(str(folder), url)
    meta = read_cluster_metadata(url, storage_options=s3.storage_options)
    p = meta.policy("t")
    assert (p.retention_ms.value, p.retention_bytes.value) == (7, 8)
    assert str(p.retention_bytes.source) == f"topic config in the metadata log {url}"
    assert meta.files == [f"{url}/00000000000000000002-0000000001.checkpoint", f"{url}/00000000000000000000.log"]


# -- deletion and re-creation ----------------------------------------------------------------------------

def test_removed_topic_and_a_name_created_again(tmp_path):
    folder = write_log(tmp_path, [
        topic_record("t", ID_A),
        config_record(TOPIC, "t", "retention.ms", "1000"),
        config_record(TOPIC, "t", "cleanup.policy", "compact"),
        partition_record(ID_A, 0, [1, 2, 3]),
        topic_record("gone", ID_B),
        partition_record(ID_B, 0, [1]),
        remove_topic_record(ID_A),
        remove_topic_record(ID_B),
        topic_record("t", ID_A2),
        partition_record(ID_A2, 0, [1]),
        config_record(TOPIC, "t", "retention.bytes", "10"),
    ])
    meta = read_cluster_metadata(folder)
    assert list(meta.topics) == ["t"]
    t = meta.topics["t"]
    assert t.topic_id == ID_A2 and t.configs == {"retention.bytes": "10"}
    p = meta.policy("t")
    # the old topic's retention.ms and cleanup.policy went with it (ConfigurationsDelta.replay(RemoveTopicRecord))
    assert str(p.retention_ms.source) == "Kafka default" and p.cleanup_policy.value == ("delete",)
    assert p.replication_factor.value == 1
    assert meta.policy("t", topic_id=ID_A2).topic_id == ID_A2
    with pytest.raises(UnknownTopicError, match="deleted topic of the same name"):
        meta.policy("t", topic_id=ID_A)
    with pytest.raises(UnknownTopicError, match="'gone' is not in the metadata log"):
        meta.policy("gone")


def test_topic_id_in_kafkas_base64_form(tmp_path):
    folder = write_log(tmp_path, [topic_record("__consumer_offsets", CONSUMER_OFFSETS_ID)])
    meta = read_cluster_metadata(folder)
    # partition.metadata writes Uuid.toString(): URL-safe base64 without padding
    assert meta.topic("__consumer_offsets", "gSnfpEbtQfSDpxM2lhEn9A").topic_id == CONSUMER_OFFSETS_ID
    with pytest.raises(KcodecError, match="is not a topic id"):
        meta.topic("__consumer_offsets", "not-an-id")


def test_a_null_value_deletes_the_config(tmp_path):
    folder = write_log(tmp_path, [
        topic_record("t", ID_A),
        config_record(TOPIC, "t", "retention.ms", "1000"),
        config_record(TOPIC, "t", "retention.bytes", "2000"),
        config_record(TOPIC, "t", "retention.ms", None),
        config_record(TOPIC, "t", "max.message.bytes", None),  # deleting a key never set is no error
    ])
    meta = read_cluster_metadata(folder)
    assert meta.topics["t"].configs == {"retention.bytes": "2000"}
    p = meta.policy("t")
    assert p.retention_ms.value == 604_800_000 and str(p.retention_ms.source) == "Kafka default"


def test_broker_defaults_and_one_brokers_configs(tmp_path):
    folder = write_log(tmp_path, [
        config_record(BROKER, "", "log.retention.ms", "3600000"),
        config_record(BROKER, "", "log.cleaner.delete.retention.ms", "5"),
        config_record(BROKER, "", "compression.type", "gzip"),
        config_record(BROKER, "1", "log.retention.ms", "60000"),
        config_record(BROKER, "", "compression.type", None),
        topic_record("t", ID_A),
        config_record(TOPIC, "t", "delete.retention.ms", "77"),
    ])
    meta = read_cluster_metadata(folder)
    assert meta.broker_defaults == {"log.cleaner.delete.retention.ms": "5", "log.retention.ms": "3600000"}
    assert meta.broker_configs == {"1": {"log.retention.ms": "60000"}}
    p = meta.policy("t")
    assert str(p.retention_ms) == f"retention.ms = 3600000 (broker default in the metadata log {folder})"
    assert p.delete_retention_ms.value == 77  # the topic's own value wins
    assert p.compression_type.value == "producer" and str(p.compression_type.source) == "Kafka default"
    one = meta.policy("t", broker_id=1)
    assert str(one.retention_ms) == f"retention.ms = 60000 (broker config of broker 1 in the metadata log {folder})"
    assert meta.policy("t", broker_id=2).retention_ms.value == 3600000


def test_an_unparseable_number_names_the_record(tmp_path):
    folder = write_log(tmp_path, [topic_record("t", ID_A), config_record(TOPIC, "t", "retention.ms", "1d")])
    meta = read_cluster_metadata(folder)
    with pytest.raises(CorruptDataError, match=r"retention.ms = '1d' is not a 64-bit integer .*offset 2\)"):
        meta.policy("t")


# -- skipped, counted and out-of-place records -----------------------------------------------------------

def test_unknown_types_and_newer_versions_are_skipped_and_counted(tmp_path):
    folder = write_log(tmp_path, [
        frame(99, 0, b"\x05anything"),
        frame(99, 0, b""),
        frame(3, 3, b"a PartitionRecord of a version not known yet"),
        frame(2, 1, b"a newer TopicRecord"),
        topic_record("t", ID_A),
        partition_record(ID_A, 0, [1, 2]),
        feature_level_record("kraft.version", 1),
        config_record(16, "metrics", "interval.ms", "1000"),  # CLIENT_METRICS: kept, not a topic's
    ])
    meta = read_cluster_metadata(folder)
    assert meta.skipped == {(99, 0): 2, (3, 3): 1, (2, 1): 1}
    assert meta.ignored == {"FeatureLevelRecord": 1}
    assert list(meta.topics) == ["t"] and meta.policy("t").replication_factor.value == 2


def test_unknown_tagged_fields_are_ignored(tmp_path):
    body = struct.pack(">i", 0) + ID_A.bytes + tagged({2: b"\x03\x00\x00\x00\x07\x00\x00\x00\x08", 9: b"xyz"})
    folder = write_log(tmp_path, [topic_record("t", ID_A), partition_record(ID_A, 0, [1]), frame(5, 0, body)])
    assert read_cluster_metadata(folder).topics["t"].partitions[0].replicas == (7, 8)


def test_transactions(tmp_path):
    folder = write_log(tmp_path, [
        begin_transaction_record("create t"),
        topic_record("t", ID_A),
        config_record(TOPIC, "t", "retention.ms", "10"),
        end_transaction_record(),
        begin_transaction_record(),
        config_record(TOPIC, "t", "retention.ms", "20"),
        topic_record("aborted", ID_B),
        abort_transaction_record("controller failover"),
        begin_transaction_record(),
        config_record(TOPIC, "t", "retention.ms", "30"),
    ])
    meta = read_cluster_metadata(folder)
    assert list(meta.topics) == ["t"] and meta.policy("t").retention_ms.value == 10
    assert (meta.aborted_records, meta.unfinished_records) == (2, 1)


def test_records_a_broker_would_report_are_listed(tmp_path):
    folder = write_log(tmp_path, [
        partition_record(ID_B, 0, [1]),
        remove_topic_record(ID_B),
        end_transaction_record(),
        topic_record("t", ID_A),
        partition_change_record(ID_A, 3, replicas=[1]),
    ])
    meta = read_cluster_metadata(folder)
    assert len(meta.problems) == 4
    assert meta.problems[0].startswith("PartitionRecord (") and "offset 1): no topic has topic id" in meta.problems[0]
    assert "no transaction is open" in meta.problems[2]
    assert list(meta.topics) == ["t"] and meta.topics["t"].partitions == {}
    assert meta.policy("t").replication_factor.value is None


# -- corrupt input ---------------------------------------------------------------------------------------

def _value_position(data: bytes, value: bytes) -> int:
    pos = data.find(value)
    assert pos > 0 and data.find(value, pos + 1) == -1
    return pos


def test_a_truncated_field_names_the_file_and_byte(tmp_path):
    good = config_record(TOPIC, "t", "retention.ms", "1000")
    # the value string claims 40 bytes but the record ends after 4 (and the batch CRC is right)
    bad = good[:-6] + bytes([41]) + b"1000" + b"\0"
    folder = write_log(tmp_path, [topic_record("t", ID_A), bad])
    log = folder / "00000000000000000000.log"
    at = _value_position(log.read_bytes(), bad) + len(good) - 6 + 1
    with pytest.raises(CorruptDataError) as info:
        read_cluster_metadata(folder)
    err = info.value
    assert (err.source, err.position) == (str(log), at)
    assert "ConfigRecord v0 at offset 2: value needs 40 bytes but only 5 remain" in str(err)
    assert f"in {log}, at byte {at}" in str(err)


def test_bytes_left_after_a_record(tmp_path):
    bad = remove_topic_record(ID_A) + b"\x00\x00"
    folder = write_log(tmp_path, [topic_record("t", ID_A), bad])
    log = folder / "00000000000000000000.log"
    with pytest.raises(CorruptDataError, match="2 byte") as info:
        read_cluster_metadata(folder)
    assert info.value.position == _value_position(log.read_bytes(), bad) + len(bad) - 2


def test_a_corrupt_record_in_a_compressed_batch_names_the_batch(tmp_path):
    bad = frame(2, 0, b"\x09abc")  # the name claims 8 bytes
    folder = write_log(tmp_path, [topic_record("t", ID_A), bad], compression="gzip", per_batch=5)
    with pytest.raises(CorruptDataError) as info:
        read_cluster_metadata(folder)
    assert info.value.source == str(folder / "00000000000000000000.log")
    assert "TopicRecord v0 at offset 2" in str(info.value) and "of the record's value" in str(info.value)


@pytest.mark.parametrize("value, message, at", [
    (b"\x01\x02\x00\x00", "non-nullable field name was serialized as null", 3),
    (b"\x01\x02\x00\x03\xff\xfe" + ID_A.bytes + b"\x00", "string field name is not valid UTF-8", 3),
    (b"\x01\x02\x00\x02a" + ID_A.bytes[:9], "topic_id needs 16 bytes but only 9 remain", 5),
    (b"\x01\xff\xff\xff\xff\xff\x01", "unsigned varint longer than 5 bytes (type)", 1),
    (b"\x01\x02", "truncated unsigned varint (version)", 2),
    (b"\x01\x02\x00\x81\x80\x02", "string field name had invalid length 32768", 3),
    # a tagged field whose size runs past the record, and one holding more than its value
    (b"\x01\x05\x00\x00\x00\x00\x00" + ID_A.bytes + b"\x01\x01\x09\x00", "of 9 bytes runs past the end", 24),
    (b"\x01\x05\x00\x00\x00\x00\x00" + ID_A.bytes + b"\x01\x01\x05\x00\x00\x00\x01\x00",
     "tagged field 1 (leader) holds 1 bytes after its value", 30),
])
def test_malformed_record_values(value, message, at):
    with pytest.raises(CorruptDataError, match=re.escape(message)) as info:
        decode_metadata_record(value, position=1000, source="f.log", offset=7)
    assert (info.value.position, info.value.source) == (1000 + at, "f.log")


@pytest.mark.parametrize("frame_version", [0, 2])
def test_unknown_frame_versions(tmp_path, frame_version):
    folder = write_log(tmp_path, [frame(2, 0, b"", frame_version=frame_version)])
    with pytest.raises(CorruptDataError, match=f"unknown frame version {frame_version}"):
        read_cluster_metadata(folder)


def test_a_bad_checksum(tmp_path):
    folder = write_log(tmp_path, [topic_record("t", ID_A)])
    log = folder / "00000000000000000000.log"
    data = bytearray(log.read_bytes())
    data[-3] ^= 0xFF
    log.write_bytes(bytes(data))
    with pytest.raises(CorruptRecordError) as info:
        read_cluster_metadata(folder)
    assert info.value.source == str(log) and info.value.position is not None


def test_a_snapshot_without_its_footer_or_header(tmp_path):
    folder = meta_dir(tmp_path)
    path = write_snapshot(folder, 2, 1, snapshot_file([topic_record("t", ID_A)], footer=False))
    with pytest.raises(CorruptDataError, match="does not end with a SnapshotFooter") as info:
        read_cluster_metadata(folder)
    assert (info.value.source, info.value.position) == (str(path), path.stat().st_size)

    path.write_bytes(b"".join(log_batches([topic_record("t", ID_A)])))
    with pytest.raises(CorruptDataError, match="must start with a SnapshotHeader"):
        read_cluster_metadata(folder)


def test_a_truncated_snapshot(tmp_path):
    folder = meta_dir(tmp_path)
    data = snapshot_file([topic_record("t", ID_A)])
    path = write_snapshot(folder, 2, 1, data[:-10])
    with pytest.raises(CorruptRecordError) as info:
        read_cluster_metadata(folder)
    assert info.value.source == str(path)


def test_missing_offsets(tmp_path):
    folder = meta_dir(tmp_path)
    write_segment(folder, 5, log_batches([topic_record("t", ID_A)], start=5))
    with pytest.raises(CorruptDataError, match="offsets 0 to 4 are missing"):
        read_cluster_metadata(folder)

    other = meta_dir(tmp_path / "gap")
    write_segment(other, 0, log_batches([topic_record("t", ID_A)]) + log_batches([no_op_record()], start=3))
    with pytest.raises(CorruptDataError, match="offsets 1 to 2 are missing") as info:
        read_cluster_metadata(other)
    assert info.value.position > 0

    snap = meta_dir(tmp_path / "snap")
    write_snapshot(snap, 3, 1, snapshot_file([topic_record("t", ID_A)]))
    write_segment(snap, 7, log_batches([no_op_record()], start=7))
    with pytest.raises(CorruptDataError, match="offsets 3 to 6 are missing"):
        read_cluster_metadata(snap)


def test_a_partial_batch_at_the_end_of_the_log_is_ignored(tmp_path):
    folder = write_log(tmp_path, [topic_record("t", ID_A)])
    log = folder / "00000000000000000000.log"
    torn = data_batch(2, [topic_record("u", ID_B)])
    log.write_bytes(log.read_bytes() + torn[:30])
    meta = read_cluster_metadata(folder)
    assert list(meta.topics) == ["t"] and meta.end_offset == 2


def test_no_metadata_log(tmp_path):
    with pytest.raises(LogNotFoundError, match="no such metadata log directory"):
        read_cluster_metadata(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(NoSegmentsError, match="no KRaft metadata log in"):
        read_cluster_metadata(tmp_path / "empty")


# -- the command-line flag -------------------------------------------------------------------------------

def _parser():
    p = argparse.ArgumentParser()
    add_metadata_log_argument(p)
    return p


def test_metadata_log_flag(tmp_path):
    folder = write_log(tmp_path, [topic_record("t", ID_A), config_record(TOPIC, "t", "retention.ms", "42")])
    args = _parser().parse_args(["--metadata-log", str(folder)])
    policy = topic_policy(args, "t")
    assert str(policy.retention_ms) == f"retention.ms = 42 (topic config in the metadata log {folder})"
    assert metadata_log(args) is metadata_log(args)  # read once
    with pytest.raises(UnknownTopicError) as info:
        topic_policy(args, "u")
    assert str(info.value).startswith(f"--metadata-log {folder}: topic 'u' is not in the metadata log")

    assert topic_policy(_parser().parse_args([]), "t") is None
    assert "__cluster_metadata-0" in _parser().format_help()


def test_metadata_log_flag_errors_name_the_flag_file_and_byte(tmp_path):
    args = _parser().parse_args(["--metadata-log", str(tmp_path / "nowhere")])
    with pytest.raises(LogNotFoundError, match="^--metadata-log .*nowhere: no such metadata log directory"):
        topic_policy(args, "t")

    bad = frame(2, 0, b"\x09abc")
    folder = write_log(tmp_path, [bad])
    log = folder / "00000000000000000000.log"
    args = _parser().parse_args(["--metadata-log", str(folder)])
    with pytest.raises(CorruptDataError) as info:
        topic_policy(args, "t")
    text = str(info.value)
    assert text.startswith(f"--metadata-log {folder}: TopicRecord v0 at offset 1")
    assert f"(in {log}, at byte " in text and "\n" not in text


def test_a_legacy_batch_is_refused(tmp_path):
    from kcodec.records import batch_builder

    b = batch_builder(1)
    b.append(None, topic_record("t", ID_A), timestamp=1)
    log = write_segment(meta_dir(tmp_path), 0, [bytes(b.build())])
    with pytest.raises(CorruptDataError, match="magic 1: a metadata log holds only magic v2") as info:
        read_cluster_metadata(meta_dir(tmp_path))
    assert (info.value.source, info.value.position) == (str(log), 0)


def test_partition_policy_checks_the_topic_id_of_the_folder(tmp_path):
    folder = write_log(tmp_path, [
        topic_record("t", ID_A), config_record(TOPIC, "t", "retention.ms", "1"), remove_topic_record(ID_A),
        topic_record("t", ID_A2), config_record(TOPIC, "t", "retention.ms", "2"),
    ])
    args = _parser().parse_args(["--metadata-log", str(folder)])
    data = tmp_path / "data" / "t-0"
    data.mkdir(parents=True)
    part = Partition("t", 0, data)
    assert partition_topic_id(part) is None  # no partition.metadata: the name alone decides
    assert partition_policy(args, part).retention_ms.value == 2

    # what PartitionMetadata.encode writes: the topic id as Uuid.toString (URL-safe base64, no padding)
    def write_id(topic_id):
        text = base64.urlsafe_b64encode(topic_id.bytes).decode().rstrip("=")
        (data / "partition.metadata").write_text(f"version: 0\ntopic_id: {text}")

    write_id(ID_A2)
    assert partition_topic_id(part) == ID_A2
    assert partition_policy(args, part).retention_ms.value == 2
    write_id(ID_A)  # a folder left behind by the deleted incarnation of the name
    with pytest.raises(UnknownTopicError, match="deleted topic of the same name"):
        partition_policy(args, part)
    assert partition_policy(_parser().parse_args([]), part) is None


@pytest.mark.parametrize("text, message", [
    ("version 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ", "malformed line in partition.metadata: 'version 0'"),
    ("version: 0\n", "malformed line in partition.metadata: ''"),
    ("version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAA", "invalid topic ID in partition.metadata"),
    ("version: 0\ntopic_id: short", "is not a topic id"),
])
def test_a_malformed_partition_metadata_file(tmp_path, text, message):
    (tmp_path / "t-0").mkdir()
    (tmp_path / "t-0" / "partition.metadata").write_text(text)
    with pytest.raises(CorruptDataError, match=re.escape(message)) as info:
        partition_topic_id(Partition("t", 0, tmp_path / "t-0"))
    assert info.value.source == str(tmp_path / "t-0" / "partition.metadata")
