"""Mutation testing for kcodec's Python modules: would a test notice if this line were wrong?

Each mutant is one small change to one module, made with :mod:`ast`:

==========  ==========================================================
operator    change
==========  ==========================================================
compare     ``<`` <-> ``<=``, ``>`` <-> ``>=``, ``==`` <-> ``!=``
const       an integer constant plus one, and minus one
boolop      ``and`` <-> ``or``
bool        ``True`` <-> ``False``
arith       ``+`` <-> ``-``, ``*`` <-> ``/``, ``//`` -> ``*`` (also in ``x op= y``)
delete      a statement replaced by ``pass``
return      ``return value`` -> ``return None``
==========  ==========================================================

The mutated source is written over a copy of the module in a scratch copy of
``kcodec/`` (with the built extensions), which goes first on ``PYTHONPATH``;
the worktree is never written.  A per-test coverage map (coverage.py, one
dynamic context per pytest node id, built once) picks the tests that run the
mutated line; they run with ``-x``, fastest first, under a timeout (a hung
mutant counts as killed by timeout).  Lines that only run at import time are
charged to every test of the run.

Mutants listed in ``bench/mutation-equivalents.txt`` as
``module:line:operator:original -> mutated  # reason`` cannot change
behaviour; they are counted apart and left out of the score.

Usage (from the repository root, one process at a time on a shared machine)::

    nice -n 19 python bench/mutation.py log/offset_map --tests tests/test_cleaner.py

This is a development tool, not part of CI.
"""
from __future__ import annotations

import argparse
import ast
import copy
import json
import math
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Sequence, Set, Tuple

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENTS = ROOT / "bench" / "mutation-equivalents.txt"

_CMP_SWAP = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
             ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_ARITH_SWAP = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult,
               ast.FloorDiv: ast.Mult}
_BOOL_SWAP = {ast.And: ast.Or, ast.Or: ast.And}


@dataclass
class Mutant:
    module: str          # "log/offset_map"
    line: int
    col: int
    operator: str
    original: str
    mutated: str
    source: bytes = field(repr=False)

    @property
    def key(self) -> Tuple[str, int, str, str, str]:
        return (self.module, self.line, self.operator, self.original, self.mutated)

    def describe(self) -> str:
        return f"{self.module}:{self.line}:{self.operator}:{self.original} -> {self.mutated}"


# --- making mutants -------------------------------------------------------------------------

def _skip_ids(tree: ast.AST) -> Set[int]:
    """Nodes never mutated: annotations, docstrings and ``if TYPE_CHECKING:`` bodies."""
    skip: Set[int] = set()

    def mark(node: Optional[ast.AST]) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            mark(node.returns)
            for a in node.args.args + node.args.kwonlyargs + node.args.posonlyargs:
                mark(a.annotation)
            for a in (node.args.vararg, node.args.kwarg):
                if a is not None:
                    mark(a.annotation)
        elif isinstance(node, ast.AnnAssign):
            mark(node.annotation)
        elif isinstance(node, ast.If) and isinstance(node.test, ast.Name) \
                and node.test.id == "TYPE_CHECKING":
            mark(node)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
                    and isinstance(body[0].value.value, str):
                mark(body[0])
    return skip


def _offset(lines: List[bytes], lineno: int, col: int) -> int:
    # ast columns are UTF-8 byte offsets, so the splice works on bytes
    return sum(len(x) for x in lines[:lineno - 1]) + col


def _splice(src: bytes, lines: List[bytes], node: ast.AST, text: str) -> bytes:
    start = _offset(lines, node.lineno, node.col_offset)
    end = _offset(lines, node.end_lineno, node.end_col_offset)
    return src[:start] + text.encode() + src[end:]


def _segment(src: bytes, lines: List[bytes], node: ast.AST) -> str:
    start = _offset(lines, node.lineno, node.col_offset)
    end = _offset(lines, node.end_lineno, node.end_col_offset)
    return " ".join(src[start:end].decode().split())


