"""mypy checks every module of kcodec: CI's lint step (``mypy`` from the repository's root) reads
``[tool.mypy]`` in pyproject.toml, which must name the whole package and let no module's errors pass.

A module's errors pass when a ``[[tool.mypy.overrides]]`` entry (or the top section) sets
``ignore_errors``, when its own ``# mypy: ignore-errors`` comment says so, or when a
``# type: ignore`` comment stands before its first statement, its docstring included (which
makes mypy skip the file).
"""
from __future__ import annotations

import io
import tokenize
from pathlib import Path
from typing import Any, Dict, List

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib is Python 3.11's; CI's lint step runs on 3.11")

ROOT = Path(__file__).resolve().parent.parent
PYPROJECT = ROOT / "pyproject.toml"

pytestmark = pytest.mark.skipif(not PYPROJECT.is_file(), reason=f"{PYPROJECT} is not here")


def config_leaves_out(mypy: Dict[str, Any]) -> List[str]:
    """What ``[tool.mypy]`` (as parsed) lets pass unchecked, in words; empty when it checks all of kcodec."""
    out = []
    if mypy.get("files") != ["kcodec"]:
        out.append(f"files = {mypy.get('files')!r}, not the whole package ['kcodec']")
    if mypy.get("ignore_errors"):
        out.append("ignore_errors for every module")
    for entry in mypy.get("overrides", []):
        if entry.get("ignore_errors"):
            modules = entry["module"] if isinstance(entry["module"], list) else [entry["module"]]
            out.append(f"ignore_errors for {', '.join(modules)}")
    return out


def module_leaves_out(source: str) -> List[str]:
    """The comments by which a module's own text makes mypy pass it over."""
    out = []
    before_code = True
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            text = tok.string.lstrip("#").strip()
            if text.startswith("mypy:") and "ignore-errors" in text:
                out.append(f"line {tok.start[0]}: {tok.string}")
            elif before_code and text.startswith("type:") and text[5:].strip().startswith("ignore"):
                out.append(f"line {tok.start[0]}: {tok.string} before the first statement")
        elif tok.type not in (tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING):
            before_code = False
    return out


def test_mypy_checks_every_module_of_kcodec():
    mypy = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["tool"]["mypy"]
    assert config_leaves_out(mypy) == []
    modules = {str(p.relative_to(ROOT)): module_leaves_out(p.read_text(encoding="utf-8"))
               for p in sorted((ROOT / "kcodec").rglob("*.py"))}
    assert {name: found for name, found in modules.items() if found} == {}


def test_what_lets_a_module_pass_unchecked_is_found():
    planted = tomllib.loads('''
[tool.mypy]
files = ["kcodec", "tests"]
[[tool.mypy.overrides]]
module = ["kcodec.advise.job", "kcodec.advise.cost"]
ignore_errors = true
[[tool.mypy.overrides]]
module = "kcodec.storage"
disallow_untyped_defs = true
[[tool.mypy.overrides]]
module = "kcodec.advise.html"
ignore_errors = true
''')["tool"]["mypy"]
    assert config_leaves_out(planted) == [
        "files = ['kcodec', 'tests'], not the whole package ['kcodec']",
        "ignore_errors for kcodec.advise.job, kcodec.advise.cost",
        "ignore_errors for kcodec.advise.html",
    ]
    assert config_leaves_out({"files": ["kcodec"], "ignore_errors": True}) == ["ignore_errors for every module"]
    assert module_leaves_out('#!/usr/bin/env python\n# type: ignore\n"""Doc."""\nimport os\n') == [
        "line 2: # type: ignore before the first statement"]
    # after the docstring, a statement, it is one line's ignore
    assert module_leaves_out('"""Doc."""\n# type: ignore\nimport os\n') == []
    assert module_leaves_out("import os\n\n# mypy: disable-error-code=x, ignore-errors\n") == [
        "line 3: # mypy: disable-error-code=x, ignore-errors"]
    # a reasoned ignore on one line, after the first statement, leaves the module checked
    assert module_leaves_out("import os\nx = os.sep  # type: ignore[assignment]  # why\n") == []
