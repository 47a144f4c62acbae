"""The input kinds of ``kcodec advise`` behind one interface (:mod:`kcodec.advise.inputs`): each input
is listed once, and what the pipeline asks of it depends on the input, not on a name of its kind."""
from __future__ import annotations

import json

import pytest

from builders import batch, kv, make_log
from kcodec.advise.inputs import Sampling, check_inputs
from kcodec.advise.inputs.files import FileSource
from kcodec.advise.inputs.generated import GeneratedSource
from kcodec.advise.inputs.logs import LogSource
from kcodec.advise.options import Options, check_options
from kcodec.errors import KcodecError


def _count_log_listings(monkeypatch):
    import kcodec.log.segment as segment

    calls = []
    real = segment.open_log_dir

    def counting(path, *args, **kwargs):
        calls.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(segment, "open_log_dir", counting)
    return calls


def _two_brokers(tmp_path):
    """Two brokers' log directories, each with a replica of orders-0 and a partition of its own."""
    dirs = []
    for n, own in ((1, "audit-0"), (2, "orders-1")):
        logs = tmp_path / f"broker{n}"
        for name in ("orders-0", own):
            make_log(logs / name, [[batch(0, [kv(b"a"), kv(b"b")]), batch(2, [kv(b"c")])]])
        dirs.append(str(logs))
    return dirs


def test_each_log_directory_is_listed_once(tmp_path, monkeypatch):
    dirs = _two_brokers(tmp_path)
    calls = _count_log_listings(monkeypatch)
    c = check_options(Options(inputs=dirs))
    assert sorted(calls) == sorted(dirs)
    source = c.plan
    assert isinstance(source, LogSource)
    assert source.topic_partitions == {"audit": 1, "orders": 2}  # orders-0's second replica counted once
    assert sorted({(r.topic, r.partition) for r in source.ranges}) == [("audit", 0), ("orders", 0), ("orders", 1)]
    assert [t[:2] for t in source.tails] == [("audit", 0), ("orders", 0), ("orders", 1)]
    assert not source.replays_today and not source.reads_every_record and source.real_time
    place = source.chunk_place("orders", 1, 0)
    assert place is not None and place[0].endswith("orders-1/00000000000000000000.log") and place[1] == 0
    assert source.chunk_place("orders", 1, 99) is None


def test_a_log_directory_given_by_format_is_listed_once(tmp_path, monkeypatch):
    dirs = _two_brokers(tmp_path)[:1]
    calls = _count_log_listings(monkeypatch)
    source = check_inputs(dirs, "kafka-log", 1 << 20)
    assert calls == dirs and sorted(source.topic_partitions) == ["audit", "orders"]


def test_inputs_of_two_kinds_are_refused_after_one_listing(tmp_path, monkeypatch):
    logs = _two_brokers(tmp_path)[0]
    records = tmp_path / "r.json"
    records.write_text(json.dumps({"value": "v"}) + "\n")
    calls = _count_log_listings(monkeypatch)
    with pytest.raises(KcodecError, match=r"inputs of different kinds \(json, kafka-log\): give one kind at a time"):
        check_inputs([logs, str(records)], None, 1 << 20)
    assert calls == [logs]


def test_what_each_kind_answers(tmp_path):
    sample = check_options(Options()).plan
    assert isinstance(sample, GeneratedSource) and sample.description == "generated sample"
    assert sample.replays_today and sample.reads_every_record and not sample.real_time
    assert sample.known_topics() == ["app-logs", "clicks", "telemetry"]
    records = tmp_path / "r.json"
    records.write_text(json.dumps({"value": "v", "timestamp": 1_700_000_000_000}) + "\n")
    rec = check_options(Options(inputs=[str(records)], topic="orders")).plan
    assert isinstance(rec, FileSource) and rec.replays_today and rec.reads_every_record and rec.real_time
    assert not rec.topic_names_checked and rec.topic_regex == "orders"
    assert rec.description.startswith(f"json {records} topics /orders/; timestamps: ")
    for source in (sample, rec):
        assert source.topic_settings() == {} and source.rate_partitions("orders") is None
        assert source.chunk_place("orders", 0, 0) is None
    with pytest.raises(KcodecError, match=r"^--timestamp-unit ms: only for Parquet or JSON record inputs"):
        sample.use_timestamp_unit("ms")
    with pytest.raises(KcodecError, match=r"^--bootstrap-server reads a live cluster: give no input paths with it$"):
        check_options(Options(bootstrap_server="127.0.0.1:1", inputs=[str(records)]))


# -- a live cluster ---------------------------------------------------------------------------------
def _create_and_produce(bootstrap: str, topic: str, partitions: int, records: int) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, partitions, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, acks=1)
    try:
        for i in range(records):
            producer.send(topic, value=b'{"i": %d}' % i, key=b"k%d" % (i % 5), partition=i % partitions)
        producer.flush()
    finally:
        producer.close()


def test_a_cluster_is_listed_once(kafka_broker, monkeypatch):
    """One Metadata request on the driver: checking the input, the topics' settings, their volumes and
    the sample's plan all start from it, and the plan carries each partition's leader to the tasks."""
    pytest.importorskip("kafka")
    from kcodec.advise.grid import Setting
    from kcodec.advise.inputs.cluster import ClusterSource
    from kcodec.advise.inputs.cluster.protocol import BrokerSession

    _create_and_produce(kafka_broker.bootstrap, "listed-once", 2, 40)
    asked = []
    real = BrokerSession.metadata

    def counting(self, topics=None):
        asked.append(topics)
        return real(self, topics)

    monkeypatch.setattr(BrokerSession, "metadata", counting)
    c = check_options(Options(bootstrap_server=kafka_broker.bootstrap, topic="listed-once"))
    source = c.plan
    assert isinstance(source, ClusterSource)
    assert source.topic_partitions == {"listed-once": 2}
    assert c.cluster["listed-once"].partitions == 2 and c.cluster["listed-once"].replication_factor == 1
    sampling = Sampling(1 << 20, 1 << 16, 2, Setting("none", None, 16384, 5), 1, 100, 7, 10.0)
    chunks = source.plan(sampling)
    source.read_volumes(sampling)
    assert {(ch.topic, ch.partition) for ch in chunks} == {("listed-once", 0), ("listed-once", 1)}
    assert source.topic_offsets == {"listed-once": 40}
    assert set(source.leaders) == {("listed-once", 0), ("listed-once", 1)} and min(source.leaders.values()) >= 0
    assert source.rate_partitions("listed-once") == 2
    assert not source.replays_today and not source.reads_every_record
    assert asked == [None]  # the whole cluster's Metadata, read once
    with pytest.raises(KcodecError, match=r"^--write out: needs log directories or record files, "
                                          r"not --bootstrap-server"):
        source.check_write("out")


def test_task_count_is_a_multiple_of_the_cores():
    from kcodec.advise.inputs.logs import task_count

    assert task_count([52_000] * 500, 2) == 8  # 26 MB: 7 tasks' worth, and one more so that no task runs alone
    assert task_count([1 << 20] * 100, 3) == 27
    assert task_count([4 << 20] * 3, 2) == 3  # never more tasks than ranges
    assert task_count([100] * 10, 2) == 4  # at least two per core
    assert task_count([], 2) == 1
