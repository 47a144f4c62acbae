"""Kafka batches to Arrow tables and back, without a Python object per record.

:func:`decode_columns` gathers the columns of Spark's Kafka source: a native
pass over each (decompressed) records region copies keys, values and headers
straight into contiguous Arrow buffers, handed to any Arrow consumer through
the Arrow C data interface; :func:`to_arrow` imports them into a
``pyarrow.Table``.  :func:`from_arrow` encodes records
straight from a table's Arrow buffers into batches.  Legacy v0/v1 batches
(pre-0.11 data, rare) go through their Record objects.
"""
from __future__ import annotations

import os
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait as futures_wait
from typing import TYPE_CHECKING, Any, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

from kcodec._extras import require
from kcodec._native.columnar import (
    BATCH_FIELD_FORMATS,
    BATCH_FIELDS,
    ColumnAccumulator,
    RecordChunk,
    RecordColumns,
    array_address,
    batch_bytes,
    columns_uncompressed_v2,
    columns_v2,
    compressed_batch,
    compression_ids,
    encode_columnar,
    kafka_schema_capsule,
    record_columns,
    split_batches,
)
from kcodec._native.columnar import column_cache as _column_cache
from kcodec._native.native_codec import native_of
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType, get_codec
from kcodec.errors import InvalidRecordError, KcodecError, LimitExceededError, RecordBuilderError
from kcodec.records.batch import RecordBatch
from kcodec.records.batch_header import COMPRESSION_MASK, TIMESTAMP_TYPE_MASK, TRANSACTIONAL_MASK
from kcodec.records.pool import BufferPool, PooledBuffer
from kcodec.records.reader import read_batches

__all__ = ["kafka_schema", "decode_columns", "RecordColumns", "to_arrow", "from_arrow", "from_arrow_iter",
           "column_cache", "filter_rows", "BATCH_FIELDS"]


def column_cache(limit: Optional[int] = None, min_block: Optional[int] = None) -> Tuple[int, int, int]:
    """Inspect or tune the memory :func:`to_arrow` reuses: ``(limit, held, min_block)``.

    Column buffers handed to Arrow are returned to kcodec when Arrow frees
    them; blocks of at least ``min_block`` bytes (1 MiB) are kept, up to
    ``limit`` bytes in all (256 MiB), and the next conversion fills them
    instead of fresh pages.  First touches of fresh memory cost a page fault
    per 4 KiB, which on small VMs is several times the cost of the copy
    itself.  ``column_cache(limit=0)`` frees the cache and turns it off.
    Returns the settings in force before the call and the bytes held.
    """
    return _column_cache(limit, min_block)


def _pa() -> Any:
    pa = sys.modules.get("pyarrow")  # once imported, without the import machinery's cost on every call
    return pa if pa is not None else require("pyarrow", "pyarrow", "kcodec's Arrow conversion")


_SCHEMAS: dict = {}
_MAX_MS, _MIN_MS = 2 ** 63 - 1, -2 ** 63
#: numpy types of the batch fields' Arrow formats (booleans are packed into bits).
_FORMAT_DTYPES = {"l": np.int64, "i": np.int32, "s": np.int16, "c": np.int8, "b": np.bool_}


def kafka_schema(headers: bool = True, batch_fields: Sequence[str] = (), views: bool = False) -> "pyarrow.Schema":
    """Spark's Kafka source schema (plus the requested batch fields), as :func:`decode_columns` produces it.

    With ``views`` key and value are ``binary_view`` (see :func:`to_arrow`).
    """
    key = (bool(headers), tuple(batch_fields), bool(views))
    if key not in _SCHEMAS:
        _SCHEMAS[key] = _pa().Schema._import_from_c_capsule(kafka_schema_capsule(*key))
    return _SCHEMAS[key]


def _batch_value(batch: Any, name: Any) -> Any:
    if name == "batch_position":
        return batch.position
    if name == "compression":
        return int(batch.compression_id if hasattr(batch, "compression_id") else batch.compression)
    if name == "is_transactional":
        return bool(batch.is_transactional)
    return getattr(batch, name)


def _add_v2(acc: ColumnAccumulator, batch: RecordBatch, views: bool) -> None:
    count = batch._count()  # a negative count raises Kafka's error
    if count == 0:  # Kafka never looks at the payload of an empty batch
        return
    # Views keep the records region (the decompressed one, or a view of the input);
    # copies come from a pooled buffer, given back as soon as the columns hold the records.
    data = batch.records_data() if views else batch._pooled_records()
    compressed = (batch.attributes & COMPRESSION_MASK) != 0
    try:
        added = acc.add(data, count, batch.base_offset, batch.base_timestamp, batch.max_timestamp,
                        bool(batch.attributes & TIMESTAMP_TYPE_MASK), compressed)
    finally:
        if type(data) is PooledBuffer:
            data.release()
    if not added:
        batch.scan()  # reports the damage with Kafka's message and position
        raise InvalidRecordError("Found invalid record structure", position=batch.position,
                                 batch_offset=batch.base_offset)


