"""What a decode into Arrow columns, or an encode into batches, was asked for: one value carried through every path."""
from __future__ import annotations

from typing import NamedTuple, Optional, Tuple, Union

from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE, CompressionType, TimestampType

__all__ = ["DecodeOptions", "EncodeOptions"]


# Immutable like a frozen dataclass, but a tenth of its construction cost: one is made on every
# to_arrow call, where a frozen dataclass's __init__ (about 1.7 us) was a fifth of decode_columns
# on a batch of 100 records.
class DecodeOptions(NamedTuple):
    """The arguments of :func:`kcodec.arrow.to_arrow` that decide how batches are decoded (see its docstring).

    ``batch_fields`` are the names of :data:`kcodec.arrow.BATCH_FIELDS` asked for; ``use_threads``
    allows a large buffer to be converted in parts on threads.
    """

    batch_fields: Tuple[str, ...] = ()
    include_control: bool = False
    validate: bool = True
    headers: bool = True
    max_decompressed_size: int = DEFAULT_MAX_DECOMPRESSED_SIZE
    use_threads: bool = True
    views: bool = False


class EncodeOptions(NamedTuple):
    """The arguments of :func:`kcodec.arrow.from_arrow_iter` (see its docstring): what every batch it writes holds.

    The names and defaults are ``MemoryRecordsBuilder``'s: the codec and its level, the producer's
    ``batch.size`` (``max_batch_bytes``), and the header fields a producer or a broker sets.
    """

    compression: Union[CompressionType, int, str] = "none"
    level: Optional[int] = None
    max_batch_bytes: int = 1_048_576
    base_offset: int = 0
    magic: int = 2
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    log_append_time: Optional[int] = None
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    is_transactional: bool = False
    partition_leader_epoch: int = -1
    estimated_compression_ratio: float = 1.0
