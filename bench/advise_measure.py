"""advise's measured CPU speeds against kcodec's builder and reader timed alone, in one run.

    python bench/advise_measure.py                 # the default grid's codecs, 1..1000 records a batch
    python bench/advise_measure.py --fit           # also fit kcodec/advise/cpu.py's model on the same runs

For each topic of advise's generated sample, codec and batch shape (records
per batch), the same batches are:

* measured by advise (:func:`kcodec.advise.measure.measure_build` and
  ``measure_read``, the functions a Spark task calls);
* built by the native builder alone: ``encode_columnar`` with the cuts, then
  ``compressed_batch`` per batch (``kcodec.from_arrow``'s path), timed here;
* built by :class:`kcodec.records.RecordBatchBuilder` record by record
  (``MemoryRecordsBuilder``'s way), timed here;
* read by ``kcodec.to_arrow(use_threads=False)`` alone, timed here.

Every time is thread CPU time, the minimum of --reps runs.  The ratio
columns are advise / alone: 1.00 means advise measures what the builder or
reader costs by itself.  With ``--fit`` the model of
:mod:`kcodec.advise.cpu` (CPU seconds = a x payload bytes + b x stored bytes
+ c x batches, per codec and level, compress and read) is fitted by least
squares on advise's measurements (the fastest repetition of each: load
only ever adds to CPU time) and printed as the table to paste there,
with the errors of the fit.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import kcodec  # noqa: E402
from kcodec._native.columnar import encode_columnar  # noqa: E402
from kcodec.advise.cpu import FEATURES, features, fit  # noqa: E402
from kcodec.advise.grid import parse_codecs  # noqa: E402
from kcodec.advise.inputs.generated.traffic import TOPICS, generate_traffic  # noqa: E402
from kcodec.advise.measure import ONE_BATCH, BatchEncoder, measure_build, measure_read  # noqa: E402
from kcodec.advise.profile import record_columns  # noqa: E402
from kcodec.arrow.encode import compressed_batches  # noqa: E402
from kcodec.compression import get_codec  # noqa: E402
from kcodec.records import RecordBatchBuilder  # noqa: E402


def min_cpu(fn, reps: int) -> float:
    """The fastest of ``reps`` runs of ``fn()``, in seconds of this thread's CPU time."""
    best = float("inf")
    for _ in range(reps):
        t0 = time.thread_time_ns()
        fn()
        best = min(best, (time.thread_time_ns() - t0) / 1e9)
    return best


def _native_alone(enc: BatchEncoder, starts: np.ndarray, codec: str, level):
    c = get_codec(codec)
    lvl = c.resolve_level(level)
    cols = (enc.n, enc.key, enc.value, enc.hdrs, enc.hkey, enc.hval, enc.ts, None, 0, ONE_BATCH, 1.0, c.id != 0)
    if c.id == 0:
        return lambda: encode_columnar(*cols, direct=(0, -1, -1, -1, -1, -1), cuts=starts)
    return lambda: list(compressed_batches(encode_columnar(*cols, cuts=starts), c, lvl))


