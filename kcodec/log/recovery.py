"""Settling a partition directory after a crash (the temporary-file pass of Kafka's ``LogLoader``)."""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Tuple

from kcodec.errors import KcodecError
from kcodec.log.files import FileOps, ops_for
from kcodec.log.index import batch_index_info, build_indexes
from kcodec.log.lock import rewrite_lock
from kcodec.log.names import CLEANED, DELETED, INDEX_SUFFIXES, SWAP, parse_segment_file_name, segment_file_name
from kcodec.log.segment_list import list_segments, open_log
from kcodec.records.framing import iter_entries
from kcodec.storage import is_url

__all__ = ["recover_log_dir"]


def _next_offset_of(log_buf: Any, base_offset: int) -> int:
    """``LogSegment.readNextOffset``: one past the last batch's lastOffset (the base when empty)."""
    nxt = base_offset
    for e in iter_entries(log_buf):
        last, _ = batch_index_info(log_buf, e)
        nxt = last + 1
    return nxt


def recover_log_dir(log_dir: str, ops: Optional[FileOps] = None,
                    index_interval_bytes: int = 4096, *,
                    storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, int]:
    """Finish or roll back interrupted swaps and deletions (``LogLoader``'s temp-file pass).

    * ``*.cleaned`` files are uncommitted output: deleted;
    * a ``.log.swap`` is committed: the files it replaces (other segments
      whose base offset lies in ``[swap base, swap next offset)``, and old
      files of its own base that still have a swap counterpart) are deleted
      and the swap files renamed into place; index ``.swap`` files without a
      ``.log.swap`` belong to an uncommitted swap and are deleted;
    * ``*.deleted`` files are removed, index files without a ``.log`` too;
    * a segment missing its offset or time index gets them rebuilt.

    ``log_dir`` may be a URL (with ``storage_options``).  In an object store
    a rename is a copy and then a delete, so a crash between the two leaves
    the file under both names; every rule above already resolves that state
    (a ``.cleaned`` or ``.deleted`` copy is dropped, a ``.swap`` copy is
    renamed in again).  Returns counts of what was done.
    """
    if ops is None or is_url(log_dir):
        ops, log_dir = ops_for(log_dir, ops, storage_options)
    with rewrite_lock(log_dir, ops.storage):
        return _recover(log_dir, ops, index_interval_bytes)


def _recover(log_dir: str, ops: FileOps, index_interval_bytes: int) -> Dict[str, int]:
    join = ops.storage.join
    stats = {"cleaned_removed": 0, "swaps_completed": 0, "deleted_removed": 0, "orphans_removed": 0,
             "indexes_rebuilt": 0}

    def scan() -> List[Tuple[str, int, str, Optional[str]]]:
        out = []
        for f in ops.storage.list(log_dir):
            named = None if f.is_dir else parse_segment_file_name(f.name)
            if named:
                out.append((f.name,) + named)
        return out

    for name, _b, _s, extra in scan():
        if extra == CLEANED:
            ops.delete(join(log_dir, name))
            stats["cleaned_removed"] += 1

    files = scan()
    swaps = sorted(b for _n, b, s, e in files if s == ".log" and e == SWAP)
    swap_set = set(swaps)
    for _n, b, s, e in files:
        if e == SWAP and s != ".log" and b not in swap_set:
            ops.delete(join(log_dir, _n))
    for base in swaps:
        swap_log = join(log_dir, segment_file_name(base, ".log") + SWAP)
        with open_log(swap_log, ops.storage) as buf:
            nxt = _next_offset_of(buf, base)
        end = max(nxt, base + 1)
        current = scan()
        swap_suffixes = {s for _n, b, s, e in current if b == base and e == SWAP}
        for name, b, s, e in current:
            if e is not None or not (base <= b < end):
                continue
            if b != base or s in swap_suffixes:
                ops.delete(join(log_dir, name))
        for s in INDEX_SUFFIXES:
            if s in swap_suffixes:
                ops.rename(join(log_dir, segment_file_name(base, s) + SWAP),
                           join(log_dir, segment_file_name(base, s)))
        ops.rename(swap_log, join(log_dir, segment_file_name(base, ".log")))
        stats["swaps_completed"] += 1

    files = scan()
    logs = {b for _n, b, s, e in files if s == ".log" and e is None}
    for name, b, s, e in files:
        if e == DELETED:
            ops.delete(join(log_dir, name))
            stats["deleted_removed"] += 1
        elif e is None and s != ".log" and b not in logs:
            ops.delete(join(log_dir, name))
            stats["orphans_removed"] += 1
    names = {n for n, _b, _s, _e in scan()}
    for seg in list_segments(log_dir, ops.storage):
        if segment_file_name(seg.base_offset, ".index") not in names \
                or segment_file_name(seg.base_offset, ".timeindex") not in names:
            with open_log(seg.path(), ops.storage) as buf:
                try:
                    index, tindex = build_indexes(buf, seg.base_offset, index_interval_bytes)
                except KcodecError as exc:
                    raise exc.with_context(source=ops.storage.url(seg.path()))
            for suffix, data in ((".index", index), (".timeindex", tindex)):
                # a crash leaves a .cleaned file, which the next recovery removes
                ops.replace(seg.path(suffix), data, CLEANED)
            stats["indexes_rebuilt"] += 1
    return stats
