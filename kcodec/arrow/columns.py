"""Reading the columns of a user's table as the native encoders take them: the supported helpers.

:func:`kcodec.arrow.encode.from_arrow`, advise's replay and measure, and the
partitioner all read keys, values, headers and timestamps out of Arrow
arrays the same way: binary or string arrays in place (their validity,
offsets and data buffers), anything else refused with kcodec's
:class:`~kcodec.errors.RecordBuilderError` naming the column, and
timestamps as Kafka's milliseconds (``ProducerRecord.timestamp()``).
"""
from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any, Optional, Tuple

import numpy as np

from kcodec._extras import require
from kcodec.errors import LimitExceededError, RecordBuilderError

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["BinarySpec", "pyarrow_module", "as_table", "column", "as_binary", "header_fields", "value_offsets",
           "binary_spec", "header_specs", "timestamps_ms"]

#: (validity bitmap or None, the array's offset, its offsets rebased to the data buffer, the data buffer):
#: how the native encoders take a binary or string array.
BinarySpec = Tuple[Any, int, np.ndarray, Any]

_MAX_MS, _MIN_MS = 2 ** 63 - 1, -2 ** 63


def pyarrow_module() -> Any:
    """The ``pyarrow`` module, or kcodec's MissingDependencyError naming the package to install."""
    pa = sys.modules.get("pyarrow")  # once imported, without the import machinery's cost on every call
    return pa if pa is not None else require("pyarrow", "pyarrow", "kcodec's Arrow conversion")


def as_table(data: Any) -> "pyarrow.Table":
    """``data`` as a pyarrow Table: a Table or RecordBatch itself, or any Arrow PyCapsule exporter.

    Polars DataFrames, DuckDB relations, :class:`~kcodec.arrow.RecordColumns` and other
    objects with ``__arrow_c_stream__`` or ``__arrow_c_array__`` are taken
    over through the Arrow C interfaces, without a copy of their buffers.
    """
    pa = pyarrow_module()
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


def column(table: "pyarrow.Table", name: str) -> Optional["pyarrow.Array"]:
    """The column ``name`` of a table as one array (its chunks combined), or None when there is none."""
    if name not in table.column_names:
        return None
    col = table.column(name)
    return col.combine_chunks() if col.num_chunks != 1 else col.chunk(0)


def as_binary(arr: "pyarrow.Array", what: str = "value") -> "pyarrow.Array":
    """The array itself when the encoder reads it as it is (binary or string, either offset width), else
    cast to large binary; RecordBuilderError naming the ``what`` column for a type that is not bytes."""
    t = arr.type
    pa = pyarrow_module()
    if pa.types.is_binary(t) or pa.types.is_string(t) or pa.types.is_large_binary(t) or pa.types.is_large_string(t):
        return arr
    try:
        return arr.cast(pa.large_binary())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise RecordBuilderError(f"the {what} column must be binary or string, not {t}") from None


def header_fields(hdrs: "pyarrow.Array") -> Tuple[int, int]:
    """The key and value fields' indices in a headers column (by name, else the first two);
    RecordBuilderError unless it is a list of two-field structs."""
    pa = pyarrow_module()
    value_type: Any = getattr(hdrs.type, "value_type", None)
    if (not (pa.types.is_list(hdrs.type) or pa.types.is_large_list(hdrs.type))
            or not pa.types.is_struct(value_type) or value_type.num_fields != 2):
        raise RecordBuilderError(f"the headers column must be list<struct<key: string, value: binary>>, "
                                 f"not {hdrs.type}")
    ki, vi = value_type.get_field_index("key"), value_type.get_field_index("value")
    return (ki, vi) if ki >= 0 and vi >= 0 else (0, 1)


