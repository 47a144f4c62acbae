"""``RecordBatchBuilder``: writes magic v2 batches as Kafka's MemoryRecordsBuilder does."""
from __future__ import annotations

import struct
import threading
from typing import TYPE_CHECKING, Any, Dict, Optional, Tuple, Union

from kcodec._native.records import BatchBuilderCore
from kcodec.compression import CompressionType, get_codec
from kcodec.errors import RecordBuilderError
from kcodec.records.control import ControlRecordType, EndTransactionMarker, control_key

if TYPE_CHECKING:
    from kcodec.records.legacy_builder import LegacyRecordBatchBuilder

__all__ = ["RecordBatchBuilder", "batch_builder", "CompressionRatioEstimator", "COMPRESSION_RATE_ESTIMATION_FACTOR"]

#: Kafka over-estimates compressed sizes by 5% when deciding whether a record fits.
COMPRESSION_RATE_ESTIMATION_FACTOR = 1.05


class RecordBatchBuilder(BatchBuilderCore):
    """Build one magic v2 record batch (Kafka's ``MemoryRecordsBuilder``).

    :func:`batch_builder` makes a builder for any magic (a
    :class:`~kcodec.records.legacy_builder.LegacyRecordBatchBuilder` for 0 and 1).

    Arguments: ``compression`` (a CompressionType, id or name; ids 5-7 need a
    plugin) and ``level`` (validated against Kafka's range for the codec);
    ``base_offset``; ``timestamp_type`` CREATE_TIME or LOG_APPEND_TIME (then
    ``log_append_time`` is the batch's maxTimestamp); ``producer_id``,
    ``producer_epoch``, ``base_sequence`` and ``is_transactional`` for
    idempotent and transactional producers; ``is_control`` for control
    batches (see :meth:`append_control`); ``partition_leader_epoch``;
    ``delete_horizon_ms`` (the baseTimestamp of batches the log cleaner
    writes, with every timestamp delta relative to it).

    ``write_limit`` has the meaning of the producer's ``batch.size``: the
    first record always fits; after it, :meth:`has_room_for` says whether a
    record keeps the estimated size within the limit.  The estimate is
    Kafka's ``estimatedBytesWritten``: ``61 + uncompressed record bytes`` for
    NONE, and ``61 + (int)(uncompressed bytes x estimated_compression_ratio
    x 1.05)`` in 32-bit float arithmetic for compressed batches.  A producer
    learns ``estimated_compression_ratio`` per topic and codec from the
    batches it has built (:attr:`compression_ratio`); a
    :class:`CompressionRatioEstimator` does that bookkeeping as Kafka does.

    Memory: the batch grows in one buffer that already has room for its
    header.  Without a ``pool``, :meth:`build` returns that buffer as
    ``bytes`` owned by the caller, without a copy.  With a
    :class:`~kcodec.records.BufferPool` the buffer is borrowed from the pool
    and :meth:`build` returns a :class:`~kcodec.records.PooledBuffer` whose
    bytes stay valid until its ``release()`` (or the end of a ``with``
    block); after that any use raises BufferReleasedError and the memory
    serves the next batch, so a producer loop allocates nothing in steady
    state.  The Java builder's checks raise RecordBuilderError.

    ``memoryview(builder)`` shows the records written so far (what the codec
    compresses).  While such a view lives the buffer cannot grow or be
    started over (BufferError), and :meth:`build` assembles the batch in a
    separate buffer so that the view keeps valid memory.  Python code the
    builder runs (a header pair to unpack, a buffer export, its codec or its
    pool) may not call the same builder again: that raises RecordBuilderError.
    """

    __slots__ = ()

    # The constructor, append(), append_many(), has_room_for(), is_full(), build()
    # and the state properties are native (BatchBuilderCore); the rarely used
    # control-record and override paths are here.

    def append_control(self, control_type: Union[ControlRecordType, EndTransactionMarker, None] = None,
                       value: Optional[bytes] = None, timestamp: Optional[int] = None,
                       offset: Optional[int] = None, *, key: Optional[bytes] = None) -> int:
        """Append a control record to this control batch.

        Either ``control_type`` (the key becomes version 0 + type), an
        :class:`EndTransactionMarker` (which also supplies the value), or a raw
        ``key`` copied from an existing control record (rewriting batches).
        """
        if isinstance(control_type, EndTransactionMarker):
            return self.append_end_txn_marker(control_type.control_type, control_type.coordinator_epoch,
                                              timestamp, offset)
        if not self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches")
        if key is not None:
            return self._append_raw(key, value, timestamp, (), offset)
        if control_type is None:
            raise RecordBuilderError("append_control needs a control_type or a key")
        ctype = ControlRecordType(control_type)
        if ctype == ControlRecordType.UNKNOWN:
            raise RecordBuilderError("Cannot append record with unknown control record type")
        return self._append_raw(control_key(ctype), value, timestamp, (), offset)

    def append_end_txn_marker(self, control_type: ControlRecordType, coordinator_epoch: int,
                              timestamp: Optional[int] = None, offset: Optional[int] = None) -> int:
        """Append a COMMIT or ABORT marker (Java's 78-byte marker batch when alone)."""
        ctype = ControlRecordType(control_type)
        if ctype not in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
            raise RecordBuilderError(f"{ctype.name} is not an end transaction marker type")
        if self.producer_id == -1:
            raise RecordBuilderError("End transaction marker requires a valid producerId")
        if not self.is_transactional:
            raise RecordBuilderError("End transaction marker depends on batch transactional flag being enabled")
        marker = EndTransactionMarker(ctype, coordinator_epoch)
        return self.append_control(ctype, marker.value(), timestamp, offset)

    def override_last_offset(self, offset: int) -> None:
        """Write ``offset`` as the batch's last offset (Kafka's overrideLastOffset).

        Compaction keeps a batch's original last offset (and so its last
        sequence) even when its last records were removed.
        """
        self._set_last_offset(offset)


