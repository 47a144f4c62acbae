"""The record type every reader returns, and a v2 record's encoded size (both implemented in Cython)."""
from typing import Optional, Tuple

from kcodec._native.records import Record, record_size

#: A header: key (str) and value (bytes, or None for a null value).
Header = Tuple[str, Optional[bytes]]

__all__ = ["Record", "Header", "record_size"]
