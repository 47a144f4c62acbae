"""``kcodec advise --bootstrap-server`` prices each topic with the cluster's own settings (Tansu, tests/broker.py).

Topics are created with chosen ``retention.ms``, ``retention.bytes``, ``compression.type``,
``cleanup.policy`` and replication factor; consumer groups commit offsets on them.  The
settings read back, the bill computed with them, and the report saying they came from the
cluster are checked.  Tansu returns only the settings given when a topic was created (Kafka
returns every setting, its defaults included): a topic created without them is priced at the
defaults, and its note says what the cluster did not return.
"""
from __future__ import annotations

import json
import re

import pytest

pytest.importorskip("kafka")

DAY_MS = 86_400_000
# Kafka's API keys (org.apache.kafka.common.protocol.ApiKeys)
PRODUCE, FETCH, LIST_OFFSETS, METADATA, OFFSET_COMMIT, OFFSET_FETCH, FIND_COORDINATOR, JOIN_GROUP = \
    0, 1, 2, 3, 8, 9, 10, 11
LIST_GROUPS, API_VERSIONS, CREATE_TOPICS, DELETE_TOPICS, DESCRIBE_CONFIGS, ALTER_CONFIGS = 16, 18, 19, 20, 32, 33
INCREMENTAL_ALTER_CONFIGS, DELETE_GROUPS = 44, 42


def _create(bootstrap: str, topics) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, partitions, rf, topic_configs=configs)
                             for name, partitions, rf, configs in topics])
    finally:
        admin.close()


def _commit(bootstrap: str, group: str, topic: str, partitions: int) -> None:
    """Offsets committed for ``group`` as a consumer that read ``topic`` would leave them."""
    from kafka import KafkaAdminClient
    from kafka.structs import OffsetAndMetadata, TopicPartition

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.alter_group_offsets(group, {TopicPartition(topic, p): OffsetAndMetadata(1, "", -1)
                                          for p in range(partitions)})
    finally:
        admin.close()


def _produce(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=16384, acks=1)
    try:
        for i in range(records):
            value = json.dumps({"i": i, "user": f"u{i % 37}", "page": f"/p/{i % 11}", "pad": "x" * (i % 50)})
            producer.send(topic, value=value.encode(), key=b"k%d" % (i % 13), partition=i % partitions)
        producer.flush()
    finally:
        producer.close()


def test_settings_and_groups_read_only(tmp_path):
    """What DescribeConfigs, Metadata, ListGroups and OffsetFetch answer, and that nothing but reads
    was sent."""
    from broker import recorded_broker
    from kcodec.advise.inputs.cluster.settings import read_cluster_settings

    with recorded_broker() as (broker, proxy):
        _create(broker.bootstrap, [
            ("kept", 2, 3, {"retention.ms": str(2 * DAY_MS), "retention.bytes": "5000000",
                            "compression.type": "zstd", "cleanup.policy": "delete",
                            "remote.storage.enable": "true", "local.retention.ms": str(DAY_MS)}),
            ("plain", 1, 1, {}),
            ("other", 1, 1, {})])
        _commit(broker.bootstrap, "billing", "kept", 2)
        _commit(broker.bootstrap, "audit", "kept", 2)
        _commit(broker.bootstrap, "audit", "other", 1)
        proxy.clear()
        got = read_cluster_settings(broker.bootstrap, ["kept", "plain"], timeout_s=10, count_groups=True)
        sent = set(proxy.api_keys)
        proxy.clear()
        uncounted = read_cluster_settings(broker.bootstrap, ["kept"], timeout_s=10)
        sent_uncounted = set(proxy.api_keys)
    kept, plain = got["kept"], got["plain"]
    assert (kept.partitions, kept.replication_factor, kept.consumer_groups) == (2, 3, 2)
    assert kept.configs == {"retention.ms": str(2 * DAY_MS), "retention.bytes": "5000000",
                            "compression.type": "zstd", "cleanup.policy": "delete",
                            "remote.storage.enable": "true", "local.retention.ms": str(DAY_MS)}
    # Tansu returns no defaults: a topic created without settings has none to show
    assert (plain.partitions, plain.replication_factor, plain.configs, plain.consumer_groups) == (1, 1, {}, 0)
    assert uncounted["kept"].consumer_groups is None
    reads = {API_VERSIONS, METADATA, DESCRIBE_CONFIGS, LIST_GROUPS, FIND_COORDINATOR, OFFSET_FETCH}
    assert {DESCRIBE_CONFIGS, LIST_GROUPS, OFFSET_FETCH} <= sent <= reads, sent
    assert sent_uncounted <= {API_VERSIONS, METADATA, DESCRIBE_CONFIGS}, sent_uncounted


