"""Few pieces of kcodec's Python are written twice: at most :data:`BUDGET` pairs of places share six lines.

What "the same shape" means here. Each ``.py`` file under ``kcodec/`` is read with
:mod:`tokenize`, and each token stands for its kind: a name becomes ``N`` (a keyword stays
itself, so ``if``, ``return`` and ``None`` keep the shape apart), a string ``S`` (an f-string
whole, however a Python version splits it), a number ``0``, an operator itself, and a change of
indentation ``+>`` or ``<-`` at the start of the line it opens. A line's shape is the sequence of
its tokens' (a string running over several lines counts on its first); comments and blank lines
have none. These lines are passed over, as a blank line is, because their likeness is a
declaration's, not logic written again:

* import statements, and docstrings (of a module, class or function);
* annotated declarations, ``name: type`` or ``name: type = value`` (a dataclass's fields);
* data lines: those holding only names, literals, commas, colons, ``-`` and brackets (the
  entries of a list, dict, set or tuple display, a string continued on the next line, and so
  also a plain name's call with plain arguments, ``f(x, 1)``), or a name bound to literals
  alone (``LIMIT = 5``).

Two places *share six lines of the same shape* when six or more consecutive lines left in
each have equal shapes, line for line. A pair of places is one longest such run; two places
in one file count only where their first six lines do not overlap. Cython (``.pyx``,
``.pxi``) is not read.
"""
from __future__ import annotations

import ast
import io
import keyword
import tokenize
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Dict, List, Set, Tuple

import kcodec

#: The most pairs of places the package may hold; a new one is a piece to write once instead.
BUDGET = 3
#: How many consecutive lines of the same shape make a pair.
LINES = 6

_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENCODING, tokenize.ENDMARKER}
# Python 3.12 splits an f-string into parts (3.14 a t-string too): each whole stays one ``S``
_STRING_STARTS = {getattr(tokenize, n) for n in ("FSTRING_START", "TSTRING_START") if hasattr(tokenize, n)}
_STRING_ENDS = {getattr(tokenize, n) for n in ("FSTRING_END", "TSTRING_END") if hasattr(tokenize, n)}
_DISPLAY = {"N", "S", "0", ",", ":", "-", "(", ")", "[", "]", "{", "}"}
_LITERALS = {"S", "0", "-", ","}
_INDENT, _DEDENT = "+>", "<-"  # no operator is spelled so

Line = Tuple[int, str]  # (line number, shape)


@dataclass(frozen=True)
class Pair:
    """Two places, ``first`` and ``second`` as (file, first line, last line), sharing ``lines`` lines."""

    first: Tuple[str, int, int]
    second: Tuple[str, int, int]
    lines: int

    def __str__(self) -> str:
        (a, a0, a1), (b, b0, b1) = self.first, self.second
        return f"{a}:{a0}-{a1} ~ {b}:{b0}-{b1} ({self.lines} lines)"


def _token_shapes(source: str) -> Dict[int, List[str]]:
    """Line number -> the shapes of the tokens that start on it, indentation changes first."""
    lines: Dict[int, List[str]] = {}
    indents: List[str] = []
    depth = 0  # inside an f-string's parts
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type in _STRING_STARTS:
            depth += 1
            if depth > 1:
                continue
            shape = "S"
        elif tok.type in _STRING_ENDS:
            depth -= 1
            continue
        elif depth:
            continue
        elif tok.type in (tokenize.INDENT, tokenize.DEDENT):
            indents.append(_INDENT if tok.type == tokenize.INDENT else _DEDENT)
            continue
        elif tok.type in _SKIPPED:
            continue
        elif tok.type == tokenize.NAME:
            shape = tok.string if keyword.iskeyword(tok.string) else "N"
        elif tok.type == tokenize.STRING:
            shape = "S"
        elif tok.type == tokenize.NUMBER:
            shape = "0"
        else:
            shape = tok.string
        row = tok.start[0]
        if row not in lines:
            lines[row], indents = indents, []
        lines[row].append(shape)
    return lines


def _declaration_rows(source: str) -> Set[int]:
    """The lines of imports, docstrings and annotated declarations."""
    rows: Set[int] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Import, ast.ImportFrom, ast.AnnAssign)):
            rows.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                rows.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return rows


def shapes(source: str) -> List[Line]:
    """The lines of ``source`` that are compared, each with its shape, in order."""
    passed_over = _declaration_rows(source)
    out = []
    indents: List[str] = []  # those of lines passed over go to the next line compared
    for row, toks in sorted(_token_shapes(source).items()):
        core = [t for t in toks if t not in (_INDENT, _DEDENT)]
        indents += toks[:len(toks) - len(core)]
        if row in passed_over or set(core) <= _DISPLAY \
                or (core[:2] == ["N", "="] and set(core[2:]) <= _LITERALS):
            continue
        out.append((row, " ".join(indents + core)))
        indents = []
    return out