def _add_legacy(acc: ColumnAccumulator, batch: Any) -> None:
    # Legacy v0/v1 batches are rare (pre-0.11 data): their records go through Record objects.
    ts_type = int(batch.timestamp_type)
    for r in batch:
        acc.add_record(r.offset, r.timestamp, ts_type, r.key, r.value, r.headers)


#: The least bytes of batches one thread of to_arrow(use_threads=True) converts.
MIN_THREAD_PART = 4 << 20
#: The least mean batch size for which threads speed up the general path (legacy batches, Python-only
#: codecs): below it the per-batch Python steps, which hold the GIL, outweigh the decompression they overlap.
MIN_THREAD_MEAN_BATCH = 64 << 10

_pool_lock = threading.Lock()
_pool: Optional[ThreadPoolExecutor] = None
_pool_key: Tuple[int, int] = (0, 0)


def _executor(threads: int) -> ThreadPoolExecutor:
    """One shared pool, made on first use and again in a forked child (a fork copies no threads)."""
    global _pool, _pool_key
    key = (os.getpid(), threads)
    with _pool_lock:
        if _pool is None or _pool_key != key:
            if _pool is not None and _pool_key[0] == key[0]:
                _pool.shutdown(wait=False)
            _pool = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="kcodec-to-arrow")
            _pool_key = key
        return _pool


def _thread_count() -> int:
    """pyarrow's CPU count where pyarrow is loaded (so ``pyarrow.set_cpu_count`` applies), else the usable cores."""
    pa = sys.modules.get("pyarrow")
    if pa is not None:
        return pa.cpu_count()
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def _uncompressed_v2_parts(buffer: Any, cuts: Optional[List[int]], validate: bool, include_control: bool,
                           headers: bool, views: bool) -> Optional[List[RecordChunk]]:
    """The fast pass's chunk for each part of the buffer (see _in_parts), or None when it must take another path."""
    return _in_parts(lambda a, b: columns_uncompressed_v2(buffer, validate, include_control, headers, a, b, views),
                     cuts)


def _native_codecs(buffer: Any, max_decompressed_size: int) -> Optional[Tuple[Any, ...]]:
    """The NativeCodec of each codec id (0-7) the buffer's batches use, or None when the native pass
    over compressed v2 batches cannot take the buffer (legacy batches, damage, a codec without native
    functions, a size limit outside what it takes); the general path then decodes it."""
    if not 0 < max_decompressed_size < 2 ** 63:
        return None
    mask = compression_ids(buffer)
    if mask <= 1:  # not only v2 batches, or nothing compressed (the uncompressed pass judged it)
        return None
    codecs: List[Any] = [None] * 8
    for cid in range(1, 8):
        if mask >> cid & 1:
            try:
                codecs[cid] = native_of(get_codec(cid))
            except KcodecError:
                return None
            if codecs[cid] is None:
                return None
    return tuple(codecs)


def _add_compressed_v2(acc: ColumnAccumulator, buffer: Any, validate: bool, include_control: bool,
                       max_decompressed_size: int) -> bool:
    """:func:`_compressed_v2` into an accumulator: False, with nothing added, for the general path."""
    codecs = _native_codecs(buffer, max_decompressed_size)
    return codecs is not None and acc.add_v2(buffer, codecs, validate, include_control, max_decompressed_size)


def _compressed_v2(buffer: Any, validate: bool, include_control: bool, headers: bool, max_decompressed_size: int,
                   views: bool = False, cuts: Optional[List[int]] = None) -> Optional[List[RecordChunk]]:
    """The native pass over v2 batches of native codecs (see columns_v2), a chunk for each part of the
    buffer (see _in_parts), or None for the general path.  It holds the GIL for no batch, so small
    batches gain from threads too (no :data:`MIN_THREAD_MEAN_BATCH` in the cuts)."""
    codecs = _native_codecs(buffer, max_decompressed_size)
    if codecs is None:
        return None
    return _in_parts(lambda a, b: columns_v2(buffer, codecs, validate, include_control, headers,
                                             max_decompressed_size, a, b, views), cuts)


