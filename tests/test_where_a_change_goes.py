"""docs/contributing.md's "Where a change goes" names files that exist.

Every backticked span of that section that is a path (it holds a ``/`` or ends in a file's
suffix) must name a file or folder of the repository, relative to its root, so the guide cannot
keep sending a contributor to a file that was moved.
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import List

import pytest

ROOT = Path(__file__).resolve().parent.parent
GUIDE = ROOT / "docs" / "contributing.md"
SECTION = "## Where a change goes"
KINDS = ("a new input kind", "a new producer client", "a new price profile", "a new recommendation rule",
         "a new codec")

_SPAN = re.compile(r"`([^`\s]+)`")
_SUFFIX = re.compile(r"\.(py|pyx|pxi|pxd|md|rst|toml|h|c|txt|cfg)$")

pytestmark = pytest.mark.skipif(not GUIDE.is_file(), reason=f"{GUIDE} is not here (the docs ship in the sdist)")


def section(text: str, title: str = SECTION) -> str:
    """The text of the ``title`` section, up to the next section of its level or higher."""
    start = text.index(title + "\n")
    level = title.split()[0]
    end = re.search(rf"^#{{1,{len(level)}}} ", text[start + len(title):], re.M)
    return text[start:start + len(title) + end.start()] if end else text[start:]


def named_paths(text: str) -> List[str]:
    """The backticked paths of ``text``, in order."""
    return [s for s in _SPAN.findall(text) if "/" in s or _SUFFIX.search(s)]


def missing(paths: List[str], root: Path) -> List[str]:
    """Those of ``paths`` that name no file or folder under ``root``."""
    return [p for p in paths if not (root / p).exists()]


def test_the_section_names_the_files_of_each_kind_of_change_and_they_exist():
    text = section(GUIDE.read_text(encoding="utf-8"))
    headings = [h.lower() for h in re.findall(r"^### (.+)$", text, re.M)]
    assert headings == list(KINDS)
    names = named_paths(text)
    assert len(names) >= 20
    assert missing(names, ROOT) == []


def test_a_moved_file_is_found(tmp_path):
    (tmp_path / "kcodec" / "advise").mkdir(parents=True)
    (tmp_path / "kcodec" / "__init__.py").write_text("")
    (tmp_path / "kcodec" / "advise" / "__init__.py").write_text("")
    (tmp_path / "kcodec" / "advise" / "cost.py").write_text("")
    (tmp_path / "docs").mkdir()
    guide = ("# Guide\n\n## Where a change goes\n\n### A new price profile\n"
             "`kcodec/advise/cost.py` and `kcodec/advise/platforms.py` (`PLATFORMS`, `--platform`, "
             "`kcodec.codecs`), `docs/cost-model.md`, `kcodec/advise/`, `setup.py`.\n\n"
             "## Next section\n`kcodec/gone.py`\n")
    text = section(guide)
    assert "gone.py" not in text
    names = named_paths(text)
    assert names == ["kcodec/advise/cost.py", "kcodec/advise/platforms.py", "docs/cost-model.md", "kcodec/advise/",
                     "setup.py"]
    assert missing(names, tmp_path) == ["kcodec/advise/platforms.py", "docs/cost-model.md", "setup.py"]
