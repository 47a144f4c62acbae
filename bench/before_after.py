"""Two builds of kcodec timed by the same compare.py, in one run, cell by cell.

    python bench/before_after.py --before ../kcodec-old            # every workload and codec
    python bench/before_after.py --before ../kcodec-old --rounds 4 -- --workload w1 --peer aiokafka

``--before`` is another checkout of kcodec with its extensions built in place
(``python setup.py build_ext --inplace``); ``--after`` defaults to the kcodec
this script imports.  Both are timed by one and the same ``compare.py`` (the
before checkout's by default, so that a section the new one adds cannot stand
in the way), run alternately in fresh interpreters for ``--rounds`` rounds, so a
slow spell of the machine falls on both builds alike.  Arguments after ``--``
go to compare.py.

For each cell (workload, codec, implementation) the report gives both builds'
best time, their ratio, and the noise: the largest spread between one build's
own rounds in that cell.  A cell is called slower only when the after build's
best is slower than the before build's by more than that noise (and 3%).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Dict, List, Tuple

Cell = Tuple[str, str, str]


def _kcodec_root() -> Path:
    import kcodec

    return Path(kcodec.__file__).resolve().parents[1]


def run_compare(script: Path, kcodec_root: Path, args: List[str], workdir: str) -> Dict[Cell, float]:
    """One compare.py run with ``kcodec_root`` first on the path: its best seconds per cell."""
    out = os.path.join(workdir, "figures.json")
    env = dict(os.environ, PYTHONPATH=str(kcodec_root))
    # a folder of its own as the working directory: a kcodec/ beside the caller cannot shadow the build
    subprocess.run([sys.executable, str(script), "--json", out, *args], env=env, cwd=workdir, check=True,
                   stdout=subprocess.DEVNULL)
    with open(out) as f:
        rows = json.load(f)["rows"]
    cells: Dict[Cell, float] = {}
    for row in rows:
        for name, seconds in row["seconds"].items():
            cells[(row["workload"], row["codec"], name)] = seconds
    return cells


def report(runs: Dict[str, List[Dict[Cell, float]]]) -> Tuple[str, int]:
    """The table, and how many cells are slower than before by more than their noise."""
    before, after = runs["before"], runs["after"]
    cells = [c for c in before[0] if all(c in r for r in before + after)]
    lines = [f"{'cell':<10} {'implementation':<24} {'before s':>10} {'after s':>10} {'after/before':>13} "
             f"{'noise':>6}  verdict"]
    slower = 0
    for cell in cells:
        b = [r[cell] for r in before]
        a = [r[cell] for r in after]
        noise = max(max(x) / min(x) - 1 for x in (a, b))
        ratio = min(a) / min(b)
        verdict = "same"
        if ratio > 1 + max(noise, 0.03):
            verdict, slower = "SLOWER", slower + 1
        elif ratio < 1 - max(noise, 0.03):
            verdict = "faster"
        lines.append(f"{cell[0] + ' ' + cell[1]:<10} {cell[2]:<24} {min(b):>10.5f} {min(a):>10.5f} "
                     f"{ratio:>12.3f}x {noise:>6.1%}  {verdict}")
    return "\n".join(lines), slower


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    passthrough: List[str] = []
    if "--" in argv:
        cut = argv.index("--")
        argv, passthrough = argv[:cut], argv[cut + 1:]
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, type=Path, help="a kcodec checkout with built extensions")
    p.add_argument("--after", type=Path, default=None, help="default: the kcodec this script imports")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--script", type=Path, default=None, help="the compare.py to run (default: --before's)")
    args = p.parse_args(argv)
    roots = {"before": args.before.resolve(), "after": (args.after or _kcodec_root()).resolve()}
    for label, root in roots.items():
        if not (root / "kcodec" / "__init__.py").is_file():
            p.error(f"--{label} {root}: no kcodec package there")
    script = (args.script or roots["before"] / "bench" / "compare.py").resolve()
    if not script.is_file():
        p.error(f"--script {script}: no such file")
    print(f"before: {roots['before']}\nafter:  {roots['after']}\nscript: {script} {' '.join(passthrough)}",
          flush=True)
    runs: Dict[str, List[Dict[Cell, float]]] = {"before": [], "after": []}
    with tempfile.TemporaryDirectory(prefix="kcodec-before-after-") as work:
        for i in range(args.rounds):
            for label in ("before", "after") if i % 2 == 0 else ("after", "before"):
                runs[label].append(run_compare(script, roots[label], passthrough, work))
            print(f"round {i + 1}/{args.rounds} done, load average {os.getloadavg()[0]:.2f}", flush=True)
    table, slower = report(runs)
    print(table)
    print(f"{slower} cell(s) slower than before beyond their noise")
    return 0


if __name__ == "__main__":
    sys.exit(main())
