"""Rewrite a partition directory's segments with another codec, level or message format.

Every data batch goes through the validator's rebuild path
(:func:`kcodec.records.rebuild.rebuild_batch`) but, unlike a produce, nothing
is reassigned: each batch keeps its base offset, every record its offset and
timestamp (LogAppendTime batches keep their append time), producer id,
epoch, base sequence, transactional flag, partition leader epoch and delete
horizon are preserved, and a v2 batch keeps its lastOffsetDelta so the
producer's last sequence survives.  Control batches and empty batches are
copied unchanged: a broker never compresses an uncompressed marker.

Legacy (v0/v1) data keeps its format unless ``to_magic=2`` up-converts it;
consecutive uncompressed legacy messages are packed into one batch (or one
compressed wrapper) of at most ``max_batch_bytes``.  Legacy batches whose
format cannot carry the target codec (zstd needs v2) are kept as they are
and counted in ``batches_unsupported``.

Each segment is written beside the old one as ``*.cleaned`` files, read
back and verified (record count and a BLAKE2b digest over every record's
offset, timestamp, key, value and headers), then swapped in with the
protocol of :mod:`kcodec.log.swap` (``.cleaned`` -> ``.swap`` -> rename),
indexes rebuilt and the ``.txnindex`` carried over; a crash at any point
leaves a directory :func:`kcodec.log.recovery.recover_log_dir` restores with
every record present exactly once.
"""
from __future__ import annotations

import contextlib
import hashlib
import struct
import time
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

from kcodec.compression import CompressionType, TimestampType
from kcodec.errors import CorruptDataError, KcodecError
from kcodec.log.files import FileOps, ops_for
from kcodec.log.lock import rewrite_lock
from kcodec.log.names import CLEANED, SEGMENT_SUFFIXES, segment_file_name
from kcodec.log.recovery import recover_log_dir
from kcodec.log.segment_list import SegmentInfo, check_complete, list_segments, open_log
from kcodec.log.swap import replace_segments, write_segment_files
from kcodec.records.rebuild import rebuild_batch

__all__ = [
    "RecompressOptions",
    "SegmentResult",
    "RecompressResult",
    "recompress",
    "recompress_segment",
    "segments_to_recompress",
    "swap_in",
    "rewrite_records",
    "records_digest",
    "RecompressVerificationError",
    "cli_add_parser",
    "cli_run",
]

_LEN = struct.Struct(">q")
DEFAULT_MAX_BATCH_BYTES = 1 << 20


class RecompressVerificationError(CorruptDataError):
    """The rewritten segment does not hold the same records as the original."""


@dataclass(frozen=True)
class RecompressOptions:
    """Target of a recompression."""

    compression: Union[CompressionType, int, str]
    level: Optional[int] = None
    to_magic: Optional[int] = None  #: None keeps each batch's format; 2 up-converts legacy data
    skip_same_codec: bool = False  #: keep batches already in the target codec untouched
    max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES  #: limit when packing legacy messages

    @property
    def codec(self) -> CompressionType:
        return CompressionType.of(self.compression)

    @property
    def effective_level(self) -> Optional[int]:
        return self.codec.validate_level(self.level)

    def check(self) -> None:
        if self.to_magic not in (None, 2):
            raise ValueError("recompression converts legacy data up to magic 2 only (to_magic must be None or 2)")
        self.effective_level  # raises on a level Kafka rejects


@dataclass
class SegmentResult:
    base_offset: int
    bytes_before: int
    bytes_after: int
    records: int
    batches_rebuilt: int = 0
    batches_kept: int = 0
    batches_unsupported: int = 0
    digest: str = ""
    swapped: bool = False


@dataclass
class RecompressResult:
    log_dir: str
    dry_run: bool
    segments: List[SegmentResult] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def bytes_before(self) -> int:
        return sum(s.bytes_before for s in self.segments)

    @property
    def bytes_after(self) -> int:
        return sum(s.bytes_after for s in self.segments)

    @property
    def bytes_saved(self) -> int:
        return self.bytes_before - self.bytes_after

    @property
    def records(self) -> int:
        return sum(s.records for s in self.segments)


