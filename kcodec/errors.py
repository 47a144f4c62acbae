"""kcodec's exception hierarchy.

Every error kcodec raises on bad input derives from :class:`KcodecError` and
says what was wrong and where: ``position`` (byte offset in the buffer or
file being read), ``batch_offset`` (base offset of the batch) and ``source``
(a file name) are filled in as the error travels outwards through readers.
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

__all__ = [
    "KcodecError",
    "CorruptDataError",
    "CorruptRecordError",
    "InvalidRecordError",
    "CorruptCompressedDataError",
    "UnsupportedCodecError",
    "MissingDependencyError",
    "CodecLibraryMissingError",
    "LimitExceededError",
    "BufferReleasedError",
    "RecordBuilderError",
    "ClusterError",
    "InvalidNameError",
    "InvalidNameWarning",
    "CorruptIndexWarning",
    "LogNotFoundError",
]


class KcodecError(Exception):
    """Base class of every error kcodec raises."""

    def __init__(
        self,
        message: str,
        *,
        position: Optional[int] = None,
        batch_offset: Optional[int] = None,
        source: Optional[str] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.position = position
        self.batch_offset = batch_offset
        self.source = source

    def with_context(
        self,
        *,
        position: Optional[int] = None,
        batch_offset: Optional[int] = None,
        source: Optional[str] = None,
    ) -> "KcodecError":
        """Fill in location fields that are still unknown; returns ``self``.

        Positions are relative: an inner reader reports its own offset and an
        outer reader adds the start of the region it handed down.
        """
        if position is not None:
            self.position = position if self.position is None else self.position + position
        if batch_offset is not None and self.batch_offset is None:
            self.batch_offset = batch_offset
        if source is not None and self.source is None:
            self.source = source
        return self

    def __str__(self) -> str:
        where = []
        if self.source is not None:
            where.append(f"in {self.source}")
        if self.position is not None:
            where.append(f"at byte {self.position}")
        if self.batch_offset is not None:
            where.append(f"in the batch with base offset {self.batch_offset}")
        return f"{self.message} ({', '.join(where)})" if where else self.message

    def __reduce__(self) -> Tuple[Any, ...]:
        # Keeps the location fields when the error crosses a process boundary
        # (Spark workers pickle exceptions).
        return (_rebuild, (type(self), self.message, self.position, self.batch_offset, self.source))


def _rebuild(cls: Any, message: Any, position: Any, batch_offset: Any, source: Any) -> Any:
    err = cls.__new__(cls)
    KcodecError.__init__(err, message, position=position, batch_offset=batch_offset, source=source)
    return err


class CorruptDataError(KcodecError, ValueError):
    """Input bytes are not valid Kafka data."""


class CorruptRecordError(CorruptDataError):
    """Batch framing or checksum is wrong (Kafka's ``CorruptRecordException``)."""


class InvalidRecordError(CorruptDataError):
    """A batch or record has an invalid structure (Kafka's ``InvalidRecordException``)."""


class CorruptCompressedDataError(CorruptDataError):
    """A compressed payload cannot be decompressed: truncated, corrupt or in a framing Kafka rejects."""


class UnsupportedCodecError(KcodecError, ValueError):
    """Unknown compression id or name, or a codec not allowed with a message format."""


class MissingDependencyError(KcodecError, ImportError):
    """An optional Python package a feature needs is not installed (the message says how to install it)."""


class CodecLibraryMissingError(MissingDependencyError):
    """The Python package a codec needs is not installed."""


class LimitExceededError(KcodecError):
    """Decompressed output, a record or a batch would exceed a configured limit, or a value
    would not fit the form it is converted to (Arrow's 2 GiB columns and microsecond timestamps)."""


class BufferReleasedError(KcodecError):
    """A pooled buffer was used after it was given back to its pool."""


class RecordBuilderError(KcodecError, ValueError):
    """A record or batch cannot be built as requested (Kafka's builder would refuse it too)."""


class ClusterError(KcodecError):
    """A live Kafka cluster cannot be read: unreachable, a topic or partition it does not
    have or cannot serve, a bad address or topic pattern, or its client library missing."""


class InvalidNameError(KcodecError, ValueError):
    """A topic, partition or file name that Kafka would refuse, or a path that leaves its target.

    ``value`` is the offending name; ``source`` says where it came from (a row, a file, an option).
    Raised before anything is written.
    """

    def __init__(self, message: str, *, value: object = None, source: Optional[str] = None) -> None:
        super().__init__(message, source=source)
        self.value = value

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild_name_error, (type(self), self.message, self.value, self.source))


def _rebuild_name_error(cls: Any, message: Any, value: Any, source: Any) -> Any:
    return cls(message, value=value, source=source)


class InvalidNameWarning(UserWarning):
    """A folder of a log directory was skipped because its name is not ``<topic>-<partition>``."""


class CorruptIndexWarning(UserWarning):
    """A segment's ``.index`` or ``.timeindex`` fails Kafka's checks and is not used: the segment is read
    from its first byte, as a broker rebuilds such an index (``LogLoader`` on ``CorruptIndexException``)."""


class LogNotFoundError(KcodecError, FileNotFoundError):
    """A log directory or segment file that a reader was given does not exist."""