def pairs(files: Dict[str, str], lines: int = LINES) -> List[Pair]:
    """Every pair of places in ``files`` (name -> source) sharing ``lines`` or more lines of the same shape."""
    seqs = {name: shapes(source) for name, source in sorted(files.items())}
    starts: Dict[Tuple[str, ...], List[Tuple[str, int]]] = defaultdict(list)
    for name, seq in seqs.items():
        for i in range(len(seq) - lines + 1):
            starts[tuple(shape for _, shape in seq[i:i + lines])].append((name, i))
    found = []
    for places in starts.values():
        for k, (a, i) in enumerate(places):
            for b, j in places[k + 1:]:
                if a == b and j - i < lines:
                    continue  # the second place begins inside the first's six lines
                sa, sb = seqs[a], seqs[b]
                if i and j and sa[i - 1][1] == sb[j - 1][1]:
                    continue  # inside a longer run, which its own start counts
                n = lines
                while i + n < len(sa) and j + n < len(sb) and sa[i + n][1] == sb[j + n][1]:
                    n += 1
                found.append(Pair((a, sa[i][0], sa[i + n - 1][0]), (b, sb[j][0], sb[j + n - 1][0]), n))
    return sorted(found, key=lambda p: (-p.lines, p.first, p.second))


def package_sources(root: Path) -> Dict[str, str]:
    """Path under ``root`` -> source, for every ``.py`` file of the ``kcodec`` package there."""
    return {str(p.relative_to(root)): p.read_text(encoding="utf-8")
            for p in sorted((root / "kcodec").rglob("*.py")) if "__pycache__" not in p.parts}


ROOT = Path(kcodec.__file__).resolve().parent.parent


def test_few_places_in_kcodec_share_six_lines_of_the_same_shape():
    found = pairs(package_sources(ROOT))
    assert len(found) <= BUDGET, "\n".join(map(str, found))


_ORIGINAL = '''\
import os
from typing import List


def total_sizes(paths: List[str], limit: int) -> int:
    """Sum the sizes."""
    total = 0
    for path in paths:
        if not os.path.exists(path):
            continue
        total += os.path.getsize(path)
        if total > limit:
            raise ValueError(f"over {limit}: {path}")
    return total
'''

# the same logic with other names, strings and numbers, under other comments and blank lines
_RENAMED = '''\
WIDTH = 80


def count_lines(names, cap):
    # a comment
    n = 1
    for name in names:

        if not os.path.isfile(name):
            continue
        n += os.path.getmtime(name)
        if n > cap:
            raise KeyError(f"{cap} and {n + 1} too many")  # another comment
    return n
'''


def test_a_copy_with_other_names_is_found_and_declarations_are_not():
    first = Pair(("a.py", 8, 14), ("b.py", 7, 14), 7)
    assert pairs({"a.py": _ORIGINAL, "b.py": _RENAMED}) == [first]
    # one line of another shape in the middle leaves three and three: no pair
    changed = _RENAMED.replace("        n += os.path.getmtime(name)", "        n += 1 if name else 2")
    assert pairs({"a.py": _ORIGINAL, "b.py": changed}) == []
    # a third copy, and a copy in the same file, are pairs too
    assert len(pairs({"a.py": _ORIGINAL, "b.py": _RENAMED, "c.py": _RENAMED})) == 3
    assert pairs({"a.py": _ORIGINAL + "\n\n" + _ORIGINAL.split("\n\n\n")[1]}) == [
        Pair(("a.py", 8, 14), ("a.py", 20, 26), 7)]

    declarations = '''\
"""Module
docstring."""
from a import (
    b,
    c,
)
LIMIT = 5
NAME = "x"
TABLE = {
    "a": 1,
    "b": -2,
}
ROWS = [
    ("x", 1, 2.5),
]


@dataclass
class Point:
    """A point."""

    x: int
    y: int = 0
    label: str = "p"
'''
    assert shapes(declarations) == [(9, "N = {"), (13, "N = ["), (18, "@ N"), (19, "class N :")]
    assert pairs({"a.py": declarations, "b.py": declarations.replace("Point", "Line")}) == []


def test_shapes_abstract_names_strings_and_numbers_and_keep_keywords_and_indentation():
    source = 'def f(x):\n    return g(x, "s", f"{x!r} {y}", 1.5) is None\n'
    assert shapes(source) == [(1, "def N ( N ) :"), (2, "+> return N ( N , S , S , 0 ) is None")]
