"""The kcodec-libdeflate plugin's gzip through kcodec's native paths: threads and per-batch overhead.

    python bench/plugin_threads.py [--scale 0.5] [--reps 5]

On compare.py's W1 (small JSON events, 2 headers, batches <= 16 KiB), with
the plugin registered for gzip:

* threads: the builder (``append_many`` per batch, no Python call per
  record) and ``to_arrow(use_threads=False)`` over all batches on one
  thread, then the same work split in two halves on two threads, by the
  wall clock, the two threads kept between runs.  The plugin is called through its ``kcodec/codec.h`` capsule
  without the GIL, so two threads on two idle cores approach 2x.
* per-batch overhead: for the plugin and for the built-in gzip, the time
  kcodec spends per batch beyond the codec itself -- the builder's time
  minus the codec's own compress of the same records regions through its
  capsule (``NativeCodec.compress_into``, into one reused buffer), and
  ``to_arrow``'s time minus the codec's ``decompress_into`` of the same
  batches' payloads.  The difference plugin - built-in is shown against the
  built-in's whole time per batch.  Timed in process CPU time, best of
  ``--reps``.

A GIL-free control (hashlib's sha256 on 4 MiB) on one and two threads,
timed in the same rounds, shows what two threads can gain on the machine at
that moment: on a machine shared with other work it is below 2x.

The plugin is built from plugins/kcodec-libdeflate as bench_libdeflate.py
builds it when it is not installed.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from bench_libdeflate import _plugin_class  # noqa: E402
from compare import T0, cut_batches, make_workload  # noqa: E402

import kcodec  # noqa: E402
from kcodec import RecordBatchBuilder  # noqa: E402
from kcodec._native.native_codec import NativeCodec  # noqa: E402
from kcodec.compression import get_codec, register_codec, unregister_codec  # noqa: E402
from kcodec.compression.gzip import GzipCodec  # noqa: E402


def best(fn: Callable[[], object], reps: int, clock: Callable[[], float]) -> float:
    fn()
    times = []
    for _ in range(reps):
        t = clock()
        fn()
        times.append(clock() - t)
    return min(times)


#: Two threads kept for every run: a codec's per-thread state (the plugin's libdeflate
#: objects) is made once, as in a long-running consumer, not in every timed pass.
_POOL = ThreadPoolExecutor(2)


def on_threads(parts: List[Callable[[], object]]) -> None:
    for f in [_POOL.submit(p) for p in parts]:
        f.result()


_CONTROL = bytes(range(256)) * 16384  # 4 MiB


def control(k: int) -> None:
    """GIL-free work of a known size (hashlib releases the GIL on large inputs): what two threads
    can gain on this machine at this moment."""
    for _ in range(4 * k):
        hashlib.sha256(_CONTROL).digest()


def one_and_two(work, reps: int):
    """Wall-clock best of one thread doing each job whole and two threads doing its halves,
    taken in rounds (one, two, one, two, ...) so that a busy spell of the machine hits both."""
    times = {}
    for _ in range(reps + 1):
        for name, (whole, halves) in work.items():
            for key, fn in ((f"{name} 1 thread", whole), (f"{name} 2 threads", lambda: on_threads(halves))):
                t = time.perf_counter()
                fn()
                times.setdefault(key, []).append(time.perf_counter() - t)
    return {k: min(v[1:]) for k, v in times.items()}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.5, help="share of compare.py's 200,000 W1 records")
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args(argv)
    keys, values, headers, limit = make_workload("w1", args.scale)
    ranges = cut_batches(keys, values, headers, limit)
    stamps = [T0 + i for i in range(len(values))]

    def build(rs) -> List[bytes]:
        out = []
        for r in rs:
            b = RecordBatchBuilder(compression="gzip", write_limit=1 << 30)
            b.append_many(keys[r.start:r.stop], values[r.start:r.stop], stamps[r.start:r.stop],
                          headers[r.start:r.stop])
            out.append(b.build())
        return out

    # the records regions the builder compresses: the same batches uncompressed, less the header
    regions = []
    for r in ranges:
        b = RecordBatchBuilder(write_limit=1 << 30)
        b.append_many(keys[r.start:r.stop], values[r.start:r.stop], stamps[r.start:r.stop], headers[r.start:r.stop])
        regions.append(bytes(memoryview(b.build())[61:]))

    half = len(ranges) // 2
    with tempfile.TemporaryDirectory() as tmp:
        plugin_cls = _plugin_class(tmp)
        results = {}
        for label, codec in (("built-in gzip", GzipCodec()), ("plugin gzip", plugin_cls())):
            register_codec(codec, replace=True)
            try:
                assert type(get_codec("gzip")) is type(codec)
                native = NativeCodec(codec.native_codec(), codec)
                batches = build(ranges)
                blob = b"".join(batches)
                n = len(values)
                payloads = [bytes(memoryview(b)[61:]) for b in batches]
                level = codec.resolve_level(None)
                out = bytearray(max(native.compress_bound(len(r), level) for r in regions))
                room = bytearray(max(len(r) for r in regions))
                row = {
                    "build": best(lambda: build(ranges), args.reps, time.process_time),
                    "compress": best(lambda: [native.compress_into(r, out, level) for r in regions], args.reps,
                                     time.process_time),
                    "to_arrow": best(lambda: kcodec.to_arrow(blob, use_threads=False), args.reps,
                                     time.process_time),
                    "decompress": best(lambda: [native.decompress_into(p, room) for p in payloads], args.reps,
                                       time.process_time),
                }
                assert kcodec.to_arrow(blob, use_threads=False).num_rows == n
                cut = sum(len(b) for b in batches[:half])
                first, second = blob[:cut], blob[cut:]
                row.update(one_and_two({
                    "build": (lambda: build(ranges), [lambda: build(ranges[:half]), lambda: build(ranges[half:])]),
                    "to_arrow": (lambda: kcodec.to_arrow(blob, use_threads=False),
                                 [lambda: kcodec.to_arrow(first, use_threads=False),
                                  lambda: kcodec.to_arrow(second, use_threads=False)]),
                    "control": (lambda: control(2), [lambda: control(1), lambda: control(1)]),
                }, args.reps))
                results[label] = row
            finally:
                unregister_codec("gzip")
    nb = len(ranges)
    print(f"W1 x{args.scale}: {len(values)} records in {nb} batches of <= 16 KiB; best of {args.reps}")
    for label, row in results.items():
        print(f"{label}:")
        print(f"  build     {row['build'] * 1e3:8.1f} ms CPU, codec alone {row['compress'] * 1e3:8.1f} ms, "
              f"per-batch overhead {(row['build'] - row['compress']) / nb * 1e6:7.2f} us")
        print(f"  to_arrow  {row['to_arrow'] * 1e3:8.1f} ms CPU, codec alone {row['decompress'] * 1e3:8.1f} ms, "
              f"per-batch overhead {(row['to_arrow'] - row['decompress']) / nb * 1e6:7.2f} us")
        print(f"  two threads / one (wall): build {row['build 1 thread'] / row['build 2 threads']:.2f}x, "
              f"to_arrow {row['to_arrow 1 thread'] / row['to_arrow 2 threads']:.2f}x, "
              f"GIL-free control (sha256) {row['control 1 thread'] / row['control 2 threads']:.2f}x")
    b, p = results["built-in gzip"], results["plugin gzip"]
    for what, codec_part in (("build", "compress"), ("to_arrow", "decompress")):
        ob, op = (b[what] - b[codec_part]) / nb * 1e6, (p[what] - p[codec_part]) / nb * 1e6
        print(f"per-batch overhead, {what}: plugin {op:.2f} us, built-in {ob:.2f} us, "
              f"plugin - built-in {op - ob:+.2f} us = {(op - ob) / (b[what] / nb * 1e6):+.1%} "
              f"of the built-in's {b[what] / nb * 1e6:.1f} us per batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
