"""Where segment files live: the local file system, or an object store reached through fsspec.

Every kcodec entry point that takes a path also takes a URL (``s3://``,
``gs://``, ``abfs://``, ``hdfs://``, ``file://``, any fsspec protocol) and a
``storage_options`` dict, as pandas and pyarrow do.  :func:`resolve` turns
the pair into a :class:`Storage` and the path inside it; the log operations
only ever call the few methods below, so local paths keep their memory maps
and ``os.replace`` renames while an object store gets ranged reads, whole
object puts and copy-then-delete renames.

Object stores are reached only through the ``fsspec`` package of the scheme
in use (``s3fs`` for ``s3://`` ...); a missing one is a :class:`StorageError`
naming the package.  :data:`io_stats` counts the requests made and bytes
moved, so tests and benchmarks can see that reads are few and large.
Error messages never carry the values of ``storage_options`` (secrets).
"""
from __future__ import annotations

import abc
import contextlib
import mmap
import os
import posixpath
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, ContextManager, Dict, Iterator, List, Mapping, NamedTuple, Optional, Tuple, Union

from kcodec.errors import KcodecError

__all__ = [
    "Storage",
    "LocalStorage",
    "ObjectStorage",
    "StorageError",
    "FileInfo",
    "IOStats",
    "io_stats",
    "resolve",
    "LOCAL",
    "storage_options_from",
    "parse_storage_option",
    "is_url",
    "SCHEME_PACKAGES",
    "open_new",
    "fsync_dir",
    "atomic_write",
    "atomic_write_bytes",
]

PathLike = Union[str, "os.PathLike[str]"]

#: The package that serves each well-known scheme, named in the error when it is missing.
SCHEME_PACKAGES = {
    "s3": "s3fs", "s3a": "s3fs", "gs": "gcsfs", "gcs": "gcsfs", "abfs": "adlfs", "abfss": "adlfs",
    "az": "adlfs", "adl": "adlfs", "hdfs": "pyarrow", "webhdfs": "fsspec", "memory": "fsspec",
}
#: The kcodec extra that installs it, where there is one.
SCHEME_EXTRAS = {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "abfs": "azure", "abfss": "azure",
                 "az": "azure"}


_LISTING_CACHED = {"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"}


class StorageError(KcodecError, OSError):
    """A file-system or object-store operation failed, or its package is missing."""


@dataclass
class IOStats:
    """Requests sent to object stores by this process and the bytes they moved."""

    requests: int = 0
    bytes_read: int = 0
    bytes_written: int = 0

    def reset(self) -> None:
        self.requests = self.bytes_read = self.bytes_written = 0

    def snapshot(self) -> "IOStats":
        return IOStats(self.requests, self.bytes_read, self.bytes_written)


io_stats = IOStats()
_STATS_LOCK = threading.Lock()


class FileInfo(NamedTuple):
    name: str  #: base name
    size: int
    mtime: float
    is_dir: bool


def is_url(path: Any) -> bool:
    return isinstance(path, str) and "://" in path


# -- crash-safe local file primitives ---------------------------------------------------------

_PathLike = Union[str, "os.PathLike[str]"]


