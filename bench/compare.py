"""kcodec against kafka-python, aiokafka and the raw codec libraries, on the same data, in one run.

    python bench/compare.py                 # all workloads and codecs
    python bench/compare.py --quick         # a tenth of the records
    python bench/compare.py --workload w1 --codec none --codec zstd
    python bench/compare.py --workload w2 --workload w3 --peer aiokafka

Workloads (deterministic):
  w1  200,000 small JSON-like events, 16-byte keys, 2 headers, batches <= 16 KiB
  w2  100,000 log lines of ~1 KiB, no key, batches <= 1 MiB
  w3   20,000 incompressible 4 KiB values, no key, batches <= 1 MiB

Every implementation builds the same batches (the records are cut into
batches once, by kcodec's batch.size rule) and reads the same bytes (built by
kcodec).  "build" = records -> complete v2 batches, one append() call per
record.  Each batch's records are given as (timestamp, key, value, headers)
tuples, made once before timing, as a producer holds them and as
peerbench's adapters receive them; every implementation runs the same loop
over them (a bound ``append``, the tuple unpacked into its arguments), so
the loop costs every implementation the same.  "build, bulk" (uncompressed
only, shown for information; the targets are per record) is append_many()
over each batch's slices of the record lists.  "read" = CRC check,
decompression and every record's key and value as Python objects (object
APIs) or as Arrow columns (to_arrow).  "raw" = the codec library alone on
each batch's uncompressed records region: the ceiling for compressed
workloads.  "to_arrow" runs on one thread; "to_arrow, thr" is to_arrow's
default use_threads=True, timed by the wall clock and compared with the
peers' wall-clock times.  Other figures are the best of --reps passes in
process CPU time (robust on a shared machine), the passes taken in rounds
that time every implementation once, so that a slow spell of the machine
falls on all of them alike; ratios compare with kcodec's object API.
from_arrow cuts batches itself by the same batch.size rule (for compressed
codecs with estimated_compression_ratio 1/1.05, so the cuts match the
uncompressed ones); its batch count is printed when it differs.

The run ends with the per-call fixed cost on one small batch (W1's first 100
records): the decoding alone against ``decode_columns``, its capsule export
and ``to_arrow`` (see ``fixed_cost``).

Like peerbench, the script re-executes itself with glibc malloc set to keep
freed memory: otherwise every pass pays a page fault per 4 KiB of the ~100 MB
it allocates (about 1 GB/s on these VMs), for every implementation alike.
"""
from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import random
import sys
import time
from typing import Callable, Dict, List, Optional

import kcodec
from kcodec import RecordBatchBuilder, read_batches

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000
MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 1024 * 1024),
              "MALLOC_TRIM_THRESHOLD_": str(16 * 1024 ** 3),
              "MALLOC_TOP_PAD_": str(64 * 1024 * 1024)}


def make_workload(name: str, scale: float):
    rng = random.Random({"w1": 1, "w2": 2, "w3": 3}[name])
    if name == "w1":
        n, limit = int(200_000 * scale), 16 * 1024
        keys = [f"{rng.getrandbits(64):016x}".encode() for _ in range(n)]
        values = [('{"event":"%s","user":%d,"page":"/p/%d","ms":%d,"ok":%s,"pad":"%s"}' % (
            rng.choice(["view", "click", "buy"]), rng.randrange(10 ** 6), rng.randrange(500), rng.randrange(2000),
            rng.choice(["true", "false"]), "x" * rng.randint(40, 110))).encode() for _ in range(n)]
        headers = [[("trace-id", f"{i:012x}".encode()), ("source", b"web")] for i in range(n)]
    elif name == "w2":
        n, limit = int(100_000 * scale), 1024 * 1024
        words = "request completed status duration path user session cache miss retry backoff shard".split()
        keys = [None] * n
        values = [(f"2023-11-14T22:13:{i % 60:02d}Z INFO [svc-{i % 7}] " + " ".join(
            rng.choice(words) + "=" + str(rng.randrange(10 ** 4)) for _ in range(rng.randint(90, 120))))[:1100]
            .encode() for i in range(n)]
        headers = [[] for _ in range(n)]
    else:
        n, limit = int(20_000 * scale), 1024 * 1024
        keys = [None] * n
        values = [rng.randbytes(4096) for _ in range(n)]
        headers = [[] for _ in range(n)]
    return keys, values, headers, limit


