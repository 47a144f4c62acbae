"""peerbench (../shared/peerbench) with kcodec's object API, and its table of ratios, in one command.

    python bench/peerbench.py                          # every workload and codec (about 12 minutes)
    python bench/peerbench.py --workload w3 --codec none --codec gzip
    python bench/peerbench.py --before-tree ../kcodec-old --rounds 2   # before and after, interleaved
    python bench/peerbench.py --results results.json   # the table of an earlier run, nothing run
    python bench/peerbench.py --results after.json --before before.json   # two runs side by side

peerbench runs the Kafka Java client (``MemoryRecordsBuilder`` / ``MemoryRecords``), its
floors (``memcpy``: one copy of each batch's keys and values; ``codec-raw``: the codec
library alone on each batch's records section) and kcodec's ``KcodecAdapter``
(bench/peerbench_adapter.py) in one process run, measured in CPU time.  peerbench writes
its workloads and compiled Java classes under its own tree: when that tree is read-only,
it is copied to ``--workdir`` first.  The table gives, per workload, codec and operation:

- kcodec ÷ Java: kcodec's records/s over Java's (above 1: kcodec is faster);
- kcodec ÷ floor: kcodec's records/s over the floor's, where the floor's time is memcpy's
  plus codec-raw's (for a codec): what no implementation can skip (at most 1; the goal is
  1/1.2 = 0.83 or more);
- CPython floor (reads): the records/s of ``CPythonFloor`` (bench/peerbench_adapter.py), a
  ``bytes`` per key and value cut in C by CPython's built-ins and the adapter's counting
  loop, with no decoding at all, plus codec-raw's time for a codec.  A read cell where Java
  is faster than this is marked "CPython": plain CPython handing out the same bytes is
  already behind Java there.

Ratios are only comparable within one run (see run()); the range of the machine's load
average over the runs is printed with the table.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Optional, Tuple

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_PEERBENCH = REPO.parent / "shared" / "peerbench"
KCODEC_IMPL = "peerbench_adapter:KcodecAdapter"
CPYTHON_FLOOR = "peerbench_adapter:CPythonFloor"
IMPLS = ("memcpy", "codec-raw", CPYTHON_FLOOR, "java", KCODEC_IMPL)
GOAL_FLOOR = 1 / 1.2

Key = Tuple[str, str, str]  # workload, codec, op


def _workdir(peerbench: Path, workdir: Optional[Path]) -> Path:
    # peerbench writes data/ and build/ under its root: a read-only tree is run from a copy.
    if workdir is None and os.access(peerbench, os.W_OK):
        return peerbench
    target = workdir or Path(tempfile.gettempdir()) / "kcodec-peerbench"
    if not (target / "peerbench" / "run.py").exists():
        shutil.copytree(peerbench, target, dirs_exist_ok=True, ignore=shutil.ignore_patterns("data", "build"))
        for path in [target, *target.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
    return target


def _run_once(root: Path, tree: Path, impls: List[str], workload: str, codecs: List[str], min_reps: int,
              out: Path) -> dict:
    cmd = [sys.executable, str(root / "peerbench" / "run.py"), "--impl", ",".join(impls), "--workload", workload,
           "--out", str(out), "--min-reps", str(min_reps)]
    for c in codecs:
        cmd += ["--codec", c]
    # The adapter module comes from this checkout's bench/; kcodec from `tree`.
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tree), str(HERE)]))
    print("+", f"PYTHONPATH={env['PYTHONPATH']}", " ".join(cmd), file=sys.stderr, flush=True)
    subprocess.run(cmd, cwd=root, env=env, check=True)
    return json.loads(out.read_text())


def _best_rows(docs: List[dict], impls: Tuple[str, ...]) -> Dict[Tuple[str, Key], dict]:
    best: Dict[Tuple[str, Key], dict] = {}
    for doc in docs:
        for r in doc["rows"]:
            k = (r["impl"], (r["workload"], r["codec"], r["op"]))
            if r["impl"] in impls and (k not in best or r["records_per_s"] > best[k]["records_per_s"]):
                best[k] = r
    return best


def run(args: argparse.Namespace) -> Tuple[dict, Optional[dict]]:
    """Run peerbench workload by workload, ``--rounds`` times; returns the merged results (and the
    ``--before-tree``'s).

    The machine is shared: peerbench measures one implementation after the other, so a change of
    load between Java's turn and kcodec's would show as a ratio.  Each round therefore runs one
    workload at a time, alternating the order of the implementations (and of the two kcodec
    trees), and every figure is the best of its runs; the floors and Java are taken over every
    run of both trees.
    """
    root = _workdir(Path(args.peerbench).resolve(), Path(args.workdir).resolve() if args.workdir else None)
    out = Path(args.out).resolve()
    trees = [("after", REPO)] + ([("before", Path(args.before_tree).resolve())] if args.before_tree else [])
    docs: Dict[str, List[dict]] = {label: [] for label, _ in trees}
    runs = []
    for rnd in range(args.rounds):
        for workload in args.workload or ["w1", "w2", "w3"]:
            order = trees if rnd % 2 == 0 else trees[::-1]
            for label, tree in order:
                # Each tree's implementations run in the other order every round (indexing by the
                # position in `order`, which itself flips, gave every tree one order for good).
                impls = list(IMPLS) if (rnd + trees.index((label, tree))) % 2 == 0 else list(IMPLS)[::-1]
                doc = _run_once(root, tree, impls, workload, args.codec, args.min_reps,
                                out.with_name(f"{out.stem}-{label}-{workload}-{rnd}.json"))
                docs[label].append(doc)
                runs.append({"tree": label, "workload": workload, "round": rnd,
                             "loadavg": {name: [i.get("loadavg_at_start"), i.get("loadavg_at_end")]
                                         for name, i in doc["impls"].items()}})
    every = [d for label in docs for d in docs[label]]
    reference = _best_rows(every, ("memcpy", "codec-raw", CPYTHON_FLOOR, "java"))

    def merged(label: str) -> dict:
        rows = dict(reference)
        rows.update(_best_rows(docs[label], (KCODEC_IMPL,)))
        return {"machine": every[0]["machine"], "tree": label, "rows": list(rows.values()), "runs": runs}

    after = merged("after")
    out.write_text(json.dumps(after, indent=1))
    before = merged("before") if args.before_tree else None
    if before is not None:
        out.with_name(out.stem + "-before.json").write_text(json.dumps(before, indent=1))
    return after, before


def _rates(results: dict) -> Dict[Tuple[str, Key], dict]:
    return {(r["impl"], (r["workload"], r["codec"], r["op"])): r for r in results["rows"]}


def _plus_codec_raw(rows: Dict[Tuple[str, Key], dict], key: Key, t: float) -> Optional[float]:
    # t plus codec-raw's time on the cell, for a codec (None when codec-raw did not run)
    if key[1] == "none":
        return t
    raw = rows.get(("codec-raw", key))
    return None if raw is None else t + raw["records"] / raw["records_per_s"]


def _memcpy_time(rows: Dict[Tuple[str, Key], dict], workload: str, op: str) -> Optional[float]:
    copy = rows.get(("memcpy", (workload, "none", op)))
    return None if copy is None else copy["records"] / copy["records_per_s"]


def _floor_time(rows: Dict[Tuple[str, Key], dict], key: Key) -> Optional[float]:
    workload, codec, op = key
    copy = _memcpy_time(rows, workload, op)
    return None if copy is None else _plus_codec_raw(rows, key, copy)


def _cpython_floor(rows: Dict[Tuple[str, Key], dict], key: Key) -> Optional[float]:
    # records/s of CPython's own loop over this cell's records (see CPythonFloor): handing out the keys and
    # values of a read (which copies them); one C call per record of a build, plus memcpy's copy of the
    # records, which that loop does not make; plus codec-raw's time for a codec
    workload, codec, op = key
    floor = rows.get((CPYTHON_FLOOR, (workload, "none", op)))
    if floor is None:
        return None
    t = floor["records"] / floor["records_per_s"]
    if op == "build":
        copy = _memcpy_time(rows, workload, op)
        if copy is None:
            return None
        t += copy
    t = _plus_codec_raw(rows, key, t)
    return None if t is None else floor["records"] / t


def _fmt_rate(x: Optional[float]) -> str:
    if x is None:
        return "-"
    return f"{x / 1e6:.2f} M" if x >= 1e6 else f"{x / 1e3:.0f} k"


def _ratio(a: Optional[float], b: Optional[float]) -> Optional[float]:
    return a / b if a and b else None


def _fmt_ratio(x: Optional[float], goal: float) -> str:
    if x is None:
        return "-"
    return f"**{x:.2f}**" if x < goal else f"{x:.2f}"


def cells(results: dict) -> List[dict]:
    """Per workload, codec and op: Java's and kcodec's records/s and the two ratios."""
    rows = _rates(results)
    out = []
    order = {c: i for i, c in enumerate(("none", "gzip", "snappy", "lz4", "zstd"))}
    for (impl, key), r in sorted(rows.items(), key=lambda kv: (kv[0][1][0], order.get(kv[0][1][1], 9),
                                                               kv[0][1][1], kv[0][1][2])):
        if impl != KCODEC_IMPL:
            continue
        java = rows.get(("java", key))
        floor_t = _floor_time(rows, key)
        k = r["records_per_s"]
        java_rate = java["records_per_s"] if java else None
        cpython = _cpython_floor(rows, key)
        out.append({"workload": key[0], "codec": key[1], "op": key[2], "kcodec": k,
                    "java": java_rate,
                    "vs_java": _ratio(k, java_rate),
                    "vs_floor": _ratio(k, r["records"] / floor_t if floor_t else None),
                    "cpython_floor": cpython,
                    "vs_cpython": _ratio(k, cpython),
                    "cpython_bound": bool(cpython and java_rate and java_rate > cpython)})
    return out


def table(results: dict, before: Optional[dict] = None) -> str:
    """The Markdown table (bold: below 1.0 against Java, below 0.83 against the floor)."""
    m = results["machine"]
    loads = sorted(float(v.split()[0]) for run in results.get("runs", []) for pair in run["loadavg"].values()
                   for v in pair if v)
    load = (f"1-minute load average {loads[0]:.1f} to {loads[-1]:.1f} over {len(results['runs'])} runs"
            if loads else f"load average {m.get('loadavg_at_start', '?')} at the start")
    lines = [f"peerbench, {m['date']}, {m['cpu_model']} x{m['cpus']}, CPU time, {load}; M or k records/s.", ""]
    prior = {(c["workload"], c["codec"], c["op"]): c for c in cells(before)} if before else {}
    head = ("| workload | codec | op | Java | kcodec | kcodec ÷ Java | kcodec ÷ floor | CPython floor "
            "| kcodec ÷ CPython floor |")
    rule = "|---|---|---|---:|---:|---:|---:|---:|---:|"
    if before:
        head += " before: kcodec | before: ÷ Java | before: ÷ floor |"
        rule += "---:|---:|---:|"
    lines += [head, rule]
    for c in cells(results):
        line = (f"| {c['workload']} | {c['codec']} | {c['op']} | {_fmt_rate(c['java'])} | {_fmt_rate(c['kcodec'])} "
                f"| {_fmt_ratio(c['vs_java'], 1.0)} | {_fmt_ratio(c['vs_floor'], GOAL_FLOOR)} "
                f"| {_fmt_rate(c['cpython_floor'])}{' CPython' if c['cpython_bound'] else ''} "
                f"| {_fmt_ratio(c['vs_cpython'], GOAL_FLOOR)} |")
        if before:
            p = prior.get((c["workload"], c["codec"], c["op"]), {})
            line += (f" {_fmt_rate(p.get('kcodec'))} | {_fmt_ratio(p.get('vs_java'), 1.0)} "
                     f"| {_fmt_ratio(p.get('vs_floor'), GOAL_FLOOR)} |")
        lines.append(line)
    behind = [c for c in cells(results) if c["vs_java"] is not None and c["vs_java"] < 1.0]
    lines += ["", f"cells behind Java: {len(behind)} of {len(cells(results))}"
              + (": " + ", ".join(f"{c['workload']} {c['codec']} {c['op']}" for c in behind) if behind else "")]
    bound = [c for c in behind if c["cpython_bound"]]
    if bound:
        lines.append("of these, Java is faster than CPython's own loop over the same records (handing out the "
                     "bytes, or one call per record, plus codec-raw): "
                     + ", ".join(f"{c['workload']} {c['codec']} {c['op']}" for c in bound))
    low = [c for c in cells(results) if c["vs_floor"] is not None and c["vs_floor"] < GOAL_FLOOR]
    lines.append(f"cells below 1/1.2 of the floor: {len(low)} of {len(cells(results))}"
                 + (": " + ", ".join(f"{c['workload']} {c['codec']} {c['op']}" for c in low) if low else ""))
    near = [c for c in low if c["vs_cpython"] is not None and c["vs_cpython"] >= GOAL_FLOOR]
    if near:
        lines.append("of these, within 1.2x of CPython's own loop: "
                     + ", ".join(f"{c['workload']} {c['codec']} {c['op']}" for c in near))
    return "\n".join(lines)


def main(argv: Optional[List[str]] = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--peerbench", default=str(DEFAULT_PEERBENCH), help="peerbench's tree (../shared/peerbench)")
    p.add_argument("--workdir", default=None, help="where to run a copy of a read-only peerbench tree")
    p.add_argument("--workload", action="append", default=[], help="w1, w2, w3 (default all)")
    p.add_argument("--codec", action="append", default=[], help="none, gzip, snappy, lz4, zstd (default all)")
    p.add_argument("--min-reps", type=int, default=3, help="peerbench's --min-reps (slow cells)")
    p.add_argument("--rounds", type=int, default=1, help="runs of every workload; each figure is the best")
    p.add_argument("--before-tree", default=None,
                   help="another kcodec checkout (extensions built) timed in the same rounds, shown beside")
    p.add_argument("--out", default="peerbench-results.json",
                   help="the merged results (and NAME-before.json with --before-tree; each run's file beside)")
    p.add_argument("--results", default=None, help="render the table of this results file; run nothing")
    p.add_argument("--before", default=None, help="an earlier results file to show beside (before/after)")
    args = p.parse_args(argv)
    if args.results:
        try:
            results = json.loads(Path(args.results).read_text())
            before = json.loads(Path(args.before).read_text()) if args.before else None
        except (OSError, ValueError) as exc:
            print(f"peerbench.py: cannot read results: {exc}", file=sys.stderr)
            return 2
    else:
        results, before = run(args)
    print(table(results, before))
    return 0


if __name__ == "__main__":
    sys.exit(main())