def fsync_dir(path: _PathLike) -> None:
    """Make a rename or unlink in ``path`` durable."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_new(path: _PathLike) -> BinaryIO:
    """Open ``path`` as a new, empty file for writing, never through whatever was there.

    A stale file, hard link or symlink at ``path`` is unlinked first (which
    removes the link, not its target) and the file is created exclusively
    without following symlinks, so a link planted inside a target directory
    can never redirect a write outside it.
    """
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o666)
    return os.fdopen(fd, "wb")


@contextlib.contextmanager
def atomic_write(path: _PathLike) -> Iterator[BinaryIO]:
    """Open a temporary file beside ``path``; on success fsync it and rename it over ``path``.

    The temporary name starts with a dot and ends in ``.tmp`` so log readers,
    which look only at ``NNN.log``-style names, never see a partial file.  It
    holds the writer's process id, so processes forked from one another (the
    report's chart drawers) never write through each other's temporary file.
    The file gets the permissions a plain ``open`` gives (0o666 less the
    umask).  On an exception the temporary file is removed and ``path`` is
    untouched.
    """
    target = Path(path)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.tmp")
    f = open_new(tmp)
    try:
        yield f
        f.flush()
        os.fsync(f.fileno())
        f.close()
        os.replace(tmp, target)
        fsync_dir(target.parent)
    except BaseException:
        f.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_bytes(path: _PathLike, data: Any) -> None:
    with atomic_write(path) as f:
        f.write(data)


class Storage(abc.ABC):
    """What the log code needs of a file system; paths are plain strings with ``/``."""

    remote = False

    def url(self, path: str) -> str:
        """``path`` as the user would write it (for messages)."""
        return path

    def join(self, *parts: str) -> str:
        return posixpath.join(*parts)

    def parent(self, path: str) -> str:
        return posixpath.dirname(path.rstrip("/"))

    def basename(self, path: str) -> str:
        return posixpath.basename(path.rstrip("/"))

    @abc.abstractmethod
    def list(self, path: str) -> List[FileInfo]:
        """The entries directly under ``path``."""

    @abc.abstractmethod
    def exists(self, path: str) -> bool: ...

    @abc.abstractmethod
    def isdir(self, path: str) -> bool: ...

    @abc.abstractmethod
    def isfile(self, path: str) -> bool: ...

    @abc.abstractmethod
    def size(self, path: str) -> int: ...

    @abc.abstractmethod
    def open_read(self, path: str) -> ContextManager[Any]:
        """The whole file as a read-only buffer, for the block's duration."""

    @abc.abstractmethod
    def read_bytes(self, path: str) -> bytes: ...

    @abc.abstractmethod
    def read_range(self, path: str, start: int, end: int) -> bytes: ...

    @abc.abstractmethod
    def open_write(self, path: str, fsync: bool = True) -> ContextManager[Any]:
        """A new file written in place; it is complete when the block ends."""

    @abc.abstractmethod
    def put(self, path: str, data: Any) -> None: ...

    @abc.abstractmethod
    def delete_tree(self, path: str) -> None: ...

    @abc.abstractmethod
    def rename(self, src: str, dst: str, fsync: bool = True) -> None: ...

    @abc.abstractmethod
    def delete(self, path: str) -> bool:
        """False when the store says there was nothing to delete. S3 deletes a missing key without a
        word, so an object store may answer True there: a check first would cost a request per delete."""

    @abc.abstractmethod
    def set_mtime(self, path: str, mtime: float) -> bool:
        """False where modification times cannot be set."""

    @abc.abstractmethod
    def makedirs(self, path: str) -> None: ...


