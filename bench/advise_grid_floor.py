"""advise's CPU per setting against its floor: kcodec's builder and reader alone on the same batches.

    python bench/advise_grid_floor.py                        # a small estate, written first if missing
    python bench/advise_grid_floor.py --dir /tmp/advise-estate --chunk 4MiB --topics app-logs,images

For one range of whole batches from the middle of each topic's first partition
(as advise samples a log directory), every setting of the grid is measured
three ways, in thread CPU time, the fastest of ``--reps``:

* **advise, the setting alone**: what ``measure_chunk`` (what a Spark task runs) does for
  one setting, on producers fresh from decoding the range and calibrating the sender (not
  timed): its replay (Java's ratio estimate, warmed up), build and read, as its loop runs them;
* **floor**: the same replayed batches built by the native builder alone (``encode_columnar``
  with the cuts, then ``compressed_batch_list``: ``kcodec.from_arrow``'s path) plus
  ``kcodec.to_arrow(use_threads=False)`` reading them;
* **advise, the whole grid**: ``measure_chunk`` with every setting, less the fixed part,
  against the sum of the settings' floors.

The goal is every setting within 1.2x of its floor, and the grid within 1.2x of the floors' sum.
"""
from __future__ import annotations

import argparse
import struct
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advise_measure import min_cpu  # noqa: E402  (the advise benches' one timer)

from kcodec.advise import task  # noqa: E402
from kcodec.advise.grid import (  # noqa: E402
    DEFAULT_BATCH_SIZES,
    DEFAULT_CODECS,
    DEFAULT_LINGERS,
    Setting,
    parse_batch_sizes,
    parse_codecs,
    parse_lingers,
    parse_size,
)
from kcodec.arrow.decode import to_arrow  # noqa: E402

GOAL = 1.2


def middle_range(log: Path, size: int) -> bytes:
    """Whole v2 batches of about ``size`` bytes from the middle of a segment."""
    data = log.read_bytes()
    starts, pos = [], 0
    while pos + 12 <= len(data):
        starts.append(pos)
        pos += 12 + struct.unpack(">i", data[pos + 8:pos + 12])[0]
    i = next(k for k, s in enumerate(starts) if s >= len(data) // 2 or k == len(starts) - 1)
    while i > 0 and len(data) - starts[i] < size:  # a small segment: the range ends at its end
        i -= 1
    j = i
    while j < len(starts) and starts[j] - starts[i] < size:
        j += 1
    return data[starts[i]:starts[j] if j < len(starts) else len(data)]


def producers(data: bytes) -> list:
    """The chunk's producers as ``measure_chunk`` makes them: decoded, profiled, the sender calibrated."""
    table = to_arrow(data, batch_fields=("batch_position", "producer_id"), use_threads=False)
    cols = task.record_columns(table)
    prof = task.profile_chunk(data, table, cols)
    rules = task.client_rules(task.detect_client(data) or task.DEFAULT_CLIENT.name)
    return task._producer_replays(table, cols, prof, rules, None, 1)[0]


def advise_alone(data: bytes, s: Setting, reps: int) -> tuple:
    """(CPU seconds, batches) of ``measure_chunk``'s loop body for ``s`` alone, on fresh producers each time."""
    best, count = float("inf"), 0
    for _ in range(reps):
        replays = producers(data)
        t0 = time.thread_time_ns()
        built = [p.build(s, 0.0) for p in replays]
        task.measure_read([x for p, b in zip(replays, built) for x in p.batches(b)], min_seconds=0.0)
        best = min(best, (time.thread_time_ns() - t0) / 1e9)
        count = sum(b.count for b in built)
    return best, count


def floor_of(data: bytes, s: Setting, reps: int) -> float:
    """The builder and reader alone on the batches advise's replay cuts for ``s``."""
    replays = producers(data)
    total = 0.0
    for p in replays:
        starts = p.starts(s)
        blob = b"".join(p.encoder.build(starts, s.codec, s.level))
        total += min_cpu(lambda: p.encoder.build(starts, s.codec, s.level), reps)
        total += min_cpu(lambda: to_arrow(blob, use_threads=False), reps)
    return total


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", default="/tmp/advise-floor-estate", help="a log directory (one folder per partition)")
    ap.add_argument("--chunk", default="1MiB", help="bytes of the range measured per topic")
    ap.add_argument("--topics", default="", help="comma-separated topics (default: every topic)")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--codecs", default=DEFAULT_CODECS)
    args = ap.parse_args()
    root = Path(args.dir)
    if not root.exists():
        from advise_scale import make_estate  # the bench's own estate writer, 8 kinds of topic

        make_estate(root, 0.25)
    settings = [Setting(c, lvl, b, g) for c, lvl in parse_codecs(args.codecs)
                for b in parse_batch_sizes(DEFAULT_BATCH_SIZES) for g in parse_lingers(DEFAULT_LINGERS)]
    parts = sorted(p for p in root.iterdir() if p.is_dir() and p.name.rsplit("-", 1)[-1] == "0")
    wanted = set(filter(None, args.topics.split(",")))
    worst = []
    print(f"{'topic':<14} {'setting':<22} {'batches':>8} {'advise s':>9} {'floor s':>8} {'ratio':>6}")
    for part in parts:
        topic = part.name.rsplit("-", 1)[0]
        if wanted and topic not in wanted:
            continue
        data = middle_range(sorted(part.glob("*.log"))[0], parse_size(args.chunk))
        fixed = min_cpu(lambda: task.measure_chunk(topic, 0, 0, data, []), args.reps)
        floors = 0.0
        for s in settings:
            alone, count = advise_alone(data, s, args.reps)
            floor = floor_of(data, s, args.reps)
            floors += floor
            worst.append((alone / floor, topic, s.label))
            print(f"{topic:<14} {s.label:<22} {count:>8} {alone:>9.3f} {floor:>8.3f} "
                  f"{alone / floor:>6.2f}")
        grid = min_cpu(lambda: task.measure_chunk(topic, 0, 0, data, settings), max(1, args.reps - 1)) - fixed
        print(f"{topic:<14} {'whole grid':<22} {'':>8} {grid:>9.3f} {floors:>8.3f} {grid / floors:>6.2f}"
              f"   (fixed part {fixed:.3f} s: decoding, today's profile, build and read)")
    worst.sort(reverse=True)
    over = [w for w in worst if w[0] > GOAL]
    print(f"\nsettings over {GOAL}x their floor: {len(over)} of {len(worst)}"
          + "".join(f"\n  {r:.2f}  {t} {lab}" for r, t, lab in over[:15]))
    ratios = np.array([w[0] for w in worst])
    print(f"advise / floor per setting: median {np.median(ratios):.2f}, max {ratios.max():.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
