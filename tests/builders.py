"""Batches, segments and log directories for the tests, made in one place.

Every batch here is built by kcodec's own builders (``RecordBatchBuilder`` and
``LegacyRecordBatchBuilder``), whose bytes the oracle tests hold against the Java
client's.  A record is given as a tuple: ``(key, value)``, ``(key, value,
timestamp)`` or ``(key, value, timestamp, headers)``; without a timestamp the
records of one batch are stamped ``ts, ts + 1, ...``.
"""
from __future__ import annotations

import os
import struct
from typing import Any, Iterable, List, Optional, Sequence, Tuple, Union

import kcodec
from kcodec.log.cleaner import build_indexes, list_segments, segment_file_name
from kcodec.records import batch_header
from kcodec.records.framing import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
from oracle_util import oracle_available, oracle_verify

T0 = 1_700_000_000_000
DAY = 86_400_000
PID, PID2 = 7001, 7002  # producer ids of the transactional tests

Bytesish = Union[str, bytes, None]


def kv(key: Bytesish, value: Bytesish = b"v") -> Tuple[Optional[bytes], Optional[bytes]]:
    """A ``(key, value)`` record; ``str`` is taken as UTF-8."""
    return (key.encode() if isinstance(key, str) else key,
            value.encode() if isinstance(value, str) else value)


def _append_all(builder: Any, records: Iterable[Sequence[Any]], ts: int, headers: bool) -> None:
    for i, rec in enumerate(records):
        key, value = rec[0], rec[1]
        timestamp = rec[2] if len(rec) > 2 else ts + i
        if headers:
            builder.append(key, value, timestamp, rec[3] if len(rec) > 3 else ())
        else:
            builder.append(key, value, timestamp=timestamp)


def batch(offset: int, records: Iterable[Sequence[Any]], ts: int = T0, codec: str = "none", **kw: Any) -> bytes:
    """One v2 batch at ``offset`` holding ``records``; ``kw`` goes to ``RecordBatchBuilder``."""
    b = kcodec.RecordBatchBuilder(magic=2, compression=codec, base_offset=offset, **kw)
    _append_all(b, records, ts, headers=True)
    return bytes(b.build())


def sized_batch(offset: int, size: int) -> bytes:
    """A one-record uncompressed v2 batch of exactly ``size`` bytes (a key "k" and a value of "x")."""
    data = batch(offset, [kv("k", "x" * (size - 71))])
    assert len(data) == size
    return data


def legacy_batch(offset: int, records: Iterable[Sequence[Any]], magic: int = 1, ts: int = T0, codec: str = "none",
                 **kw: Any) -> bytes:
    """One v0 or v1 entry at ``offset`` (a wrapper when ``codec`` compresses); ``kw`` goes to
    ``LegacyRecordBatchBuilder``."""
    b = LegacyRecordBatchBuilder(magic=magic, compression=codec, base_offset=offset, **kw)
    _append_all(b, records, ts, headers=False)
    return bytes(b.build())


def marker(offset: int, pid: int, epoch: int, commit: bool = True, ts: int = T0, coordinator_epoch: int = 0) -> bytes:
    """A transaction's COMMIT (or ABORT) control batch."""
    b = kcodec.RecordBatchBuilder(magic=2, base_offset=offset, producer_id=pid, producer_epoch=epoch,
                                  is_transactional=True, is_control=True)
    ctype = kcodec.ControlRecordType.COMMIT if commit else kcodec.ControlRecordType.ABORT
    b.append_control(kcodec.EndTransactionMarker(ctype, coordinator_epoch), timestamp=ts)
    return bytes(b.build())


def batch_around(payload: bytes, records: int, compression: str = "zstd") -> bytes:
    """A v2 batch of ``records`` records, compressed as ``compression``, whose records region is
    ``payload``: for hand-made compressed payloads (the header is kcodec's builder's, resealed)."""
    b = kcodec.RecordBatchBuilder(magic=2, compression=compression)
    for _ in range(records):
        b.append(timestamp=1, key=None, value=b"x")
    out = bytearray(b.build()[:RECORD_BATCH_OVERHEAD]) + payload
    struct.pack_into(">i", out, LOG_OVERHEAD - 4, len(out) - LOG_OVERHEAD)
    batch_header.seal(out, 0, len(out))
    return bytes(out)


def records_of(data: Any) -> List[Tuple[int, int, Optional[bytes], Optional[bytes]]]:
    """``(offset, timestamp, key, value)`` of every record of a buffer of batches."""
    return [(r.offset, r.timestamp, r.key, r.value) for b in kcodec.read_batches(data) for r in b]


# -- log directories -----------------------------------------------------------------------

def make_log(path: Any, segments: Iterable[Any], mtime: Optional[float] = None) -> str:
    """Write segments (lists of batch bytes) into ``path`` with their ``.index`` and ``.timeindex``;
    each is named by its first batch's offset, or given as ``(base_offset, [batches])``."""
    os.makedirs(path, exist_ok=True)
    for seg in segments:
        if isinstance(seg, tuple):
            base, seg = seg
        else:
            base = next(iter(kcodec.read_batches(seg[0]))).base_offset
        data = b"".join(seg)
        p = os.path.join(path, segment_file_name(base))
        with open(p, "wb") as f:
            f.write(data)
        index, tindex = build_indexes(data, base)
        with open(os.path.join(path, segment_file_name(base, ".index")), "wb") as f:
            f.write(index)
        with open(os.path.join(path, segment_file_name(base, ".timeindex")), "wb") as f:
            f.write(tindex)
        if mtime is not None:
            os.utime(p, (mtime, mtime))
    return str(path)


def dir_batches(path: Any) -> List[Any]:
    """Every batch of a partition directory, segment by segment."""
    out = []
    for seg in list_segments(path):
        with open(seg.path(), "rb") as f:
            data = f.read()
        out.extend(kcodec.read_batches(data))
    return out


def dir_records(path: Any) -> List[Tuple[int, Optional[bytes], Optional[bytes]]]:
    """(offset, key, value) of every record of the directory, in file order."""
    return [(r.offset, r.key, r.value) for b in dir_batches(path) for r in b]


def check_dir_with_java(path: Any) -> None:
    """Every segment of the directory decodes with the Java client (when it is here)."""
    if not oracle_available():
        return
    for seg in list_segments(path):
        with open(seg.path(), "rb") as f:
            data = f.read()
        if data:
            rc, doc = oracle_verify(data, strict=True)
            assert rc == 0, (seg.path(), doc)


def check_indexes(path: Any) -> None:
    """Every segment's .index/.timeindex equals a rebuild from its .log, and offsets increase."""
    last = -1
    for seg in list_segments(path):
        with open(seg.path(), "rb") as f:
            data = f.read()
        index, tindex = build_indexes(data, seg.base_offset)
        assert open(seg.path(".index"), "rb").read() == index
        assert open(seg.path(".timeindex"), "rb").read() == tindex
        for b in kcodec.read_batches(data):
            assert b.base_offset >= seg.base_offset
            assert b.last_offset > last
            last = b.last_offset