def cut_batches(keys, values, headers, limit) -> List[range]:
    """Record ranges per batch: what a producer with enough linger sends for codec none."""
    out, start = [], 0
    b = RecordBatchBuilder(write_limit=limit)
    for i in range(len(values)):
        if not b.has_room_for(keys[i], values[i], headers[i], T0 + i):
            b.build()
            out.append(range(start, i))
            start = i
            b = RecordBatchBuilder(write_limit=limit)
        b.append(keys[i], values[i], T0 + i, headers[i])
    out.append(range(start, len(values)))
    return out


def best_of_rounds(fns: Dict[str, Callable], reps: int, wall: Optional[Dict[str, float]] = None
                   ) -> Dict[str, float]:
    """Each function's best CPU time over ``reps`` rounds, a round timing every function once.

    Interleaved, so that a slow spell of the machine falls on all of them
    alike instead of on whichever happened to be measured then.  ``wall``,
    when given, receives each function's best wall-clock time: the measure
    for code that runs on several threads, whose CPU time is their sum.
    """
    for fn in fns.values():
        fn()  # warm up
    times: Dict[str, List[float]] = {name: [] for name in fns}
    walls: Dict[str, List[float]] = {name: [] for name in fns}
    gc.disable()
    try:
        for _ in range(reps):
            for name, fn in fns.items():
                w, t = time.perf_counter(), time.process_time()
                fn()
                times[name].append(time.process_time() - t)
                walls[name].append(time.perf_counter() - w)
    finally:
        gc.enable()
    if wall is not None:
        wall.update({name: min(ts) for name, ts in walls.items()})
    return {name: min(ts) for name, ts in times.items()}


def best(fn: Callable, reps: int) -> float:
    fn()  # warm up
    times = []
    gc.disable()
    try:
        for _ in range(reps):
            t = time.process_time()
            fn()
            times.append(time.process_time() - t)
    finally:
        gc.enable()
    return min(times)


def run(workload: str, codec: str, scale: float, reps: int, peers=("aiokafka", "kafka-python")) -> Dict:
    keys, values, headers, limit = make_workload(workload, scale)
    ranges = cut_batches(keys, values, headers, limit)
    n = len(values)
    payload = sum(len(v) for v in values) + sum(len(k) for k in keys if k)

    records = batch_records(keys, values, headers, ranges)

    def kc_build():
        return kc_build_batches(codec, records)

    stamps = [T0 + i for i in range(n)]

    def kc_build_bulk():
        # append_many over each batch's slices of the lists: no Python call per record
        out = []
        for r in ranges:
            b = RecordBatchBuilder(compression=codec, write_limit=1 << 30)
            b.append_many(keys[r.start:r.stop], values[r.start:r.stop], stamps[r.start:r.stop],
                          headers[r.start:r.stop])
            out.append(b.build())
        return out

    batches = kc_build()
    blob = b"".join(batches)
    import pyarrow as pa
    table = pa.table({"key": pa.array(keys, pa.binary()), "value": pa.array(values, pa.binary()),
                      "timestamp": pa.array([T0 + i for i in range(n)], pa.int64()),
                      "headers": pa.array([[{"key": k, "value": v} for k, v in h] or None for h in headers],
                                          kcodec.kafka_schema().field("headers").type)})

    def kc_read():
        c = 0
        for batch in read_batches(blob):
            for rec in batch:
                rec.key
                rec.value
                c += 1
        assert c == n

    ratio = 1.0 if codec == "none" else 1 / 1.05

    def kc_from_arrow():
        return kcodec.from_arrow(table, compression=codec, max_batch_bytes=limit, estimated_compression_ratio=ratio)

    def kc_to_arrow():
        assert kcodec.to_arrow(blob, use_threads=False).num_rows == n

    def kc_to_arrow_threads():
        assert kcodec.to_arrow(blob).num_rows == n

    results = {"workload": workload, "codec": codec, "records": n, "payload_mb": payload / 1e6,
               "stored_mb": len(blob) / 1e6, "batches": len(batches), "from_arrow_batches": len(kc_from_arrow())}
    fns = {"kcodec build": kc_build, "kcodec read": kc_read, "kcodec from_arrow": kc_from_arrow,
           "kcodec to_arrow": kc_to_arrow, "kcodec to_arrow, thr": kc_to_arrow_threads}
    if codec == "none":  # with a codec, the codec's time hides the difference
        assert kc_build_bulk() == batches
        fns["kcodec build, bulk"] = kc_build_bulk
    for name, (build, read) in _peers(codec, records, batches, n, peers).items():
        fns[f"{name} build"] = build
        fns[f"{name} read"] = read
    raw = _raw(codec, records)
    if raw is not None:
        fns["raw compress"], fns["raw decompress"] = raw
    results["wall_seconds"] = {}
    results["seconds"] = best_of_rounds(fns, reps, results["wall_seconds"])
    return results


