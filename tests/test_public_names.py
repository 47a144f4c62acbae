"""Each module's stated boundary: ``__all__`` is declared, lists no name twice, and every name exists;
a public name that another file imports from a kcodec module is in that module's ``__all__``; and no
module takes a private (``_name``) name from another package.

Sources are read from the installed package, and the importing files from this checkout's folders.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

import pytest

import kcodec

PACKAGE_ROOT = Path(kcodec.__file__).resolve().parent.parent
CHECKOUT = Path(__file__).resolve().parent.parent
# Not imported by name: the version (read as kcodec.__version__), the native core's package, a script.
WITHOUT_ALL = {"kcodec._version", "kcodec._native", "kcodec.advise.__main__"}


def _modules() -> Dict[str, Path]:
    out = {}
    for p in (PACKAGE_ROOT / "kcodec").rglob("*.py"):
        if "__pycache__" in p.parts:
            continue
        name = ".".join(p.relative_to(PACKAGE_ROOT).with_suffix("").parts)
        out[name[: -len(".__init__")] if name.endswith(".__init__") else name] = p
    return out


MODULES = _modules()


def _literal_all(path: Path) -> Optional[List[str]]:
    for node in ast.parse(path.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            return list(ast.literal_eval(node.value))
    return None


def _package_of(module: str) -> str:
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def _imports_from_kcodec(path: Path) -> Iterator[Tuple[str, str, int]]:
    """(module, name, line) of every ``from kcodec... import name`` in ``path``, also inside functions."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("kcodec"):
            for alias in node.names:
                yield node.module, alias.name, node.lineno


@pytest.mark.parametrize("name", sorted(set(MODULES) - WITHOUT_ALL))
def test_all_names_exist(name):
    try:  # the module, and the homes of its lazy attributes, may need an optional package
        module = importlib.import_module(name)
        public = module.__all__
        missing = [n for n in public if not hasattr(module, n)]
    except ModuleNotFoundError as exc:
        if (exc.name or "").startswith("kcodec"):
            raise
        pytest.skip(f"{name} needs {exc.name}")
    assert public and len(set(public)) == len(public)
    assert missing == []
    assert [n for n in public if n.startswith("_") and n != "__version__"] == []
    star: dict = {}
    exec(f"from {name} import *", star)
    assert set(star) - {"__builtins__"} == set(public)


def test_imported_names_are_in_all():
    """A name imported from a kcodec module by any file of the checkout is one that module states."""
    stated = {m: _literal_all(p) for m, p in MODULES.items()}
    folders = [CHECKOUT / d for d in ("kcodec", "tests", "bench", "fuzz", "plugins") if (CHECKOUT / d).is_dir()]
    unstated = []
    for folder in folders:
        for path in sorted(folder.rglob("*.py")):
            for module, name, line in _imports_from_kcodec(path):
                names = stated.get(module)
                if (names is None or name == "*" or name.startswith("_") or name in names
                        or f"{module}.{name}" in MODULES):
                    continue
                unstated.append(f"{path.relative_to(CHECKOUT)}:{line}: {module}.{name}")
    assert unstated == []


def test_no_private_names_across_packages():
    crossing = []
    for module, path in MODULES.items():
        for source, name, line in _imports_from_kcodec(path):
            if not name.startswith("_") or name.startswith("__") or source not in MODULES:
                continue
            if _package_of(source) != _package_of(module):
                crossing.append(f"{module}:{line}: {source}.{name}")
    assert crossing == []


def test_the_package_face_states_its_lazy_names():
    assert set(kcodec._LAZY) <= set(kcodec.__all__)
    assert sorted(dir(kcodec)) == sorted(kcodec.__all__)


def _lazy_packages() -> List[str]:
    """The packages whose face maps names to the modules that define them (a ``_LAZY`` table)."""
    return sorted(m for m, p in MODULES.items() if p.name == "__init__.py"
                  and isinstance(getattr(importlib.import_module(m), "_LAZY", None), dict))


@pytest.mark.parametrize("package", _lazy_packages())
def test_a_lazy_name_is_never_hidden_by_a_module_of_its_own_name(package):
    """Importing a submodule sets it as an attribute of its package, which then shadows the package's
    lazy ``__getattr__``: a lazy name that is also a submodule's name would import as the module once
    that submodule was loaded (``from kcodec.log import recompress`` gave the module)."""
    face = importlib.import_module(package)
    submodules = {m.rpartition(".")[2] for m in MODULES if m.rpartition(".")[0] == package}
    assert sorted(set(face._LAZY) & submodules) == []
    for name, module in face._LAZY.items():
        try:
            importlib.import_module(module)
        except ImportError:  # an optional dependency (pyspark) that this environment lacks
            continue
        assert not isinstance(getattr(face, name), type(face)), f"{package}.{name} is a module"