def _in_parts(convert: Any, cuts: Optional[List[int]]) -> Optional[List[RecordChunk]]:
    """``convert(start, stop)`` of the whole buffer (``cuts`` None) or of each part on threads; None if any gave
    None."""
    if cuts is None:
        chunk = convert(0, -1)
        return None if chunk is None else [chunk]
    return _on_threads(convert, cuts)


def _cuts(buffer: Any, min_mean_batch: int) -> Optional[List[int]]:
    """Where to cut the buffer into one part per thread, or None to convert it in one piece."""
    threads = _thread_count()
    if threads < 2:
        return None
    cuts = split_batches(buffer, threads, MIN_THREAD_PART, min_mean_batch)
    return cuts if len(cuts) > 2 else None


def _on_threads(convert: Any, cuts: List[int]) -> Any:
    """``convert(start, stop)`` of every part, the first on the calling thread; None if any gave None."""
    others = [_executor(len(cuts) - 2).submit(convert, a, b) for a, b in zip(cuts[1:-1], cuts[2:])]
    try:
        results = [convert(cuts[0], cuts[1])]
    finally:
        futures_wait(others)  # no thread still reads the buffer once this returns or raises
    results += [f.result() for f in others]
    return None if any(r is None for r in results) else results


def decode_columns(buffer: Any, *, topic: Optional[str] = None, partition: Optional[int] = None,
                   batch_fields: Sequence[str] = (), include_control: bool = False, validate: bool = True,
                   headers: bool = True, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
                   use_threads: bool = True, views: bool = False) -> RecordColumns:
    """The records of every batch in ``buffer`` as Arrow columns for any Arrow consumer, without pyarrow.

    Returns :class:`RecordColumns`, which hands its columns over through
    the Arrow PyCapsule protocol without a copy: ``pyarrow.table(cols)``,
    ``polars.DataFrame(cols)``, DuckDB's ``duckdb.sql("select ... from cols")``.
    The columns, arguments and errors are those of :func:`to_arrow`.
    """
    return _columns(buffer, topic, partition, batch_fields, include_control, validate, headers, max_decompressed_size,
                    use_threads, views)


def _columns(buffer: Any, topic: Optional[str], partition: Optional[int], batch_fields: Sequence[str],
             include_control: bool, validate: bool, headers: bool, max_decompressed_size: int,
             use_threads: bool, views: bool) -> RecordColumns:
    fields = tuple(batch_fields)
    if fields:
        kafka_schema_capsule(headers, fields)  # unknown names raise before any decoding
    chunks = _decode(buffer, fields, include_control, validate, headers, max_decompressed_size, use_threads, views)
    return record_columns(chunks, topic, partition, headers, fields, views)


def to_arrow(buffer: Any, *, topic: Optional[str] = None, partition: Optional[int] = None,
             batch_fields: Sequence[str] = (), include_control: bool = False, validate: bool = True,
             headers: bool = True, max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE,
             use_threads: bool = True, views: bool = False) -> "pyarrow.Table":
    """The records of every batch in ``buffer`` as a ``pyarrow.Table`` (Spark's Kafka schema).

    ``buffer`` is any buffer of concatenated batches (any magic), a list or
    tuple of such buffers (a fetch response's record sets, say: decoded as
    one input, without joining them; errors name the buffer as their
    ``source``), or an iterable of batches from :func:`kcodec.read_batches`.
    Timestamps are UTC microseconds (Kafka's milliseconds x 1000; LogAppendTime batches give
    every record the batch time); ``headers`` is null for a record without
    headers.  Control records (transaction markers) are left out unless
    ``include_control``; with ``validate`` they are checked either way (key
    and end-transaction marker, as Kafka reads them), like every batch's CRC.  ``batch_fields`` appends
    per-record copies of batch header fields (see :data:`BATCH_FIELDS`).  Errors carry positions
    relative to the start of ``buffer``.

    ``use_threads`` (as in pyarrow's readers) converts a large buffer on up
    to ``pyarrow.cpu_count()`` threads, one part of at least
    :data:`MIN_THREAD_PART` bytes each, when it holds uncompressed v2
    batches, v2 batches of codecs with native functions (every built-in), or
    batches of :data:`MIN_THREAD_MEAN_BATCH` bytes on average;
    the table then has one chunk per part.  Results and errors are those of
    one thread.  Pass ``use_threads=False`` where the caller already runs one
    conversion per core (Spark tasks do).

    ``views`` gives key and value as ``binary_view`` columns (Arrow's view
    layout, Polars' own): a value of at most 12 bytes is held in its view,
    a longer one is referenced where it lies instead of copied, in the
    input for uncompressed batches and in each batch's decompressed records
    otherwise.  The table keeps what it references alive (holding an export
    of the input: a ``bytearray`` cannot be resized meanwhile, and changing
    its bytes changes the values).  Legacy v0/v1 values are copied into one
    buffer of the table, with the same type.  Headers stay copied
    ``list<struct<key: string, value: binary>>``: their keys are checked
    and repaired as UTF-8, and most headers fit in a view anyway.

    The table is :func:`decode_columns`' result imported through the Arrow C data interface.
    """
    return _table(_columns(buffer, topic, partition, batch_fields, include_control, validate, headers,
                           max_decompressed_size, use_threads, views))