def batch_records(keys, values, headers, ranges) -> List[List[tuple]]:
    """Each batch's records as ``(timestamp, key, value, headers)`` tuples, the build loops' input."""
    return [[(T0 + i, keys[i], values[i], headers[i]) for i in r] for r in ranges]


def kc_build_batches(codec: str, records: List[List[tuple]]) -> list:
    """kcodec's build: one ``append`` per record, one batch per list of records.

    Each implementation's batches are kept as its ``build()`` returns them
    (kcodec: ``bytes``; aiokafka and kafka-python: ``bytearray``), as
    peerbench's adapters keep them: a conversion would be the benchmark's
    copy, not the library's.
    """
    out = []
    for recs in records:
        b = RecordBatchBuilder(compression=codec, write_limit=1 << 30)
        append = b.append
        for ts, key, value, hs in recs:
            append(key, value, ts, hs)
        out.append(b.build())
    return out


def peer_build_batches(builder_cls, codec_id: int, records: List[List[tuple]]) -> list:
    """A client library's build (aiokafka, kafka-python) in kcodec's loop; their append takes the offset."""
    out = []
    for recs in records:
        b = builder_cls(2, codec_id, False, -1, -1, -1, 1 << 30)
        append = b.append
        offset = 0
        for ts, key, value, hs in recs:
            append(offset, ts, key, value, hs)
            offset += 1
        out.append(b.build())
    return out


def _peer(builder_cls, batch_cls, codec_id, records, batches, n):
    """Build and read closures over a client library's v2 record classes (aiokafka, kafka-python)."""
    def build():
        peer_build_batches(builder_cls, codec_id, records)

    def read():
        c = 0
        for data in batches:
            b = batch_cls(data)
            b.validate_crc()
            for rec in b:
                rec.key
                rec.value
                c += 1
        assert c == n

    return build, read


def _peers(codec, records, batches, n, which=("aiokafka", "kafka-python")):
    peers = {}
    codec_id = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}[codec]
    args = (codec_id, records, batches, n)
    try:
        if "aiokafka" in which:
            from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
            peers["aiokafka"] = _peer(DefaultRecordBatchBuilder, DefaultRecordBatch, *args)
    except ImportError:
        pass
    try:
        if "kafka-python" in which:
            from kafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
            peers["kafka-python"] = _peer(DefaultRecordBatchBuilder, DefaultRecordBatch, *args)
    except ImportError:
        pass
    return peers


