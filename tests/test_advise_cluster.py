"""``kcodec advise --bootstrap-server`` against a real broker (Tansu, tests/broker.py).

Topics are produced by real clients at chosen ``compression.type``, ``linger.ms`` and
``batch.size``, and the same batches are mirrored into a log directory: advise on the
live cluster must see each topic's codec and batch shape, and recommend what advise
recommends on the log directory.
"""
from __future__ import annotations

import pytest

from cluster_estate import TopicSpec, build_estate
from kcodec.records import read_batches

pytest.importorskip("kafka")

# Each flush closes one batch per partition (a long linger.ms and a large batch.size), except
# "live-sized", whose batches batch.size cuts at 4 KiB.
SPECS = (
    TopicSpec("live-json", "json", 2, "zstd", 600, 5000, 1 << 20, flush_every=60),
    TopicSpec("live-logs", "log", 2, "lz4", 400, 5000, 1 << 20, flush_every=40, client="confluent-kafka"),
    TopicSpec("live-blobs", "compressed", 2, "gzip", 120, 5000, 1 << 20, flush_every=20),
    TopicSpec("live-sized", "json", 2, "none", 400, 2000, 4096),
)
NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}
# A tiny grid; every topic read whole, each partition as one chunk on both paths (two chunks a
# topic, one per partition; one byte range per segment), so both replay the same record runs;
# CPU priced at zero so the choice rests on bytes alone, not on the timing noise of two runs.
GRID = dict(codecs="lz4,zstd:3", batch_sizes="16k", lingers="0,50", sample="32m", chunk="16m",
            min_compress_mbps=0, min_read_mbps=0, progress=False, price_overrides={"vcpu_hour": 0.0})


@pytest.fixture(scope="module")
def live(kafka_broker, tmp_path_factory):
    log_dir = tmp_path_factory.mktemp("live-estate")
    specs, written = build_estate(kafka_broker.bootstrap, log_dir, SPECS)
    return {s.name: s for s in specs}, written, log_dir


def _advise(tmp_path, name, **kwargs):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    lines = []
    out = run_advise(Options(out_dir=str(tmp_path / name), **GRID, **kwargs), log=lines.append)
    return {a.topic: a for a in out["advice"]}, "\n".join(lines)


def test_cluster_advice_matches_the_log_directory(spark, live, kafka_broker, tmp_path):
    specs, written, log_dir = live
    topics = "live-.*"
    cluster, text = _advise(tmp_path, "cluster", bootstrap_server=kafka_broker.bootstrap, topic=topics)
    logs, _ = _advise(tmp_path, "logs", inputs=[str(log_dir)])
    assert sorted(cluster) == sorted(logs) == sorted(specs)
    assert f"cluster {kafka_broker.bootstrap}" in text and "estate: 4 topics" in text

    for topic, spec in specs.items():
        c, g = cluster[topic], logs[topic]
        stored = [b for p in range(spec.partitions) for b in read_batches(written[(topic, p)])]
        # today's codec and batch shape, as the producer made them
        # (kafka-python stores a batch uncompressed where its codec would make it larger, which
        # happens to the small batches of already-compressed blobs)
        codec_bytes = {}
        for b in stored:
            codec_bytes[NAMES[b.compression_id]] = codec_bytes.get(NAMES[b.compression_id], 0) + b.size_in_bytes
        total = sum(codec_bytes.values())
        assert c.codec_mix == pytest.approx({k: v / total for k, v in codec_bytes.items()}), topic
        assert spec.compression in codec_bytes and (spec.kind == "compressed" or len(codec_bytes) == 1), topic
        assert c.partitions == spec.partitions and c.timestamp_type == "CreateTime", topic
        assert c.today.records == spec.records and c.today.batches == len(stored), topic
        br, bb = c.profile.batch_records, c.profile.batch_bytes
        if spec.flush_every:
            per_batch = spec.flush_every // spec.partitions
            assert (br.p10, br.p50, br.p90) == (per_batch,) * 3, topic
        else:  # batch.size cut the batches
            assert bb.p90 <= spec.batch_size and br.p50 > 10, topic
            assert len(stored) >= spec.records * 50 // spec.batch_size, topic
        # the same batches as the log directory's, and so the same measurement and advice
        assert c.profile.batch_records == g.profile.batch_records, topic
        assert c.profile.batch_bytes == g.profile.batch_bytes, topic
        assert c.profile.codec_bytes == g.profile.codec_bytes, topic
        assert c.today.stored_bytes == g.today.stored_bytes == sum(b.size_in_bytes for b in stored), topic
        assert {m.label: m.stored_bytes for m in c.results} == {m.label: m.stored_bytes for m in g.results}, topic
        assert (c.best and c.best.setting) == (g.best and g.best.setting), topic
        assert c.config() == g.config(), topic
        # bytes per day from every offset over the partitions' whole span (ListOffsets), the log's from
        # all its segments over theirs: the same traffic
        assert c.stored_per_day > 0 and "ListOffsets" in c.per_day_source, topic
        assert c.stored_per_day == pytest.approx(g.stored_per_day, rel=0.05), topic
    # gzip on random-ish JSON and a codec on text are both kept or bettered; a topic stored without
    # a codec is told to use one
    assert cluster["live-sized"].best is not None and cluster["live-sized"].best.setting.codec != "none"


def test_a_fetch_failing_in_a_spark_task_is_one_line(spark, tmp_path, capsys):
    """The broker stops answering Fetch after the plan is made: the Spark task's ClusterError
    reaches the user as one line naming the partition and the address, and no report is written."""
    from broker import recorded_broker
    from cluster_estate import produce_estate
    from kcodec.cli import main

    with recorded_broker() as (broker, proxy):
        produce_estate(broker.bootstrap, [TopicSpec("fetch-dies", "log", 1, "lz4", 100, 5000, 1 << 20,
                                                    flush_every=25)])
        proxy.drop = {1}  # Fetch: metadata and offsets still answer, so Spark starts
        code = main(["advise", "--bootstrap-server", broker.bootstrap, "--codecs", "lz4", "--batch-sizes", "16k",
                     "--linger-ms", "0", "--out", str(tmp_path / "r"), "--no-progress", "--vcpu-hour", "0"])
        fetches = proxy.api_keys.count(1)
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1, err
    assert err[0].startswith("kcodec advise: ") and "fetch-dies-0" in err[0], err
    assert f"127.0.0.1:{proxy.port}" in err[0] and fetches >= 1, err
    assert not (tmp_path / "r").exists()
