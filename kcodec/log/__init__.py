"""Kafka log directories: segment files, indexes, and the broker's operations on them.

The modules follow Kafka's storage layer:

* ``names`` -- topic, partition and segment file names (``LogFileUtils``);
* ``files`` -- crash-safe file writes and :class:`~kcodec.log.files.FileOps`,
  the one door for every file change, locally and in object stores;
* ``segment`` -- reading and writing segments and log directories (``LogSegment``);
* ``index`` -- ``.index`` and ``.timeindex``, read and built;
* ``transaction_index`` -- ``.txnindex`` (``TransactionIndex``) and which
  transactional batches and markers a clean removes (``CleanedTransactionMetadata``);
* ``segment_list`` -- a partition folder's segments as the operations see them;
* ``swap`` -- the ``.cleaned``/``.swap``/``.deleted`` protocol (``LocalLog.replaceSegments``);
* ``recovery`` -- settling a folder after a crash (``LogLoader``);
* ``log_state`` -- one pass over the batch headers: producers, transactions,
  segment timestamps (``ProducerStateManager``'s part the cleaner needs);
* ``offset_map``, ``cleaner_plan``, ``cleaner`` -- the log cleaner's parts
  (the offset map, the round's plan and checkpoint, the rewrite);
* ``validator``, ``filter``, ``recompression``, ``retention`` -- the other operations;
* ``selection``, ``arrow_reader`` -- offset and time ranges of a log, read as Arrow;
* ``arguments`` -- the command-line arguments the operations and the applications share
  (the partitions to work on, ``--storage-option``, ``--metadata-log``);
* ``metadata_records``, ``cluster_metadata`` -- a KRaft metadata log's records
  (``MetadataRecordSerde``) replayed into topics and configs (``MetadataLoader``,
  ``TopicsImage``, ``ConfigurationsImage``).

The operations are loaded on first use.
"""
from kcodec._lazy import lazy_attributes
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
    "recompress": "kcodec.log.recompression",
    "retain": "kcodec.log.retention",
    "validate_and_assign_offsets": "kcodec.log.validator",
}

__getattr__ = lazy_attributes(__name__, _LAZY)