def _raw(codec, records):
    if codec == "none":
        return None
    regions = [b[61:] for b in kc_build_batches("none", records)]
    if codec == "gzip":
        import zlib
        comp = functools.partial(zlib.compress, level=6)
        dec = zlib.decompress
    elif codec == "snappy":
        import cramjam

        def comp(d):
            return bytes(cramjam.snappy.compress_raw(d))

        def dec(d):
            return bytes(cramjam.snappy.decompress_raw(d))
    elif codec == "lz4":
        import lz4.frame
        comp = functools.partial(lz4.frame.compress, block_size=lz4.frame.BLOCKSIZE_MAX64KB, content_checksum=False)
        dec = lz4.frame.decompress
    else:
        import zstandard
        comp = zstandard.ZstdCompressor(level=3).compress
        dec = zstandard.ZstdDecompressor().decompress
    compressed = [comp(x) for x in regions]
    return (lambda: [comp(x) for x in regions]), (lambda: [dec(x) for x in compressed])


def report(rows: List[Dict]) -> str:
    lines = []
    for r in rows:
        s = r["seconds"]
        n = r["records"]
        lines.append(f"\n{r['workload']} {r['codec']}: {n} records, {r['payload_mb']:.1f} MB payload, "
                     f"{r['batches']} batches, stored {r['stored_mb']:.1f} MB")
        if r.get("from_arrow_batches", r["batches"]) != r["batches"]:
            lines.append(f"  (from_arrow cut {r['from_arrow_batches']} batches)")
        lines.append(f"  {'implementation':<22} {'M rec/s':>9} {'MB/s':>8} {'vs kcodec object':>17}")
        wall = r.get("wall_seconds", {})
        for name, sec in s.items():
            clock = wall if name in THREADED else s
            sec = clock[name]
            base = clock["kcodec build"] if "build" in name or "from_arrow" in name or "compress" in name and \
                "decompress" not in name else clock["kcodec read"]
            lines.append(f"  {name:<22} {n / sec / 1e6:>9.2f} {r['payload_mb'] / sec:>8.0f} {sec / base:>16.2f}x")
        for peer in ("aiokafka", "kafka-python"):
            if f"{peer} build" in s:
                bulk = (f" (bulk {s[peer + ' build'] / s['kcodec build, bulk']:.2f}x)"
                        if "kcodec build, bulk" in s else "")
                lines.append(f"  kcodec/{peer}: build {s[peer + ' build'] / s['kcodec build']:.2f}x{bulk}, "
                             f"read {s[peer + ' read'] / s['kcodec read']:.2f}x, "
                             f"from_arrow {s[peer + ' build'] / s['kcodec from_arrow']:.2f}x, "
                             f"to_arrow {s[peer + ' read'] / s['kcodec to_arrow']:.2f}x faster")
                if "kcodec to_arrow, thr" in wall:
                    lines.append(f"  kcodec/{peer}: to_arrow on threads "
                                 f"{wall[peer + ' read'] / wall['kcodec to_arrow, thr']:.2f}x faster (wall clock)")
        if "raw compress" in s:
            lines.append(f"  kcodec time / raw codec time: build {s['kcodec build'] / s['raw compress']:.2f}, "
                         f"from_arrow {s['kcodec from_arrow'] / s['raw compress']:.2f}, "
                         f"read {s['kcodec read'] / s['raw decompress']:.2f}, "
                         f"to_arrow {s['kcodec to_arrow'] / s['raw decompress']:.2f}")
    return "\n".join(lines)


#: Rows timed by the wall clock: their CPU time is the sum of their threads'.
THREADED = ("kcodec to_arrow, thr",)

TARGETS = [
    # (workload, codec or None for the compressed codecs, label, numerator, denominator, bound, higher is better)
    ("w1", "none", "object build vs aiokafka", "aiokafka build", "kcodec build", 3.0, True),
    ("w1", "none", "object read vs aiokafka", "aiokafka read", "kcodec read", 3.0, True),
    ("w1", "none", "to_arrow vs aiokafka read", "aiokafka read", "kcodec to_arrow", 20.0, True),
    ("w1", "none", "from_arrow vs aiokafka build", "aiokafka build", "kcodec from_arrow", 10.0, True),
]
RAW_TARGETS = [("build / raw compress", "kcodec build", "raw compress"),
               ("from_arrow / raw compress", "kcodec from_arrow", "raw compress"),
               ("read / raw decompress", "kcodec read", "raw decompress"),
               ("to_arrow / raw decompress", "kcodec to_arrow", "raw decompress")]


