"""Kafka log directories: segment files, indexes, and the broker's operations on them."""
from kcodec.log.index import CorruptIndexError, IndexBuilder, OffsetIndex, TimeIndex
from kcodec.log.segment import (
    LogSegment,
    LogWriter,
    Partition,
    batch_index_info,
    offset_from_file_name,
    open_log_dir,
    open_partition,
    rebuild_indexes,
    segment_file_name,
    write_partition,
)

__all__ = [
    "CorruptIndexError",
    "IndexBuilder",
    "LogSegment",
    "LogWriter",
    "OffsetIndex",
    "Partition",
    "TimeIndex",
    "batch_index_info",
    "offset_from_file_name",
    "open_log_dir",
    "open_partition",
    "rebuild_indexes",
    "segment_file_name",
    "write_partition",
]
