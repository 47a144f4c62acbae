"""Lower bounds for the speed targets, measured on this machine in one run.

    python bench/floors.py                  # every target
    python bench/floors.py --workload w1    # just W1

compare.py measures what kcodec achieves; this script measures what no
implementation can beat while doing the same work, so a missed target can
be told apart from an impossible one.  A floor adds only the steps a
target's operation cannot skip, each timed alone on the workload's own
sizes, in CPU time, best of --reps, with compare.py's malloc settings, and
each counted at its cheapest:

* reading the input from memory once, as fast as numpy's vectorised xor
  reads it (no checksum, no parsing);
* CRC-32C computed on data in cache ("hot"), by the fastest backend this
  CPU has: validation is on by default, and a builder writes one; this is
  the checksum's compute alone, as if its memory reads were free;
* writing the bytes that must move, from a source in cache: a binary Arrow
  column stores each key and value contiguously while a batch interleaves
  them with record framing, so to_arrow must copy them into its columns;
  object reads must copy every value into a ``bytes`` (counted as writes
  into the same cached memory, since the benchmark frees each at once);
  builders must write every record (a compressing builder into one
  buffer it reuses, so in cache);
* the codec library's own work, which includes reading its input and
  writing its output.  The targets are measured against compare.py's "raw"
  closures, each library's plainest call; kcodec must instead write the
  frames Java writes (to be byte-identical) and read them: snappy in 32 KiB
  blocks, lz4 with independent blocks, zstd streamed without a content
  size.  The floor counts the cheaper of the library's own calls on those
  frames (``_kafka_frames``) and kcodec's codec call on them (native for
  lz4 and zstd), so for compressed cells "no" means "not with these
  libraries";
* for the object API (W1's targets and every W2/W3 build and read), the
  benchmark's own Python loop with kcodec taken out: building, the loop
  that unpacks each batch's record tuples into ``append``'s arguments,
  without the call; reading, the loop over ready-made record
  objects that reads ``key`` and ``value`` and counts (creating those
  objects is not counted).

Destinations are touched before timing, so page faults are not counted, and
per-record work (varints, offsets, Python objects) is not counted at all.
The "reachable" column says "no" when one of those steps alone takes
longer than the target allows (to_arrow at 20x aiokafka's read may take
1/20 of aiokafka's read time), "unlikely" when only their sum does (steps
timed apart can overlap in a real implementation, and kcodec's own codec
path can beat the raw library call, as its native lz4 does), and "open"
otherwise.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare  # noqa: E402

from kcodec import get_codec, read_batches  # noqa: E402
from kcodec._native.primitives import crc32c  # noqa: E402

_CHUNK = 1 << 20  # fits in L2: a source or CRC input "in cache"


def _write_time(nbytes: int, reps: int, reused: bool = False) -> float:
    """Copy nbytes from a source in cache into a large destination (touched beforehand),
    or with ``reused`` into the same cached chunk again and again (as values copied into
    ``bytes`` objects that are freed at once land in recycled heap memory)."""
    src = np.frombuffer(os.urandom(_CHUNK), np.uint8)
    dst = np.zeros(_CHUNK if reused else max(nbytes, _CHUNK), np.uint8)
    if reused:
        return compare.best(lambda: [np.copyto(dst, src) for _ in range(nbytes // _CHUNK)]
                            + [np.copyto(dst[:nbytes % _CHUNK], src[:nbytes % _CHUNK])], reps)

    def run():
        for pos in range(0, nbytes - _CHUNK + 1, _CHUNK):
            dst[pos:pos + _CHUNK] = src
        rest = nbytes % _CHUNK
        if rest:
            dst[nbytes - rest:nbytes] = src[:rest]
    return compare.best(run, reps)


def _read_time(batches: List[bytes], reps: int) -> float:
    """Read every byte once from memory, as fast as numpy's vectorised xor goes: no checksum, no parsing."""
    blob = np.frombuffer(b"".join(batches), np.uint8)
    words = blob[:len(blob) // 8 * 8].view(np.uint64)
    return compare.best(lambda: np.bitwise_xor.reduce(words), reps)


def _crc_hot_time(nbytes: int, reps: int) -> float:
    chunk = os.urandom(min(nbytes, 64 * 1024) or 1)
    loops, rest = divmod(nbytes, len(chunk))
    tail = chunk[:rest]
    return compare.best(lambda: ([crc32c(chunk) for _ in range(loops)], crc32c(tail)), reps)


def _kafka_frames(codec: str, regions: List[bytes], payloads: List[bytes]):
    """The codec library's cheapest calls that write and read the frames Kafka uses.

    compare.py's raw closures are each library's plainest call, but Java
    writes (and kcodec must write, to be byte-identical, and read) other
    frames: snappy in 32 KiB blocks (xerial), lz4 frames with independent
    64 KiB blocks, zstd from a streaming compressor with no content size in
    the frame header.  Block tables are found before timing; ``payloads``
    are the batches' compressed records regions as kcodec wrote them.
    """
    if codec == "gzip":
        import zlib

        def comp():
            out = []
            for r in regions:
                c = zlib.compressobj(6, zlib.DEFLATED, 31)
                out.append(c.compress(r) + c.flush())
            return out
        return comp, lambda: [zlib.decompress(p, 31) for p in payloads]
    if codec == "snappy":
        import cramjam

        from kcodec._native.codecs import snappy_scan

        views = [memoryview(r) for r in regions]
        blocks = []
        for p in payloads:
            v = memoryview(p)
            blocks.extend(v[off:off + size] for off, size, _ in snappy_scan(p, 1 << 40)[1])
        return (lambda: [cramjam.snappy.compress_raw(v[i:i + 32768]) for v in views for i in range(0, len(v), 32768)],
                lambda: [cramjam.snappy.decompress_raw(b) for b in blocks])
    if codec == "lz4":
        import lz4.block

        from kcodec._native.codecs import lz4_scan

        views = [memoryview(r) for r in regions]
        blocks = []
        for p in payloads:
            v = memoryview(p)
            blocks.extend((v[off:off + size], stored) for off, size, stored in lz4_scan(p)[1])
        return (lambda: [lz4.block.compress(v[i:i + 65536], store_size=False)
                         for v in views for i in range(0, len(v), 65536)],
                lambda: [bytes(b) if stored else lz4.block.decompress(b, uncompressed_size=65536)
                         for b, stored in blocks])
    import zstandard

    from kcodec._native.codecs import zstd_scan

    compressor, decompressor = zstandard.ZstdCompressor(level=3), zstandard.ZstdDecompressor()

    def comp():
        out = []
        for r in regions:
            c = compressor.compressobj()
            out.append(c.compress(r) + c.flush(zstandard.COMPRESSOBJ_FLUSH_BLOCK)
                       + c.flush(zstandard.COMPRESSOBJ_FLUSH_FINISH))
        return out
    bounds = [zstd_scan(p)[2] for p in payloads]
    return comp, lambda: [decompressor.decompress(p, max_output_size=b) for p, b in zip(payloads, bounds)]


class _Rec:
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key = key
        self.value = value


def _harness(keys, values, records, ranges, reps: int) -> Tuple[float, float]:
    """compare.py's build and read loops with kcodec's work taken out.

    Building unpacks every record tuple as the build loop does but makes no
    call.  Unpacking takes a reference to each item, so the loop touches the
    tuple and the key, value and headers objects where they lie in memory,
    and those cache misses are part of any builder's time.  Reading loops
    over references to 64 ready-made record objects, in cache as a record
    just made is.
    """
    def build():
        for recs in records:
            for ts, key, value, hs in recs:
                pass

    pool = [_Rec(keys[i], values[i]) for i in range(64)]
    made = [[pool[i % 64] for i in r] for r in ranges]

    def read():
        c = 0
        for batch in made:
            for rec in batch:
                rec.key
                rec.value
                c += 1

    return compare.best(build, reps), compare.best(read, reps)


def measure(workload: str, codec: str, reps: int) -> Dict[str, float]:
    keys, values, headers, limit = compare.make_workload(workload, 1.0)
    ranges = compare.cut_batches(keys, values, headers, limit)
    n = len(values)
    records = compare.batch_records(keys, values, headers, ranges)
    batches = compare.kc_build_batches(codec, records)
    stored = sum(len(b) for b in batches)
    # the records regions as written uncompressed (each batch's bytes after its 61-byte header)
    regions = [b[61:] for b in (batches if codec == "none" else compare.kc_build_batches("none", records))]
    uncompressed = sum(61 + len(r) for r in regions)
    payload = sum(len(v) for v in values) + sum(len(k) for k in keys if k) + \
        sum(len(hk) + len(hv) for h in headers for hk, hv in h)
    out = {"records": n, "read input": _read_time(batches, reps),
           "crc hot": _crc_hot_time(stored, reps),
           "write payload": _write_time(payload, reps),
           "write values": _write_time(sum(len(v) for v in values), reps, reused=True),
           "write records": _write_time(uncompressed, reps),
           # a compressing builder can write its records into one cached buffer, batch after batch
           "write records hot": _write_time(uncompressed, reps, reused=True)}
    out["harness build"], out["harness read"] = _harness(keys, values, records, ranges, reps)
    if codec == "none":
        from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
        build, read = compare._peer(DefaultRecordBatchBuilder, DefaultRecordBatch, 0, records, batches, n)
        out["aiokafka build"] = compare.best(build, reps)
        out["aiokafka read"] = compare.best(read, reps)
        # reading the table's values from memory once, as "read input" reads the batches
        out["read columns"] = _read_time([b"".join(values)], reps)
    else:
        raw = compare._raw(codec, records)
        out["raw compress"] = compare.best(raw[0], reps)
        out["raw decompress"] = compare.best(raw[1], reps)
        payloads = [b[61:] for b in batches]
        comp, dec = _kafka_frames(codec, regions, payloads)
        # kcodec's own codec calls do the same work and can be faster (native lz4): the cheaper counts.
        kc = get_codec(codec)
        out["kafka frames compress"] = min(compare.best(comp, reps),
                                           compare.best(lambda: [kc.compress(r) for r in regions], reps))
        out["kafka frames decompress"] = min(compare.best(dec, reps),
                                             compare.best(lambda: [kc.decompress(p) for p in payloads], reps))
    # sanity: the batches are what kcodec reads
    assert sum(b.record_count for b in read_batches(b"".join(batches))) == n
    return out


Part = Tuple[str, float]


def floors(workload: str, codec: str, m: Dict[str, float]) -> List[Tuple[str, List[Part], float]]:
    """(target, the steps it cannot skip with their times, the time the target allows)."""
    rows: List[Tuple[str, List[Part], float]] = []

    def part(*names: str) -> List[Part]:
        return [(name, m[name]) for name in names]

    if codec == "none":
        rows.append(("to_arrow >= 20x aiokafka read", part("read input", "crc hot", "write payload"),
                     m["aiokafka read"] / 20))
        rows.append(("from_arrow >= 10x aiokafka build", part("read columns", "write records", "crc hot"),
                     m["aiokafka build"] / 10))
        rows.append(("object read >= 3x aiokafka read", part("harness read", "read input", "crc hot", "write values"),
                     m["aiokafka read"] / 3))
        rows.append(("object build >= 3x aiokafka build",
                     part("harness build", "read columns", "write records", "crc hot"), m["aiokafka build"] / 3))
    else:
        # The allowed time is the library's plainest call's; the work kcodec cannot skip is on Kafka's frames.
        cname, dname = "kafka frames compress", "kafka frames decompress"
        rows.append(("build <= 1.15x raw compress", part("harness build", "write records hot", cname, "crc hot"),
                     1.15 * m["raw compress"]))
        rows.append(("read <= 1.15x raw decompress",
                     part("harness read", dname, "crc hot", "write values"), 1.15 * m["raw decompress"]))
        rows.append(("to_arrow <= 1.15x raw decompress", part(dname, "crc hot", "write payload"),
                     1.15 * m["raw decompress"]))
    return rows


def verdict(parts: List[Part], allowed: float) -> str:
    """"no": one step alone takes longer than allowed; "unlikely": the steps add up to more
    (timed apart, they may overlap in a real implementation, and kcodec's codec path can beat
    the raw library call, as its native lz4 does); "open": the floor leaves room."""
    if max(t for _, t in parts) > allowed:
        return "no"
    return "unlikely" if sum(t for _, t in parts) > allowed else "open"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--workload", action="append", choices=["w1", "w2", "w3"])
    p.add_argument("--codec", action="append", choices=compare.CODECS)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    cells = []
    for w in args.workload or ["w1", "w2", "w3"]:
        for c in args.codec or (["none"] if w == "w1" else ["gzip", "snappy", "lz4", "zstd"]):
            if (w == "w1") != (c == "none"):
                continue  # the targets name W1 uncompressed and W2/W3 compressed
            cells.append((w, c))
    print(f"{'cell':<11} {'target':<34} {'floor ms':>9} {'allowed ms':>11} {'floor/allowed':>14}  "
          f"{'reachable':<9}  steps (ms)")
    for w, c in cells:
        m = measure(w, c, args.reps)
        for target, parts, allowed in floors(w, c, m):
            floor = sum(t for _, t in parts)
            steps = ", ".join(f"{name} {t * 1e3:.2f}" for name, t in parts)
            print(f"{w + ' ' + c:<11} {target:<34} {floor * 1e3:>9.2f} {allowed * 1e3:>11.2f} "
                  f"{floor / allowed:>13.2f}x  {verdict(parts, allowed):<9}  {steps}", flush=True)
        if c != "none":
            print(f"{'':<11} the targets' reference: raw compress {m['raw compress'] * 1e3:.2f} ms, "
                  f"raw decompress {m['raw decompress'] * 1e3:.2f} ms", flush=True)
    return 0


if __name__ == "__main__":
    compare._reexec_with_malloc_env(__file__)
    sys.exit(main())