class LocalStorage(Storage):
    """The local file system: memory-mapped reads, fsynced writes, ``os.replace`` renames."""

    def url(self, path: str) -> str:
        return path

    def join(self, *parts: str) -> str:
        return os.path.join(*parts)

    def parent(self, path: str) -> str:
        return os.path.dirname(os.path.abspath(path))

    def basename(self, path: str) -> str:
        return os.path.basename(os.path.abspath(path))

    def list(self, path: str) -> List[FileInfo]:
        out = []
        with os.scandir(path) as it:
            for e in it:
                if e.is_dir():
                    out.append(FileInfo(e.name, 0, 0.0, True))
                else:
                    st = e.stat()
                    out.append(FileInfo(e.name, st.st_size, st.st_mtime, False))
        return out

    def exists(self, path: str) -> bool:
        return os.path.exists(path)

    def isdir(self, path: str) -> bool:
        return os.path.isdir(path)

    def isfile(self, path: str) -> bool:
        return os.path.isfile(path)

    def size(self, path: str) -> int:
        return os.path.getsize(path)

    @contextlib.contextmanager
    def open_read(self, path: str) -> Iterator[Any]:
        """The whole file as a read-only buffer (a memory map; ``b""`` when empty)."""
        with open(path, "rb") as f:
            if os.fstat(f.fileno()).st_size == 0:
                yield b""
                return
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
            try:
                yield mm
            finally:
                try:
                    mm.close()
                except BufferError:
                    # A batch view still references the map; it is released with that view.
                    pass

    def read_bytes(self, path: str) -> bytes:
        with open(path, "rb") as f:
            return f.read()

    def read_range(self, path: str, start: int, end: int) -> bytes:
        with open(path, "rb") as f:
            return os.pread(f.fileno(), max(0, end - start), start)

    @contextlib.contextmanager
    def open_write(self, path: str, fsync: bool = True) -> Iterator[Any]:
        """A new file written in place (callers write to temporary names and rename).

        Whatever was at ``path`` (a stale file, a hard link or a symlink) is
        replaced, never written through.
        """
        f = open_new(path)
        try:
            yield f
            f.flush()
            if fsync:
                os.fsync(f.fileno())
        finally:
            f.close()

    def put(self, path: str, data: Any) -> None:
        """Replace ``path`` atomically (a temporary file, fsynced and renamed over it)."""
        atomic_write_bytes(path, data)

    def delete_tree(self, path: str) -> None:
        import shutil
        shutil.rmtree(path, ignore_errors=True)

    def rename(self, src: str, dst: str, fsync: bool = True) -> None:
        os.replace(src, dst)
        if fsync:
            fsync_dir(os.path.dirname(os.path.abspath(dst)))

    def delete(self, path: str) -> bool:
        try:
            os.unlink(path)
        except FileNotFoundError:
            return False
        return True

    def set_mtime(self, path: str, mtime: float) -> bool:
        os.utime(path, (mtime, mtime))
        return True

    def makedirs(self, path: str) -> None:
        os.makedirs(path, exist_ok=True)