def _statement_lists(tree: ast.AST) -> Iterator[List[ast.stmt]]:
    # ast.walk reaches except handlers too, each with a body of its own
    for node in ast.walk(tree):
        for name in ("body", "orelse", "finalbody"):
            body = getattr(node, name, None)
            if isinstance(body, list) and body and isinstance(body[0], ast.stmt):
                yield body


def _short(text: str, width: int = 70) -> str:
    return text if len(text) <= width else text[:width - 3] + "..."


def make_mutants(module: str, path: Path) -> List[Mutant]:
    src = path.read_bytes()
    tree = ast.parse(src)
    lines = src.splitlines(keepends=True)
    skip = _skip_ids(tree)
    out: List[Mutant] = []

    def add(node: ast.AST, op: str, new_node: ast.AST, whole_line_text: Optional[str] = None) -> None:
        original = _segment(src, lines, node)
        if whole_line_text is None:
            text = ast.unparse(new_node)
            if isinstance(node, ast.expr):
                text = f"({text})"
        else:
            text = whole_line_text
        mutated_src = _splice(src, lines, node, text)
        try:
            compile(mutated_src, str(path), "exec")
        except SyntaxError:
            return
        out.append(Mutant(module, node.lineno, node.col_offset, op, _short(original),
                          _short(" ".join(text.split())), mutated_src))

    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Compare):
            for i, cmp in enumerate(node.ops):
                swap = _CMP_SWAP.get(type(cmp))
                if swap is not None:
                    new = copy.deepcopy(node)
                    new.ops[i] = swap()
                    add(node, "compare", new)
        elif isinstance(node, ast.BoolOp):
            new = copy.deepcopy(node)
            new.op = _BOOL_SWAP[type(node.op)]()
            add(node, "boolop", new)
        elif isinstance(node, ast.BinOp) and type(node.op) in _ARITH_SWAP:
            new = copy.deepcopy(node)
            new.op = _ARITH_SWAP[type(node.op)]()
            add(node, "arith", new)
        elif isinstance(node, ast.AugAssign) and type(node.op) in _ARITH_SWAP:
            new = copy.deepcopy(node)
            new.op = _ARITH_SWAP[type(node.op)]()
            add(node, "arith", new)
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) \
                and isinstance(node.operand, ast.Constant) and type(node.operand.value) is int:
            skip.add(id(node.operand))   # -1 is one constant, mutated to 0 and -2
            add(node, "const", ast.Constant(-node.operand.value + 1))
            add(node, "const", ast.Constant(-node.operand.value - 1))
        elif isinstance(node, ast.Constant):
            if isinstance(node.value, bool):
                add(node, "bool", ast.Constant(not node.value))
            elif isinstance(node.value, int):
                add(node, "const", ast.Constant(node.value + 1))
                add(node, "const", ast.Constant(node.value - 1))
        elif isinstance(node, ast.Return) and node.value is not None \
                and not (isinstance(node.value, ast.Constant) and node.value.value is None):
            add(node, "return", ast.Return(ast.Constant(None)))
    for body in _statement_lists(tree):
        for stmt in body:
            if id(stmt) in skip or isinstance(stmt, (ast.Pass, ast.FunctionDef, ast.AsyncFunctionDef,
                                                     ast.ClassDef, ast.Import, ast.ImportFrom,
                                                     ast.Global, ast.Nonlocal)):
                continue
            head = _segment(src, lines, stmt)
            if isinstance(stmt, (ast.If, ast.For, ast.While, ast.With, ast.Try)):
                head = src.splitlines()[stmt.lineno - 1].decode().strip()
            mutated = _splice(src, lines, stmt, "pass")
            try:
                compile(mutated, str(path), "exec")
            except SyntaxError:
                continue
            out.append(Mutant(module, stmt.lineno, stmt.col_offset, "delete", _short(head), "pass", mutated))
    # the same change twice on one line (two ``i + 1``): the column tells them apart
    seen: Dict[Tuple[str, int, str, str, str], int] = {}
    for m in out:
        seen[m.key] = seen.get(m.key, 0) + 1
    for m in out:
        if seen[m.key] > 1:
            m.original = f"{m.original} @col{m.col}"
    out.sort(key=lambda m: (m.line, m.col, m.operator, m.original, m.mutated))
    return out