def _builder_alone(table, starts: np.ndarray, codec: str, level):
    keys = table["key"].to_pylist()
    values = table["value"].to_pylist()
    ts = (table["timestamp"].cast("int64").to_numpy() // 1000).tolist()
    hdrs = [[(h["key"], h["value"]) for h in (x or [])] for x in table["headers"].to_pylist()]
    pairs = list(zip(starts[:-1].tolist(), starts[1:].tolist()))

    def run():
        out = []
        for a, b in pairs:
            builder = RecordBatchBuilder(compression=codec, level=level, base_offset=a)
            for i in range(a, b):
                builder.append(keys[i], values[i], ts[i], hdrs[i])
            out.append(builder.build())
        return out
    return run


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--records", type=int, default=60_000, help="records of the generated sample (all topics)")
    ap.add_argument("--codecs", default="none,gzip,snappy,lz4,zstd:1,3,9")
    ap.add_argument("--shapes", default="1,3,9,30,100,400,1000", help="records per batch")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--fit", action="store_true")
    ap.add_argument("--fit-only", action="store_true", help="advise's measurements and the fit, no timings alone")
    ap.add_argument("--dump", help="write advise's measurements (the fit's rows) to this JSON file")
    ap.add_argument("--from-dump", help="fit the rows of an earlier --dump instead of measuring")
    args = ap.parse_args()
    import pyarrow.compute as pc

    sample = generate_traffic(args.records) if not args.from_dump else None
    shapes = [int(s) for s in args.shapes.split(",")]
    codecs = parse_codecs(args.codecs)
    print(f"{'topic':<10} {'codec':<8} {'rec/b':>6} {'advise c MB/s':>14} {'native':>7} {'ratio':>6} "
          f"{'RBB':>7} {'ratio':>6} {'advise r MB/s':>14} {'to_arrow':>8} {'ratio':>6}")
    fit_rows: dict = {}
    worst: dict = {"native": [], "read": []}
    if args.from_dump:
        import json

        for codec, level, *row in json.loads(Path(args.from_dump).read_text()):
            fit_rows.setdefault((codec, level), []).append(row)
    for topic in TOPICS if not args.from_dump else ():
        table = sample.filter(pc.equal(sample["topic"], topic)).drop(["topic"])
        n = table.num_rows
        payload = int(record_columns(table)["payload"].sum())  # key, value and header bytes, as advise counts
        enc = BatchEncoder(table)
        for codec, level in codecs:
            for k in shapes:
                starts = np.unique(np.append(np.arange(0, n, k), n)).astype(np.int64)
                built, cs = measure_build(enc, starts, codec, level)
                rs = measure_read(built)
                fit_rows.setdefault((codec, level), []).append(
                    (payload, sum(len(b) for b in built), len(starts) - 1, n, cs.best, rs.best))
                if args.fit_only:
                    continue
                native = min_cpu(_native_alone(enc, starts, codec, level), args.reps)
                rbb = min_cpu(_builder_alone(table, starts, codec, level), max(1, args.reps // 2))
                blob = b"".join(built)
                alone_read = min_cpu(lambda: kcodec.to_arrow(blob, use_threads=False), args.reps)
                mb = payload / 1e6
                label = codec if level is None else f"{codec}:{level}"
                print(f"{topic:<10} {label:<8} {k:>6} {mb / cs.seconds:>8.0f} +-{100 * cs.spread / cs.seconds:>2.0f}% "
                      f"{mb / native:>7.0f} {native / cs.seconds:>6.2f} {mb / rbb:>7.0f} {rbb / cs.seconds:>6.2f} "
                      f"{mb / rs.seconds:>8.0f} +-{100 * rs.spread / rs.seconds:>2.0f}% {mb / alone_read:>8.0f} "
                      f"{alone_read / rs.seconds:>6.2f}")
                worst["native"].append(native / cs.seconds)
                worst["read"].append(alone_read / rs.seconds)
    for k, v in worst.items():
        if v:
            print(f"alone/advise ratio, {k}: min {min(v):.2f} median {np.median(v):.2f} max {max(v):.2f}")
    if args.dump:
        import json

        Path(args.dump).write_text(json.dumps([[k[0], k[1], *r] for k, rows in fit_rows.items() for r in rows]))
    if args.fit or args.fit_only:
        print(f"\n# (codec, level): build, read: ns per {', '.join(FEATURES)}; largest relative error of the fit")
        errors = []
        for key, rows in fit_rows.items():
            x = np.array([features(*r[:4]) for r in rows])
            coef, worst_err = [], 0.0
            for col in (4, 5):
                y = np.array([r[col] for r in rows])
                c = fit(x, y)
                pred = x @ c
                rel = np.abs(pred / y - 1)
                worst_err = max(worst_err, float(rel.max()))
                errors.extend(rel.tolist())
                coef.append("(" + ", ".join(f"{v * 1e9:.4g}" for v in c) + ")")
            print(f"    {key!r}: ({coef[0]}, {coef[1]}),  # largest error {worst_err * 100:.0f}%")
        print(f"# fit error over every measurement: median {np.median(errors) * 100:.0f}%, "
              f"90th percentile {np.percentile(errors, 90) * 100:.0f}%, largest {max(errors) * 100:.0f}%")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
