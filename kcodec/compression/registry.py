"""Which implementation handles each compression id.

Three sources, highest precedence first:

1. ``register_codec(codec, replace=True)`` calls made by the program;
2. plugins: entry points in the group ``kcodec.codecs`` of installed
   distributions.  The entry point *name* is the codec name; a plugin named
   like a built-in (``gzip``) replaces that built-in -- installing the plugin
   is the opt-in.  Any other name adds a codec; its class must declare an id
   in 5..7 (Kafka itself cannot read those).  Set the environment variable
   ``KCODEC_DISABLE_PLUGINS=1`` to ignore every plugin;
3. the built-ins for Kafka's ids 0-4.

Nothing is imported until a codec is looked up: built-ins are named by dotted
path, plugins are loaded on the lookup of their name or id, and each codec
imports its compression library on first use.
"""
from __future__ import annotations

import importlib
import os
import threading
import warnings
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, Dict, List, Mapping, Optional, Type, Union

from kcodec.compression.base import Codec
from kcodec.errors import UnsupportedCodecError

__all__ = ["get_codec", "register_codec", "unregister_codec", "codecs", "CodecInfo",
           "ENTRY_POINT_GROUP", "BUILTIN_CODECS"]

ENTRY_POINT_GROUP = "kcodec.codecs"

#: id -> (name, "module:Class"), imported on first lookup.
BUILTIN_CODECS: Mapping[int, tuple] = MappingProxyType({
    0: ("none", "kcodec.compression.none:NoneCodec"),
    1: ("gzip", "kcodec.compression.gzip:GzipCodec"),
    2: ("snappy", "kcodec.compression.snappy:SnappyCodec"),
    3: ("lz4", "kcodec.compression.lz4:Lz4Codec"),
    4: ("zstd", "kcodec.compression.zstd:ZstdCodec"),
})
_BUILTIN_IDS = {name: cid for cid, (name, _) in BUILTIN_CODECS.items()}


@dataclass(frozen=True)
class CodecInfo:
    """One row of :func:`codecs`."""

    id: int
    name: str
    implementation: str  #: ``module:Class`` of the implementation
    origin: str  #: ``builtin``, ``entry point <dist> <version>`` or ``registered``
    active: bool  #: whether lookups of this id use it (False when overridden)


@dataclass
class _Entry:
    name: str
    target: str
    origin: str
    codec: Optional[Codec] = None
    loader: Any = None  # an importlib.metadata.EntryPoint


_lock = threading.RLock()
_registered: Dict[int, _Entry] = {}
_plugins: Optional[Dict[str, List[_Entry]]] = None  # name -> entries, sorted
_plugin_ids: Dict[int, _Entry] = {}  # ids of loaded non-builtin plugins
_builtin_cache: Dict[int, Codec] = {}
# get_codec's answers for int ids and names, read without the lock: the builder and the
# readers look a codec up once per batch, and the full lookup (lock, plugin tables) costs
# microseconds.  Emptied, under the lock, by every change of what get_codec would answer.
_resolved: Dict[Union[int, str], Codec] = {}
_generation = 0


def _instantiate(obj: Any) -> Codec:
    codec = obj() if isinstance(obj, type) else obj
    if callable(codec) and not isinstance(codec, Codec):
        codec = codec()
    if not isinstance(codec, Codec):
        raise UnsupportedCodecError(f"{obj!r} is not a kcodec.Codec")
    if not (0 <= codec.id <= 7):
        raise UnsupportedCodecError(f"codec {codec.name!r} has id {codec.id}: ids must be 0..7")
    return codec


def _import(target: str) -> Any:
    module, _, attr = target.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def _discover() -> Dict[str, List[_Entry]]:
    global _plugins
    if _plugins is None:
        found: Dict[str, List[_Entry]] = {}
        if os.environ.get("KCODEC_DISABLE_PLUGINS", "") not in ("1", "true", "yes"):
            from importlib.metadata import entry_points

            for ep in entry_points(group=ENTRY_POINT_GROUP):
                dist = getattr(ep, "dist", None)
                origin = "entry point"
                if dist is not None:
                    origin = f"entry point {dist.metadata['Name']} {dist.version}"
                found.setdefault(ep.name.lower(), []).append(
                    _Entry(ep.name.lower(), ep.value, origin, loader=ep))
        for name, entries in found.items():
            entries.sort(key=lambda e: e.origin)
            if len(entries) > 1:
                warnings.warn(
                    f"several kcodec plugins provide codec {name!r}: "
                    + ", ".join(e.origin for e in entries) + f"; using {entries[0].origin}",
                    RuntimeWarning, stacklevel=3)
        _plugins = found
    return _plugins


def _load_plugin(entry: _Entry) -> Codec:
    """The entry's codec; a plugin's is loaded (and checked) on first use."""
    if entry.codec is not None:
        return entry.codec
    codec = _instantiate(entry.loader.load())
    builtin_id = _BUILTIN_IDS.get(entry.name)
    if builtin_id is not None and codec.id != builtin_id:
        raise UnsupportedCodecError(
            f"plugin {entry.origin} registers {entry.name!r} with id {codec.id}, "
            f"but {entry.name} is id {builtin_id}")
    if builtin_id is None and codec.id <= 4:
        raise UnsupportedCodecError(
            f"plugin {entry.origin} adds codec {entry.name!r} with id {codec.id}; "
            "new codecs need an id in 5..7 (ids 0-4 are replaced by using Kafka's name)")
    entry.codec = codec
    return codec


