"""Kafka's default key partitioner, vectorised: where a Java producer would put each key."""
from __future__ import annotations

from typing import Any, Optional, Sequence, Union

import numpy as np

from kcodec._native.columnar import murmur2_bytes, partition_column
from kcodec.arrow.columns import as_binary, binary_spec, pyarrow_module

__all__ = ["murmur2", "partition_for_keys"]


def murmur2(data: Union[bytes, bytearray, memoryview]) -> int:
    """Kafka's ``Utils.murmur2`` of a key (a signed 32-bit int)."""
    return murmur2_bytes(data)


def partition_for_keys(keys: Union[Any, Sequence[Optional[bytes]]], num_partitions: int) -> np.ndarray:
    """``(murmur2(key) & 0x7fffffff) % num_partitions`` for each key, as int32.

    ``keys`` is a pyarrow binary/large_binary/string array (or chunked
    array), or a sequence of bytes/None.  Null keys give -1: Kafka's
    producer spreads them with its sticky partitioner, which depends on
    timing, so the caller decides (kcodec.spark.encode uses round robin).
    """
    if num_partitions < 1:
        raise ValueError("num_partitions must be at least 1")
    pa = pyarrow_module()
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    if not isinstance(keys, pa.Array):
        keys = pa.array(list(keys), pa.binary())
    # binary and string columns are read in place, whatever their offset width
    valid, voff, offsets, data = binary_spec(as_binary(keys))
    return partition_column(valid, voff, offsets, data, len(keys), num_partitions)