def batch_builder(magic: int = 2, **kwargs: Any) -> Union[RecordBatchBuilder, "LegacyRecordBatchBuilder"]:
    """A builder for one batch of message format ``magic`` (Kafka's ``MemoryRecords.builder``).

    Magic 2 gives a :class:`RecordBatchBuilder`, 0 and 1 a
    :class:`~kcodec.records.legacy_builder.LegacyRecordBatchBuilder`; the arguments
    are RecordBatchBuilder's, and the v2-only ones (producer fields,
    transactions, control batches and the delete horizon) are refused for the
    old formats with Kafka's messages.  A partition leader epoch is dropped, as
    Kafka's ``MemoryRecordsBuilder`` drops it: v0/v1 messages have no field for it.
    """
    if isinstance(magic, bool) or magic not in (0, 1, 2):
        raise RecordBuilderError(f"unsupported magic {magic!r}: use 0, 1 or 2")
    if magic == 2:
        return RecordBatchBuilder(**kwargs)
    return _legacy_builder(int(magic), **kwargs)


def _legacy_builder(magic: int, **kwargs: Any) -> "LegacyRecordBatchBuilder":
    from kcodec.records.legacy_builder import LegacyRecordBatchBuilder

    v2_only = {"producer_id": -1, "producer_epoch": -1, "base_sequence": -1, "is_transactional": False,
               "is_control": False, "partition_leader_epoch": -1, "delete_horizon_ms": None}
    for name, default in v2_only.items():
        value = kwargs.pop(name, default)
        if value != default and not (name == "delete_horizon_ms" and value is not None and value < 0):
            if name == "is_transactional":
                raise RecordBuilderError(f"Transactional records cannot be used with magic version {magic}")
            if name in ("producer_id", "producer_epoch", "base_sequence"):
                raise RecordBuilderError(f"Idempotent records cannot be used with magic version {magic}")
            if name == "is_control":
                raise RecordBuilderError(f"Control records cannot be used with magic version {magic}")
            if name == "delete_horizon_ms":
                raise RecordBuilderError(f"Delete horizon is only supported with magic version 2, not {magic}")
    return LegacyRecordBatchBuilder(magic=magic, **kwargs)


class CompressionRatioEstimator:
    """Kafka's CompressionRatioEstimator: a learned compressed/uncompressed ratio per topic and codec.

    Start every estimate at 1.0; after each batch, :meth:`update` with the
    builder's :attr:`~RecordBatchBuilder.compression_ratio`.  A worse ratio
    than estimated moves the estimate up at once (by at least 0.05), a
    better one lowers it by 0.005 per batch, in 32-bit floats as Java does.
    Pass :meth:`estimation` as ``estimated_compression_ratio`` to the next
    builder of that topic and codec.  Thread-safe.
    """

    IMPROVING_STEP = 0.005
    DETERIORATE_STEP = 0.05

    def __init__(self) -> None:
        self._ratios: Dict[Tuple[str, int], float] = {}
        self._lock = threading.Lock()

    @staticmethod
    def _key(topic: str, compression: Union[CompressionType, int, str]) -> Tuple[str, int]:
        return topic, int(compression) if isinstance(compression, int) else get_codec(compression).id

    def estimation(self, topic: str, compression: Union[CompressionType, int, str]) -> float:
        """The current estimate (1.0 before any update)."""
        return self._ratios.get(self._key(topic, compression), 1.0)

    def update(self, topic: str, compression: Union[CompressionType, int, str], observed: float) -> float:
        """Fold in the ratio a batch achieved; returns the new estimate."""
        key = self._key(topic, compression)
        observed = _f32(observed)
        with self._lock:
            current = self._ratios.get(key, 1.0)
            if observed > current:
                current = max(_f32(current + _f32(self.DETERIORATE_STEP)), observed)
            elif observed < current:
                current = _f32(current - _f32(self.IMPROVING_STEP))
            self._ratios[key] = current
        return current

    def reset(self, topic: str) -> None:
        """Forget every estimate of ``topic``."""
        with self._lock:
            for key in [k for k in self._ratios if k[0] == topic]:
                del self._ratios[key]


_F32 = struct.Struct("<f")


def _f32(x: float) -> float:
    # Round to the nearest 32-bit float, as Java's float arithmetic does after each operation.
    return _F32.unpack(_F32.pack(x))[0]
