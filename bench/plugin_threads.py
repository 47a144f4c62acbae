"""The kcodec-libdeflate plugin's gzip through kcodec's native paths: threads and per-batch overhead.

    python bench/plugin_threads.py [--scale 0.5] [--reps 7]

On compare.py's W1 (small JSON events, 2 headers, batches <= 16 KiB), for
the plugin's gzip and the built-in gzip (zlib), each registered in turn:

* (a, b) threads: the builder (``append_many`` per batch, no Python call
  per record) and ``to_arrow(use_threads=False)`` over all batches on one
  thread, then the same work split in two halves on two threads, by the
  wall clock, the two threads kept between runs.  The codec is called
  through its ``kcodec/codec.h`` capsule without the GIL, so two threads on
  two idle cores approach 2x; the goal is 1.7x.
* (c) per-batch overhead: for each codec, the CPU time kcodec spends per
  batch beyond the codec itself -- the builder's time minus the codec's own
  compress of the same records regions through its capsule
  (``NativeCodec.compress_into``, into one reused buffer), and
  ``to_arrow``'s time minus the codec's ``decompress_into`` of the same
  batches' payloads -- one figure per round, the median reported.  The goal:
  the plugin's overhead at most 1.05 times the built-in's.  The difference is
  also shown against the built-in's whole time per batch.

Every figure is taken in rounds that run every job once in turn (one
warm-up round dropped), so that a busy spell of the machine falls on all of
them alike, and reported as best, median and worst with the load average
before and after.  A GIL-free control (hashlib's sha256 on 4 MiB) on one and
two threads, timed in the same rounds, shows what two threads can gain on
the machine at that moment: on a machine shared with other work it is below
2x, and the plugin's figure with it.

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
from statistics import median
from typing import Callable, Dict, List

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


def rounds(jobs: Dict[str, Callable[[], object]], reps: int, clock: Callable[[], float]) -> Dict[str, List[float]]:
    """Each job's times over ``reps`` rounds, every round running every job once in turn, so that a
    busy spell of the machine falls on all of them alike; a first round warms up and is dropped."""
    times: Dict[str, List[float]] = {k: [] for k in jobs}
    for _ in range(reps + 1):
        for name, fn in jobs.items():
            t = clock()
            fn()
            times[name].append(clock() - t)
    return {k: v[1:] for k, v in times.items()}


def using(codec, fn: Callable[[], object]) -> Callable[[], object]:
    """``fn`` run with ``codec`` registered for gzip (the builder and the readers find it there)."""
    def run():
        register_codec(codec, replace=True)
        return fn()
    return run


def spread(v: List[float]) -> str:
    return f"best {min(v) * 1e3:7.1f} ms, median {median(v) * 1e3:7.1f}, worst {max(v) * 1e3:7.1f}"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", type=float, default=0.5, help="share of compare.py's 200,000 W1 records")
    parser.add_argument("--reps", type=int, default=7, help="timed rounds (after one warm-up round)")
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    keys, values, headers, limit = make_workload("w1", args.scale)
    ranges = cut_batches(keys, values, headers, limit)
    stamps = [T0 + i for i in range(len(values))]
    nb, half = len(ranges), len(ranges) // 2

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

    def to_arrow(blob) -> Callable[[], object]:
        return lambda: kcodec.to_arrow(blob, use_threads=False)

    with tempfile.TemporaryDirectory() as tmp:
        codecs = {"built-in": GzipCodec(), "plugin": _plugin_class(tmp)()}
        overhead_jobs: Dict[str, Callable[[], object]] = {}
        thread_jobs: Dict[str, Callable[[], object]] = {}
        try:
            for label, codec in codecs.items():
                register_codec(codec, replace=True)
                assert type(get_codec("gzip")) is type(codec)
                native = NativeCodec(codec.native_codec(), codec)
                batches = build(ranges)
                blob = b"".join(batches)
                assert kcodec.to_arrow(blob, use_threads=False).num_rows == len(values)
                payloads = [bytes(memoryview(b)[61:]) for b in batches]
                level = codec.resolve_level(None)
                out = bytearray(max(native.compress_bound(len(r), level) for r in regions))
                room = bytearray(max(len(r) for r in regions))
                cut = sum(len(b) for b in batches[:half])
                overhead_jobs.update({
                    f"{label} build": using(codec, lambda: build(ranges)),
                    f"{label} compress": lambda native=native, out=out, level=level: [
                        native.compress_into(r, out, level) for r in regions],
                    f"{label} to_arrow": using(codec, to_arrow(blob)),
                    f"{label} decompress": lambda native=native, room=room, payloads=payloads: [
                        native.decompress_into(p, room) for p in payloads],
                })
                thread_jobs.update({
                    f"{label} build 1": using(codec, lambda: build(ranges)),
                    f"{label} build 2": using(codec, lambda: on_threads([lambda: build(ranges[:half]),
                                                                         lambda: build(ranges[half:])])),
                    f"{label} to_arrow 1": using(codec, to_arrow(blob)),
                    f"{label} to_arrow 2": using(codec, lambda blob=blob, cut=cut: on_threads(
                        [to_arrow(blob[:cut]), to_arrow(blob[cut:])])),
                })
            thread_jobs.update({"control 1": lambda: control(2),
                                "control 2": lambda: on_threads([lambda: control(1), lambda: control(1)])})
            cpu = rounds(overhead_jobs, args.reps, time.process_time)
            wall = rounds(thread_jobs, args.reps, time.perf_counter)
        finally:
            unregister_codec("gzip")
    load_after = os.getloadavg()

    print(f"W1 x{args.scale}: {len(values)} records in {nb} batches of <= 16 KiB; {args.reps} rounds; "
          f"{len(os.sched_getaffinity(0))} cores")
    print("load average (1, 5, 15 min): before " + ", ".join(f"{x:.2f}" for x in load_before)
          + "; after " + ", ".join(f"{x:.2f}" for x in load_after))
    print("\n(a, b) two threads against one, wall clock, each half of the batches on its own thread")
    gain = {}
    for label in (*codecs, "control"):
        for path in (("build", "to_arrow") if label != "control" else ("sha256, GIL-free",)):
            key = label if label == "control" else f"{label} {path}"
            one, two = wall[f"{key} 1"], wall[f"{key} 2"]
            print(f"  {label} {path}: 1 thread {spread(one)}; 2 threads {spread(two)}")
            gain[key] = min(one) / min(two)
            print(f"      speed-up {gain[key]:.2f}x (best), {median(one) / median(two):.2f}x (median)"
                  + ("   [goal >= 1.7x]" if label == "plugin" else ""))
    print(f"  plugin against the control: build {gain['plugin build'] / gain['control']:.2f}, "
          f"to_arrow {gain['plugin to_arrow'] / gain['control']:.2f} of what two threads gained on GIL-free work")

    print("\n(c) per-batch overhead: the path's CPU time less the codec's own work on the same bytes "
          "(its capsule called directly), per batch")
    over = {}
    for label in codecs:
        for path, part in (("build", "compress"), ("to_arrow", "decompress")):
            whole, alone = cpu[f"{label} {path}"], cpu[f"{label} {part}"]
            per = [(w - a) / nb * 1e6 for w, a in zip(whole, alone)]  # one figure per round
            over[label, path] = (median(per), min(whole) / nb * 1e6)
            print(f"  {label} {path}: {min(whole) / nb * 1e6:6.1f} us per batch, codec alone "
                  f"{min(alone) / nb * 1e6:6.1f} us; overhead median {median(per):5.2f} us "
                  f"(rounds {min(per):.2f} .. {max(per):.2f})")
    for path in ("build", "to_arrow"):
        (op, _), (ob, whole_b) = over["plugin", path], over["built-in", path]
        print(f"  {path}: plugin overhead {op:.2f} us / built-in {ob:.2f} us = {op / ob:.2f}  "
              f"[goal <= 1.05]; difference {op - ob:+.2f} us = {(op - ob) / whole_b:+.1%} "
              f"of the built-in's {whole_b:.1f} us per batch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
