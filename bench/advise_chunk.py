"""Where one chunk's measuring goes: the CPU time of advise's task on one chunk, per setting and per group.

    python bench/advise_chunk.py SEGMENT.log                       # the default grid on the first 4 MiB
    python bench/advise_chunk.py SEGMENT.log --chunk 1MiB --codecs zstd:1-19 --lingers 0,5

A chunk is the whole batches of the segment's first ``--chunk`` bytes, as
``--sample`` reads them.  :func:`kcodec.advise.task.measure_chunk` (what a
Spark task runs per chunk) measures it three ways, each the least CPU time of
``--reps`` runs:

* today's batches alone (a grid of no settings): decoding, the profile and
  the sender's calibration, which every chunk pays once;
* each setting alone, less that: what the setting costs without sharing;
* the whole grid in one call, as a task runs it, where settings that replay
  or build alike share the work.

The per-setting figures are then summed by ``linger.ms`` and by codec, with
each group's share of the settings' sum.  Every time is the process's CPU
time (the task is one thread), never wall time.
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Callable, Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from kcodec.advise.grid import (  # noqa: E402
    DEFAULT_BATCH_SIZES,
    DEFAULT_CODECS,
    DEFAULT_LINGERS,
    Setting,
    format_size,
    parse_batch_sizes,
    parse_codecs,
    parse_lingers,
    parse_size,
)
from kcodec.advise.task import measure_chunk  # noqa: E402


def whole_batches(path: Path, size: int) -> bytes:
    """The segment's first batches whose ends lie within ``size`` bytes (at least one batch)."""
    with open(path, "rb") as f:
        head = f.read(size + (1 << 20))
    pos = 0
    while pos + 12 <= len(head):
        length = struct.unpack_from(">i", head, pos + 8)[0]
        end = pos + 12 + length
        if length < 0 or end > len(head) or (end > size and pos > 0):
            break
        pos = end
    if pos == 0:
        raise SystemExit(f"{path}: no whole batch in its first {format_size(len(head))}")
    return head[:pos]


def least_cpu(run: Callable[[], object], reps: int) -> float:
    best = float("inf")
    for _ in range(reps):
        t0 = time.process_time()
        run()
        best = min(best, time.process_time() - t0)
    return best


def main(argv: List[str] = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("segment", type=Path, help="a segment (.log) file to take the chunk from")
    ap.add_argument("--chunk", default="4MiB")
    ap.add_argument("--codecs", default=DEFAULT_CODECS)
    ap.add_argument("--batch-sizes", default=DEFAULT_BATCH_SIZES)
    ap.add_argument("--lingers", default=DEFAULT_LINGERS)
    ap.add_argument("--client", default="java")
    ap.add_argument("--reps", type=int, default=2)
    a = ap.parse_args(argv)

    data = whole_batches(a.segment, parse_size(a.chunk))
    grid = [Setting(c, lvl, b, g) for c, lvl in parse_codecs(a.codecs) for b in parse_batch_sizes(a.batch_sizes)
            for g in parse_lingers(a.lingers)]

    def measure(settings):
        return lambda: measure_chunk("t", 0, 0, data, settings, client=a.client)

    records = measure(grid)()[0]["records"]
    today = least_cpu(measure([]), a.reps)
    alone: Dict[str, float] = {s.label: max(0.0, least_cpu(measure([s]), a.reps) - today) for s in grid}
    together = least_cpu(measure(grid), a.reps)
    print(f"{a.segment}: {format_size(len(data))} in {records:,} records, {len(grid)} settings, client {a.client}")
    print(f"today's batches alone (decode, profile, calibration): {today:.3f} CPU s")
    print(f"the grid in one call: {together:.3f} CPU s ({(together - today) / len(grid):.3f} a setting, "
          f"{(together - today) / max(1e-9, sum(alone.values())):.2f} of the settings measured alone)")
    total = sum(alone.values()) or 1e-9
    for title, key in (("linger.ms", lambda s: f"{s.linger_ms} ms"),
                       ("codec", lambda s: s.codec + ("" if s.level is None else f":{s.level}"))):
        groups: Dict[str, float] = defaultdict(float)
        counts: Dict[str, int] = defaultdict(int)
        for s in grid:
            groups[key(s)] += alone[s.label]
            counts[key(s)] += 1
        print(f"\nby {title:<10}  settings   CPU s alone   share")
        for k, v in groups.items():
            print(f"{k:<18} {counts[k]:>8}   {v:>11.3f}   {v / total:>5.0%}")


if __name__ == "__main__":
    main()
