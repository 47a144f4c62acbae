"""The package's layers point down, no modules import each other in a circle, nothing uses the lazy face inside.

Layers, lowest first (a module may import its own layer and those below):
base helpers (errors, escape, ...) < storage < the native codecs < compression < the
native record core < records < arrow < partitioner < log < dump < spark < advise < cli.
The import graph is read from the installed package's sources, every import counted,
also those inside functions, since a late import is still a dependency.

Package faces (``kcodec``, ``kcodec.arrow``) are for users: inside the package every name is
imported from its defining module, and the columnar helpers other packages need are public
names of ``kcodec.arrow``'s modules, so no module takes a private (``_name``) name of them.

``kcodec advise`` keeps each input kind in one place and each producer client in one place: code
that only one input kind uses lives in that kind's package under ``inputs/``, and no module
outside ``replay/`` writes a client's name (a client's behaviour is a field of its rules).
"""
from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Dict, List, Sequence, Set

import kcodec

LAYERS = [
    ("kcodec.errors", 0), ("kcodec._version", 0), ("kcodec._lazy", 0), ("kcodec.escape", 0),
    ("kcodec._java_utf8", 0), ("kcodec._extras", 0),
    ("kcodec.storage", 1),
    ("kcodec._native.primitives", 2), ("kcodec._native.codecs", 2), ("kcodec._native.native_codec", 2),
    ("kcodec.compression", 3),
    ("kcodec._native", 4),
    ("kcodec.records", 5),
    ("kcodec.arrow", 6),
    ("kcodec.partitioner", 7),
    ("kcodec.log", 8),
    ("kcodec.dump", 9),
    ("kcodec.spark", 10),
    ("kcodec.advise", 11),
    ("kcodec.cli", 12),
    ("kcodec.advise.__main__", 12),  # spark-submit's entry: the command line, as kcodec.cli
]


