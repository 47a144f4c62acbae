"""Kafka log directories: segment files, indexes, and the broker's operations on them.

The operations (validation, compaction, recompression, retention) are loaded
on first use.
"""
import importlib
from typing import Any

from kcodec.log.index import CorruptIndexError, IndexBuilder, OffsetIndex, TimeIndex
from kcodec.log.segment import (
    LogSegment,
    LogWriter,
    NoSegmentsError,
    Partition,
    batch_index_info,
    find_partitions,
    offset_from_file_name,
    open_log_dir,
    open_partition,
    partition_path,
    rebuild_indexes,
    require_partitions,
    segment_file_name,
    write_partition,
)

__all__ = [
    "CorruptIndexError",
    "IndexBuilder",
    "LogSegment",
    "LogWriter",
    "NoSegmentsError",
    "OffsetIndex",
    "Partition",
    "TimeIndex",
    "batch_index_info",
    "find_partitions",
    "partition_path",
    "require_partitions",
    "offset_from_file_name",
    "open_log_dir",
    "open_partition",
    "rebuild_indexes",
    "segment_file_name",
    "write_partition",
    "compact",
    "recover_log_dir",
    "recompress",
    "retain",
    "validate_and_assign_offsets",
]

_LAZY = {
    "compact": "kcodec.log.cleaner",
    "recover_log_dir": "kcodec.log.cleaner",
    "recompress": "kcodec.log.recompress",
    "retain": "kcodec.log.retention",
    "validate_and_assign_offsets": "kcodec.log.validator",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kcodec.log' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
