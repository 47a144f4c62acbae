"""Kafka batches into Arrow columns, without a Python object per record.

:func:`decode_columns` gathers the columns of Spark's Kafka source: a native
pass over each (decompressed) records region copies keys, values and headers
straight into contiguous Arrow buffers, handed to any Arrow consumer through
the Arrow C data interface; :func:`to_arrow` imports them into a
``pyarrow.Table``.  Which pass takes a buffer is decided in
:mod:`kcodec.arrow.cascade`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, List, Optional, Sequence, Tuple

from kcodec._native.columnar import RecordChunk, RecordColumns, array_address, kafka_schema_capsule, record_columns
from kcodec._native.columnar import column_cache as _column_cache
from kcodec.arrow.cascade import Chunks, IntoOne, cascade
from kcodec.arrow.columns import pyarrow_module
from kcodec.arrow.gather import gather
from kcodec.arrow.options import DecodeOptions
from kcodec.arrow.schema import kafka_schema
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kcodec.errors import KcodecError

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["RecordColumns", "column_cache", "decode_columns", "to_arrow", "columns_of", "table_of", "decode"]


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
    # positional, in DecodeOptions' order: keywords would double what making it costs
    options = DecodeOptions(tuple(batch_fields), include_control, validate, headers, max_decompressed_size, use_threads,
                            views)
    return columns_of(buffer, options, topic, partition)


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
    # positional, in DecodeOptions' order: keywords would double what making it costs
    options = DecodeOptions(tuple(batch_fields), include_control, validate, headers, max_decompressed_size, use_threads,
                            views)
    return table_of(columns_of(buffer, options, topic, partition))


def columns_of(buffer: Any, options: DecodeOptions, topic: Optional[str] = None,
               partition: Optional[int] = None) -> RecordColumns:
    """:func:`decode_columns` with its decoding arguments as one value."""
    if options.batch_fields:
        kafka_schema_capsule(options.headers, options.batch_fields)  # unknown names raise before any decoding
    chunks = decode(buffer, options)
    return record_columns(chunks, topic, partition, options.headers, options.batch_fields, options.views)


def table_of(columns: RecordColumns) -> "pyarrow.Table":
    """Decoded columns as a ``pyarrow.Table``, taken over through the C data interface (no copy)."""
    pa = pyarrow_module()
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


def decode(buffer: Any, options: DecodeOptions) -> List[RecordChunk]:
    """The records of ``buffer`` (see :func:`to_arrow`) as one or more chunks."""
    if _is_buffer_list(buffer):
        return [_decode_many(buffer, options)]
    try:
        view = memoryview(buffer)
    except TypeError:  # batches from read_batches
        return [gather(buffer, 0, options)]
    buffer = _contiguous(buffer, view)
    # the buffer's size while the columns are not yet sized for it
    return cascade(buffer, options, Chunks(buffer, view.nbytes, options))


def _contiguous(buffer: Any, view: memoryview) -> Any:
    """``buffer`` as the native passes take it: itself, or the bytes of a strided or transposed one,
    copied in C order (it has no flat view to read them in)."""
    return buffer if view.c_contiguous else view.tobytes()


def _decode_many(buffers: Any, options: DecodeOptions) -> RecordChunk:
    """Several buffers into one chunk, each gathered where it lies (none is joined to another)."""
    into = IntoOne(options)
    sizes = []
    flat = []
    for i, buffer in enumerate(buffers):
        try:
            view = memoryview(buffer)
        except TypeError as exc:
            raise TypeError(f"buffer {i} of {len(buffers)} is not a buffer of batches: {exc}") from None
        sizes.append(view.nbytes)
        flat.append(_contiguous(buffer, view))
    buffers = flat
    total, seen = sum(sizes), 0
    for i, buffer in enumerate(buffers):
        try:
            cascade(buffer, options, into)
        except KcodecError as exc:
            raise exc.with_context(source=f"buffer {i} of {len(buffers)}") from None
        if seen < 65536 <= seen + sizes[i]:
            # Columns sized for all the buffers, judged by the first ones: growing them would copy them again.
            into.gathered.acc.presize(seen + sizes[i], total)
        seen += sizes[i]
    return into.gathered.result()
