"""A missing optional dependency is named with the extra that installs it, as pyproject.toml defines it."""
from __future__ import annotations

import re
import sys
from importlib import metadata
from pathlib import Path
from typing import Dict, Set

import pytest

import kcodec
from kcodec._extras import EXTRA, install_hint
from kcodec.errors import KcodecError, MissingDependencyError

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def _extras() -> Dict[str, Set[str]]:
    """extra -> the distributions it installs, from the installed metadata or the source tree."""
    try:
        requirements = metadata.requires("kcodec") or []
    except metadata.PackageNotFoundError:
        if sys.version_info < (3, 11) or not PYPROJECT.exists():
            pytest.skip("kcodec is not installed and pyproject.toml cannot be read here")
        import tomllib
        optional = tomllib.loads(PYPROJECT.read_text())["project"]["optional-dependencies"]
        requirements = [f'{r}; extra == "{extra}"' for extra, reqs in optional.items() for r in reqs]
    extras: Dict[str, Set[str]] = {}
    for req in requirements:
        marker = re.search(r'extra\s*==\s*"([^"]+)"', req)
        if marker:
            name = re.match(r"[A-Za-z0-9_.-]+", req).group(0).lower()
            extras.setdefault(marker.group(1), set()).add(name)
    return extras


@pytest.mark.parametrize("package,extra", sorted(EXTRA.items()))
def test_each_hint_names_an_extra_that_installs_the_package(package, extra):
    assert package in _extras()[extra]
    assert install_hint(package) == f'pip install "kcodec[{extra}]"'


def test_a_package_without_an_extra_is_named_itself():
    assert install_hint("isal") == "pip install isal"


def test_arrow_without_pyarrow_names_the_arrow_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(MissingDependencyError, match=re.escape('pip install "kcodec[arrow]"')) as info:
        kcodec.to_arrow(b"")
    assert isinstance(info.value, ImportError) and isinstance(info.value, KcodecError)


def test_spark_session_without_pyspark_names_the_spark_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "pyspark", None)
    from kcodec.spark import get_session

    with pytest.raises(MissingDependencyError, match=re.escape('pip install "kcodec[spark]"')):
        get_session()
