"""A small Kafka estate for ``kcodec advise`` tests: topics of distinct data, codecs, levels and batch shapes.

Each topic's batches are built with a known number of records per batch, so
the advisor's profile can be checked exactly.  ``java-json`` holds batches the
Kafka Java client wrote (the oracle's golden vectors), with base offsets
renumbered (the base offset is outside the batch CRC).
"""
from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path
from typing import Dict, List

import numpy as np

import kcodec
from kcodec.log import write_partition

FIXTURES = Path(__file__).parent / "fixtures" / "oracle"


def _table(values: List[bytes], keys, start_ms: int, step_ms: float):
    import pyarrow as pa

    ts = (start_ms + np.arange(len(values)) * step_ms).astype(np.int64) * 1000
    return pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                     "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC"))})


def _batches(table, per_batch: int, codecs, base: int = 0) -> List[bytes]:
    """Batches of exactly ``per_batch`` records, codec (and level) cycling through ``codecs``."""
    out = []
    for i, a in enumerate(range(0, table.num_rows, per_batch)):
        codec, level = codecs[i % len(codecs)]
        out.extend(kcodec.from_arrow(table.slice(a, per_batch), compression=codec, level=level,
                                     max_batch_bytes=2 ** 31 - 1, base_offset=base + a))
    return out


def _rebase(batch: bytes, offset: int) -> bytes:
    return struct.pack(">q", offset) + batch[8:]


def java_batches(copies: int) -> List[bytes]:
    """Java-written snappy and zstd batches of 100 JSON records, alternating, offsets contiguous."""
    snappy = (FIXTURES / "v2_snappy_json100.bin").read_bytes()
    zstd = (FIXTURES / "v2_zstd_json100.bin").read_bytes()
    return [_rebase(snappy if i % 2 == 0 else zstd, i * 100) for i in range(copies)]


def build_estate(root: Path, scale: int = 1) -> Dict[str, Dict]:
    """Write the estate under ``root``; returns, per topic, what was written (codec bytes, records per batch)."""
    rng = np.random.default_rng(11)
    n = 2000 * scale
    expected: Dict[str, Dict] = {}

    def write(topic: str, partition: int, batches: List[bytes]) -> None:
        write_partition(root / f"{topic}-{partition}", [b"".join(batches)])
        exp = expected.setdefault(topic, {"codec_bytes": {}, "records_per_batch": None, "batches": 0})
        exp["batches"] += len(batches)
        for b in batches:
            codec = kcodec.CompressionType(b[22] & 7).kafka_name
            exp["codec_bytes"][codec] = exp["codec_bytes"].get(codec, 0) + len(b)

    events = [(b'{"event":"%s","user":%d,"page":"/product/%d","ts":%d,"agent":"Mozilla/5.0"}'
               % ((b"view", b"click", b"buy")[i % 3], i % 977, i % 131, 1_700_000_000_000 + i)) for i in range(n)]
    keys = [b"user-%d" % (i % 977) for i in range(n)]
    half = n // 2
    for p in range(2):
        t = _table(events[p * half:(p + 1) * half], keys[p * half:(p + 1) * half], 1_700_000_000_000, 2)
        write("events-json", p, _batches(t, 100, [("zstd", 3)]))
    expected["events-json"]["records_per_batch"] = 100

    lines = [b"2024-01-01T00:00:%02d.%03dZ INFO [checkout-api] request done status=200 duration_ms=%d path=/cart"
             % (i % 60, i % 1000, i % 97) for i in range(n)]
    write("logs-text", 0, _batches(_table(lines, [None] * n, 1_700_000_000_000, 1), 50, [("gzip", 1)]))
    expected["logs-text"]["records_per_batch"] = 50

    blobs = [rng.integers(0, 256, 200, dtype=np.uint8).tobytes() for _ in range(n // 2)]
    write("binary", 0, _batches(_table(blobs, [None] * len(blobs), 1_700_000_000_000, 5), 20,
                                [("lz4", None), ("none", None)]))
    expected["binary"]["records_per_batch"] = 20

    packed = [zlib.compress(events[i] * 4, 6) for i in range(n // 2)]
    write("precompressed", 0, _batches(_table(packed, keys[:len(packed)], 1_700_000_000_000, 3), 10,
                                       [("none", None)]))
    expected["precompressed"]["records_per_batch"] = 10

    write("java-json", 0, java_batches(10 * scale))
    expected["java-json"]["records_per_batch"] = 100

    # Java's segment across message-format upgrades: v0 and v1 message sets, then v2 batches with
    # transaction markers (control batches carry no data records) and LogAppendTime batches.
    doc = json.loads((FIXTURES / "segment_mixed.json").read_text())
    write_partition(root / "legacy-mixed-0", [(FIXTURES / "segment_mixed.bin").read_bytes()])
    codec_bytes: Dict[str, int] = {}
    for b in doc["batches"]:
        codec_bytes[b["compression"]] = codec_bytes.get(b["compression"], 0) + b["sizeInBytes"]
    expected["legacy-mixed"] = {
        "codec_bytes": codec_bytes, "records_per_batch": None,
        "batches": sum(1 for b in doc["batches"] if not b.get("isControlBatch")),
        "magic": {m: sum(1 for b in doc["batches"] if b["magic"] == m) for m in range(3)}}
    return expected