def definition_lines(path: Path) -> Set[int]:
    """Lines that run when the module is imported: module and class bodies, decorators and
    default values, never a function's body."""
    out: Set[int] = set()

    def visit(body: Sequence[ast.stmt]) -> None:
        for stmt in body:
            if isinstance(stmt, (ast.FunctionDef, ast.AsyncFunctionDef)):
                for node in [*stmt.decorator_list, *stmt.args.defaults,
                             *(d for d in stmt.args.kw_defaults if d is not None)]:
                    out.update(range(node.lineno, node.end_lineno + 1))
                out.add(stmt.lineno)
            elif isinstance(stmt, ast.ClassDef):
                for node in [*stmt.decorator_list, *stmt.bases]:
                    out.update(range(node.lineno, node.end_lineno + 1))
                out.add(stmt.lineno)
                visit(stmt.body)
            else:
                out.update(range(stmt.lineno, stmt.end_lineno + 1))

    visit(ast.parse(path.read_bytes()).body)
    return out


# --- the per-test coverage map --------------------------------------------------------------

_ENV_DURATIONS = "KCODEC_MUTATION_DURATIONS"
_ENV_SELECT = "KCODEC_MUTATION_SELECT"
_ENV_SCRATCH = "KCODEC_MUTATION_TREE"


def _plugin_source() -> str:
    """A pytest plugin, loaded with ``-p``: one coverage context per node id, the tests' durations,
    and a run restricted to the node ids listed in a file."""
    return f'''
import json, os, time
import pytest

_durations = {{}}

def pytest_sessionstart(session):
    import kcodec
    tree = os.environ[{_ENV_SCRATCH!r}]
    if not os.path.abspath(kcodec.__file__).startswith(os.path.join(tree, "")):
        raise pytest.UsageError(f"kcodec imported from {{kcodec.__file__}}, not from the mutation tree {{tree}}")

@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    import coverage
    cov = coverage.Coverage.current()
    if cov is not None:
        cov.switch_context(item.nodeid)
    t0 = time.monotonic()
    yield
    _durations[item.nodeid] = time.monotonic() - t0
    if cov is not None:
        cov.switch_context("")

def pytest_collection_modifyitems(session, config, items):
    path = os.environ.get({_ENV_SELECT!r})
    if not path:
        return
    with open(path) as f:
        order = [line.rstrip("\\n") for line in f if line.strip()]
    rank = {{nodeid: i for i, nodeid in enumerate(order)}}
    items[:] = sorted((it for it in items if it.nodeid in rank), key=lambda it: rank[it.nodeid])

def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get({_ENV_DURATIONS!r})
    if path:
        with open(path, "w") as f:
            json.dump(_durations, f)
'''


@dataclass
class CoverageMap:
    lines: Dict[str, Dict[int, List[str]]]   # module -> line -> node ids
    import_time: Dict[str, Set[int]]          # module -> lines run with no test context
    durations: Dict[str, float]

    def tests_for(self, module: str, line: int) -> List[str]:
        tests = set(self.lines.get(module, {}).get(line, ()))
        if line in self.import_time.get(module, ()):
            # run once, at import: coverage charges it to whichever test imported the module first
            # (codecs are imported lazily), yet every test using the module depends on it, and
            # so do those that only read the module's names (named in their node ids)
            dotted = "kcodec." + module.replace("/", ".")
            tests |= {t for by_line in self.lines.get(module, {}).values() for t in by_line}
            tests |= {t for t in self.durations if dotted in t}
            if not tests:
                tests = set(self.durations)
        return sorted(tests, key=lambda t: (self.durations.get(t, 0.0), t))