def _table(columns: RecordColumns) -> "pyarrow.Table":
    """Decoded columns as a ``pyarrow.Table``, taken over through the C data interface (no copy)."""
    pa = _pa()
    if columns.num_chunks == 1:
        # Imported against the cached schema object: parsing the schema again would cost more than the batch.
        array = columns._array_capsule()
        schema = kafka_schema(columns.headers, columns.batch_fields, columns.views)
        return pa.Table.from_batches([pa.RecordBatch._import_from_c(array_address(array), schema)])
    return pa.RecordBatchReader._import_from_c_capsule(columns.__arrow_c_stream__()).read_all()


def _is_buffer_list(buffer: Any) -> bool:
    """Whether ``buffer`` is a list or tuple of buffers (rather than of batch objects)."""
    if type(buffer) not in (list, tuple) or not buffer:
        return False
    try:
        memoryview(buffer[0])
    except TypeError:
        return False
    return True


def _decode(buffer: Any, batch_fields: Tuple[str, ...], include_control: bool, validate: bool, headers: bool,
            max_decompressed_size: int, use_threads: bool, views: bool) -> List[RecordChunk]:
    """The records of ``buffer`` (see to_arrow) as one or more chunks."""
    if _is_buffer_list(buffer):
        return [_decode_many(buffer, batch_fields, include_control, validate, headers, max_decompressed_size, views)]
    try:
        unsized = memoryview(buffer).nbytes  # the buffer's size while the columns are not yet sized for it
    except TypeError:
        return [_general(buffer, 0, batch_fields, include_control, validate, headers, views)]
    if not batch_fields:
        # One native pass when the buffer holds only v2 batches, uncompressed or of codecs with native
        # functions, on parts of it with threads (anything else, including damage, takes the general path).
        cuts = _cuts(buffer, 0) if use_threads else None
        parts = (_uncompressed_v2_parts(buffer, cuts, validate, include_control, headers, views)
                 or _compressed_v2(buffer, validate, include_control, headers, max_decompressed_size, views, cuts))
        if parts is None and cuts is not None:
            parts = _general_parts(buffer, include_control, validate, headers, max_decompressed_size, views)
        if parts is not None:
            return parts
    batches = read_batches(buffer, validate=validate, max_decompressed_size=max_decompressed_size, pool=BufferPool())
    return [_general(batches, unsized, batch_fields, include_control, validate, headers, views)]


def _decode_many(buffers: Any, batch_fields: Tuple[str, ...], include_control: bool, validate: bool, headers: bool,
                 max_decompressed_size: int, views: bool) -> RecordChunk:
    """Several buffers into one chunk, each gathered where it lies (none is joined to another)."""
    gathered = _Gathered(headers, batch_fields, views)
    pool = BufferPool()
    sizes = []
    for i, buffer in enumerate(buffers):
        try:
            sizes.append(memoryview(buffer).nbytes)
        except TypeError as exc:
            raise TypeError(f"buffer {i} of {len(buffers)} is not a buffer of batches: {exc}") from None
    total, seen = sum(sizes), 0
    for i, buffer in enumerate(buffers):
        try:
            if batch_fields or not (gathered.acc.add_uncompressed(buffer, validate, include_control)
                                    or _add_compressed_v2(gathered.acc, buffer, validate, include_control,
                                                          max_decompressed_size)):
                gathered.add(read_batches(buffer, validate=validate, max_decompressed_size=max_decompressed_size,
                                          pool=pool), 0, include_control, validate)
        except KcodecError as exc:
            raise exc.with_context(source=f"buffer {i} of {len(buffers)}") from None
        if seen < 65536 <= seen + sizes[i]:
            # Columns sized for all the buffers, judged by the first ones: growing them would copy them again.
            gathered.acc.presize(seen + sizes[i], total)
        seen += sizes[i]
    return gathered.result()


