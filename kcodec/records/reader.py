"""``read_batches``: iterate the batches of any buffer, whatever their magic."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Optional, Union

from kcodec._native.records import BatchReader
from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE
from kcodec.records.batch import RecordBatch
from kcodec.records.framing import byte_view

if TYPE_CHECKING:  # pragma: no cover
    from kcodec.records.legacy_batch import LegacyRecordBatch
    from kcodec.records.pool import BufferPool

__all__ = ["read_batches"]


def read_batches(buf: Any, *, validate: bool = True, strict: bool = False, pool: Optional["BufferPool"] = None,
                 max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
                 ) -> Iterator[Union[RecordBatch, "LegacyRecordBatch"]]:
    """Yield the batches in ``buf`` lazily, without copying: RecordBatch (v2) or LegacyRecordBatch (v0/v1).

    ``buf`` is anything with the buffer protocol: bytes, bytearray,
    memoryview, mmap, numpy.  Batches of different magics may follow each
    other (as after a message format upgrade).

    ``validate`` checks each batch's size and checksum before yielding it
    (CRC-32C for v2, the outer CRC-32 for v0/v1), and the inner messages of
    a compressed v0/v1 wrapper (CRC-32 and size) when it is decompressed, as
    a consumer with ``check.crcs=true`` does.  A partial batch at the end of the buffer is
    ignored, as Kafka does (fetch responses end this way); ``strict=True``
    raises CorruptRecordError for it instead.  ``max_decompressed_size``
    bounds the decompressed size of one batch.  ``pool`` (a
    :class:`~kcodec.records.BufferPool`) is handed to every batch: a
    compressed v2 batch whose codec has native functions decompresses into
    the pool's buffers when :func:`kcodec.to_arrow` converts it (which
    reads with a pool of its own), one reused buffer instead of new memory
    per batch; ``records_data()`` and iteration return ``bytes`` as without a pool.

    Errors carry ``position`` (absolute, within ``buf``) and ``batch_offset``.
    """
    # bytes and bytearray are used as they are (no view per call); anything else through a byte view.
    src = buf if type(buf) is bytes or type(buf) is bytearray else byte_view(buf)
    # The walk, the v2 batch objects and their CRC checks are native: per
    # batch, Python only sees the batch it is handed.
    return BatchReader(src, RecordBatch, _legacy_batch, validate, strict, max_decompressed_size, pool)


def _legacy_batch(src: Any, position: int, size: int, max_decompressed_size: int, pool: Any, validate: bool) -> Any:
    # v0/v1 message sets (pre-0.11 data, rare) are decoded in Python.
    from kcodec.records.legacy_batch import LegacyRecordBatch

    batch = LegacyRecordBatch(src, position, size, max_decompressed_size=max_decompressed_size,
                              pool=pool, validate=validate)
    if validate:
        batch.ensure_valid()
    return batch
