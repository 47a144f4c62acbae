"""Kafka log directories: segment files, indexes, and the broker's operations on them.

The operations (validation, compaction, recompression, retention) are loaded
on first use.
"""
import importlib
from typing import Any

from kcodec.log.index import CorruptIndexError, IndexBuilder, OffsetIndex, TimeIndex
from kcodec.log.segment import (
    LogDir,
    LogSegment,
    LogWriter,
    NoSegmentsError,
    Partition,
    SkippedFolder,
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
    "LogDir",
    "LogSegment",
    "LogWriter",
    "NoSegmentsError",
    "OffsetIndex",
    "Partition",
    "SkippedFolder",
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
    "RecordRange",
    "batch_runs",
    "compact",
    "read_arrow",
    "recover_log_dir",
    "recompress",
    "retain",
    "validate_and_assign_offsets",
]

_LAZY = {
    "RecordRange": "kcodec.log.selection",
    "batch_runs": "kcodec.log.selection",
    "compact": "kcodec.log.cleaner",
    "read_arrow": "kcodec.log.arrow_reader",
    "recover_log_dir": "kcodec.log.recovery",
    "recompress": "kcodec.log.recompress",
    "retain": "kcodec.log.retention",
    "validate_and_assign_offsets": "kcodec.log.validator",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'kcodec.log' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
