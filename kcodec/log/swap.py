"""Kafka's swap protocol: new segment files replace old ones so that a crash leaves the old or the new.

A rewritten segment is first written as ``*.cleaned`` files
(:func:`write_segment_files`).  :func:`replace_segments` (``LocalLog.replaceSegments``)
renames them to ``*.swap`` (indexes first, the ``.log`` last: the
``.log.swap`` rename is the commit point), renames the replaced segments'
files to ``*.deleted``, renames the swap files to their final names
(``.log`` last) and removes the ``.deleted`` files.  :func:`delete_segments`
is the deleting half alone.  :func:`kcodec.log.recovery.recover_log_dir`
finishes or rolls back whatever a crash left.  Every step goes through
:class:`~kcodec.log.files.FileOps`.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence, Set

from kcodec.log.files import FileOps
from kcodec.log.index import build_indexes
from kcodec.log.names import CLEANED, DELETED, INDEX_SUFFIXES, SEGMENT_SUFFIXES, SWAP, segment_file_name
from kcodec.log.segment_list import SegmentInfo, open_log

__all__ = ["write_segment_files", "replace_segments", "delete_segments"]


def write_segment_files(ops: FileOps, log_dir: str, base: int, chunks_or_path: Any, txn: bytes,
                         index_interval_bytes: int, suffix: str = CLEANED, log_buf: Any = None) -> None:
    """Write ``base.{log,index,timeindex,txnindex}<suffix>``; the log may be given as a path
    already written (``str``, its bytes in ``log_buf`` when the caller holds them) or as bytes."""
    join = ops.storage.join
    log_path = join(log_dir, segment_file_name(base, ".log") + suffix)
    if not isinstance(chunks_or_path, str):
        ops.write(log_path, chunks_or_path)
    if log_buf is None:
        with open_log(log_path, ops.storage) as buf:
            index, tindex = build_indexes(buf, base, index_interval_bytes)
    else:
        index, tindex = build_indexes(log_buf, base, index_interval_bytes)
    # The .log is complete before its indexes, as a broker's tiered storage uploads them.
    ops.write(join(log_dir, segment_file_name(base, ".index") + suffix), index)
    ops.write(join(log_dir, segment_file_name(base, ".timeindex") + suffix), tindex)
    # Always written, even empty: recovery relies on a swap carrying all four files.
    ops.write(join(log_dir, segment_file_name(base, ".txnindex") + suffix), txn)


def replace_segments(ops: FileOps, log_dir: str, new_base: int, old: Sequence[SegmentInfo],
                     mtime: Optional[float] = None) -> None:
    """Swap the ``new_base.*.cleaned`` files in for the ``old`` segments (``LocalLog.replaceSegments``)."""
    def name(suffix: str, extra: str = "") -> str:
        return ops.storage.join(log_dir, segment_file_name(new_base, suffix) + extra)

    # One listing instead of a check per file: only this run changes these names meanwhile.
    present = _names(ops, log_dir)
    cleaned = [s for s in INDEX_SUFFIXES if segment_file_name(new_base, s) + CLEANED in present]
    if mtime is not None and not ops.storage.remote:
        for s in (".log",) + tuple(cleaned):
            ops.set_mtime(name(s, CLEANED), mtime)
    for s in cleaned:
        ops.rename(name(s, CLEANED), name(s, SWAP))
    ops.rename(name(".log", CLEANED), name(".log", SWAP))  # commit point
    for seg in old:
        _rename_to_deleted(ops, seg, present)
    for s in cleaned:
        ops.rename(name(s, SWAP), name(s))
    ops.rename(name(".log", SWAP), name(".log"))
    for seg in old:
        for s in SEGMENT_SUFFIXES:
            ops.delete(seg.path(s) + DELETED)


def _names(ops: FileOps, log_dir: str) -> Set[str]:
    return {f.name for f in ops.storage.list(log_dir) if not f.is_dir}


def _rename_to_deleted(ops: FileOps, seg: SegmentInfo, present: Set[str]) -> None:
    # The .log goes first: once it is renamed the segment no longer exists for any reader,
    # and recovery treats index files without a .log as orphans.
    for s in SEGMENT_SUFFIXES:
        if segment_file_name(seg.base_offset, s) in present:
            p = seg.path(s)
            ops.rename(p, p + DELETED)


def delete_segments(ops: FileOps, segments: Sequence[SegmentInfo]) -> None:
    """Delete whole segments as Kafka does: rename to ``.deleted``, then remove."""
    if not segments:
        return
    present = _names(ops, segments[0].dir)
    for seg in segments:
        _rename_to_deleted(ops, seg, present)
    for seg in segments:
        for s in SEGMENT_SUFFIXES:
            ops.delete(seg.path(s) + DELETED)
