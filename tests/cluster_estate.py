"""A small Kafka estate on a live broker, and the same batches as a broker-style log directory.

:func:`produce_estate` creates topics and produces distinct kinds of data with
real clients at chosen ``compression.type``, ``linger.ms`` and ``batch.size``;
:func:`mirror_to_log_dir` fetches every partition's batches back, byte for
byte, and writes them with kcodec's LogWriter, so the live cluster and the log
directory hold the same topics, partitions, codecs and batch boundaries.
"""
from __future__ import annotations

import json
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

__all__ = ["TopicSpec", "ESTATE", "produce_estate", "fetch_partition", "mirror_to_log_dir", "build_estate",
           "confluent_available"]


@dataclass(frozen=True)
class TopicSpec:
    name: str
    kind: str  #: "json", "log", "binary" or "compressed": what the values look like
    partitions: int
    compression: str  #: the producer's compression.type
    records: int
    linger_ms: int
    batch_size: int
    #: records per flush; with a long linger and a large batch.size each flush closes
    #: one batch per partition, so the batch shape is known exactly
    flush_every: Optional[int] = None
    client: str = "kafka-python"  #: or "confluent-kafka" (librdkafka)


ESTATE: Tuple[TopicSpec, ...] = (
    TopicSpec("events-json", "json", 3, "zstd", 1200, 5000, 1 << 20, flush_every=150),
    TopicSpec("app-logs", "log", 2, "lz4", 800, 5000, 1 << 20, flush_every=100, client="confluent-kafka"),
    TopicSpec("device-binary", "binary", 2, "snappy", 600, 5000, 1 << 20, flush_every=60),
    TopicSpec("archive-blobs", "compressed", 1, "gzip", 200, 5000, 1 << 20, flush_every=25),
    TopicSpec("raw-metrics", "json", 2, "none", 400, 5000, 1 << 20, flush_every=50),
)


def confluent_available() -> bool:
    try:
        import confluent_kafka  # noqa: F401
    except ImportError:
        return False
    return True


def _values(kind: str, n: int, seed: int) -> List[bytes]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        if kind == "json":
            out.append(json.dumps({"event": rng.choice(["view", "click", "buy"]), "user": rng.randrange(5000),
                                   "page": f"/product/{rng.randrange(300)}", "ts": 1_700_000_000_000 + i,
                                   "price_cents": rng.randrange(20000)}).encode())
        elif kind == "log":
            out.append((f"2026-11-24T12:00:{i % 60:02d}Z {rng.choice(['INFO', 'WARN', 'ERROR'])} "
                        f"[worker-{rng.randrange(16)}] request done status={rng.choice([200, 404, 500])} "
                        f"duration_ms={rng.randrange(900)}").encode())
        elif kind == "binary":
            # protobuf-like: fixed field tags and a device id around a random payload
            out.append(b"\x0a\x10device-%08d\x12\x04v2.1\x1a" % rng.randrange(2000)
                       + bytes(rng.randrange(256) for _ in range(16 + rng.randrange(48)))
                       + b"\x22\x0bfirmware-ok\x28\x01")
        elif kind == "compressed":
            import zlib

            text = " ".join(rng.choice(["alpha", "beta", "gamma", "delta"]) for _ in range(300)).encode()
            out.append(zlib.compress(text, 9))
        else:
            raise ValueError(kind)
    return out


def _create_topics(bootstrap: str, specs: Sequence[TopicSpec], connection: Mapping[str, Any]) -> None:
    from kafka import KafkaAdminClient
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap, **connection)
    try:
        admin.create_topics([NewTopic(s.name, s.partitions, 1) for s in specs])
    finally:
        admin.close()


def _produce_kafka_python(bootstrap: str, spec: TopicSpec, values: List[bytes],
                          connection: Mapping[str, Any]) -> None:
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type=None if spec.compression == "none"
                             else spec.compression, linger_ms=spec.linger_ms, batch_size=spec.batch_size,
                             acks=1, **connection)
    try:
        for i, value in enumerate(values):
            producer.send(spec.name, value=value, key=b"k%d" % (i % 97), partition=i % spec.partitions)
            if spec.flush_every and (i + 1) % spec.flush_every == 0:
                producer.flush()
        producer.flush()
    finally:
        producer.close()


def _produce_confluent(bootstrap: str, spec: TopicSpec, values: List[bytes]) -> None:
    from confluent_kafka import Producer

    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "compression.type": spec.compression,
                         "linger.ms": spec.linger_ms, "batch.size": spec.batch_size, "acks": 1,
                         "enable.idempotence": False})
    for i, value in enumerate(values):
        producer.produce(spec.name, value=value, key=b"k%d" % (i % 97), partition=i % spec.partitions,
                         on_delivery=lambda err, msg: errors.append(err) if err else None)
        if spec.flush_every and (i + 1) % spec.flush_every == 0:
            producer.flush(30)
    if producer.flush(30) or errors:
        raise RuntimeError(f"confluent-kafka could not deliver to {spec.name}: {errors[:3]}")


def produce_estate(bootstrap: str, specs: Sequence[TopicSpec] = ESTATE, seed: int = 11,
                   connection: Optional[Mapping[str, Any]] = None) -> List[TopicSpec]:
    """Create and fill ``specs``' topics; a confluent-kafka topic falls back to kafka-python where
    confluent-kafka is not installed, or where ``connection`` (kafka-python's arguments for a
    secured listener) is given.  Returns the specs as produced."""
    produced = []
    for spec in specs:
        if spec.client == "confluent-kafka" and (connection or not confluent_available()):
            spec = TopicSpec(**{**spec.__dict__, "client": "kafka-python"})
        produced.append(spec)
    _create_topics(bootstrap, produced, connection or {})
    for n, spec in enumerate(produced):
        values = _values(spec.kind, spec.records, seed + n)
        if spec.client == "confluent-kafka":
            _produce_confluent(bootstrap, spec, values)
        else:
            _produce_kafka_python(bootstrap, spec, values, connection or {})
    return produced


def fetch_partition(bootstrap: str, topic: str, partition: int, offset: int = 0, max_bytes: int = 1 << 30,
                    stop: Optional[int] = None, timeout_s: float = 10.0) -> bytes:
    """The batches of a partition from ``offset`` (to ``stop``, else the high watermark), at most
    ``max_bytes`` of them, as the broker returns them: read as advise's Spark tasks read a chunk."""
    from kcodec.advise.inputs.cluster.fetch import _Reader

    reader = _Reader(bootstrap, timeout_s)
    try:
        return reader.read(topic, partition, offset, stop, max_bytes).data
    finally:
        reader.close()


def mirror_to_log_dir(bootstrap: str, specs: Sequence[TopicSpec], log_dir: Path) -> Dict[Tuple[str, int], bytes]:
    """Write each partition's fetched batches to ``log_dir/topic-partition`` with LogWriter;
    returns the bytes written per partition."""
    from kcodec.log import LogWriter

    written = {}
    for spec in specs:
        for p in range(spec.partitions):
            data = fetch_partition(bootstrap, spec.name, p)
            with LogWriter(Path(log_dir) / f"{spec.name}-{p}") as writer:
                writer.append(data)
            written[(spec.name, p)] = data
    return written


def build_estate(bootstrap: str, log_dir: Path, specs: Sequence[TopicSpec] = ESTATE):
    """Produce ``specs`` to the broker and mirror them into ``log_dir``: (specs as produced, bytes per partition)."""
    produced = produce_estate(bootstrap, specs)
    return produced, mirror_to_log_dir(bootstrap, produced, log_dir)
