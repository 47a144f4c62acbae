"""The record type every reader returns (implemented in Cython)."""
from typing import Optional, Tuple

from kcodec._native.records import Record

#: A header: key (str) and value (bytes, or None for a null value).
Header = Tuple[str, Optional[bytes]]

__all__ = ["Record", "Header"]