def _general_parts(buffer: Any, include_control: bool, validate: bool, headers: bool, max_decompressed_size: int,
                   views: bool) -> Any:
    """The general path over parts of the buffer on threads, or None to convert it in one piece.

    Decompression and the record gather release the GIL, so compressed
    batches convert in parallel.  A part that raises kcodec's error gives
    None: the one-piece pass then reports it, positioned in the whole buffer.
    """
    cuts = _cuts(buffer, MIN_THREAD_MEAN_BATCH)
    if cuts is None:
        return None
    try:
        view = memoryview(buffer)
        if view.ndim != 1 or view.itemsize != 1:
            view = view.cast("B")
    except TypeError:  # not C-contiguous: converted in one piece
        return None

    def part(a: int, b: int) -> Any:
        try:
            batches = read_batches(view[a:b], validate=validate, max_decompressed_size=max_decompressed_size,
                                   pool=BufferPool())
            return _general(batches, b - a, (), include_control, validate, headers, views)
        except KcodecError:
            return None

    return _on_threads(part, cuts)


class _Gathered:
    """Batches of any magic and codec gathered one at a time, with their batch fields."""

    def __init__(self, headers: bool, batch_fields: Tuple[str, ...], views: bool = False) -> None:
        self.acc = ColumnAccumulator(headers, views)
        self.views = views
        self.batch_fields = batch_fields
        self.counts: List[int] = []
        self.values: dict = {name: [] for name in batch_fields}

    def add(self, batches: Any, unsized: int, include_control: bool, validate: bool) -> None:
        acc, batch_fields = self.acc, self.batch_fields
        for batch in batches:
            if batch.is_control:
                if validate:  # whether or not its records are kept, as the fast pass does
                    batch.check_control_records()
                if not include_control:
                    continue
            before = acc.n
            if batch.magic >= 2:
                _add_v2(acc, batch, self.views)
                if unsized and batch.position + batch.size_in_bytes >= 65536:
                    # Columns sized for the whole buffer: growing them would copy them again.
                    acc.presize(batch.position + batch.size_in_bytes, unsized)
                    unsized = 0
            else:
                _add_legacy(acc, batch)
            if batch_fields and acc.n > before:
                self.counts.append(acc.n - before)
                for name in batch_fields:
                    self.values[name].append(_batch_value(batch, name))

    def result(self) -> RecordChunk:
        chunk = self.acc.result()
        for name in self.batch_fields:
            index = BATCH_FIELDS.index(name)
            fmt = BATCH_FIELD_FORMATS[index]
            column: np.ndarray = np.repeat(np.asarray(self.values[name], _FORMAT_DTYPES[fmt]), self.counts)
            chunk.add_field(index, np.packbits(column, bitorder="little") if fmt == "b" else column)
        return chunk


def _general(batches: Any, unsized: int, batch_fields: Tuple[str, ...], include_control: bool, validate: bool,
             headers: bool, views: bool = False) -> RecordChunk:
    """Batches of any magic and codec, one at a time, into a chunk."""
    gathered = _Gathered(headers, batch_fields, views)
    gathered.add(batches, unsized, include_control, validate)
    return gathered.result()


def filter_rows(table: Union["pyarrow.Table", "pyarrow.RecordBatch"], mask: Any) -> Union["pyarrow.Table",
                                                                                      "pyarrow.RecordBatch"]:
    """``table.filter(mask)``, also for the ``binary_view`` columns of ``to_arrow(views=True)``.

    pyarrow's filter kernels take no view columns: their views (16 bytes
    each) are selected here, over the same data buffers, so no value is copied.
    """
    pa = _pa()
    if not any(pa.types.is_binary_view(f.type) for f in table.schema):
        return table.filter(mask)
    import pyarrow.compute as pc

    mask = pc.fill_null(mask, False)
    keep = mask.to_numpy(zero_copy_only=False).astype(bool, copy=False)
    columns = []
    for column in table.columns:
        if not pa.types.is_binary_view(column.type):
            columns.append(pc.filter(column, mask))
        elif isinstance(column, pa.ChunkedArray):
            starts = np.cumsum([0] + [len(c) for c in column.chunks])
            columns.append(pa.chunked_array([_filter_views(c, keep[a:b]) for c, a, b in
                                             zip(column.chunks, starts, starts[1:])], column.type))
        else:
            columns.append(_filter_views(column, keep))
    return type(table).from_arrays(columns, schema=table.schema)