def targets(rows: List[Dict]) -> str:
    """The project's speed targets, met or not, for the rows that were run."""
    lines = ["\nTargets", f"  {'cell':<10} {'measure':<30} {'value':>7} {'target':>8}  met"]
    for r in rows:
        s, cell = r["seconds"], f"{r['workload']} {r['codec']}"
        for w, c, label, num, den, bound, higher in TARGETS:
            if r["workload"] == w and r["codec"] == c and num in s:
                v = s[num] / s[den]
                lines.append(f"  {cell:<10} {label:<30} {v:>6.2f}x {'>=' if higher else '<='}{bound:>5.2f}x  "
                             f"{'yes' if v >= bound else 'NO'}")
                w = r.get("wall_seconds", {})
                if den == "kcodec to_arrow" and "kcodec to_arrow, thr" in w:
                    v = w[num] / w["kcodec to_arrow, thr"]
                    lines.append(f"  {cell:<10} {'  on threads, wall clock':<30} {v:>6.2f}x "
                                 f"{'>=' if higher else '<='}{bound:>5.2f}x  {'yes' if v >= bound else 'NO'}")
        if r["workload"] in ("w2", "w3") and "raw compress" in s:
            for label, num, den in RAW_TARGETS:
                v = s[num] / s[den]
                lines.append(f"  {cell:<10} {label:<30} {v:>6.2f}x {'<=':>3}{1.15:>5.2f}x  "
                             f"{'yes' if v <= 1.15 else 'NO'}")
    return "\n".join(lines)


def fixed_cost(reps: int, calls: int = 2000) -> Dict[str, Dict[str, float]]:
    """Per-call fixed cost on one small batch: W1's first 100 records in one batch, per codec.

    Each figure is the best of ``reps`` rounds of ``calls`` calls (wall clock,
    microseconds per call).  "decode" is the decoding alone: the native pass
    over an uncompressed batch, or the batch reader and the native gather
    for a compressed one.  "decode_columns" is the public call returning the
    object that hands the columns over through the Arrow PyCapsule protocol,
    "+ export" that and the ArrowArray capsule taken from it, "to_arrow" the
    pyarrow.Table built on it.
    """
    import timeit

    from kcodec._native.columnar import columns_uncompressed_v2

    try:
        from kcodec.arrow.gather import gather
        from kcodec.arrow.options import DecodeOptions

        def general(batches, unsized):
            return gather(batches, unsized, DecodeOptions())
    except ImportError:  # a kcodec from before kcodec.arrow was a package (before_after.py's --before)
        from kcodec.arrow import _general  # type: ignore[attr-defined]

        def general(batches, unsized):
            return _general(batches, unsized, (), False, True, True)

    keys, values, headers, _ = make_workload("w1", 0.0005)
    out = {}
    for codec in ("none", "lz4"):
        b = RecordBatchBuilder(compression=codec)
        for i in range(len(values)):
            b.append(keys[i], values[i], T0 + i, headers[i])
        batch = bytes(b.build())
        if codec == "none":
            decode = lambda: columns_uncompressed_v2(batch)  # noqa: E731
        else:
            decode = lambda: general(read_batches(batch, pool=kcodec.BufferPool()), len(batch))  # noqa: E731
        fns = {"decode": decode,
               "decode_columns": lambda: kcodec.decode_columns(batch),
               "decode_columns + export": lambda: kcodec.decode_columns(batch).__arrow_c_array__(),
               "to_arrow": lambda: kcodec.to_arrow(batch)}
        for fn in fns.values():
            fn()
        best_us = {name: float("inf") for name in fns}
        for _ in range(reps):  # interleaved rounds, as in best_of_rounds
            for name, fn in fns.items():
                best_us[name] = min(best_us[name], timeit.timeit(fn, number=calls) / calls * 1e6)
        out[f"{codec} ({len(values)} records, {len(batch)} B)"] = best_us
    return out


