"""``kcodec advise`` on a generated estate of at least 10 GiB in 8 topics, on local[2].

Writes the estate (once; kept under ``--dir``), runs the advisor with its default
sample (``--sample auto``) and grid on it and reports the wall time, then measures
each topic's compression ratio on *all* of its batches (uncompressed size =
61-byte header + decompressed records, over stored size) and compares it with the
ratio the advisor found on its sample, beside how far ``--sample auto`` read
(chunks, what stopped it, the interval it reached for the recommended setting's
ratio).  Goal: every topic within +/-1%, the advisor under 3 minutes.

    python bench/advise_scale.py --dir /tmp/advise-estate [--gib 10]
    python bench/advise_scale.py --dir /tmp/advise-500 --topics 500   # 500 topics of 4-40 MiB each

The data drifts over time (each segment is cut from a different generation of
records) and differs between partitions, so a sample that is not spread over
partitions and time would miss the topic's ratio.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

TEMPLATE = 8 << 20  # stored bytes of records generated per (partition, generation)
SEGMENT = 128 << 20
PARTITIONS = 2
GENERATIONS = 6

# topic -> (kind, codec, level, batch.size)
TOPICS = {
    "clicks-json": ("json", "zstd", 3, 65536),
    "app-logs": ("logs", "gzip", 6, 16384),
    "telemetry-bin": ("binary", "lz4", None, 16384),
    "images": ("packed", "none", None, 1 << 20),
    "orders-json": ("json", "snappy", None, 16384),
    "metrics-text": ("logs", "lz4", None, 262144),
    "audit-json": ("json", "zstd", 1, 16384),
    "events-plain": ("json", "none", None, 16384),
}


def _records(kind: str, n: int, rng: np.random.Generator, drift: float):
    """``n`` records of a kind; ``drift`` (0..1) changes how repetitive they are."""
    import pyarrow as pa

    vocab = max(4, int(64 * (1 + 7 * drift)))
    a = rng.integers(0, 1 << 30, n)
    b = rng.integers(0, vocab, n)
    if kind == "json":
        values = [b'{"event":"e%d","user":%d,"page":"/p/%d","amount":%d,"agent":"Mozilla/5.0 (X11; Linux)"}'
                  % (b[i], a[i] % 50000, b[i] * 7, a[i] % (1000 + int(drift * 1e6))) for i in range(n)]
    elif kind == "logs":
        values = [b"2024-05-01T10:%02d:%02dZ INFO [svc-%d] request path=/api/v1/item/%d status=200 took=%dms"
                  % (b[i] % 60, a[i] % 60, b[i], a[i] % (100 + int(drift * 1e5)), a[i] % 500) for i in range(n)]
    elif kind == "binary":
        body = rng.integers(0, 256, (n, 96), dtype=np.uint8)
        body[:, : int(48 * (1 - drift))] = 7  # a redundant prefix that shrinks over time
        values = [bytes(body[i]) for i in range(n)]
    else:
        values = [zlib.compress(b"pixel %d row %d " % (a[i], b[i]) * 20, 6) for i in range(n)]
    keys = [b"k%d" % (x % 10000) for x in a]
    ts = (1_700_000_000_000 + np.arange(n) * 2).astype(np.int64) * 1000
    return pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                     "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC"))})


def _template(kind, codec, level, batch_size, seed, drift, target=TEMPLATE) -> list:
    """About ``target`` stored bytes of batches."""
    import kcodec

    rng = np.random.default_rng(seed)
    out, size = [], 0
    while size < target:
        for b in kcodec.from_arrow(_records(kind, min(20000, max(500, target // 40)), rng, drift), compression=codec,
                                   level=level, max_batch_bytes=batch_size):
            out.append(b)
            size += len(b)
    return out


def _write_partition(args) -> int:
    """One partition: GENERATIONS templates, repeated to fill the partition's share, offsets renumbered.
    ``topic`` is one of :data:`TOPICS`, or one of them with a ``-NNNN`` suffix (an estate of many)."""
    from kcodec.log import LogWriter

    path, topic, partition, share = args
    kind, codec, level, batch_size = TOPICS[topic if topic in TOPICS else topic.rsplit("-", 1)[0]]
    # a partition smaller than GENERATIONS templates uses only a share of each: make no more than that
    target = min(TEMPLATE, max(256 << 10, share // GENERATIONS))
    templates = [_template(kind, codec, level, batch_size, zlib.crc32(f"{topic}-{partition}-{g}".encode()),
                           (g + partition * 0.5) / GENERATIONS, target) for g in range(GENERATIONS)]
    written, offset, g = 0, 0, 0
    per_generation = share // GENERATIONS
    with LogWriter(Path(path) / f"{topic}-{partition}", segment_bytes=SEGMENT) as w:
        while written < share:
            batches = templates[min(g, GENERATIONS - 1)]
            start = written
            while written - start < per_generation or (g == GENERATIONS - 1 and written < share):
                for b in batches:
                    count = int.from_bytes(b[57:61], "big")
                    w.append(offset.to_bytes(8, "big") + b[8:])
                    offset += count
                    written += len(b)
                if written >= share:
                    break
            g += 1
    return written


def make_estate(root: Path, gib: float) -> None:
    share = int(gib * (1 << 30) / len(TOPICS) / PARTITIONS) + 1
    jobs = [(str(root), t, p, share) for t in TOPICS for p in range(PARTITIONS)]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write_partition, jobs))
    (root / ".complete").write_text(json.dumps({"gib": gib}))


def make_many(root: Path, topics: int, smallest_mib: int = 4, largest_mib: int = 40) -> None:
    """``topics`` topics of one partition each, of ``smallest_mib`` to ``largest_mib`` MiB (evenly spread), of
    every kind in turn."""
    kinds = sorted(TOPICS)
    span = (largest_mib - smallest_mib) << 20
    jobs = [(str(root), f"{kinds[i % len(kinds)]}-{i:04d}", 0, (smallest_mib << 20) + ((i * 37) % 100) * span // 99)
            for i in range(topics)]
    with ProcessPoolExecutor(2) as pool:
        list(pool.map(_write_partition, jobs))
    (root / ".complete").write_text(json.dumps({"topics": topics, "mib": [smallest_mib, largest_mib]}))


def _full_ratio(part: Path):
    """(uncompressed, stored) bytes of every batch in a partition folder."""
    from kcodec.compression import get_codec
    from kcodec.records.framing import iter_entries

    plain = stored = 0
    for log in sorted(part.glob("*.log")):
        data = log.read_bytes()
        for e in iter_entries(data):
            codec = data[e.position + 22] & 7
            records = memoryview(data)[e.position + 61:e.position + e.size]
            plain += 61 + (len(records) if codec == 0 else len(get_codec(codec).decompress(records, magic=2)))
            stored += e.size
    return part.name.rsplit("-", 1)[0], plain, stored


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/advise-estate")
    ap.add_argument("--gib", type=float, default=10.0)
    ap.add_argument("--topics", type=int, help="instead: an estate of this many topics of 4-40 MiB each")
    ap.add_argument("--advise-args", default="", help="extra Options for the advisor: --name value ...")
    ap.add_argument("--make-only", action="store_true", help="write the estate and stop")
    args = ap.parse_args()
    root = Path(args.dir)
    if not (root / ".complete").exists():
        root.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        if args.topics:
            make_many(root, args.topics)
        else:
            make_estate(root, args.gib)
        print(f"estate written in {time.perf_counter() - t0:.0f}s")
    total = sum(f.stat().st_size for f in root.glob("*/*.log"))
    dirs = sum(1 for p in root.iterdir() if p.is_dir())
    print(f"estate: {total / (1 << 30):.2f} GiB in {dirs} partitions at {root}")
    if args.make_only:
        return 0

    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    os.environ.setdefault("KCODEC_SPARK_MASTER", "local[2]")
    extra = args.advise_args.split()
    opts = Options(inputs=[str(root)], master="local[2]", out_dir=str(root.parent / "advise-scale-report"),
                   progress=False)
    for i in range(0, len(extra), 2):
        setattr(opts, extra[i].lstrip("-").replace("-", "_"), extra[i + 1])
    t0 = time.perf_counter()
    result = run_advise(opts, log=lambda s: None)
    wall = time.perf_counter() - t0
    sys.path.insert(0, str(ROOT / "bench"))
    from datasource_read import tree_cpu_seconds

    cpu = tree_cpu_seconds(os.getpid())  # the driver, Spark's JVM and its Python workers
    sampled = {a.topic: (a.today.ratio, a.today.ratio_std, a.today.chunks) for a in result["advice"]}
    reach = {a.topic: a.sample for a in result["advice"]}

    t0 = time.perf_counter()
    with ProcessPoolExecutor(2) as pool:
        parts = list(pool.map(_full_ratio, sorted(p for p in root.iterdir() if p.is_dir())))
    full = {}
    for topic, plain, stored in parts:
        p, s = full.get(topic, (0, 0))
        full[topic] = (p + plain, s + stored)
    print(f"full ratios measured in {time.perf_counter() - t0:.0f}s")
    print(f"\nkcodec advise wall time on local[2]: {wall:.0f}s, {cpu:.0f} CPU s ({result['chunks']} chunks sampled, "
          f"grid "
          f"{opts.codecs} x {opts.batch_sizes} x linger {opts.lingers})\n")
    print(f"{'topic':<16} {'stored':>9} {'sampled ratio':>16} {'chunks':>6} {'full ratio':>10} {'diff':>7}  "
          f"--sample auto: stop, interval of the recommended setting's ratio")
    worst = 0.0
    stops: dict = {}
    for topic in sorted(full):
        plain, stored = full[topic]
        fr = plain / stored
        sr, sd, n = sampled[topic]
        diff = (sr - fr) / fr * 100
        worst = max(worst, abs(diff))
        r = reach.get(topic)
        if r is not None:
            stops.setdefault(r.stop, []).append(r.chunks)
        if len(full) > 20:
            continue
        auto = f"{r.stop}, +/-{r.half_width * 100:.2f}% ({r.setting}), {r.rounds} round(s)" if r is not None else "-"
        print(f"{topic:<16} {stored / (1 << 30):>7.2f}Gi {sr:>8.3f} +/- {sd:<5.3f} {n:>6} {fr:>10.3f} {diff:>+6.2f}%  "
              f"{auto}")
    for stop, counts in sorted(stops.items()):
        print(f"--sample auto stopped by {stop}: {len(counts)} topics, {min(counts)}-{max(counts)} chunks "
              f"(mean {sum(counts) / len(counts):.1f})")
    print(f"\nlargest difference {worst:.2f}% (goal 1%); wall {wall:.0f}s (goal 180s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
