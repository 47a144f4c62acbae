"""The general path into Arrow columns: batches of any magic and codec, one at a time, from the batch reader.

It takes what the native passes do not: legacy v0/v1 message sets, codecs
without native functions, damaged input (whose error it reports with Kafka's
message and position), and the per-record batch fields.
"""
from __future__ import annotations

from typing import Any, Dict, List

import numpy as np

from kcodec._native.columnar import BATCH_FIELD_FORMATS, BATCH_FIELDS, ColumnAccumulator, RecordChunk
from kcodec.arrow.options import DecodeOptions
from kcodec.errors import InvalidRecordError
from kcodec.records.batch import RecordBatch
from kcodec.records.batch_header import COMPRESSION_MASK, TIMESTAMP_TYPE_MASK
from kcodec.records.pool import PooledBuffer

__all__ = ["Gathered", "gather"]

#: numpy types of the batch fields' Arrow formats (booleans are packed into bits).
_FORMAT_DTYPES = {"l": np.int64, "i": np.int32, "s": np.int16, "c": np.int8, "b": np.bool_}


def _batch_value(batch: Any, name: str) -> Any:
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


class Gathered:
    """Batches of any magic and codec gathered one at a time, with their batch fields."""

    def __init__(self, options: DecodeOptions) -> None:
        self.acc = ColumnAccumulator(options.headers, options.views)
        self.options = options
        self.counts: List[int] = []
        self.values: Dict[str, List[Any]] = {name: [] for name in options.batch_fields}

    def add(self, batches: Any, unsized: int = 0) -> None:
        """Every batch of ``batches``; ``unsized`` is the bytes they span, to size the columns for them
        once (0 when the columns are sized otherwise)."""
        acc, batch_fields = self.acc, self.options.batch_fields
        include_control, validate, views = self.options.include_control, self.options.validate, self.options.views
        for batch in batches:
            if batch.is_control:
                if validate:  # whether or not its records are kept, as the fast pass does
                    batch.check_control_records()
                if not include_control:
                    continue
            before = acc.n
            if batch.magic >= 2:
                _add_v2(acc, batch, views)
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
        """The gathered records as one chunk, with their batch fields."""
        chunk = self.acc.result()
        for name in self.options.batch_fields:
            index = BATCH_FIELDS.index(name)
            fmt = BATCH_FIELD_FORMATS[index]
            column: np.ndarray = np.repeat(np.asarray(self.values[name], _FORMAT_DTYPES[fmt]), self.counts)
            chunk.add_field(index, np.packbits(column, bitorder="little") if fmt == "b" else column)
        return chunk


def gather(batches: Any, unsized: int, options: DecodeOptions) -> RecordChunk:
    """Batches of any magic and codec, one at a time, into a chunk (``unsized`` as in :meth:`Gathered.add`)."""
    gathered = Gathered(options)
    gathered.add(batches, unsized)
    return gathered.result()