def fixed_cost_report(costs: Dict[str, Dict[str, float]]) -> str:
    lines = ["\nPer-call fixed cost on one small batch (us per call; above decode = the fixed cost)"]
    for batch, us in costs.items():
        lines.append(f"  {batch}")
        for name, t in us.items():
            extra = "" if name == "decode" else f"  +{t - us['decode']:.2f}"
            lines.append(f"    {name:<24} {t:>8.2f}{extra}")
    return "\n".join(lines)


# ---------------------------------------------------------------------------
# to_arrow(views=True): binary_view columns against the copying to_arrow and aiokafka's read

VIEWS_TARGETS = [("w1", "none", "views vs copying to_arrow", "kcodec to_arrow", 2.0),
                 ("w1", "none", "views vs aiokafka read", "aiokafka read", 20.0)]

# The input is read into a buffer of its exact size (a plain read() would leave freed pages that
# to_arrow's columns could reuse unseen), and pyarrow imported, before the peak is taken.  The peak
# is VmHWM, which exec resets (ru_maxrss would keep the forking benchmark's own peak).
_PEAK_CHILD = """
import gc, os, sys
import pyarrow
import kcodec
def peak_mb():
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
blob = bytearray(os.path.getsize(sys.argv[1]))
with open(sys.argv[1], "rb", buffering=0) as f:
    f.readinto(blob)
kcodec.to_arrow(blob[:0])
gc.collect()
before = peak_mb()
table = kcodec.to_arrow(blob, use_threads=False, views=sys.argv[2] == "views")
print(peak_mb() - before)
"""


def views_row(workload: str, codec: str, scale: float, reps: int) -> Dict:
    """Views, copies and aiokafka's read on the same bytes (CPU time, one thread), and each path's peak memory.

    Peak memory is what ``to_arrow`` adds to a fresh interpreter's peak
    resident size with the input already read (the input itself not
    counted), measured in a child process per path.
    """
    import subprocess
    import tempfile

    keys, values, headers, limit = make_workload(workload, scale)
    records = batch_records(keys, values, headers, cut_batches(keys, values, headers, limit))
    batches = kc_build_batches(codec, records)
    blob, n = b"".join(batches), len(values)
    fns = {"kcodec to_arrow, views": lambda: kcodec.to_arrow(blob, use_threads=False, views=True),
           "kcodec to_arrow": lambda: kcodec.to_arrow(blob, use_threads=False)}
    peers = _peers(codec, records, batches, n, ("aiokafka",))
    if "aiokafka" in peers:
        fns["aiokafka read"] = peers["aiokafka"][1]
    peak = {}
    with tempfile.NamedTemporaryFile(suffix=".kafka") as f:
        f.write(blob)
        f.flush()
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(os.path.abspath(kcodec.__file__))), os.environ.get("PYTHONPATH", "")]))
        for path in ("views", "copies"):
            out = subprocess.run([sys.executable, "-c", _PEAK_CHILD, f.name, path], env=env, check=True,
                                 capture_output=True, text=True)
            peak[path] = float(out.stdout.split()[-1])
    return {"workload": workload, "codec": codec, "records": n, "stored_mb": len(blob) / 1e6,
            "seconds": best_of_rounds(fns, reps), "peak_mb": peak}


