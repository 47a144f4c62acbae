"""Optional dependencies, and the extras of pyproject.toml that install them.

Errors about a missing package name the extra (``pip install "kcodec[spark]"``), so a
user installs everything the feature needs at versions kcodec is tested with.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Type

from kcodec.errors import MissingDependencyError

__all__ = ["EXTRA", "install_hint", "require"]

#: distribution -> the extra that installs it (tests check this against the package metadata)
EXTRA = {
    "python-snappy": "codecs",
    "lz4": "codecs",
    "zstandard": "codecs",
    "pyarrow": "arrow",
    "pyspark": "spark",
    "pandas": "spark",
    "matplotlib": "spark",
}


def install_hint(package: str) -> str:
    """The pip command that installs ``package`` (through kcodec's extra when it has one)."""
    extra = EXTRA.get(package)
    return f'pip install "kcodec[{extra}]"' if extra else f"pip install {package}"


def require(module: str, package: str, feature: str,
            error: Type[MissingDependencyError] = MissingDependencyError) -> ModuleType:
    """Import ``module``, or raise ``error`` saying how to install ``package``.

    A module set to ``None`` in ``sys.modules`` counts as missing, which is
    how tests (and users who want to forbid a library) block an import.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise error(
            f"{feature} needs the Python package {package!r} (module {module!r} cannot be imported: "
            f"{exc}); install it with: {install_hint(package)}") from exc