class _Digest:
    """Count and BLAKE2b over each record's offset, timestamp, key, value and headers."""

    def __init__(self) -> None:
        self.h = hashlib.blake2b(digest_size=32)
        self.count = 0

    def _bytes(self, b: Any) -> None:
        if b is None:
            self.h.update(b"\xff\xff\xff\xff\xff\xff\xff\xff")
        else:
            self.h.update(_LEN.pack(len(b)))
            self.h.update(b)

    def add(self, rec: Any) -> None:
        self.count += 1
        self.h.update(_LEN.pack(rec.offset))
        self.h.update(_LEN.pack(rec.timestamp))
        self._bytes(rec.key)
        self._bytes(rec.value)
        headers = rec.headers or ()
        self.h.update(_LEN.pack(len(headers)))
        for k, v in headers:
            self._bytes(k.encode("utf-8") if isinstance(k, str) else k)
            self._bytes(v)

    def hexdigest(self) -> str:
        return f"{self.count}:{self.h.hexdigest()}"


def records_digest(buf: Any) -> str:
    """``"<count>:<blake2b>"`` over every record of a record set, in log order."""
    from kcodec.records import read_batches
    d = _Digest()
    for batch in read_batches(buf, validate=True):
        for rec in batch:
            d.add(rec)
    return d.hexdigest()


def _legacy_run_type(batch: Any) -> TimestampType:
    return TimestampType.CREATE_TIME if batch.magic == 0 else TimestampType(int(batch.timestamp_type))


def rewrite_records(buf: Any, options: RecompressOptions, digest: Optional[_Digest] = None,
                    stats: Optional[SegmentResult] = None) -> Iterator[bytes]:
    """Yield the rewritten batches of a record set (a segment's bytes), in order."""
    from kcodec.records import read_batches
    options.check()
    codec = options.codec
    level = options.effective_level
    stats = stats if stats is not None else SegmentResult(0, 0, 0, 0)
    run: List[Any] = []  # pending uncompressed legacy records to pack
    run_info: Optional[Tuple[int, TimestampType, Optional[int]]] = None
    run_bytes = 0

    def flush() -> Iterator[bytes]:
        nonlocal run, run_info, run_bytes
        if run and run_info is not None:  # set together with the first record of a run
            magic, ts_type, append_time = run_info
            out_magic = options.to_magic if options.to_magic is not None else magic
            yield rebuild_batch(run, magic=out_magic, compression=codec, level=level,
                                base_offset=run[0].offset, timestamp_type=ts_type, log_append_time=append_time,
                                offsets=[r.offset for r in run])
            stats.batches_rebuilt += 1
        run, run_info, run_bytes = [], None, 0

    for batch in read_batches(buf, validate=False):
        try:
            batch.ensure_valid()
            records = batch.records()
        except KcodecError as exc:
            raise exc.with_context(batch_offset=batch.base_offset)
        if digest is not None:
            for rec in records:
                digest.add(rec)
        stats.records += len(records)
        bcodec = CompressionType.of(batch.compression)
        magic = batch.magic
        out_magic = options.to_magic if options.to_magic is not None else magic
        keep = (batch.is_control or not records or (options.skip_same_codec and bcodec == codec
                                                      and out_magic == magic))
        if not keep and not codec.supports_magic(out_magic):
            stats.batches_unsupported += 1
            keep = True
        if not keep and magic < 2 and bcodec == CompressionType.NONE:
            if codec == CompressionType.NONE and out_magic == magic:
                keep = True
            else:
                ts_type = _legacy_run_type(batch)
                # a LogAppendTime wrapper gives its records one time: only messages appended together share one
                info = (magic, ts_type, batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else None)
                size = batch.size_in_bytes
                if run and (info != run_info or run_bytes + size > options.max_batch_bytes):
                    yield from flush()
                run.extend(records)
                run_info = info
                run_bytes += size
                continue
        yield from flush()
        if keep:
            stats.batches_kept += 1
            yield bytes(batch.raw)
            continue
        ts_type = _legacy_run_type(batch) if magic < 2 else TimestampType(int(batch.timestamp_type))
        lat = batch.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else None
        if magic >= 2:
            out = rebuild_batch(
                records, magic=2, compression=codec, level=level, base_offset=batch.base_offset,
                timestamp_type=ts_type, log_append_time=lat, producer_id=batch.producer_id,
                producer_epoch=batch.producer_epoch, base_sequence=batch.base_sequence,
                is_transactional=batch.is_transactional, is_control=False,
                partition_leader_epoch=batch.partition_leader_epoch, delete_horizon_ms=batch.delete_horizon_ms,
                offsets=[r.offset for r in records], last_offset=batch.last_offset)
        else:
            out = rebuild_batch(records, magic=out_magic, compression=codec, level=level,
                                base_offset=records[0].offset, timestamp_type=ts_type, log_append_time=lat,
                                offsets=[r.offset for r in records])
        stats.batches_rebuilt += 1
        yield out
    yield from flush()


