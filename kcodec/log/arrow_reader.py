"""A log as a stream of Arrow record batches: :func:`read_arrow`.

The stream converts one run of whole Kafka batches at a time (about
``chunk_bytes`` of the ``.log``) and lets go of it before the next, so its
memory stays bounded however large the log is.  Runs are located through
the ``.index`` and ``.timeindex`` files (:mod:`kcodec.log.selection`).
A log in an object store is read the same way, each run with one ranged
read (:mod:`kcodec.storage`).
"""
from __future__ import annotations

import mmap
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, Iterator, List, Optional, Tuple, Union

import numpy as np

from kcodec.errors import CorruptDataError, InvalidNameError, KcodecError, LogNotFoundError
from kcodec.log.names import segment_log_offset
from kcodec.log.segment import LogSegment, _folder_name, open_log_dir
from kcodec.log.selection import RecordRange, batch_runs
from kcodec.records.framing import iter_entries
from kcodec.storage import Storage, resolve

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["read_arrow", "DEFAULT_CHUNK_BYTES"]

#: The ``.log`` bytes :func:`read_arrow` converts at a time, unless told.
DEFAULT_CHUNK_BYTES = 16 << 20

# (topic, partition, segment) in reading order
_Plan = List[Tuple[Optional[str], Optional[int], LogSegment]]


def read_arrow(path: Union[str, "os.PathLike[str]"], *, topics: Union[str, Iterable[str], None] = None,
               partitions: Union[int, Iterable[int], None] = None, start_offset: Optional[int] = None,
               end_offset: Optional[int] = None, start_timestamp: Optional[int] = None,
               end_timestamp: Optional[int] = None, include_control: bool = False,
               chunk_bytes: int = DEFAULT_CHUNK_BYTES, validate: bool = True,
               use_threads: bool = True, views: bool = False,
               storage_options: Optional[Dict[str, Any]] = None) -> "pyarrow.RecordBatchReader":
    """The records of a segment file, a partition folder or a broker log directory as a stream.

    Returns a ``pyarrow.RecordBatchReader`` in Spark's Kafka schema
    (:func:`kcodec.kafka_schema`); it is an Arrow C stream
    (``__arrow_c_stream__``), which DuckDB, Polars and other Arrow consumers
    read directly.  Partitions come in ``(topic, partition)`` order, each in
    offset order.  Every Arrow batch holds the records of whole Kafka
    batches (less those filtered out), converted from about ``chunk_bytes``
    of the log; memory stays near that size times the compression ratio.

    Filters are those of the ``kafka-log`` data source: ``start_offset`` /
    ``end_offset`` (inclusive / exclusive), ``start_timestamp`` /
    ``end_timestamp`` (ms; inclusive / exclusive), ``topics`` and
    ``partitions`` (one or several).  Segments and byte ranges are chosen
    through the indexes, then rows are filtered exactly.  A segment file
    read alone takes its topic and partition from its folder's name, when
    that is ``<topic>-<partition>``.

    ``views`` gives key and value as ``binary_view`` columns, as
    :func:`kcodec.to_arrow` does: long values of uncompressed batches then
    reference the memory-mapped segment (each batch keeps the map alive;
    its pages are read from the file again when a value is used), those of
    compressed batches their run's decompressed records.

    ``path`` may be a URL (``s3://``, ``gs://``, ... as :func:`kcodec.storage.resolve`
    takes them, with ``storage_options`` for the file system), and a log
    directory may be in Kafka's tiered-storage layout.  From an object store
    each run is one ranged read; a segment without an offset index is
    fetched whole, since its batch starts are found by reading it.

    Raises :class:`kcodec.errors.LogNotFoundError` for a missing path and
    :class:`kcodec.errors.CorruptDataError` for a path that is not a log;
    while reading, a damaged batch or a segment ending in part of a batch
    raises kcodec's error naming the file and byte.
    """
    import pyarrow as pa

    from kcodec.arrow.schema import kafka_schema

    if chunk_bytes <= 0:
        raise ValueError(f"chunk_bytes must be positive, not {chunk_bytes}")
    wanted = RecordRange(start_offset, end_offset, start_timestamp, end_timestamp)
    storage, inner = resolve(path, storage_options)
    plan = _plan(storage, inner, storage_options, _names(topics, str), _names(partitions, int), wanted)
    batches = _batches(plan, wanted, include_control, validate, chunk_bytes, use_threads, views)
    return pa.RecordBatchReader.from_batches(kafka_schema(views=views), batches)