def _filter_views(array: Any, keep: np.ndarray) -> Any:
    """The rows of a ``binary_view`` array where ``keep`` is true, its data buffers shared."""
    pa = _pa()
    buffers = array.buffers()
    views = np.frombuffer(buffers[1], np.dtype((np.void, 16)), len(array), 16 * array.offset)[keep]
    validity, nulls = None, 0
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)[keep]
        nulls = int(len(valid) - valid.sum())
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.binary_view(), len(views), [validity, pa.py_buffer(views)] + buffers[2:],
                                 null_count=nulls)



# ---------------------------------------------------------------------------
# from_arrow

def _as_table(data: Any) -> "pyarrow.Table":
    """``data`` as a pyarrow Table: a Table or RecordBatch itself, or any Arrow PyCapsule exporter.

    Polars DataFrames, DuckDB relations, :class:`RecordColumns` and other
    objects with ``__arrow_c_stream__`` or ``__arrow_c_array__`` are taken
    over through the Arrow C interfaces, without a copy of their buffers.
    """
    pa = _pa()
    if isinstance(data, pa.Table):
        return data
    if isinstance(data, pa.RecordBatch):
        return pa.Table.from_batches([data])
    if hasattr(data, "__arrow_c_stream__"):
        return pa.RecordBatchReader._import_from_c_capsule(data.__arrow_c_stream__()).read_all()
    if hasattr(data, "__arrow_c_array__"):
        return pa.Table.from_batches([pa.RecordBatch._import_from_c_capsule(*data.__arrow_c_array__())])
    raise TypeError(f"from_arrow takes a pyarrow Table or RecordBatch, or an object with __arrow_c_stream__ or "
                    f"__arrow_c_array__ (a Polars DataFrame, a DuckDB relation, ...), not {type(data).__name__}")


def _column(table: Any, name: Any) -> Any:
    if name not in table.column_names:
        return None
    col = table.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def _as_binary(arr: Any, what: str = "value") -> Any:
    """The array itself when the encoder reads it as it is (binary or string, either offset width), else
    cast to large binary; RecordBuilderError naming the ``what`` column for a type that is not bytes."""
    t = arr.type
    pa = _pa()
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return arr
    try:
        return arr.cast(pa.large_binary())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise RecordBuilderError(f"the {what} column must be binary or string, not {t}") from None


def _header_fields(hdrs: Any) -> Tuple[int, int]:
    """The key and value fields' indices in a headers column (by name, else the first two);
    RecordBuilderError unless it is a list of two-field structs."""
    pa = _pa()
    value_type: Any = getattr(hdrs.type, "value_type", None)
    if (not (pa.types.is_list(hdrs.type) or pa.types.is_large_list(hdrs.type))
            or not pa.types.is_struct(value_type) or value_type.num_fields != 2):
        raise RecordBuilderError(f"the headers column must be list<struct<key: string, value: binary>>, "
                                 f"not {hdrs.type}")
    ki, vi = value_type.get_field_index("key"), value_type.get_field_index("value")
    return (ki, vi) if ki >= 0 and vi >= 0 else (0, 1)


def _offsets(arr: Any, buf: Any) -> np.ndarray:
    """An array's int32 or int64 (large types) offsets, indexed from its own first row."""
    pa = _pa()
    t = arr.type
    wide = pa.types.is_large_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_list(t)
    return np.frombuffer(buf, np.int64 if wide else np.int32)[arr.offset:arr.offset + len(arr) + 1]


def _spec(arr: Any) -> Any:
    """(validity, offset, offsets rebased to the data buffer, data) of a binary or string array."""
    bufs = arr.buffers()
    return (bufs[0] if arr.null_count else None, arr.offset, _offsets(arr, bufs[1]),
            bufs[2] if bufs[2] is not None else b"")