def modules(root: Path) -> Dict[str, Path]:
    """Dotted name -> file of every module under ``root`` (the folder holding the ``kcodec`` package)."""
    out = {}
    for p in (root / "kcodec").rglob("*"):
        if p.suffix not in (".py", ".pyx", ".pxi") or "__pycache__" in p.parts:
            continue
        name = ".".join(p.relative_to(root).with_suffix("").parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


def import_graph(root: Path) -> Dict[str, Set[str]]:
    """Module -> the kcodec modules it imports (anywhere in its body); ``kcodec`` is the package face."""
    mods = modules(root)

    def owner(name: str) -> str:
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name

    graph: Dict[str, Set[str]] = {}
    for name, path in mods.items():
        if path.suffix != ".py":
            continue
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: Set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                edges.update(owner(a.name) for a in node.names if a.name.split(".")[0] == "kcodec")
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                    base = ".".join(parts + ([base] if base else []))
                if base.split(".")[0] != "kcodec":
                    continue
                for a in node.names:
                    full = f"{base}.{a.name}"
                    edges.add(full if full in mods else owner(base))
        edges.discard(name)
        graph[name] = edges
    return graph


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: Dict[str, int] = {}
    low: Dict[str, int] = {}
    stack: List[str] = []
    on_stack: Set[str] = set()
    found: List[List[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in graph:
                continue
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def layer(name: str) -> int:
    """The layer of the longest prefix in :data:`LAYERS` that names ``name`` or a package holding it."""
    found = [(len(prefix), rank) for prefix, rank in LAYERS if name == prefix or name.startswith(prefix + ".")]
    assert found, f"{name} has no layer in tests/test_architecture.py"
    return max(found)[1]


#: Packages whose ``__init__`` only gathers names for users; the top face may import them.
FACES = ("kcodec", "kcodec.arrow")
#: Packages whose private names no other module imports (its own modules included).
SEALED = ("kcodec.arrow",)


def violations(graph: Dict[str, Set[str]]) -> List[str]:
    out = []
    for name, edges in sorted(graph.items()):
        if name == "kcodec":
            continue  # the package face may name anything
        for target in sorted(edges):
            if target in FACES:
                out.append(f"{name} imports the package face '{target}': import from the defining module")
            elif layer(target) > layer(name):
                out.append(f"{name} (layer {layer(name)}) imports {target} (layer {layer(target)})")
    return out


def private_imports(root: Path) -> List[str]:
    """Every ``from M import _name`` whose ``M`` is a module of a :data:`SEALED` package, but not the importer."""
    mods = modules(root)
    out = []
    for name, path in sorted(mods.items()):
        if path.suffix != ".py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or node.level or node.module == name:
                continue
            source = node.module or ""
            if not any(source == p or source.startswith(p + ".") for p in SEALED):
                continue
            for a in node.names:
                if a.name.startswith("_") and not a.name.startswith("__") and f"{source}.{a.name}" not in mods:
                    out.append(f"{name}:{node.lineno} imports {source}.{a.name}, a private name")
    return out


#: the package holding one folder per input kind of ``kcodec advise``
INPUTS = "kcodec.advise.inputs"
#: the package holding the producer clients' rules, the one place a client is named
REPLAY = "kcodec.advise.replay"


def input_kinds(root: Path) -> Set[str]:
    """The input kinds: each package under :data:`INPUTS` (its modules are one kind's code)."""
    base = root.joinpath(*INPUTS.split("."))
    return {f"{INPUTS}.{p.parent.name}" for p in base.glob("*/__init__.py")}


def single_kind_imports(graph: Dict[str, Set[str]], kinds: Set[str]) -> List[str]:
    """Every advise module outside :data:`INPUTS` whose imports reach exactly one input kind's code:
    that code is the kind's own and belongs in its package."""
    out = []
    for name, edges in sorted(graph.items()):
        if not name.startswith("kcodec.advise") or name == INPUTS or name.startswith(INPUTS + "."):
            continue
        reached = {k for k in kinds for e in edges if e == k or e.startswith(k + ".")}
        if len(reached) == 1:
            out.append(f"{name} imports only {reached.pop()}'s code: move it into that input kind's package")
    return out


#: module -> the client name its strings may hold because they name something else by it
LIBRARIES = {"kcodec.advise.inputs.cluster.protocol": "kafka-python",  # the library a live cluster is read with
             "kcodec.advise.inputs.cluster.security": "librdkafka"}  # whose property names --command-config takes


def client_names_outside_replay(root: Path, names: Sequence[str]) -> List[str]:
    """Every string (not a docstring) outside :data:`REPLAY` that holds a producer client's name as a word:
    a client's behaviour is a field of its rules, and only the registry names it."""
    out = []
    for name, path in sorted(modules(root).items()):
        if path.suffix != ".py" or name == REPLAY or name.startswith(REPLAY + "."):
            continue
        named = [n for n in names if n != LIBRARIES.get(name)]
        words = re.compile(r"(?<![\w-])(" + "|".join(re.escape(n) for n in named) + r")(?![\w-])")
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = {id(n.body[0].value) for n in ast.walk(tree)
                if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and n.body
                and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                found = words.search(node.value)
                if found:
                    out.append(f"{name}:{node.lineno} names the producer client {found.group(1)!r}")
    return out


ROOT = Path(kcodec.__file__).resolve().parent.parent


def test_no_import_circles():
    assert cycles(import_graph(ROOT)) == []


def test_layers_point_down_and_nothing_imports_the_lazy_face():
    assert violations(import_graph(ROOT)) == []


def test_no_private_names_of_the_columnar_modules_are_imported():
    assert private_imports(ROOT) == []


def test_each_input_kinds_code_is_in_its_package():
    kinds = input_kinds(ROOT)
    assert {"kcodec.advise.inputs.cluster", "kcodec.advise.inputs.logs"} <= kinds
    assert single_kind_imports(import_graph(ROOT), kinds) == []


def test_no_client_is_named_outside_the_replay():
    from kcodec.advise.replay import CLIENTS

    assert {"java", "librdkafka"} <= set(CLIENTS)
    assert client_names_outside_replay(ROOT, sorted(CLIENTS)) == []


def test_the_advise_checks_find_planted_violations(tmp_path):
    advise = tmp_path / "kcodec" / "advise"
    for folder in ("inputs/logs", "inputs/cluster", "replay"):
        (advise / folder).mkdir(parents=True)
    for init in ("", "advise", "advise/inputs", "advise/inputs/logs", "advise/inputs/cluster", "advise/replay"):
        (tmp_path / "kcodec" / init / "__init__.py").write_text("")
    (advise / "inputs" / "logs" / "tails.py").write_text("def tails(): pass\n")
    (advise / "inputs" / "cluster" / "fetch.py").write_text("def fetch(): pass\n")
    (advise / "replay" / "client.py").write_text('JAVA = "java"\n')
    (advise / "report.py").write_text('"""What java prints."""\nfrom kcodec.advise.inputs.logs.tails import tails\n'
                                      'KIND = f"a {1} java producer"\n')
    (advise / "estate.py").write_text("from kcodec.advise.inputs.logs import tails\n"
                                      "from kcodec.advise.inputs.cluster.fetch import fetch\n")
    (advise / "cost.py").write_text('def f(name="librdkafka2"):\n    return name == "Java"\n')
    kinds = input_kinds(tmp_path)
    assert kinds == {"kcodec.advise.inputs.cluster", "kcodec.advise.inputs.logs"}
    assert single_kind_imports(import_graph(tmp_path), kinds) == [
        "kcodec.advise.report imports only kcodec.advise.inputs.logs's code: move it into that input kind's package",
    ]
    assert client_names_outside_replay(tmp_path, ["java", "librdkafka"]) == [
        "kcodec.advise.report:3 names the producer client 'java'",
    ]


def test_the_checks_find_planted_violations(tmp_path):
    pkg = tmp_path / "kcodec"
    (pkg / "log").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "storage.py").write_text("def f():\n    from kcodec.log import segment\n")
    (pkg / "log" / "__init__.py").write_text("")
    (pkg / "log" / "segment.py").write_text("from kcodec.storage import f\nimport kcodec\n")
    graph = import_graph(tmp_path)
    assert cycles(graph) == [["kcodec.log.segment", "kcodec.storage"]]
    assert violations(graph) == [
        "kcodec.log.segment imports the package face 'kcodec': import from the defining module",
        "kcodec.storage (layer 1) imports kcodec.log.segment (layer 8)",
    ]


def test_the_checks_find_planted_private_and_face_imports(tmp_path):
    pkg = tmp_path / "kcodec"
    (pkg / "arrow").mkdir(parents=True)
    (pkg / "__init__.py").write_text("from kcodec.arrow import to_arrow\n")
    (pkg / "arrow" / "__init__.py").write_text("from kcodec.arrow.columns import column\n")
    (pkg / "arrow" / "columns.py").write_text("def column(): pass\ndef _pa(): pass\n")
    (pkg / "arrow" / "encode.py").write_text("from kcodec.arrow.columns import _pa, column\n")
    (pkg / "partitioner.py").write_text("def f():\n    from kcodec.arrow import _pa, to_arrow\n")
    assert private_imports(tmp_path) == [
        "kcodec.arrow.encode:1 imports kcodec.arrow.columns._pa, a private name",
        "kcodec.partitioner:2 imports kcodec.arrow._pa, a private name",
    ]
    assert violations(import_graph(tmp_path)) == [
        "kcodec.partitioner imports the package face 'kcodec.arrow': import from the defining module",
    ]
