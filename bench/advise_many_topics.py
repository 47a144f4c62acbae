"""``kcodec advise`` on an estate of many small topics: its fixed cost per topic, and a report that opens.

Writes ``--topics`` topics of ``--records`` JSON and log records each (one partition,
lz4 batches of 16 KiB, in bursts over a day; tests/advise_many_topics.py), runs the
advisor on ``local[2]`` with its default grid and reports:

* the wall time of each phase (planning and listing, Spark, reporting) and in all,
  and the lines the terminal summary took;
* the report's size, and, when Debian's ``chromium`` is installed, the milliseconds
  from navigation start to the end of its load event at 1280 px and whether anything
  is wider than the window;
* the same for a second, smaller estate, and each phase extrapolated linearly from
  the two to ``--extrapolate`` topics.

    python bench/advise_many_topics.py --dir /tmp/many --topics 500 --small 100 [--extrapolate 10000]
"""
from __future__ import annotations

import argparse
import json
import shutil
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))


def _estate(base: Path, topics: int, records: int) -> Path:
    from advise_many_topics import build_many_topics

    root = base / f"estate-{topics}x{records}"
    if not (root / ".complete").exists():
        shutil.rmtree(root, ignore_errors=True)
        root.mkdir(parents=True)
        build_many_topics(root, topics, records=records)
        (root / ".complete").write_text("")
    return root


def _run(root: Path, out: Path, master: str, extra: dict) -> dict:
    import kcodec.advise.job as job
    import kcodec.advise.report as report
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    marks = {}
    checked, written = job.check_options, report.write_reports

    def timed_check(o):
        t0 = time.perf_counter()
        try:
            return checked(o)
        finally:
            marks["planning and listing"] = time.perf_counter() - t0

    def timed_write(*a, **k):
        t0 = time.perf_counter()
        try:
            return written(*a, **k)
        finally:
            marks["report files"] = time.perf_counter() - t0

    lines = []
    job.check_options, report.write_reports = timed_check, timed_write
    try:
        t0 = time.perf_counter()
        run_advise(Options(inputs=[str(root)], out_dir=str(out), master=master, progress=False, **extra),
                   log=lines.append)
        marks["all"] = time.perf_counter() - t0
    finally:
        job.check_options, report.write_reports = checked, written
    text = "\n".join(lines)
    summary = text[text.index("estate:"):text.index("reports:")] if "estate:" in text else text
    marks["summary lines"] = len(summary.splitlines())
    marks["Spark and the rest"] = marks["all"] - marks["planning and listing"] - marks["report files"]
    page = out / "report.html"
    marks["report.html bytes"] = page.stat().st_size
    from browser import chromium, measure_page

    if chromium():
        got = measure_page(page)
        marks["render ms at 1280px"] = got["ms"]
        marks["wider than the window"] = got["scroll"] > got["client"]
    return marks


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--dir", default="/tmp/advise-many", help="where the estates are written (kept)")
    ap.add_argument("--topics", type=int, default=500)
    ap.add_argument("--small", type=int, default=100, help="a second, smaller estate for the extrapolation")
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--extrapolate", type=int, default=10_000)
    ap.add_argument("--bytes-per-day", default="10GB", help="each topic's volume, so the dollars mean something")
    args = ap.parse_args()
    base = Path(args.dir)
    results = {}
    for n in (args.small, args.topics):
        root = _estate(base, n, args.records)
        out = base / f"report-{n}"
        shutil.rmtree(out, ignore_errors=True)
        results[n] = _run(root, out, args.master, {"bytes_per_day": args.bytes_per_day})
        print(f"{n} topics: " + json.dumps(results[n]), flush=True)
    a, b = results[args.small], results[args.topics]
    print(f"\n{'':28}{args.small:>10}{args.topics:>10}{args.extrapolate:>12} (linear)")
    for k in ("planning and listing", "Spark and the rest", "report files", "all"):
        slope = (b[k] - a[k]) / max(1, args.topics - args.small)
        est = b[k] + slope * (args.extrapolate - args.topics)
        print(f"{k + ' s':28}{a[k]:>10.1f}{b[k]:>10.1f}{est:>12.0f}")
    for k in ("summary lines", "report.html bytes", "render ms at 1280px", "wider than the window"):
        if k in a:
            fa, fb = (f"{x:.0f}" if isinstance(x, float) else str(x) for x in (a[k], b[k]))
            print(f"{k:28}{fa:>10}{fb:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