class ObjectStorage(Storage):
    """An fsspec file system.  Objects appear whole: one put, or one completed multipart upload.

    A rename is a server-side copy followed by a delete (two operations the
    swap protocol accounts for); modification times cannot be set.
    """

    remote = True

    def __init__(self, fs: Any, protocol: str, secrets: Tuple[str, ...] = ()) -> None:
        self.fs = fs
        self.protocol = protocol
        self._secrets = secrets

    def url(self, path: str) -> str:
        return f"{self.protocol}://{path}"

    @contextlib.contextmanager
    def _errors(self, op: str, path: str) -> Iterator[None]:
        try:
            yield
        except KcodecError:
            raise
        except FileNotFoundError:
            raise FileNotFoundError(f"no such file or object: {self.url(path)}") from None
        except Exception as exc:  # every client library has its own exception classes
            raise StorageError(self._scrub(f"{op} failed: {type(exc).__name__}: {exc}"),
                               source=self.url(path)) from None

    def _scrub(self, text: str) -> str:
        for s in self._secrets:
            text = text.replace(s, "***")
        return text

    def _count(self, requests: int = 1, read: int = 0, written: int = 0) -> None:
        with _STATS_LOCK:  # reads may run on prefetch threads
            io_stats.requests += requests
            io_stats.bytes_read += read
            io_stats.bytes_written += written

    def list(self, path: str) -> List[FileInfo]:
        with self._errors("list", path):
            self._count()
            entries = self.fs.ls(path.rstrip("/"), detail=True, refresh=True)
        out = []
        for e in entries:
            name = posixpath.basename(e["name"].rstrip("/"))
            if not name or e["name"].rstrip("/") == path.rstrip("/"):
                continue
            is_dir = e.get("type") == "directory"
            out.append(FileInfo(name, int(e.get("size") or 0), _mtime(e), is_dir))
        return out

    def _stat(self, method: str, path: str) -> Any:
        with self._errors("stat", path):
            self._count()
            return getattr(self.fs, method)(path)

    def exists(self, path: str) -> bool:
        return bool(self._stat("exists", path))

    def isdir(self, path: str) -> bool:
        return bool(self._stat("isdir", path))

    def isfile(self, path: str) -> bool:
        return bool(self._stat("isfile", path))

    def size(self, path: str) -> int:
        return int(self._stat("size", path))

    @contextlib.contextmanager
    def open_read(self, path: str) -> Iterator[Any]:
        yield self.read_bytes(path)

    def read_bytes(self, path: str) -> bytes:
        with self._errors("read", path):
            data = self.fs.cat_file(path)
        self._count(read=len(data))
        return data

    def read_range(self, path: str, start: int, end: int) -> bytes:
        if end <= start:
            return b""
        with self._errors("read", path):
            data = self.fs.cat_file(path, start=start, end=end)
        self._count(read=len(data))
        return data

    @contextlib.contextmanager
    def open_write(self, path: str, fsync: bool = True) -> Iterator[Any]:
        # fsspec buffers and uploads in parts; the object exists only once close() completes it.
        with self._errors("write", path):
            f = self.fs.open(path, "wb")
        w = _CountingWriter(f)
        try:
            yield w
        except BaseException:
            discard = getattr(f, "discard", None)  # drops an unfinished multipart upload
            if discard is not None:
                with contextlib.suppress(Exception):
                    discard()
            # Marked closed, so the file's finalizer never completes a partial object.
            with contextlib.suppress(Exception):
                f.closed = True
            raise
        with self._errors("write", path):
            f.close()
        block = int(getattr(f, "blocksize", 0) or 0)
        parts = -(-w.size // block) if block else 1
        # One put, or a multipart upload: start, each part, complete.
        self._count(requests=1 if parts <= 1 else parts + 2, written=w.size)

    def put(self, path: str, data: Any) -> None:
        """One upload: the object appears whole or not at all."""
        with self.open_write(path) as f:
            f.write(data)

    def delete_tree(self, path: str) -> None:
        with self._errors("delete", path):
            self._count()
            try:
                self.fs.rm(path, recursive=True)
            except FileNotFoundError:
                pass

    def rename(self, src: str, dst: str, fsync: bool = True) -> None:
        self.copy(src, dst)
        self.delete(src)

    def copy(self, src: str, dst: str) -> None:
        with self._errors("copy", src):
            self._count()
            self.fs.copy(src, dst)

    def delete(self, path: str) -> bool:
        with self._errors("delete", path):
            self._count()
            try:
                self.fs.rm_file(path)
            except FileNotFoundError:
                return False
        return True

    def set_mtime(self, path: str, mtime: float) -> bool:
        return False

    def makedirs(self, path: str) -> None:
        # Object stores have no folders: a prefix exists once an object under it does.
        return None


class _CountingWriter:
    def __init__(self, f: Any) -> None:
        self._f = f
        self.size = 0

    def write(self, data: Any) -> int:
        n = len(memoryview(data).cast("B"))
        self._f.write(data)
        self.size += n
        return n

    def flush(self) -> None:
        # Parts go up as fsspec's buffer fills; nothing is visible until close.
        pass


def _mtime(entry: Mapping[str, Any]) -> float:
    for key in ("LastModified", "mtime", "last_modified", "updated", "modificationTime"):
        v = entry.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return float(v.timestamp())
        try:
            return float(v) / (1000.0 if key == "modificationTime" else 1.0)
        except (TypeError, ValueError):
            continue
    return 0.0


#: The local file system (one instance; it holds no state).
LOCAL = LocalStorage()


def resolve(path: PathLike, storage_options: Optional[Mapping[str, Any]] = None) -> Tuple[Storage, str]:
    """(storage, path inside it) for a local path or URL.

    ``file://`` URLs and plain paths are local.  Any other scheme goes
    through fsspec with ``storage_options`` passed to its file system.
    """
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    path = str(path)
    if not is_url(path):
        return LOCAL, path
    scheme = path.split("://", 1)[0].lower()
    if scheme == "file":
        return LOCAL, path.split("://", 1)[1] or "/"
    package = SCHEME_PACKAGES.get(scheme, "the fsspec implementation of " + scheme)
    try:
        import fsspec
    except ImportError:
        raise StorageError(f"{scheme}:// paths need fsspec and {package}: pip install fsspec {package}"
                           + _extra_hint(scheme)) from None
    opts = dict(storage_options or {})
    try:
        cls = fsspec.get_filesystem_class(scheme)
    except ImportError:
        raise StorageError(f"{scheme}:// paths need the {package} package: pip install {package}"
                           + _extra_hint(scheme)) from None
    except ValueError:
        raise StorageError(f"unknown URL scheme {scheme}:// (no fsspec file system is registered for it)",
                           source=_redact_url(path)) from None
    if scheme in _LISTING_CACHED:
        # A cached listing would hide objects another writer (or recovery) changed.
        opts.setdefault("use_listings_cache", False)
    secrets = tuple(v for v in _secret_values(opts) if len(v) >= 4)
    try:
        fs = cls(**opts)
    except Exception as exc:
        text = f"cannot open {scheme}:// storage: {type(exc).__name__}: {exc}"
        for s in secrets:
            text = text.replace(s, "***")
        raise StorageError(text) from None
    inner = cls._strip_protocol(path)
    return ObjectStorage(fs, scheme, secrets), inner.rstrip("/") or inner


def _extra_hint(scheme: str) -> str:
    extra = SCHEME_EXTRAS.get(scheme)
    return f" (or pip install 'kcodec[{extra}]')" if extra else ""


def _redact_url(url: str) -> str:
    # user:password@ in a URL is a credential too.
    head, _, rest = url.partition("://")
    netloc, slash, tail = rest.partition("/")
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    return f"{head}://{netloc}{slash}{tail}"


_SECRET_NAME = re.compile(r"secret|key|token|pass|cred|sas|signature|connection|auth", re.IGNORECASE)


def _secret_values(options: Mapping[str, Any], inherited: bool = False) -> Iterator[str]:
    """String values of options whose name (or an enclosing option's name) says they are credentials."""
    for name, value in options.items():
        secret = inherited or bool(_SECRET_NAME.search(str(name)))
        if isinstance(value, Mapping):
            yield from _secret_values(value, secret)
        elif isinstance(value, str) and secret:
            yield value


def storage_options_from(options: Mapping[str, Any]) -> Dict[str, Any]:
    """``storage_options`` from data source options: a JSON ``storageOptions`` and/or ``storage.<name>`` keys.

    ``storage.<name>`` values are strings (``true``/``false`` become booleans);
    nested or typed values go in the JSON option.
    """
    import json

    out: Dict[str, Any] = {}
    raw = options.get("storageoptions") or options.get("storageOptions")
    if raw:
        try:
            parsed = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except ValueError as exc:
            raise StorageError(f"the storageOptions option is not a JSON object: {exc.__class__.__name__}") from None
        if not isinstance(parsed, dict):
            raise StorageError("the storageOptions option is not a JSON object")
        out.update(parsed)
    for k, v in options.items():
        if k.lower().startswith("storage."):
            name = k[len("storage."):]
            if isinstance(v, str) and v.lower() in ("true", "false"):
                v = v.lower() == "true"
            out[name] = v
    return out


def parse_storage_option(text: str) -> Tuple[str, Any]:
    """``KEY=VALUE`` from the command line; VALUE is JSON when it parses as JSON, else the string."""
    import json

    key, sep, value = text.partition("=")
    if not sep or not key:
        raise StorageError(f"--storage-option wants KEY=VALUE, got {key or text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value