def _test_env(scratch: Path, extra: Dict[str, str]) -> Dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(scratch)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    # not the current directory first on sys.path: that would import the worktree's kcodec
    env["PYTHONSAFEPATH"] = "1"
    env[_ENV_SCRATCH] = str(scratch)
    env.update(extra)
    return env


def build_coverage_map(scratch: Path, modules: Dict[str, Path], tests: Sequence[str],
                       pytest_args: Sequence[str]) -> CoverageMap:
    import coverage

    work = scratch / "_map"
    work.mkdir(exist_ok=True)
    rc = work / "coveragerc"
    files = [str(scratch / p) for p in modules.values()]
    rc.write_text("[run]\ndata_file = {}\ninclude =\n{}\n".format(
        work / ".coverage", "".join(f"    {f}\n" for f in files)))
    durations = work / "durations.json"
    cmd = [sys.executable, "-m", "coverage", "run", f"--rcfile={rc}", "-m", "pytest", "-q",
           "-p", "no:cacheprovider", "-p", "_kcodec_mutation_plugin", *pytest_args, *tests]
    print("coverage map:", " ".join(cmd[3:]), flush=True)
    t0 = time.monotonic()
    proc = subprocess.run(cmd, cwd=ROOT, env=_test_env(scratch, {_ENV_DURATIONS: str(durations)}),
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    tail = proc.stdout.strip().splitlines()[-1:] if proc.stdout.strip() else []
    print(f"  {' '.join(tail)} ({time.monotonic() - t0:.0f} s)", flush=True)
    if proc.returncode != 0:
        print(proc.stdout[-4000:])
        raise SystemExit("the tests must pass unmutated before mutants mean anything")
    data = coverage.CoverageData(basename=str(work / ".coverage"))
    data.read()
    lines: Dict[str, Dict[int, List[str]]] = {}
    import_time: Dict[str, Set[int]] = {}
    for module, rel in modules.items():
        by_line = data.contexts_by_lineno(str(scratch / rel))
        lines[module] = {ln: [c for c in ctx if c] for ln, ctx in by_line.items()}
        import_time[module] = {ln for ln, ctx in by_line.items() if ctx == [""] or set(ctx) == {""}}
        import_time[module] |= definition_lines(scratch / rel)
    return CoverageMap(lines, import_time, json.loads(durations.read_text()))


# --- running mutants ------------------------------------------------------------------------

def run_mutant(scratch: Path, rel: Path, mutant: Mutant, tests: List[str], test_files: Sequence[str],
               pytest_args: Sequence[str], timeout: float) -> str:
    target = scratch / rel
    original = target.read_bytes()
    select = scratch / "_map" / "select.txt"
    select.write_text("".join(t + "\n" for t in tests))
    files = sorted({t.split("::", 1)[0] for t in tests} & set(test_files)) or list(test_files)
    cmd = [sys.executable, "-m", "pytest", "-x", "-q", "-p", "no:cacheprovider",
           "-p", "_kcodec_mutation_plugin", *pytest_args, *files]
    target.write_bytes(mutant.source)
    try:
        proc = subprocess.Popen(cmd, cwd=ROOT, env=_test_env(scratch, {_ENV_SELECT: str(select)}),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        try:
            rc = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            return "timeout"
        except BaseException:
            # interrupted: the tests, in a session of their own, go too
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
    finally:
        target.write_bytes(original)
    if rc == 0:
        return "survived"
    if rc in (4, 5):   # a usage error or no test collected: the run is wrong, not the mutant caught
        return "error"
    return "killed"


def read_equivalents(path: Path) -> Dict[Tuple[str, int, str, str, str], str]:
    out: Dict[Tuple[str, int, str, str, str], str] = {}
    if not path.exists():
        return out
    for n, raw in enumerate(path.read_text().splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        body, _, reason = line.partition("  # ")
        try:
            module, lineno, op, change = body.split(":", 3)
            original, mutated = change.split(" -> ", 1)
            out[(module, int(lineno), op, original.strip(), mutated.strip())] = reason.strip()
        except ValueError:
            raise SystemExit(f"{path}:{n}: not 'module:line:operator:original -> mutated  # reason'")
    return out


def _line_map(rel: Path, rev: str) -> Dict[int, int]:
    """Line numbers of ``rel`` at git revision ``rev`` -> the same lines in the working tree, where unchanged."""
    import difflib

    old = subprocess.run(["git", "show", f"{rev}:{rel.as_posix()}"], cwd=ROOT, capture_output=True, text=True,
                         check=True).stdout.splitlines()
    new = (ROOT / rel).read_text().splitlines()
    out: Dict[int, int] = {}
    for a, b, size in difflib.SequenceMatcher(None, old, new, autojunk=False).get_matching_blocks():
        for i in range(size):
            out[a + i + 1] = b + i + 1
    return out


def check_equivalents(path: Path, fix: bool, since: Optional[str] = None,
                      only: Optional[Set[str]] = None) -> int:
    """Entries of the equivalents file whose mutant no longer stands on their line, and where it stands now.

    An edit above a listed line moves it; the entry then names no mutant and its mutant counts as a
    survivor again.  With ``fix``, an entry whose change (operator, original, mutated) now stands on
    exactly one line that no other entry names is moved there, its reason kept; with ``since`` (a git
    revision the entries were written against), an entry moves to where the diff since then carried
    its line, if its change stands there.  ``only`` limits both to these modules (entries of one file
    may have been written against different revisions).  Returns how many entries are left stale.
    """
    entries = read_equivalents(path)
    stale = 0
    moves: Dict[Tuple[str, int, str, str, str], int] = {}
    for module in sorted({k[0] for k in entries if only is None or k[0] in only}):
        _, rel = module_path(module)
        current = {m.key for m in make_mutants(module, ROOT / rel)}
        listed = {k for k in entries if k[0] == module}
        carried = _line_map(rel, since) if fix and since else {}
        # With the diff at hand every entry follows its line, even one whose key a mutant of another
        # line now happens to match (a constant 0 mutated to -1 stands on many lines).
        moved = {k for k in listed if carried.get(k[1], k[1]) != k[1] or (carried and k[1] not in carried)}
        for key in sorted((listed - current) | moved):
            free = sorted(k[1] for k in current - (listed - moved) if k[2:] == key[2:])
            if carried:
                free = [carried[key[1]]] if carried.get(key[1]) in free else []
            if fix and len(free) == 1:
                moves[key] = free[0]
                print(f"{module}:{key[1]} -> line {free[0]}: {key[3]} -> {key[4]}")
            else:
                stale += 1
                where = f"now on lines {free}" if free else "no longer made"
                print(f"stale {module}:{key[1]}:{key[2]}:{key[3]} -> {key[4]} ({where})")
    if moves:
        out = []
        for raw in path.read_text().splitlines():
            body, sep, reason = raw.partition("  # ")
            parts = body.split(":", 3)
            if not raw.startswith("#") and len(parts) == 4 and parts[1].strip().isdigit():
                original, _, mutated = parts[3].partition(" -> ")
                key = (parts[0].strip(), int(parts[1]), parts[2], original.strip(), mutated.strip())
                if key in moves:
                    raw = f"{parts[0]}:{moves[key]}:{parts[2]}:{parts[3]}{sep}{reason}"
            out.append(raw)
        path.write_text("\n".join(out) + "\n")
    print(f"{len(entries)} entries, {len(moves)} moved, {stale} stale")
    return stale


def make_scratch(tmp: Path) -> Path:
    scratch = tmp / "tree"
    shutil.copytree(ROOT / "kcodec", scratch / "kcodec",
                    ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "build"))
    (scratch / "_kcodec_mutation_plugin.py").write_text(_plugin_source())
    return scratch


def module_path(name: str) -> Tuple[str, Path]:
    name = name.removesuffix(".py").replace(".", "/")
    name = name.removeprefix("kcodec/")
    rel = Path("kcodec") / f"{name}.py"
    if not (ROOT / rel).exists():
        raise SystemExit(f"no module {rel}")
    return name, rel


def main(argv: Optional[Sequence[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help="modules under kcodec/, e.g. log/offset_map")
    ap.add_argument("--tests", nargs="+", help="test files the map is built from")
    ap.add_argument("--report", type=Path, nargs="+", metavar="JSON",
                    help="print the table of earlier runs' --json files (a later file's outcome for a mutant "
                         "wins), with today's equivalents, and stop")
    ap.add_argument("--lines", default="", help="only mutants on these lines, e.g. 40-60,72")
    ap.add_argument("--operators", default="", help="only these operators (comma separated)")
    ap.add_argument("--sample", type=int, default=0, metavar="N",
                    help="run N mutants of each module, drawn with --seed; the score is then an "
                         "estimate, printed with its 95%% interval")
    ap.add_argument("--seed", type=int, default=0, help="the seed of --sample's draw")
    ap.add_argument("--timeout-factor", type=float, default=5.0,
                    help="timeout: this times the covering tests' unmutated time, plus --timeout-base")
    ap.add_argument("--timeout-base", type=float, default=20.0)
    ap.add_argument("--pytest-args", default="", help="extra pytest arguments, e.g. \"-m 'not spark'\"")
    ap.add_argument("--equivalents", type=Path, default=EQUIVALENTS)
    ap.add_argument("--json", type=Path, help="write every mutant's outcome here")
    ap.add_argument("--list", action="store_true", help="list the mutants and stop")
    ap.add_argument("--check-equivalents", action="store_true",
                    help="list the equivalents whose mutant is no longer on their line, and stop (exit 1 if any)")
    ap.add_argument("--fix-equivalents", action="store_true",
                    help="as --check-equivalents, and move each entry whose change now stands on one free line")
    ap.add_argument("--since", metavar="REV",
                    help="with --fix-equivalents: the git revision the entries (of the modules named, if any) "
                         "were written against; an entry follows its line through the diff since then")
    args = ap.parse_args(argv)
    # stopped by a signal: unwind, so the running tests go and the scratch tree is removed
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))
    if args.report:
        return report(args.report, args.equivalents)
    if args.check_equivalents or args.fix_equivalents:
        only = {module_path(m)[0] for m in args.modules} or None
        return 1 if check_equivalents(args.equivalents, args.fix_equivalents, args.since, only) else 0
    if not args.modules or not (args.tests or args.list):
        ap.error("modules and --tests are required")

    modules = dict(module_path(m) for m in args.modules)
    mutants = {m: make_mutants(m, ROOT / rel) for m, rel in modules.items()}
    if args.lines:
        wanted: Set[int] = set()
        for part in args.lines.split(","):
            lo, _, hi = part.partition("-")
            wanted.update(range(int(lo), int(hi or lo) + 1))
        mutants = {m: [x for x in ms if x.line in wanted] for m, ms in mutants.items()}
    if args.operators:
        ops = set(args.operators.split(","))
        mutants = {m: [x for x in ms if x.operator in ops] for m, ms in mutants.items()}
    if args.sample:
        # Drawn from the list after --lines/--operators, so one seed names one set of mutants
        # for as long as the module's source is unchanged.
        mutants = {m: sorted(random.Random(f"{args.seed}:{m}").sample(ms, min(args.sample, len(ms))),
                             key=lambda x: x.key)
                   for m, ms in mutants.items()}
    if args.list:
        for ms in mutants.values():
            for x in ms:
                print(x.describe())
        return 0
    equivalents = read_equivalents(args.equivalents)
    pytest_args = shlex.split(args.pytest_args)
    tests = [str(Path(t)) for t in args.tests]
    results: List[dict] = []
    with tempfile.TemporaryDirectory(prefix="kcodec-mutation-") as tmp:
        scratch = make_scratch(Path(tmp))
        cmap = build_coverage_map(scratch, modules, tests, pytest_args)
        for module, ms in mutants.items():
            for i, mutant in enumerate(ms, 1):
                covering = cmap.tests_for(module, mutant.line)
                if mutant.key in equivalents:
                    outcome = "equivalent"
                elif not covering:
                    outcome = "survived"   # no test runs the line
                else:
                    budget = sum(cmap.durations.get(t, 1.0) for t in covering)
                    timeout = args.timeout_factor * budget + args.timeout_base
                    outcome = run_mutant(scratch, modules[module], mutant, covering, tests,
                                         pytest_args, timeout)
                results.append({"module": module, "line": mutant.line, "operator": mutant.operator,
                                "original": mutant.original, "mutated": mutant.mutated,
                                "outcome": outcome, "tests": len(covering)})
                print(f"[{module} {i}/{len(ms)}] {outcome:10s} {mutant.describe()}"
                      f" ({len(covering)} tests)", flush=True)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    summarize(results, list(modules), sampled=bool(args.sample))
    return 0


def summarize(results: List[dict], modules: List[str], sampled: bool = False) -> None:
    """The score table and every survivor; a sampled run's scores carry their interval."""
    print()
    print(f"{'module':24s} {'mutants':>7s} {'killed':>6s} {'timeout':>7s} {'survived':>8s} "
          f"{'equiv':>5s} {'score':>6s}")
    for module in modules:
        rs = [r for r in results if r["module"] == module]
        count = {k: sum(r["outcome"] == k for r in rs) for k in ("killed", "timeout", "survived",
                                                                  "equivalent", "error")}
        scored = len(rs) - count["equivalent"]
        caught = count["killed"] + count["timeout"]
        score = 100.0 * caught / scored if scored else 100.0
        print(f"{module:24s} {len(rs):7d} {count['killed']:6d} {count['timeout']:7d} "
              f"{count['survived'] + count['error']:8d} {count['equivalent']:5d} {score:5.1f}%"
              f"{_interval(caught, scored) if sampled else ''}")
    survivors = [r for r in results if r["outcome"] in ("survived", "error")]
    if survivors:
        print("\nsurvivors:")
        for r in survivors:
            why = "" if r["tests"] else "   [no test runs this line]"
            print(f"  {r['module']}:{r['line']}:{r['operator']}:{r['original']} -> {r['mutated']}{why}")


def _interval(caught: int, scored: int) -> str:
    """The Wilson 95% interval of a score, for a run that saw a sample of a module's mutants."""
    if not scored:
        return ""
    z = 1.959964
    p = caught / scored
    centre = (p + z * z / (2 * scored)) / (1 + z * z / scored)
    half = z * math.sqrt(p * (1 - p) / scored + z * z / (4 * scored * scored)) / (1 + z * z / scored)
    return f"  (95%: {100 * (centre - half):.0f}-{100 * min(1.0, centre + half):.0f}%)"


def report(paths: Sequence[Path], equivalents_path: Path) -> int:
    """The table of earlier runs' ``--json`` files, with the equivalents file as it is now; a later
    file's outcome for a mutant (a rerun of some lines after new tests) replaces an earlier one's."""
    merged: Dict[Tuple[str, int, str, str, str], dict] = {}
    for path in paths:
        for r in json.loads(path.read_text()):
            merged[(r["module"], r["line"], r["operator"], r["original"], r["mutated"])] = r
    results = list(merged.values())
    equivalents = read_equivalents(equivalents_path)
    for r in results:
        key = (r["module"], r["line"], r["operator"], r["original"], r["mutated"])
        if r["outcome"] in ("survived", "error") and key in equivalents:
            r["outcome"] = "equivalent"
    summarize(results, list(dict.fromkeys(r["module"] for r in results)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
