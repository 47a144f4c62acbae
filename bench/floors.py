"""Lower bounds for the speed targets, measured on this machine in one run.

    python bench/floors.py                  # every target
    python bench/floors.py --workload w1    # just W1

compare.py measures what kcodec achieves; this script measures what no
implementation can beat while doing the same work, so a missed target can
be told apart from an impossible one.  A floor adds only the steps a
target's operation cannot skip, each timed alone on the workload's own
bytes, in CPU time, best of --reps, with compare.py's malloc settings:

* CRC-32C of every batch (validation is on by default and kcodec's hardware
  CRC runs at memory speed; building must write the CRC too);
* one memcpy of the bytes that must move: a binary Arrow column stores each
  key and value contiguously, but in a batch they are interleaved with
  record framing, so to_arrow must copy them; object reads must copy every
  value into a ``bytes`` object;
* the raw codec call itself (compare.py's "raw" closures);
* for the object API, the benchmark's own Python loop with kcodec taken
  out: building, the loop that produces each ``append`` call's arguments;
  reading, the loop over ready-made record objects that reads ``key`` and
  ``value`` and counts (creating those objects is not counted).

Memory copies go into buffers that were touched before timing, so page
faults are not counted.  Per-record work (varints, offsets, Python objects)
is not counted at all: real floors are higher than these.

A target is infeasible when its floor already exceeds the time the target
allows (for example, to_arrow at 20x aiokafka's read may take 1/20 of
aiokafka's read time).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Tuple

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import compare  # noqa: E402

from kcodec import read_batches  # noqa: E402
from kcodec._native.primitives import crc32c  # noqa: E402


def _copy_time(nbytes: int, reps: int) -> float:
    src = np.frombuffer(os.urandom(1 << 20), np.uint8)
    src = np.resize(src, nbytes)
    dst = np.empty_like(src)
    dst.fill(0)  # fault the pages in before timing
    return compare.best(lambda: np.copyto(dst, src), reps)


def _crc_time(batches: List[bytes], reps: int) -> float:
    return compare.best(lambda: [crc32c(memoryview(b)[21:]) for b in batches], reps)


class _Rec:
    __slots__ = ("key", "value")

    def __init__(self, key, value):
        self.key = key
        self.value = value


def _harness(keys, values, headers, ranges, reps: int) -> Tuple[float, float]:
    """compare.py's build and read loops with kcodec's work taken out."""
    t0 = compare.T0

    def build():
        for r in ranges:
            for i in r:
                (keys[i], values[i], t0 + i, headers[i])

    records = [[_Rec(keys[i], values[i]) for i in r] for r in ranges]

    def read():
        c = 0
        for batch in records:
            for rec in batch:
                rec.key
                rec.value
                c += 1

    return compare.best(build, reps), compare.best(read, reps)


def measure(workload: str, codec: str, reps: int) -> Dict[str, float]:
    keys, values, headers, limit = compare.make_workload(workload, 1.0)
    ranges = compare.cut_batches(keys, values, headers, limit)
    n = len(values)
    batches = [bytes(compare._kc_batch(codec, keys, values, headers, r)) for r in ranges]
    payload = sum(len(v) for v in values) + sum(len(k) for k in keys if k) + \
        sum(len(hk) + len(hv) for h in headers for hk, hv in h)
    out = {"records": n, "crc": _crc_time(batches, reps), "copy_payload": _copy_time(payload, reps),
           "copy_values": _copy_time(sum(len(v) for v in values), reps)}
    if codec == "none":
        out["harness build"], out["harness read"] = _harness(keys, values, headers, ranges, reps)
        from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
        build, read = compare._peer(DefaultRecordBatchBuilder, DefaultRecordBatch, 0, keys, values, headers,
                                    ranges, batches, n)
        out["aiokafka build"] = compare.best(build, reps)
        out["aiokafka read"] = compare.best(read, reps)
    else:
        raw = compare._raw(codec, keys, values, headers, ranges)
        out["raw compress"] = compare.best(raw[0], reps)
        out["raw decompress"] = compare.best(raw[1], reps)
    # sanity: the batches are what kcodec reads
    assert sum(b.record_count for b in read_batches(b"".join(batches))) == n
    return out


def floors(workload: str, codec: str, m: Dict[str, float]) -> List[Tuple[str, float, float, str]]:
    """(target, floor seconds, allowed seconds, what the floor adds)."""
    rows = []
    if codec == "none":
        rows.append(("to_arrow >= 20x aiokafka read", m["crc"] + m["copy_payload"], m["aiokafka read"] / 20,
                     "CRC + copy of keys, values, headers"))
        rows.append(("from_arrow >= 10x aiokafka build", m["crc"] + m["copy_payload"], m["aiokafka build"] / 10,
                     "CRC + copy of keys, values, headers"))
        rows.append(("object read >= 3x aiokafka read", m["harness read"] + m["crc"] + m["copy_values"],
                     m["aiokafka read"] / 3, "loop over ready records + CRC + copy of values"))
        rows.append(("object build >= 3x aiokafka build", m["harness build"] + m["crc"] + m["copy_payload"],
                     m["aiokafka build"] / 3, "loop making append's arguments + CRC + copy of the records"))
    else:
        rows.append(("build <= 1.15x raw compress", m["raw compress"] + m["crc"], 1.15 * m["raw compress"],
                     "raw compress + CRC of the compressed batches"))
        rows.append(("read <= 1.15x raw decompress", m["raw decompress"] + m["crc"] + m["copy_values"],
                     1.15 * m["raw decompress"], "raw decompress + CRC + copy of values into bytes"))
        rows.append(("to_arrow <= 1.15x raw decompress", m["raw decompress"] + m["crc"] + m["copy_payload"],
                     1.15 * m["raw decompress"], "raw decompress + CRC + copy into columns"))
    return rows


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
    print(f"{'cell':<11} {'target':<36} {'floor ms':>9} {'allowed ms':>11} {'floor/allowed':>14}  feasible  floor =")
    for w, c in cells:
        m = measure(w, c, args.reps)
        for target, floor, allowed, what in floors(w, c, m):
            print(f"{w + ' ' + c:<11} {target:<36} {floor * 1e3:>9.2f} {allowed * 1e3:>11.2f} "
                  f"{floor / allowed:>13.2f}x  {'yes' if floor <= allowed else 'NO':<8}  {what}", flush=True)
    return 0


if __name__ == "__main__":
    compare._reexec_with_malloc_env(__file__)
    sys.exit(main())
