"""``kcodec advise`` with the race over its grid against every setting measured on every range.

    python bench/advise_race.py --dir /tmp/advise-race --topics 40
    python bench/advise_race.py --dir /tmp/advise-race --sample-cap 4MiB --chunk 512KiB   # a smaller look
    python bench/advise_race.py --one on --dir D ... > on.json; ... --one off ... > off.json   # side by side
    python bench/advise_race.py --compare on.json off.json
    python bench/advise_race.py --dir /tmp/advise-race --modes on --codecs none,snappy,lz4,gzip:1-9,zstd:1-19
    python bench/advise_race.py --dir /tmp/advise-race --topics 40 --mib 4-24 --wide none,snappy,lz4,gzip:1-9,zstd:1-19

The estate is ``bench/advise_scale.py``'s estate of many topics (one partition each, 4 to 40 MiB or ``--mib``,
its eight kinds of data in turn: JSON, log lines, binary, compressed images, each written with
the codec and batch.size of its topic), written once under ``--dir`` and kept.  Each mode runs in
a process of its own on local[2] with ``--sample auto``: ``on`` races, ``off`` measures the whole
grid (``--race off``).  The CPU of a run is every process of it (the driver, Spark's JVM and its
Python workers, ended ones included), read from /proc: CPU seconds, not wall time.  The table
compares, per topic, the two recommendations and savings; the goals are the same recommendation
on at least 98% of the topics and every topic's saving within 1% of the exhaustive one (as a share
of it, and of today's $/month where the saving is near 0).  ``--wide CODECS`` also races that grid on the
same estate and prints its CPU against the default grid's race (the goal: a grid four times larger under
1.5x).  Each run's JSON line is kept beside the reports (``DIR-report-MODE.json``) for ``--compare``.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def _one(args) -> int:
    """One advise run in this process: its answers and its CPU seconds as JSON on stdout."""
    from datasource_read import tree_cpu_seconds

    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    opts = Options(inputs=[args.dir], master="local[2]", out_dir=args.out, progress=False, race=args.one,
                   codecs=args.codecs, bytes_per_day=args.bytes_per_day, sample_cap=args.sample_cap,
                   chunk=args.chunk)
    t0 = time.perf_counter()
    result = run_advise(opts, log=lambda s: None)
    wall = time.perf_counter() - t0
    cpu = tree_cpu_seconds(os.getpid())
    topics = {}
    for a in result["advice"]:
        running = len(a.race.race.running) if a.race is not None else len(a.results)
        topics[a.topic] = {"best": a.best.label if a.best else None, "saving": a.saving,
                           "today": a.today.cost.total, "chunks": a.sample.chunks if a.sample else None,
                           "rounds": a.sample.rounds if a.sample else None, "settings": len(a.results),
                           "running": running,
                           "mib": sum(f.stat().st_size for f in Path(args.dir).glob(f"{a.topic}-*/*.log")) / (1 << 20)}
    print(json.dumps({"cpu": cpu, "wall": wall, "chunks": result["chunks"], "topics": topics}))
    return 0


def _run(args, mode: str, codecs: str, out: Path) -> dict:
    cmd = [sys.executable, __file__, "--one", mode, "--dir", args.dir, "--out", str(out), "--codecs", codecs,
           "--bytes-per-day", args.bytes_per_day, "--sample-cap", args.sample_cap, "--chunk", args.chunk]
    got = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(got.stdout.strip().splitlines()[-1])


def main() -> int:
    from kcodec.advise.auto_sample import DEFAULT_CAP
    from kcodec.advise.grid import DEFAULT_CHUNK, DEFAULT_CODECS

    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/advise-race")
    ap.add_argument("--topics", type=int, default=40)
    ap.add_argument("--mib", default="4-40", help="the estate's smallest and largest topic, MiB (when it is written)")
    ap.add_argument("--wide", default="", help="also race this grid and compare its CPU with --codecs' race")
    ap.add_argument("--codecs", default=DEFAULT_CODECS)
    ap.add_argument("--modes", default="on,off", help="on (race), off (every setting on every range), or both")
    ap.add_argument("--bytes-per-day", default="10GB", help="each topic's volume, so the dollars mean something")
    ap.add_argument("--sample-cap", default=DEFAULT_CAP)
    ap.add_argument("--chunk", default=DEFAULT_CHUNK)
    ap.add_argument("--out", default="", help="(--one) the report folder")
    ap.add_argument("--one", choices=("on", "off"), help=argparse.SUPPRESS)
    ap.add_argument("--compare", nargs=2, metavar=("ON.json", "OFF.json"),
                    help="compare the JSON lines two --one runs printed, instead of running")
    args = ap.parse_args()
    if args.one:
        return _one(args)
    if args.compare:
        runs = {m: json.loads(Path(f).read_text().strip().splitlines()[-1]) for m, f in zip(("on", "off"),
                                                                                            args.compare)}
        return _compare(runs)
    from advise_scale import make_many

    root = Path(args.dir)
    if not (root / ".complete").exists():
        root.mkdir(parents=True, exist_ok=True)
        lo, hi = (int(x) for x in args.mib.split("-"))
        make_many(root, args.topics, lo, hi)
    runs = {}
    for mode, codecs in [(m, args.codecs) for m in args.modes.split(",")] + ([("wide", args.wide)] if args.wide
                                                                              else []):
        out = root.parent / f"{root.name}-report-{mode}"
        runs[mode] = _run(args, "on" if mode == "wide" else mode, codecs, out)
        Path(f"{out}.json").write_text(json.dumps(runs[mode]) + "\n")
        r = runs[mode]
        print(f"--race {'on' if mode == 'wide' else mode}: {r['cpu']:.0f} CPU s ({r['wall']:.0f} s wall), "
              f"{r['chunks']} chunks, grid {codecs}, --sample-cap {args.sample_cap}, --chunk {args.chunk}", flush=True)
    if "wide" in runs and "on" in runs:
        w, d = runs["wide"], runs["on"]
        print(f"wider grid ({args.wide}, {_settings(w)} settings) against {args.codecs} ({_settings(d)}), both "
              f"raced: {w['cpu']:.0f} / {d['cpu']:.0f} CPU s = {w['cpu'] / d['cpu']:.2f}x (goal under 1.5x)")
    if not {"on", "off"} <= set(runs):
        return 0
    return _compare(runs)


def _settings(run: dict) -> int:
    return max(t["settings"] for t in run["topics"].values())


def _compare(runs: dict) -> int:
    on, off = runs["on"]["topics"], runs["off"]["topics"]
    same = worst = worst_today = 0.0
    print(f"\n{'topic':<20} {'MiB':>4} {'race pick':<22} {'exhaustive pick':<22} {'saving race':>12} "
          f"{'exhaustive':>11} {'diff':>7} {'ran':>7} {'chunks':>9}")
    for t in sorted(off):
        a, b = on[t], off[t]
        same += a["best"] == b["best"]
        diff = a["saving"] - b["saving"]
        rel = abs(diff) / abs(b["saving"]) if b["saving"] else (0.0 if not diff else float("inf"))
        worst = max(worst, rel)
        worst_today = max(worst_today, abs(diff) / b["today"])
        print(f"{t:<20} {a.get('mib', 0):>4.0f} {str(a['best']):<22} {str(b['best']):<22} {a['saving']:>12.2f} "
              f"{b['saving']:>11.2f} {rel * 100:>6.2f}% {a['running']:>3}/{a['settings']:<3} "
              f"{a['chunks']:>4}/{b['chunks']:<4}")
    n = len(off)
    print(f"\nsame recommendation: {same:.0f} of {n} topics ({same / n * 100:.1f}%, goal 98%)")
    print(f"largest saving difference: {worst * 100:.2f}% of the exhaustive saving, {worst_today * 100:.3f}% of "
          f"today's $/month (goal 1%)")
    print(f"CPU: race {runs['on']['cpu']:.0f} s, exhaustive {runs['off']['cpu']:.0f} s "
          f"({runs['on']['cpu'] / runs['off']['cpu']:.2f}x)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
