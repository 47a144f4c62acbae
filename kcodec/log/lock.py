"""The lock that keeps a rewrite off a running broker's disks (``LogManager.lockLogDirs``, ``FileLock``).

A Kafka broker holds an exclusive lock on ``<log.dir>/.lock`` for as long as it
runs: ``FileChannel.tryLock`` in Java, which on Linux is a POSIX ``fcntl``
record lock over the whole file.  Every kcodec operation that changes files
(``recompress``, ``compact``, ``retain``, ``recover_log_dir``) first takes the
same lock, non-blocking, with :func:`fcntl.lockf`, and keeps it until the last
change is made.  So kcodec never rewrites a directory a broker has open, and a
broker started meanwhile fails to lock the directory and stops instead of
loading half-swapped segments.  ``flock`` would not do: Linux keeps ``flock``
and ``fcntl`` locks apart, and Java's lock is the ``fcntl`` kind.

Which file is locked for a partition folder:

* the parent's :data:`BROKER_LOCK` when the parent is a broker log directory,
  recognised by the files a broker keeps there (``meta.properties``, ``.lock``
  and the offset checkpoints);
* otherwise (an archive, a restored backup) :data:`PARTITION_LOCK` inside the
  partition folder, so that two kcodec rewrites of one partition never run at
  once.  It is removed when the rewrite ends; a process that locked it just
  as it was removed sees that its name is gone and starts again, so two
  holders never lock two different files.  A killed process can leave it
  behind, empty and unlocked: the next rewrite takes it and removes it.

Objects in an object store are not locked: S3, GCS and Azure offer no lock
a broker takes, and a rewrite there is protected only by the swap protocol
(a crash leaves the old segment or the new one).  Read-only operations
(``dump``, ``advise``, the Spark data source, dry runs) take no lock.

POSIX record locks belong to a process and are all dropped when any
descriptor of the file is closed in that process, so a process opens each
lock file once and counts its holders (:class:`_Held`).
"""
from __future__ import annotations

import contextlib
import errno
import os
import struct
import threading
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from kcodec.errors import KcodecError
from kcodec.storage import LOCAL, Storage, resolve

__all__ = ["BROKER_LOCK", "PARTITION_LOCK", "BROKER_FILES", "LogDirInUseError", "is_broker_log_dir",
           "lock_file_for", "rewrite_lock", "rewrite_locks", "check_no_broker"]

#: ``LogManager.LockFileName``: the file a running broker holds locked in each log directory.
BROKER_LOCK = ".lock"
#: kcodec's own lock file inside a partition folder that is not in a broker log directory.
PARTITION_LOCK = ".kcodec.lock"
#: Files a broker writes at the top of each log directory it runs on (``LogManager``,
#: ``MetaPropertiesEnsemble``).  ``cleaner-offset-checkpoint`` is left out: ``compact --checkpoint``
#: writes it beside archived partitions too.
BROKER_FILES = (BROKER_LOCK, "meta.properties", "recovery-point-offset-checkpoint",
                "replication-offset-checkpoint", "log-start-offset-checkpoint")


class LogDirInUseError(KcodecError):
    """Another process holds the lock of a log directory or partition: nothing was changed."""


def is_broker_log_dir(path: "os.PathLike[str] | str") -> bool:
    """Whether ``path`` holds any of the files a broker keeps at the top of a log directory."""
    return any(os.path.lexists(os.path.join(path, name)) for name in BROKER_FILES)


def lock_file_for(partition_dir: "os.PathLike[str] | str") -> Path:
    """The file locked while ``partition_dir`` (a local partition folder) is rewritten."""
    folder = Path(os.path.abspath(partition_dir))
    if is_broker_log_dir(folder.parent):
        return folder.parent / BROKER_LOCK
    return folder / PARTITION_LOCK


