"""Package attributes imported from their module on first use (PEP 562), so importing a package stays cheap."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, homes: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``homes[name]`` (a module path) and returns its ``name``."""
    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)
    return __getattr__
