"""Peak memory and speed of ``kcodec.read_arrow`` over a log directory larger than 1 GiB.

    python bench/read_arrow.py                       # 1.06 GiB of 1 KiB records, uncompressed
    python bench/read_arrow.py --gib 2 --codec zstd --value-bytes 200
    python bench/read_arrow.py --json --stream-only  # one JSON line (the test suite reads it)

The log (two partitions; segments roll at Kafka's default 1 GiB; written
with ``from_arrow`` and ``LogWriter``) is made in a temporary folder and
removed afterwards.  A fresh interpreter then streams it through
``read_arrow`` batch by batch and reports its peak resident memory
(``VmHWM``) above what it held before the first batch, and records/s by
the wall clock, against one ``to_arrow`` call per whole segment already
read into memory (the fastest conversion, memory growing with the log).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

sys.path.append(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # an installed kcodec comes first

GIB = 1 << 30
T0 = 1_700_000_000_000

_READ = textwrap.dedent("""
    import json, resource, sys, time
    import kcodec

    def peak_kib():
        # VmHWM is this program's own high-water mark; ru_maxrss also counts the parent's
        # resident size at fork, which Linux carries over exec.
        try:
            with open("/proc/self/status") as f:
                return next(int(line.split()[1]) for line in f if line.startswith("VmHWM:"))
        except OSError:
            return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss

    kcodec.kafka_schema()  # pyarrow and kcodec's columnar modules loaded before the baseline
    path, chunk_bytes = sys.argv[1], int(sys.argv[2])
    base = peak_kib()
    rows = 0
    t0 = time.perf_counter()
    for batch in kcodec.read_arrow(path, chunk_bytes=chunk_bytes):
        rows += batch.num_rows
    seconds = time.perf_counter() - t0
    peak = peak_kib()
    # the same segments each read whole and converted in one to_arrow call (memory grows with them)
    import glob
    whole = 0.0
    for name in sorted(glob.glob(path + "/*/*.log")) if sys.argv[3] == "compare" else []:
        with open(name, "rb") as f:
            data = f.read()
        t0 = time.perf_counter()
        table = kcodec.to_arrow(data)
        whole += time.perf_counter() - t0
        del table, data
    print(json.dumps({"rows": rows, "seconds": seconds, "base_mb": base / 1024, "peak_mb": peak / 1024,
                      "to_arrow_seconds": whole}))
""")


def write_log(root: Path, total_bytes: int, value_bytes: int = 1000, codec: str = "none",
              partitions: int = 2) -> int:
    """Random values (incompressible halves) in ``partitions`` folders; returns the record count."""
    import numpy as np
    import pyarrow as pa

    import kcodec
    from kcodec.log import LogWriter

    n = max(1, (64 << 20) // (value_bytes + 20))
    rng = np.random.default_rng(1)
    half = rng.integers(0, 256, n * (value_bytes // 2), dtype=np.uint8).reshape(n, -1)
    data = np.concatenate([half, np.zeros((n, value_bytes - half.shape[1]), np.uint8)], axis=1).tobytes()
    offsets = np.arange(n + 1, dtype=np.int64) * value_bytes
    values = pa.Array.from_buffers(pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])
    table = pa.table({"key": pa.array([b"key-%d" % (i % 1000) for i in range(n)]), "value": values,
                      "timestamp": pa.array(T0 + np.arange(n, dtype=np.int64), pa.int64())})
    per_round = sum(len(b) for b in kcodec.from_arrow(table, compression=codec, max_batch_bytes=1 << 20))
    rounds = -(-total_bytes // (per_round * partitions))
    for p in range(partitions):
        with LogWriter(root / f"big-{p}") as w:  # Kafka's default 1 GiB segments
            for r in range(rounds):
                for batch in kcodec.from_arrow(table, compression=codec, base_offset=r * n,
                                               max_batch_bytes=1 << 20):
                    w.append(batch)
    return rounds * n * partitions


def measure(root: Path, chunk_bytes: int, compare: bool) -> dict:
    """One streaming pass over ``root`` in a fresh interpreter (then to_arrow's, if ``compare``)."""
    import kcodec

    # the kcodec this script imports (installed, or a checkout with in-place builds), run from
    # the log's folder so that no source folder in the working directory can stand in for it
    env = dict(os.environ, PYTHONPATH=str(Path(kcodec.__file__).resolve().parents[1]))
    out = subprocess.run([sys.executable, "-c", _READ, str(root), str(chunk_bytes), "compare" if compare else "-"],
                         capture_output=True, text=True, check=True, cwd=root, env=env)
    return json.loads(out.stdout)


def main(argv=None) -> int:
    from kcodec.log.arrow_reader import DEFAULT_CHUNK_BYTES

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--gib", type=float, default=1.06, help="log size in GiB (default 1.06)")
    ap.add_argument("--value-bytes", type=int, default=1000)
    ap.add_argument("--codec", default="none")
    ap.add_argument("--chunk-bytes", type=int, default=DEFAULT_CHUNK_BYTES)
    ap.add_argument("--json", action="store_true", help="print one JSON line")
    ap.add_argument("--stream-only", action="store_true", help="skip the to_arrow comparison")
    args = ap.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="kcodec-read-arrow-"))
    try:
        records = write_log(root, int(args.gib * GIB), args.value_bytes, args.codec)
        size = sum(f.stat().st_size for f in root.glob("*/*.log"))
        result = measure(root, args.chunk_bytes, not args.stream_only)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    result.update(records=records, log_bytes=size, chunk_bytes=args.chunk_bytes, codec=args.codec,
                  value_bytes=args.value_bytes)
    if args.json:
        print(json.dumps(result))
        return 0
    grown = result["peak_mb"] - result["base_mb"]
    print(f"log: {size / GIB:.2f} GiB, {records:,} records of {args.value_bytes} B values, codec {args.codec}")
    print(f"read_arrow (chunk_bytes {args.chunk_bytes:,}): {result['rows']:,} rows in {result['seconds']:.2f} s = "
          f"{result['rows'] / result['seconds'] / 1e6:.2f} M records/s, "
          f"{size / result['seconds'] / 1e6:,.0f} MB/s of log")
    print(f"peak RSS {result['peak_mb']:.0f} MB, {grown:.0f} MB above the interpreter's {result['base_mb']:.0f} MB")
    if not args.stream_only:
        print(f"to_arrow of each whole segment already in memory: {result['to_arrow_seconds']:.2f} s; "
              f"read_arrow's rate / to_arrow's = {result['to_arrow_seconds'] / result['seconds']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