def _timestamps_ms(arr: Any, n: int) -> np.ndarray:
    pa = _pa()
    if arr is None:
        return np.full(n, int(time.time() * 1000), np.int64)
    if pa.types.is_timestamp(arr.type):
        unit = arr.type.unit
        arr = arr.cast(pa.timestamp(unit)).cast(pa.int64())
        div = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        vals = arr.fill_null(int(time.time() * 1000) * (div or 1)).to_numpy()
        if div is None:
            if n and (vals.max() > _MAX_MS // 1000 or vals.min() < _MIN_MS // 1000):
                raise LimitExceededError("a timestamp('s') value does not fit Kafka's 64-bit milliseconds")
            return vals * 1000
        return vals // div
    try:
        ms = arr.cast(pa.int64())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise RecordBuilderError(f"the timestamp column must hold timestamps or whole milliseconds, "
                                 f"not {arr.type} values like these") from None
    if arr.null_count == 0:
        return ms.to_numpy()  # no copy for an int64 column
    return ms.fill_null(int(time.time() * 1000)).to_numpy().astype(np.int64)


def from_arrow_iter(table: Any, *, compression: Union[CompressionType, int, str] = "none",
                    level: Optional[int] = None, max_batch_bytes: int = 1_048_576, base_offset: int = 0,
                    magic: int = 2, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                    log_append_time: Optional[int] = None, producer_id: int = -1, producer_epoch: int = -1,
                    base_sequence: int = -1, is_transactional: bool = False,
                    partition_leader_epoch: int = -1, estimated_compression_ratio: float = 1.0
                    ) -> Iterator[bytes]:
    """Encode a table's records into Kafka batches, yielding each batch's bytes.

    ``table`` is a ``pyarrow.Table`` or ``RecordBatch``, or any object of the
    Arrow PyCapsule protocol (``__arrow_c_stream__`` or ``__arrow_c_array__``:
    a Polars DataFrame, a DuckDB relation, ...).
    The table needs ``value``; ``key``, ``headers``, ``timestamp`` (timestamp
    type or int64 ms) and ``offset`` are optional (binary, large binary or
    string columns).  Without ``offset`` records get ``base_offset + row``.
    Batches are cut like a producer's ``batch.size`` (``max_batch_bytes``):
    the first record always fits, after it the estimated size must stay
    within the limit; the result equals what :class:`RecordBatchBuilder`
    writes for the same records and write limit.
    """
    yield from _from_arrow(table, compression=compression, level=level, max_batch_bytes=max_batch_bytes,
                           base_offset=base_offset, magic=magic, timestamp_type=timestamp_type,
                           log_append_time=log_append_time, producer_id=producer_id, producer_epoch=producer_epoch,
                           base_sequence=base_sequence, is_transactional=is_transactional,
                           partition_leader_epoch=partition_leader_epoch,
                           estimated_compression_ratio=estimated_compression_ratio)


def _from_arrow(table: Any, *, compression: Union[CompressionType, int, str] = "none",
                level: Optional[int] = None, max_batch_bytes: int = 1_048_576, base_offset: int = 0,
                magic: int = 2, timestamp_type: TimestampType = TimestampType.CREATE_TIME,
                log_append_time: Optional[int] = None, producer_id: int = -1, producer_epoch: int = -1,
                base_sequence: int = -1, is_transactional: bool = False,
                partition_leader_epoch: int = -1, estimated_compression_ratio: float = 1.0
                ) -> Union[List[bytes], Iterator[bytes]]:
    # A list when the batches are made in one native call (uncompressed v2), else a generator.
    pa = _pa()
    table = _as_table(table)
    if magic != 2:
        return _from_arrow_legacy(table, magic, compression, level, max_batch_bytes, base_offset,
                                  timestamp_type, log_append_time)
    codec = get_codec(compression)
    lvl = codec.resolve_level(level)
    ts_type = TimestampType(timestamp_type)
    if ts_type == TimestampType.LOG_APPEND_TIME and log_append_time is None:
        raise RecordBuilderError("a LOG_APPEND_TIME batch needs log_append_time")
    value = _column(table, "value")
    if value is None:
        raise RecordBuilderError("from_arrow needs a 'value' column")
    n = len(value)
    if n == 0:
        return []
    key = _column(table, "key")
    hdrs = _column(table, "headers")
    hdr_spec = hk_spec = hv_spec = None
    if hdrs is not None and not pa.types.is_null(hdrs.type):
        ki, vi = _header_fields(hdrs)
        bufs = hdrs.buffers()
        loffs = _offsets(hdrs, bufs[1])
        structs = hdrs.values
        if structs.null_count:
            used = hdrs.offsets
            if structs.slice(used[0].as_py(), used[-1].as_py() - used[0].as_py()).null_count:
                # The children hold some value under a null entry: writing it would invent a header.
                raise RecordBuilderError("Invalid null header found in headers")
        hkey = _as_binary(structs.field(ki), "header key")
        hval = _as_binary(structs.field(vi), "header value")
        hdr_spec = (bufs[0] if hdrs.null_count else None, hdrs.offset, loffs, None)
        hk_spec, hv_spec = _spec(hkey), _spec(hval)
    offs_col = _column(table, "offset")
    offsets = None
    if offs_col is not None and offs_col.null_count == 0:
        offsets = np.ascontiguousarray(offs_col.cast(pa.int64()).to_numpy())
        if n > 1 and not np.all(offsets[1:] > offsets[:-1]):  # np.diff would wrap at the int64 ends
            raise RecordBuilderError("the offset column must increase strictly")
    ts = np.ascontiguousarray(_timestamps_ms(_column(table, "timestamp"), n), dtype=np.int64)
    if n and ts.min() < -1:  # -1 (no timestamp) is the only negative Kafka accepts
        raise RecordBuilderError(f"Invalid negative timestamp {int(ts[(ts < 0) & (ts != -1)][0])}")
    attributes = codec.id
    if ts_type == TimestampType.LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_MASK
    lat = ts_type == TimestampType.LOG_APPEND_TIME
    columns = (n, _spec(_as_binary(key, "key")) if key is not None else None, _spec(_as_binary(value)),
               hdr_spec, hk_spec, hv_spec, ts, offsets, base_offset, max_batch_bytes, estimated_compression_ratio,
               codec.id != 0)
    if codec.id == 0:
        # Uncompressed: records are written straight into each batch's final bytes.
        return encode_columnar(*columns, direct=(attributes, producer_id, producer_epoch, base_sequence,
                                                 partition_leader_epoch, log_append_time if lat else -1))
    return _compressed_batches(encode_columnar(*columns), codec, lvl, base_sequence, log_append_time if lat else None,
                               attributes, producer_id, producer_epoch, partition_leader_epoch)


def _compressed_batches(encoded: Any, codec: Any, lvl: Optional[int], base_sequence: int, log_append_time: Any,
                        attributes: int, producer_id: int, producer_epoch: int,
                        partition_leader_epoch: int) -> Iterator[bytes]:
    out, rows, pos, first_ts, max_ts, first_off, last_off = encoded
    mv = memoryview(out)
    # Per batch: one slice, one compression call and one native call that
    # writes header, CRC and payload into the result.
    pos, rows, first_ts, max_ts = pos.tolist(), rows.tolist(), first_ts.tolist(), max_ts.tolist()
    first_off, last_off = first_off.tolist(), last_off.tolist()
    # A codec with native functions (every built-in) writes each frame after room for the header,
    # without the GIL, sparing a copy; a Python-only codec goes through its compress().
    native = native_of(codec)
    native_level = 0 if lvl is None else lvl
    for b in range(len(first_ts)):
        region = mv[pos[b]:pos[b + 1]]
        seq = base_sequence if base_sequence < 0 else (base_sequence + rows[b]) % 2147483648
        header = (first_off[b], last_off[b] - first_off[b], first_ts[b],
                  max_ts[b] if log_append_time is None else log_append_time, rows[b + 1] - rows[b],
                  attributes, producer_id, producer_epoch, seq, partition_leader_epoch)
        if native is not None:
            yield compressed_batch(native, region, native_level, *header)
        else:
            yield batch_bytes(codec.compress(region, lvl, magic=2), *header)


def from_arrow(table: Any, **options: Any) -> List[bytes]:
    """:func:`from_arrow_iter` as a list of batch bytes."""
    batches = _from_arrow(table, **options)
    # The native encoder's own list as it is: iterating it again would touch
    # every batch object, long out of cache for large tables.
    return batches if type(batches) is list else list(batches)


def _from_arrow_legacy(table: Any, magic: int, compression: Any, level: Optional[int], max_batch_bytes: Optional[int],
                       base_offset: int, timestamp_type: Any, log_append_time: Optional[int]) -> Iterator[bytes]:
    # Old message formats exist for conversions only; records go through the builder.
    from kcodec.records import batch_builder

    pa = _pa()
    value = _column(table, "value")
    if value is None:
        raise RecordBuilderError("from_arrow needs a 'value' column")
    n = len(value)
    values = _as_binary(value).cast(pa.large_binary()).to_pylist()
    key = _column(table, "key")
    keys = [None] * n if key is None else _as_binary(key, "key").cast(pa.large_binary()).to_pylist()
    stamps = _timestamps_ms(_column(table, "timestamp"), n).tolist()
    offs = _column(table, "offset")
    offsets = list(range(base_offset, base_offset + n)) if offs is None else offs.cast(pa.int64()).to_pylist()
    builder = None
    for i in range(n):
        ts, off = stamps[i], offsets[i]
        if off is None:
            off = base_offset + i
        if builder is not None and not builder.has_room_for(keys[i], values[i]):
            yield bytes(builder.build())
            builder = None
        if builder is None:
            builder = batch_builder(magic=magic, compression=compression, level=level, base_offset=off,
                                    timestamp_type=timestamp_type, log_append_time=log_append_time,
                                    write_limit=max_batch_bytes)
        builder.append(keys[i], values[i], ts, offset=off)
    if builder is not None:
        yield bytes(builder.build())
