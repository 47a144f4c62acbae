"""A segment folder from any bytes: ``.log``, ``.index`` and ``.timeindex``, read every way kcodec reads it.

Readers: ``LogSegment`` (``batches``, ``start_position``, ``sanity_check``),
the partition reader, ``read_arrow`` with offset and time bounds, the
``kafka-log`` data source's split planning, ``kcodec dump`` of the log and
its indexes, and the log validator on the log's bytes.

Oracles: in a log of whole batches that follow each other in offset order
(as Kafka's do), a read from an offset returns exactly the batches (rows) of
the whole segment at or after that offset, whatever the indexes say; the
planned splits cover the file; what the validator appends reads back whole.
"""
import io
import os
import shutil
import tempfile
import warnings

from common import MAX_DECOMPRESSED, OracleMismatch, rows, verdict
from provider import Provider

import kcodec
from kcodec.dump import dump_index, dump_log
from kcodec.log import LogSegment, open_partition
from kcodec.log.validator import validate_and_assign_offsets
from kcodec.records.framing import valid_bytes

BASE = 100
NAME = "%020d" % BASE
_ROOT = tempfile.mkdtemp(prefix="kcodec-fuzz-", dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
FOLDER = os.path.join(_ROOT, "t-0")
warnings.simplefilter("ignore")  # CorruptIndexWarning on every damaged index is expected


def _write(log: bytes, index: bytes, timeindex) -> str:
    shutil.rmtree(FOLDER, ignore_errors=True)
    os.makedirs(FOLDER)
    with open(os.path.join(FOLDER, NAME + ".log"), "wb") as f:
        f.write(log)
    with open(os.path.join(FOLDER, NAME + ".index"), "wb") as f:
        f.write(index)
    if timeindex is not None:
        with open(os.path.join(FOLDER, NAME + ".timeindex"), "wb") as f:
            f.write(timeindex)
    return os.path.join(FOLDER, NAME + ".log")


def _offsets(batches):
    return [(b.base_offset, b.last_offset) for b in batches]


def test_one_input(data: bytes) -> None:
    p = Provider(data)
    start = BASE + p.int(-2, 40)
    index = p.bytes(p.int(0, 64))
    timeindex = p.bytes(p.int(0, 48)) if p.bool() else None
    log = p.rest()
    path = _write(log, index, timeindex)

    whole, whole_error = verdict(lambda: _offsets(LogSegment(path).batches()))
    part, part_error = verdict(lambda: _offsets(LogSegment(path).batches(start)))
    # A log of whole batches (none cut short: a read from the start stops at one, as Kafka's does, while
    # an index may point past it) whose batches follow each other in offset order.
    ordered = (whole_error is None and verdict(lambda: valid_bytes(log))[0] == len(log)
               and all(later[0] > earlier[1] for earlier, later in zip(whole, whole[1:])))
    # An index entry inside a batch may make a read from it fail (kcodec's error), never read less.
    sound = verdict(lambda: LogSegment(path).sanity_check())[1] is None
    verdict(lambda: LogSegment(path).start_position(start))
    if ordered:
        wanted = [(a, b) for a, b in whole if b >= start]
        if (part_error is not None and sound) or (part_error is None and part != wanted):
            raise OracleMismatch(f"LogSegment.batches({start}) read {part} ({part_error!r}), not {wanted}")
        got, error = verdict(lambda: _offsets(open_partition(FOLDER).batches(start)))
        if (error is not None and sound) or (error is None and got != wanted):
            raise OracleMismatch(f"Partition.batches({start}) read {got} ({error!r}), not {wanted}")

    table, table_error = verdict(lambda: rows(kcodec.to_arrow(log, max_decompressed_size=MAX_DECOMPRESSED,
                                                              use_threads=False)))
    for chunk in (64, 1 << 20):
        got, error = verdict(lambda: rows(kcodec.read_arrow(FOLDER, start_offset=start, chunk_bytes=chunk,
                                                            use_threads=False).read_all()))
        if ordered and table_error is None:
            offset_at = 4  # key, value, topic, partition, offset, ...
            wanted = [r[offset_at:] for r in table if r[offset_at] >= start]
            if (error is not None and sound) or (error is None and [r[offset_at:] for r in got] != wanted):
                raise OracleMismatch(f"read_arrow(start_offset={start}, chunk_bytes={chunk}) read other rows "
                                     f"({error!r})")
    verdict(lambda: kcodec.read_arrow(FOLDER, start_timestamp=p_stamp(index), use_threads=False).read_all())

    from kcodec.spark.datasource import _task_cuts
    size = len(log)
    cuts = _task_cuts(LogSegment(path), 0, size, 64, 32)
    edges = [c for task in cuts for c in (task[0], task[-1])]
    if size and (edges[0] != 0 or edges[-1] != size or any(a != b for a, b in zip(edges[1::2], edges[2::2]))):
        raise OracleMismatch(f"the split plan {cuts} does not cover [0, {size})")

    out = io.StringIO()
    for deep, verify in ((True, True), (False, False)):
        verdict(lambda: dump_log(path, deep=deep, print_data=deep, verify=verify, as_json=deep, out=out))
    for suffix in (".index", ".timeindex") if timeindex is not None else (".index",):
        verdict(lambda: dump_index(os.path.join(FOLDER, NAME + suffix), sanity_only=False, as_json=True, out=out))

    result, _ = verdict(lambda: validate_and_assign_offsets(log, next_offset=start, now_ms=1_700_000_000_000))
    if result is not None:
        appended = b"".join(result.batches)
        read, error = verdict(lambda: [r.offset for b in kcodec.read_batches(appended) for r in b])
        if error is not None or len(read) != result.record_count:
            raise OracleMismatch(f"the validator appended what does not read back whole ({error!r})")


def p_stamp(index: bytes) -> int:
    """A timestamp near the time index's values: the index bytes read as one."""
    return int.from_bytes(index[:8].ljust(8, b"\0"), "big", signed=True) if index else 0
