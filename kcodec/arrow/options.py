"""What a decode into Arrow columns was asked for, carried as one value through every path."""
from __future__ import annotations

from typing import NamedTuple, Tuple

from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

__all__ = ["DecodeOptions"]


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