def _plugin_for_id(codec_id: int) -> Optional[_Entry]:
    plugins = _discover()
    if codec_id in BUILTIN_CODECS:
        entries = plugins.get(BUILTIN_CODECS[codec_id][0])
        return entries[0] if entries else None
    if codec_id not in _plugin_ids:
        for name, entries in plugins.items():
            if name in _BUILTIN_IDS:
                continue
            codec = _load_plugin(entries[0])
            _plugin_ids.setdefault(codec.id, entries[0])
    return _plugin_ids.get(codec_id)


def get_codec(key: Union[int, str, "object"]) -> Codec:
    """The active codec for an id, a name or a ``CompressionType``."""
    # Only plain ids and names are remembered: True equals 1 as a key, and get_codec refuses it.
    if type(key) is not int and type(key) is not str:
        return _get_codec(key)
    found = _resolved.get(key)
    if found is not None:
        return found
    with _lock:
        generation = _generation
    codec = _get_codec(key)
    with _lock:
        if generation == _generation:
            _resolved[key] = codec
    return codec


def _changed() -> None:
    # What get_codec answers may differ from now on (called under the lock).
    global _generation
    _generation += 1
    _resolved.clear()


def _get_codec(key: Union[int, str, "object"]) -> Codec:
    with _lock:
        codec_id = _resolve_id(key)
        entry = _registered.get(codec_id)
        if entry is not None:
            return _load_plugin(entry)  # a registered entry holds its codec
        plugin = _plugin_for_id(codec_id)
        if plugin is not None:
            return _load_plugin(plugin)
        if codec_id in BUILTIN_CODECS:
            codec = _builtin_cache.get(codec_id)
            if codec is None:
                codec = _builtin_cache[codec_id] = _instantiate(_import(BUILTIN_CODECS[codec_id][1]))
            return codec
    raise UnsupportedCodecError(
        f"Unknown compression type id: {codec_id}; valid ids are "
        + ", ".join(f"{i.id} ({i.name})" for i in codecs() if i.active))


def _resolve_id(key: Any) -> int:
    if isinstance(key, str):
        name = key.strip().lower()
        if name == "uncompressed":
            name = "none"
        if name in _BUILTIN_IDS:
            return _BUILTIN_IDS[name]
        for entry in _registered.values():
            if entry.name == name:
                return _load_plugin(entry).id
        entries = _discover().get(name)
        if entries:
            return _load_plugin(entries[0]).id
        raise UnsupportedCodecError(
            f"unknown compression type name: {key!r}; valid names are "
            + ", ".join(sorted({i.name for i in codecs() if i.active})))
    if isinstance(key, bool) or not isinstance(key, int):
        raise UnsupportedCodecError(f"not a compression type: {key!r}")
    if not 0 <= int(key) <= 7:
        raise UnsupportedCodecError(f"Unknown compression type id: {int(key)}; ids are 0..7")
    return int(key)


def register_codec(codec: Union[Codec, Type[Codec]], *, replace: bool = False) -> Codec:
    """Make ``codec`` (a Codec instance or class) handle its id in this process.

    Registering over an id that already has a registered codec, or over a
    built-in or plugin, needs ``replace=True``.
    """
    codec = _instantiate(codec)
    with _lock:
        taken = codec.id in _registered or codec.id in BUILTIN_CODECS or _plugin_for_id(codec.id)
        if taken and not replace:
            raise UnsupportedCodecError(
                f"compression id {codec.id} already has an implementation; "
                "pass replace=True to override it")
        impl = f"{type(codec).__module__}:{type(codec).__qualname__}"
        _registered[codec.id] = _Entry(codec.name, impl, "registered", codec=codec)
        _changed()
    return codec


def unregister_codec(key: Union[int, str, "object"]) -> None:
    """Undo :func:`register_codec` for an id or name (plugins and built-ins stay)."""
    with _lock:
        codec_id = _resolve_id(key)
        if _registered.pop(codec_id, None) is None:
            raise UnsupportedCodecError(f"no codec registered with register_codec for id {codec_id}")
        _changed()


def codecs() -> List[CodecInfo]:
    """Every known implementation, by id, with where it came from and which one is active.

    Lists plugins by their entry points without importing them, except that
    plugins adding new ids are loaded to learn their id.
    """
    rows: List[CodecInfo] = []
    with _lock:
        plugins = _discover()
        by_id: Dict[int, List[tuple]] = {}
        for cid, (name, target) in BUILTIN_CODECS.items():
            by_id.setdefault(cid, []).append((3, name, target, "builtin"))
        for name, entries in plugins.items():
            for rank, entry in enumerate(entries):
                if name in _BUILTIN_IDS:
                    cid = _BUILTIN_IDS[name]
                else:
                    try:
                        cid = _load_plugin(entry).id
                    except Exception as exc:  # a broken plugin must not break the listing
                        rows.append(CodecInfo(-1, name, entry.target, f"{entry.origin} (failed: {exc})", False))
                        continue
                by_id.setdefault(cid, []).append((2 + rank / 100, name, entry.target, entry.origin))
        for cid, entry in _registered.items():
            by_id.setdefault(cid, []).append((1, entry.name, entry.target, "registered"))
        for cid in sorted(by_id):
            impls = sorted(by_id[cid], key=lambda t: t[0])
            for i, (_, name, target, origin) in enumerate(impls):
                rows.append(CodecInfo(cid, name, target, origin, i == 0))
    return rows


def _reset_for_tests() -> None:
    """Forget discovered plugins and registrations (tests install plugins at run time)."""
    global _plugins
    with _lock:
        _plugins = None
        _plugin_ids.clear()
        _registered.clear()
        _changed()
