"""Filtering tables whose key and value are ``binary_view`` columns (``to_arrow(views=True)``)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Union

import numpy as np

from kcodec.arrow.columns import pyarrow_module

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["filter_rows"]


def filter_rows(table: Union["pyarrow.Table", "pyarrow.RecordBatch"], mask: Any) -> Union["pyarrow.Table",
                                                                                      "pyarrow.RecordBatch"]:
    """``table.filter(mask)``, also for the ``binary_view`` columns of ``to_arrow(views=True)``.

    pyarrow's filter kernels take no view columns: their views (16 bytes
    each) are selected here, over the same data buffers, so no value is copied.
    """
    pa = pyarrow_module()
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
    pa = pyarrow_module()
    buffers = array.buffers()
    views = np.frombuffer(buffers[1], np.dtype((np.void, 16)), len(array), 16 * array.offset)[keep]
    validity, nulls = None, 0
    if array.null_count:
        valid = array.is_valid().to_numpy(zero_copy_only=False)[keep]
        nulls = int(len(valid) - valid.sum())
        validity = pa.py_buffer(np.packbits(valid, bitorder="little")) if nulls else None
    return pa.Array.from_buffers(pa.binary_view(), len(views), [validity, pa.py_buffer(views)] + buffers[2:],
                                 null_count=nulls)
