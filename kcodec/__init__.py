"""kcodec: Apache Kafka record formats and compression at native speed.

``import kcodec`` is cheap: it imports no compression library and no pyarrow;
the record and columnar APIs are loaded on first attribute access.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from kcodec._lazy import lazy_attributes
from kcodec._version import __version__
from kcodec.compression import (
    DEFAULT_MAX_DECOMPRESSED_SIZE,
    Codec,
    CodecInfo,
    CompressionType,
    TimestampType,
    codecs,
    get_codec,
    register_codec,
    unregister_codec,
)
from kcodec.errors import (
    BufferReleasedError,
    CodecLibraryMissingError,
    CorruptCompressedDataError,
    CorruptDataError,
    CorruptRecordError,
    InvalidNameError,
    InvalidRecordError,
    KcodecError,
    LimitExceededError,
    LogNotFoundError,
    MissingDependencyError,
    RecordBuilderError,
    UnsupportedCodecError,
)

# name -> module that defines it; imported on first access (PEP 562).
_LAZY = {
    "RecordBatchBuilder": "kcodec.records",
    "batch_builder": "kcodec.records",
    "LegacyRecordBatchBuilder": "kcodec.records",
    "BufferPool": "kcodec.records",
    "RecordBatch": "kcodec.records",
    "Record": "kcodec.records",
    "Header": "kcodec.records",
    "ControlRecordType": "kcodec.records",
    "EndTransactionMarker": "kcodec.records",
    "read_batches": "kcodec.records",
    "convert_magic": "kcodec.records",
    "to_arrow": "kcodec.arrow",
    "decode_columns": "kcodec.arrow",
    "RecordColumns": "kcodec.arrow",
    "from_arrow": "kcodec.arrow",
    "from_arrow_iter": "kcodec.arrow",
    "kafka_schema": "kcodec.arrow",
    "read_arrow": "kcodec.log.arrow_reader",
    "murmur2": "kcodec.partitioner",
    "partition_for_keys": "kcodec.partitioner",
}

__all__ = [
    "__version__",
    "BufferReleasedError",
    "Codec",
    "CodecInfo",
    "CodecLibraryMissingError",
    "CompressionType",
    "CorruptCompressedDataError",
    "CorruptDataError",
    "CorruptRecordError",
    "DEFAULT_MAX_DECOMPRESSED_SIZE",
    "InvalidNameError",
    "InvalidRecordError",
    "KcodecError",
    "LimitExceededError",
    "LogNotFoundError",
    "MissingDependencyError",
    "RecordBuilderError",
    "TimestampType",
    "UnsupportedCodecError",
    "codecs",
    "get_codec",
    "get_include",
    "register_codec",
    "unregister_codec",
    # loaded on first access, from _LAZY
    "BufferPool",
    "ControlRecordType",
    "EndTransactionMarker",
    "Header",
    "LegacyRecordBatchBuilder",
    "Record",
    "RecordBatch",
    "RecordBatchBuilder",
    "RecordColumns",
    "batch_builder",
    "convert_magic",
    "decode_columns",
    "from_arrow",
    "from_arrow_iter",
    "kafka_schema",
    "murmur2",
    "partition_for_keys",
    "read_arrow",
    "read_batches",
    "to_arrow",
]


def get_include() -> str:
    """The folder holding ``kcodec/codec.h``, the native codec interface for plugins.

    Add it to a C extension's include path (as with ``numpy.get_include()``)
    and ``#include <kcodec/codec.h>``.
    """
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


__getattr__ = lazy_attributes(__name__, _LAZY, cache=globals())


def __dir__() -> list[str]:
    return sorted(__all__)


if TYPE_CHECKING:  # pragma: no cover
    from kcodec.arrow import RecordColumns, decode_columns, from_arrow, from_arrow_iter, kafka_schema, to_arrow
    from kcodec.log.arrow_reader import read_arrow
    from kcodec.partitioner import murmur2, partition_for_keys
    from kcodec.records import (
        BufferPool,
        ControlRecordType,
        EndTransactionMarker,
        Header,
        LegacyRecordBatchBuilder,
        Record,
        RecordBatch,
        RecordBatchBuilder,
        batch_builder,
        convert_magic,
        read_batches,
    )