def value_offsets(arr: "pyarrow.Array", buf: Any) -> np.ndarray:
    """An array's int32 or int64 (large types) offsets in its offsets buffer ``buf``, from its own first row."""
    pa = pyarrow_module()
    t = arr.type
    wide = pa.types.is_large_binary(t) or pa.types.is_large_string(t) or pa.types.is_large_list(t)
    return np.frombuffer(buf, np.int64 if wide else np.int32)[arr.offset:arr.offset + len(arr) + 1]


def binary_spec(arr: "pyarrow.Array") -> BinarySpec:
    """A binary or string array as the native encoders read it (see :data:`BinarySpec`)."""
    bufs = arr.buffers()
    return (bufs[0] if arr.null_count else None, arr.offset, value_offsets(arr, bufs[1]),
            bufs[2] if bufs[2] is not None else b"")


def header_specs(hdrs: "pyarrow.Array", refuse_null_entries: bool = True
                 ) -> Tuple[BinarySpec, BinarySpec, BinarySpec]:
    """A headers column as the native encoders read it: the lists (their validity, offset and offsets;
    no data), the header keys and the header values.

    RecordBuilderError for a column that is not ``list<struct<key, value>>`` of bytes, and, with
    ``refuse_null_entries``, for a null header inside a list (Kafka's ``RecordHeaders`` holds none).
    """
    ki, vi = header_fields(hdrs)
    bufs = hdrs.buffers()
    lists = (bufs[0] if hdrs.null_count else None, hdrs.offset, value_offsets(hdrs, bufs[1]), None)
    structs = hdrs.values
    if refuse_null_entries and structs.null_count:
        used = hdrs.offsets
        if structs.slice(used[0].as_py(), used[-1].as_py() - used[0].as_py()).null_count:
            # The children hold some value under a null entry: writing it would invent a header.
            raise RecordBuilderError("Invalid null header found in headers")
    return (lists, binary_spec(as_binary(structs.field(ki), "header key")),
            binary_spec(as_binary(structs.field(vi), "header value")))


def timestamps_ms(arr: Optional["pyarrow.Array"], n: int, missing: Optional[int] = None) -> np.ndarray:
    """A timestamp column (any unit) or a column of whole milliseconds as Kafka's int64 milliseconds.

    A null, or every row when ``arr`` is None, takes ``missing``: the current time when it is None,
    as a producer stamps a record created without a timestamp.  LimitExceededError for seconds
    beyond Kafka's 64-bit milliseconds; RecordBuilderError for values that are not timestamps.
    """
    pa = pyarrow_module()
    if arr is None:
        return np.full(n, int(time.time() * 1000) if missing is None else missing, np.int64)
    if pa.types.is_timestamp(arr.type):
        unit = arr.type.unit
        raw = arr.cast(pa.timestamp(unit)).cast(pa.int64())
        div = {"s": None, "ms": 1, "us": 1000, "ns": 1_000_000}[unit]
        vals = raw.fill_null(0).to_numpy()
        if div is None:
            # The bounds round towards zero: seconds beyond them overflow int64 once multiplied by 1000.
            if n and (vals.max() > _MAX_MS // 1000 or vals.min() < -(-_MIN_MS // 1000)):
                raise LimitExceededError("a timestamp('s') value does not fit Kafka's 64-bit milliseconds")
            vals = vals * 1000
        else:
            vals = vals // div
        if raw.null_count:
            # Nulls take ``missing`` or the current time in milliseconds, after the scaling to milliseconds.
            fill = int(time.time() * 1000) if missing is None else missing
            vals = np.where(raw.is_valid().to_numpy(zero_copy_only=False), vals, np.int64(fill))
        return vals
    try:
        ms = arr.cast(pa.int64())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise RecordBuilderError(f"the timestamp column must hold timestamps or whole milliseconds, "
                                 f"not {arr.type} values like these") from None
    if arr.null_count == 0:
        return ms.to_numpy()  # no copy for an int64 column
    return ms.fill_null(int(time.time() * 1000) if missing is None else missing).to_numpy().astype(np.int64)
