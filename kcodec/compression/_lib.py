"""Shared helpers of the built-in codecs: lazy library imports and buffer views."""
from __future__ import annotations

import ctypes
import sys
import threading
from types import ModuleType
from typing import Any, Dict, Optional

from kcodec._extras import require
from kcodec.errors import CodecLibraryMissingError

__all__ = ["import_library", "byte_view", "library_version", "native_library"]

_LOADED: Dict[str, ctypes.CDLL] = {}
_LOADED_LOCK = threading.Lock()


def import_library(module: str, package: str, codec: str) -> ModuleType:
    """Import ``module`` for ``codec``; CodecLibraryMissingError naming ``package`` if absent."""
    return require(module, package, f"the {codec} codec", CodecLibraryMissingError)


def byte_view(data: Any) -> memoryview:
    """A flat, read-only view of unsigned bytes over any buffer, without copying.

    numpy arrays of any dtype and multi-dimensional C-contiguous buffers are
    cast to bytes; a non-contiguous buffer is the one case that is copied.
    """
    view = data if isinstance(data, memoryview) else memoryview(data)
    if view.format == "B" and view.ndim == 1 and view.c_contiguous:
        return view
    if not view.c_contiguous:
        view = memoryview(view.tobytes())
    return view.cast("B")


def library_version(module: Optional[ModuleType]) -> str:
    """``name version`` of a loaded library module (zlib reports the C library's version)."""
    if module is None:
        return "not loaded"
    top = module.__name__.split(".")[0]
    version = getattr(module, "ZLIB_RUNTIME_VERSION", None) or getattr(module, "__version__", None)
    if version is None:
        version = getattr(sys.modules.get(top), "__version__", None)
    return f"{top} {version}" if version else top


def native_library(path: str) -> ctypes.CDLL:
    """The shared library at ``path``, loaded once and kept loaded for the life of the process.

    Codecs hand the addresses of its functions to native code, so the
    mapping must outlive every context that holds them.
    """
    with _LOADED_LOCK:
        lib = _LOADED.get(path)
        if lib is None:
            lib = _LOADED[path] = ctypes.CDLL(path)
        return lib