def test_a_topic_is_priced_with_the_clusters_retention_and_replication(spark, kafka_broker, tmp_path):
    from kcodec.advise.cost import GB
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    bootstrap = kafka_broker.bootstrap
    _create(bootstrap, [("priced-kept", 2, 2, {"retention.ms": str(2 * DAY_MS), "compression.type": "producer",
                                               "cleanup.policy": "delete"}),
                        ("priced-plain", 1, 1, {})])
    _produce(bootstrap, "priced-kept", 2, 3000)
    _produce(bootstrap, "priced-plain", 1, 2000)
    for group in ("a", "b", "c"):
        _commit(bootstrap, group, "priced-kept", 2)
    lines = []
    out = run_advise(Options(bootstrap_server=bootstrap, topic="priced-.*", codecs="lz4", batch_sizes="16k",
                             all_topics=True, lingers="5", min_compress_mbps=0, min_read_mbps=0, progress=False,
                             count_consumer_groups=True, platform="msk",
                             price_overrides={"vcpu_hour": 0.0}, out_dir=str(tmp_path / "r")),
                     log=lines.append)
    advice = {a.topic: a for a in out["advice"]}
    kept, plain = advice["priced-kept"], advice["priced-plain"]
    # priced with 2 days, 2 replicas and 3 consumer groups, at MSK's $0.10/GB-month, replication free
    per_day = kept.today.stored_per_day / GB
    assert kept.today.cost.storage == pytest.approx(per_day * 2 * 2 * 0.10)
    assert kept.today.cost.network == pytest.approx(per_day * 30 * (2 / 3 + 3 * 2 / 3) * 0.02)
    # the topic created without settings: Kafka's default 7 days, RF 1 from Metadata, no groups
    per_day = plain.today.stored_per_day / GB
    assert plain.today.cost.storage == pytest.approx(per_day * 7 * 1 * 0.10)
    assert plain.today.cost.network == pytest.approx(per_day * 30 * (2 / 3) * 0.02)
    assert any("did not return retention.ms, retention.bytes, remote.storage.enable, compression.type, "
               "cleanup.policy" in n for n in plain.notes)
    text = "\n".join(lines)
    assert "from the cluster:  retention, days 2 (retention.ms=172800000 (DescribeConfigs)); replication factor " \
           "2 (2 replicas per partition (Metadata)); consumer groups 3 (3 group(s) with committed offsets " \
           "(ListGroups, OffsetFetch))" in text
    doc = json.loads(out["paths"]["json"].read_text())
    topic = next(t for t in doc["topics"] if t["topic"] == "priced-kept")
    marks = {a["name"]: (a["value"], a["source"]) for a in topic["assumptions"]}
    assert marks["retention, days"] == ("2", "from the cluster")
    assert marks["replication factor"] == ("2", "from the cluster")
    assert marks["consumer groups"] == ("3", "from the cluster")
    assert marks["bytes a day"][1] == "measured"
    assert "consumer groups counted" in doc["context"]["cluster settings"]
    html = out["paths"]["html"].read_text()
    # the row's source points to its numbered note, which holds the detail
    row = re.search(r"<td>retention, days</td><td class=l>2</td><td class=l>from the cluster <sup>\[(\d+)\]</sup></td>",
                    html)
    assert row is not None
    notes = re.search(r"<ol class=notes>(.*?)</ol>", html[row.end():]).group(1)
    assert re.findall(r"<li>(.*?)</li>", notes)[int(row.group(1)) - 1] == "retention.ms=172800000 (DescribeConfigs)"
