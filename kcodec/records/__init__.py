"""Kafka record batches: builders, readers, control records and buffer pooling."""
from __future__ import annotations

from kcodec._lazy import lazy_attributes
from kcodec.records.batch import RecordBatch
from kcodec.records.builder import RecordBatchBuilder, batch_builder
from kcodec.records.control import ControlRecordType, EndTransactionMarker
from kcodec.records.pool import BufferPool, PooledBuffer, builder_cache
from kcodec.records.reader import read_batches
from kcodec.records.record import Header, Record

__all__ = [
    "BufferPool",
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "LegacyRecordBatch",
    "LegacyRecordBatchBuilder",
    "PooledBuffer",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "batch_builder",
    "builder_cache",
    "convert_magic",
    "read_batches",
]

_LAZY = {
    "LegacyRecordBatch": "kcodec.records.legacy_batch",
    "LegacyRecordBatchBuilder": "kcodec.records.legacy_builder",
    "convert_magic": "kcodec.records.convert",
}


__getattr__ = lazy_attributes(__name__, _LAZY)
