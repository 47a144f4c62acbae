"""Package attributes imported from their module on first use (PEP 562), so importing a package stays cheap."""
from __future__ import annotations

import importlib
from typing import Any, Callable, Mapping, MutableMapping, Optional

__all__ = ["lazy_attributes"]


def lazy_attributes(package: str, homes: Mapping[str, str],
                    cache: Optional[MutableMapping[str, Any]] = None) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports ``homes[name]`` (a module path) and returns its ``name``.

    With ``cache`` (the package's ``globals()``) the value is also kept there, so later
    lookups of a hot name skip this function.
    """
    def __getattr__(name: str) -> Any:
        module = homes.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module), name)
        if cache is not None:
            cache[name] = value
        return value
    return __getattr__