def _names(values: Any, kind: Any) -> Optional[set]:
    if values is None:
        return None
    if isinstance(values, kind):
        return {values}
    return {kind(v) for v in values}


def _plan(storage: Storage, path: str, storage_options: Optional[Dict[str, Any]], topics: Optional[set],
          partitions: Optional[set], wanted: RecordRange) -> _Plan:
    """Every segment to read, with its topic and partition, in reading order."""
    named = segment_log_offset(storage.basename(path))
    if named is not None:
        layout, base_offset = named
        seg = LogSegment(path, storage, base_offset=base_offset)
        try:
            seg.size
        except (FileNotFoundError, NotADirectoryError):
            raise LogNotFoundError("no such segment file", source=storage.url(path)) from None
        try:
            topic, partition, _ = _folder_name(storage, storage.parent(path), layout)
        except InvalidNameError:
            topic, partition = None, None
        if (topics is not None and topic not in topics) or (partitions is not None and partition not in partitions):
            return []
        return [(topic, partition, seg)]
    url = storage.url(path)
    try:
        found = open_log_dir(url, storage_options=storage_options)
    except FileNotFoundError:
        if storage.exists(path):
            raise CorruptDataError("not a segment file (<base offset in 20 digits>.log) nor a log directory",
                                   source=url) from None
        raise LogNotFoundError("no such log directory or segment file", source=url) from None
    if not found:
        raise CorruptDataError("no partition folder (<topic>-<partition>) with segment files here", source=url)
    plan: _Plan = []
    for (topic, partition), part in sorted(found.items()):
        if (topics is not None and topic not in topics) or (partitions is not None and partition not in partitions):
            continue
        plan.extend((topic, partition, seg) for seg in wanted.segments(part))
    return plan


def _batches(plan: _Plan, wanted: RecordRange, include_control: bool, validate: bool, chunk_bytes: int,
             use_threads: bool, views: bool) -> Iterator["pyarrow.RecordBatch"]:
    from kcodec.arrow.decode import to_arrow

    for topic, partition, seg in plan:
        try:
            span = wanted.byte_range(seg)
            if span is None:
                continue
            positions = seg.offset_index.positions
            runs = batch_runs(seg, span[0], span[1], chunk_bytes)
            local = not seg.storage.remote
            if local and not len(positions):  # the runs were found by walking the batch headers
                _forget_pages(seg.data, *span)
            for start, end in runs:
                view = seg.read_range(start, end)  # a view of the map, or one ranged read
                _check_whole_batches(seg, view, positions, start, end)
                try:
                    table = to_arrow(view, topic=topic, partition=partition, include_control=include_control,
                                     validate=validate, use_threads=use_threads, views=views)
                except KcodecError as exc:
                    raise exc.with_context(position=start, source=seg.url) from None
                finally:
                    del view
                    if local:
                        _forget_pages(seg.data, start, end)
                for batch in wanted.filter(table).to_batches():
                    if batch.num_rows:
                        yield batch
                del table
        finally:
            seg.close()


def _check_whole_batches(seg: LogSegment, view: Any, positions: np.ndarray, start: int, end: int) -> None:
    """CorruptRecordError naming the file unless ``view``, bytes ``[start, end)``, ends where a batch ends.

    Only the batches after the last batch start the offset index
    (``positions``) gives in the run are walked: the index vouches for the
    ones before it.
    """
    i = int(np.searchsorted(positions, end, side="left")) - 1
    last_known = int(positions[i]) if i >= 0 and positions[i] >= start else start
    try:
        for _ in iter_entries(view, last_known - start, end - start, strict=True):
            pass
    except KcodecError as exc:
        raise exc.with_context(position=start, source=seg.url) from None


def _forget_pages(data: Any, start: int, end: int) -> None:
    """Drop a converted run's pages from the process (they stay in the page cache).

    A memory-mapped file's pages count in the process's resident size as
    they are touched; without this a stream over a large segment would grow
    to the segment's size.
    """
    if isinstance(data, mmap.mmap) and end > start and hasattr(mmap, "MADV_DONTNEED"):
        first = start - start % mmap.PAGESIZE
        data.madvise(mmap.MADV_DONTNEED, first, end - first)