class _Held:
    """One open, locked descriptor per lock file in this process, shared by nested holders."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.files: Dict[str, Tuple[int, int, bool]] = {}  # real path -> (fd, holders, remove when released)

    def acquire(self, path: Path, subject: str) -> str:
        key = os.path.realpath(path)
        with self.guard:
            if key in self.files:
                fd, n, own = self.files[key]
                self.files[key] = (fd, n + 1, own)
                return key
            own = path.name == PARTITION_LOCK
            for _ in range(100):
                fd = _open_lock_file(path, subject)
                try:
                    _lock(fd, path, subject)
                    # kcodec's own lock file is removed by the holder that releases it: a process that opened
                    # the removed file and locked it afterwards must see that the name is gone, and retry
                    if not own or _same_file(fd, path):
                        break
                except BaseException:
                    os.close(fd)
                    raise
                os.close(fd)
            else:
                raise LogDirInUseError(f"{subject}: its lock file {path} keeps being replaced; nothing was changed")
            self.files[key] = (fd, 1, own)
            return key

    def release(self, key: str) -> None:
        with self.guard:
            fd, n, own = self.files[key]
            if n > 1:
                self.files[key] = (fd, n - 1, own)
                return
            del self.files[key]
            if own:
                with contextlib.suppress(OSError):
                    os.unlink(key)
            # closing the only descriptor releases the record lock
            os.close(fd)


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    own = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


_HELD = _Held()


def _open_lock_file(path: Path, subject: str) -> int:
    # A broker opens .lock with CREATE, READ, WRITE; an exclusive fcntl lock needs it open for writing.
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOFOLLOW", 0)
    try:
        return os.open(path, flags, 0o644)
    except OSError as exc:
        raise LogDirInUseError(f"{subject}: cannot open its lock file {path} to lock it "
                               f"({exc.strerror or exc}); nothing was changed") from None


def _lock(fd: int, path: Path, subject: str) -> None:
    import fcntl

    try:
        fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as exc:
        if exc.errno not in (errno.EACCES, errno.EAGAIN):
            raise LogDirInUseError(
                f"{subject}: cannot lock {path} ({exc.strerror or exc}); nothing was changed") from None
        raise LogDirInUseError(_in_use_message(fd, path, subject)) from None


def _holder(fd: int) -> Tuple[bool, Optional[int]]:
    """(whether another process holds a lock on ``fd``'s file, its process id where known): ``F_GETLK``."""
    import fcntl

    # struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
    fmt = "hhqqi4x"
    try:
        raw = fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack(fmt, fcntl.F_WRLCK, os.SEEK_SET, 0, 0, 0))
        l_type, _, _, _, pid = struct.unpack(fmt, raw)
    except (OSError, struct.error):
        return False, None
    if l_type == fcntl.F_UNLCK:
        return False, None
    # an open-file-description lock reports pid -1
    return True, (pid if pid > 0 else None)


def _command_of(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a for a in f.read().split(b"\0") if a]
    except OSError:
        return ""
    if not argv:
        return ""
    words = [os.path.basename(argv[0].decode(errors="replace"))]
    for a in argv[1:]:
        s = a.decode(errors="replace")
        if s.startswith(("kafka.", "org.apache.kafka.")) or s in ("-m", "kcodec") or s.endswith("/kcodec"):
            words.append(os.path.basename(s))
    return " ".join(words)


def _in_use_message(fd: int, path: Path, subject: str) -> str:
    pid = _holder(fd)[1]
    who = "another process"
    if pid is not None:
        cmd = _command_of(pid)
        who = f"process {pid}" + (f" ({cmd})" if cmd else "")
    if path.name == BROKER_LOCK:
        return (f"{subject} is in use: {who} holds {path}, as a running Kafka broker does; stop the broker "
                "(or the other kcodec rewrite) first. Nothing was changed; dump and advise read it as it is")
    return (f"{subject} is being rewritten: {who} holds {path}; run one rewrite of a partition at a time. "
            "Nothing was changed")


def check_no_broker(partition_dir: str, storage: Optional[Storage] = None) -> None:
    """Refuse to add files to ``partition_dir`` when a running process holds its broker log directory's lock.

    Writers of new partitions only test the lock (``F_GETLK``) instead of taking
    it, so that Spark tasks writing several partitions of one log directory at
    once do not shut each other out.
    """
    storage = storage or LOCAL
    if storage.remote:
        return
    folder = Path(os.path.abspath(partition_dir))
    if not is_broker_log_dir(folder.parent):
        return
    path = folder.parent / BROKER_LOCK
    with _HELD.guard:
        if os.path.realpath(path) in _HELD.files:
            return  # this process holds it: it is the one rewriting
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            return  # no lock file: no broker has locked the directory
        try:
            if _holder(fd)[0]:
                raise LogDirInUseError(_in_use_message(fd, path, str(path.parent)))
        finally:
            os.close(fd)


@contextlib.contextmanager
def rewrite_lock(partition_dir: str, storage: Optional[Storage] = None) -> Iterator[Optional[Path]]:
    """Hold the lock that guards rewriting ``partition_dir`` (a path in ``storage``, local by default).

    Yields the locked file, or ``None`` in an object store, where nothing can
    be locked.  Raises :class:`LogDirInUseError` at once, before anything is
    changed, when another process holds it.  Nested holders in one process
    share one lock.
    """
    storage = storage or LOCAL
    if storage.remote:
        yield None
        return
    path = lock_file_for(partition_dir)
    subject = str(path.parent) if path.name == BROKER_LOCK else str(Path(os.path.abspath(partition_dir)))
    key = _HELD.acquire(path, subject)
    try:
        yield path
    finally:
        _HELD.release(key)


@contextlib.contextmanager
def rewrite_locks(partition_dirs: Iterable[str], storage_options: Optional[dict] = None) -> Iterator[List[Path]]:
    """Hold the locks of every partition (paths or URLs) for a whole run, taken before any change.

    A command over a log directory takes them all first, so it either refuses
    before touching anything or holds the directory until its last change.
    """
    with contextlib.ExitStack() as stack:
        held: List[Path] = []
        for d in partition_dirs:
            storage, inner = resolve(d, storage_options)
            p = stack.enter_context(rewrite_lock(inner, storage))
            if p is not None and p not in held:
                held.append(p)
        yield held
