"""What a decode into Arrow columns was asked for, carried as one value through every path."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple

from kcodec.compression import DEFAULT_MAX_DECOMPRESSED_SIZE

__all__ = ["DecodeOptions"]


@dataclass(frozen=True, slots=True)
class DecodeOptions:
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