def views_report(rows: List[Dict]) -> str:
    lines = ["\nto_arrow(views=True) against the copying to_arrow and aiokafka's read (CPU time, one thread)",
             f"  {'cell':<10} {'views M rec/s':>13} {'copies M rec/s':>14} {'views/copies':>12} "
             f"{'views/aiokafka':>14} {'peak MB views':>13} {'copies':>7}"]
    for r in rows:
        s, n = r["seconds"], r["records"]
        views = s["kcodec to_arrow, views"]
        vs_peer = f"{s['aiokafka read'] / views:>13.1f}x" if "aiokafka read" in s else f"{'-':>14}"
        lines.append(f"  {r['workload'] + ' ' + r['codec']:<10} {n / views / 1e6:>13.2f} "
                     f"{n / s['kcodec to_arrow'] / 1e6:>14.2f} {s['kcodec to_arrow'] / views:>11.2f}x {vs_peer} "
                     f"{r['peak_mb']['views']:>13.1f} {r['peak_mb']['copies']:>7.1f}")
    for r in rows:
        for w, c, label, other, bound in VIEWS_TARGETS:
            if (r["workload"], r["codec"]) == (w, c) and other in r["seconds"]:
                v = r["seconds"][other] / r["seconds"]["kcodec to_arrow, views"]
                lines.append(f"  target {w} {c}: {label} {v:.2f}x >= {bound:.0f}x  {'yes' if v >= bound else 'NO'}")
    return "\n".join(lines)


def environment(codecs=CODECS) -> str:
    """What the figures depend on besides kcodec: the CPU, the CRC-32C code and the codec libraries.

    Runs on different machines differ most in these (a CPU with AVX-512 folds
    CRC-32C about three times faster than one without), so each report names them.
    """
    import platform

    from kcodec._native.primitives import crc32c_backend

    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next((line.split(":", 1)[1].strip() for line in f if line.startswith("model name")), cpu)
    except OSError:
        pass
    parts = [f"{cpu}, {os.cpu_count()} cores", f"Python {platform.python_version()}",
             f"CRC-32C {crc32c_backend()}"]
    for name in codecs:
        if name == "none":
            continue
        try:
            parts.append(f"{name}: {kcodec.get_codec(name).backend}")
        except kcodec.KcodecError as exc:
            parts.append(f"{name}: {exc}")
    return "; ".join(parts)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", action="append", choices=["w1", "w2", "w3"])
    p.add_argument("--codec", action="append", choices=CODECS)
    p.add_argument("--reps", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a tenth of the records")
    p.add_argument("--peer", action="append", choices=["aiokafka", "kafka-python"],
                   help="client libraries to run (default both; kafka-python is pure Python and takes minutes "
                        "on W2/W3)")
    p.add_argument("--json", help="also write the raw figures here")
    args = p.parse_args(argv)
    env = environment(args.codec or CODECS)
    print(f"machine: {env}", flush=True)
    rows = []
    for w in args.workload or ["w1", "w2", "w3"]:
        for c in args.codec or CODECS:
            peers = tuple(args.peer or ("aiokafka", "kafka-python"))
            rows.append(run(w, c, 0.1 if args.quick else 1.0, args.reps, peers))
            print(report(rows[-1:]), flush=True)
    print(targets(rows), flush=True)
    costs = fixed_cost(max(args.reps, 60), 200)  # many short rounds: the quietest moments count
    print(fixed_cost_report(costs), flush=True)
    views = [views_row(w, c, 0.1 if args.quick else 1.0, args.reps) for w in args.workload or ["w1", "w2", "w3"]
             if w in ("w1", "w2") for c in args.codec or CODECS]
    if views:
        print(views_report(views), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"machine": env, "rows": rows, "fixed_cost_us": costs, "views": views}, f, indent=1)
    return 0


def _reexec_with_malloc_env(script: str = __file__) -> None:
    if os.environ.get("KCODEC_BENCH_MALLOC_DEFAULTS") or all(os.environ.get(k) == v for k, v in MALLOC_ENV.items()):
        return
    os.environ.update(MALLOC_ENV)
    os.execv(sys.executable, [sys.executable, os.path.abspath(script)] + sys.argv[1:])


if __name__ == "__main__":
    _reexec_with_malloc_env()
    sys.exit(main())