def recompress_segment(log_dir: str, seg: SegmentInfo, options: RecompressOptions, *, dry_run: bool = False,
                       verify: bool = True, index_interval_bytes: int = 4096,
                       ops: Optional[FileOps] = None) -> SegmentResult:
    """Write ``seg`` recompressed as ``<base>.*.cleaned`` (verified); nothing is swapped yet.

    With ``dry_run`` only the sizes are computed.  Safe to run in a worker
    process: it only creates files of its own segment's ``.cleaned`` names.
    """
    ops = ops or FileOps(storage=seg.storage)
    storage = ops.storage
    res = SegmentResult(seg.base_offset, seg.size, 0, 0)
    digest = _Digest()
    log_path = storage.join(log_dir, segment_file_name(seg.base_offset, ".log") + CLEANED)
    source = storage.url(seg.path())
    with open_log(seg.path(), storage) as buf:
        check_complete(buf, source)
        try:
            if dry_run:
                for out in rewrite_records(buf, options, None, res):
                    res.bytes_after += len(out)
                return res
            with ops.writer(log_path) as w:
                for out in rewrite_records(buf, options, digest, res):
                    w.write(out)
                    if w.size > seg.size // 2:
                        w.checkpoint()
        except KcodecError as exc:
            if not dry_run:
                _discard(ops, log_dir, seg.base_offset)
            raise exc.with_context(source=source)
    res.bytes_after = storage.size(log_path)
    res.digest = digest.hexdigest()
    written = None
    if verify or storage.remote:
        # Read back once: the digest check and the index build share the bytes.
        written = storage.read_bytes(log_path) if storage.remote else None
    if verify:
        with (contextlib.nullcontext(written) if written is not None else open_log(log_path, storage)) as out_buf:
            try:
                got = records_digest(out_buf)
            except KcodecError as exc:
                ops.delete(log_path)
                raise RecompressVerificationError(f"rewritten segment does not read back: {exc}",
                                                  source=source) from exc
        if got != res.digest:
            ops.delete(log_path)
            raise RecompressVerificationError(
                f"rewritten segment holds different records (expected {res.digest}, got {got})",
                source=source)
    try:
        txn = storage.read_bytes(seg.path(".txnindex"))
    except FileNotFoundError:
        txn = b""
    try:
        write_segment_files(ops, log_dir, seg.base_offset, log_path, txn, index_interval_bytes, log_buf=written)
    except KcodecError as exc:   # the indexes cannot hold the segment's offsets
        _discard(ops, log_dir, seg.base_offset)
        raise exc.with_context(source=source)
    return res


def _discard(ops: FileOps, log_dir: str, base: int) -> None:
    """Bad data, not a crash: delete the ``.cleaned`` files written so far, leaving nothing for recovery."""
    for suffix in SEGMENT_SUFFIXES:
        ops.delete(ops.storage.join(log_dir, segment_file_name(base, suffix) + CLEANED))


def recompress(log_dir: str, compression: Union[CompressionType, int, str], level: Optional[int] = None, *,
               to_magic: Optional[int] = None, skip_same_codec: bool = False, include_active: bool = True,
               dry_run: bool = False, verify: bool = True, max_batch_bytes: int = DEFAULT_MAX_BATCH_BYTES,
               index_interval_bytes: int = 4096, ops: Optional[FileOps] = None,
               storage_options: Optional[Dict[str, Any]] = None) -> RecompressResult:
    """Recompress every segment of the partition directory ``log_dir`` (a path or URL).

    ``include_active=False`` leaves the newest segment alone (a directory a
    broker may still append to).  Returns per-segment sizes; with
    ``dry_run`` nothing is written and ``bytes_saved`` is what would be saved.
    A segment ending in a partial batch is refused (:class:`PartialTailError`)
    before anything of it is written.
    """
    t0 = time.perf_counter()
    options = RecompressOptions(compression, level, to_magic, skip_same_codec, max_batch_bytes)
    options.check()
    ops, log_dir = ops_for(log_dir, ops, storage_options)
    result = RecompressResult(ops.storage.url(log_dir), dry_run)
    with (contextlib.nullcontext() if dry_run else rewrite_lock(log_dir, ops.storage)):
        for seg in segments_to_recompress(ops, log_dir, include_active=include_active, dry_run=dry_run,
                                          index_interval_bytes=index_interval_bytes):
            res = recompress_segment(log_dir, seg, options, dry_run=dry_run, verify=verify,
                                     index_interval_bytes=index_interval_bytes, ops=ops)
            result.segments.append(swap_in(ops, log_dir, seg, res, dry_run))
    result.seconds = time.perf_counter() - t0
    return result


def segments_to_recompress(ops: FileOps, log_dir: str, *, include_active: bool = True, dry_run: bool = False,
                           index_interval_bytes: int = 4096) -> List[SegmentInfo]:
    """The segments a run rewrites, once what an earlier run left is recovered (not for a dry run)."""
    if not dry_run:
        recover_log_dir(log_dir, ops, index_interval_bytes)
    segments = list_segments(log_dir, ops.storage)
    if not include_active and segments:
        segments = segments[:-1]
    return segments


def swap_in(ops: FileOps, log_dir: str, seg: SegmentInfo, res: SegmentResult, dry_run: bool = False) -> SegmentResult:
    """Swap the verified ``.cleaned`` files of :func:`recompress_segment` in for ``seg`` (nothing for a dry run)."""
    if not dry_run:
        replace_segments(ops, log_dir, seg.base_offset, [seg], mtime=seg.mtime)
        res.swapped = True
    return res


# --------------------------------------------------------------------------------------------
# command line

def cli_add_parser(subparsers: Any) -> Any:
    """Register ``kcodec recompress``."""
    from kcodec.log.arguments import add_partition_command
    p = add_partition_command(
        subparsers, "recompress", help="rewrite the segments of partitions with another codec",
        description="Rewrite every batch of the given partitions with another codec (and level, or magic), "
                    "keeping offsets, timestamps and producer state; each segment is read back and compared (unless "
                    "--no-verify) before it is swapped in, and its indexes are rebuilt. Takes the log directory's "
                    "lock.")
    p.add_argument("--codec", required=True, help="none, gzip, snappy, lz4 or zstd")
    p.add_argument("--level", type=int, default=None, help="codec level (Kafka's ranges; default: Kafka's)")
    p.add_argument("--to-magic", type=int, choices=(2,), default=None,
                   help="up-convert legacy v0/v1 data to v2 (needed for zstd)")
    p.add_argument("--skip-same-codec", action="store_true", help="keep batches already in the target codec")
    p.add_argument("--skip-active", action="store_true", help="leave the newest segment of each partition alone")
    p.add_argument("--no-verify", action="store_true", help="skip reading back and comparing the new files")
    p.add_argument("--dry-run", action="store_true", help="only report the bytes it would save")
    p.set_defaults(func=cli_run)
    return p


def cli_run(args: Any) -> int:
    from kcodec.log.arguments import storage_options, target_partitions
    from kcodec.log.lock import rewrite_locks
    parts = target_partitions(args)
    opts = storage_options(args)
    urls = [part.storage.url(str(part.path)) for part in parts]
    with (contextlib.nullcontext() if args.dry_run else rewrite_locks(urls, opts)):
        return _run(args, urls, opts)


def _run(args: Any, urls: List[str], opts: Dict[str, Any]) -> int:
    total_before = total_after = 0
    for url in urls:
        r = recompress(url, args.codec, args.level, to_magic=args.to_magic,
                       skip_same_codec=args.skip_same_codec, include_active=not args.skip_active,
                       dry_run=args.dry_run, verify=not args.no_verify, storage_options=opts)
        total_before += r.bytes_before
        total_after += r.bytes_after
        verb = "would save" if r.dry_run else "saved"
        pct = 100.0 * r.bytes_saved / r.bytes_before if r.bytes_before else 0.0
        print(f"{r.log_dir}: {len(r.segments)} segments, {r.records} records, {r.bytes_before} -> "
              f"{r.bytes_after} bytes, {verb} {r.bytes_saved} ({pct:.1f}%) in {r.seconds:.2f} s")
    if len(urls) > 1:
        print(f"total: {len(urls)} partitions, {total_before} -> {total_after} bytes, "
              f"{'would save' if args.dry_run else 'saved'} {total_before - total_after}")
    return 0
