"""The broker's append-path validation: Kafka's ``LogValidator`` and the checks around it.

:func:`validate_and_assign_offsets` takes the record batches of one produce
request for one partition and returns what a Kafka leader would store:
offsets assigned from the log end, timestamps and partition leader epoch set,
and -- depending on the topic's ``compression.type`` and message format --
the batches either patched in place or rebuilt (``LogValidator``):

====  =====================================================  =====================
path  when                                                   what happens
====  =====================================================  =====================
A1    source and target uncompressed, every magic == target  in place
A2    source and target uncompressed, some magic differs     one rebuilt batch
B-in  same codec type, magic == target != 0, inner offsets   in place, the
      consecutive; or an uncompressed control batch          compressed payload kept
B-re  any other compressed case                              one rebuilt batch
====  =====================================================  =====================

An in-place rewrite changes only baseOffset (or the legacy entry offset),
partitionLeaderEpoch, maxTimestamp, the timestamp-type attribute bit and the
CRC, as Kafka's ``setLastOffset`` / ``setPartitionLeaderEpoch`` /
``setMaxTimestamp`` do.

Errors are raised as :class:`RecordValidationError` carrying Kafka's error
code and name (``INVALID_RECORD``, ``CORRUPT_MESSAGE``, ``INVALID_TIMESTAMP``,
...) and, for per-record failures, Kafka's ``RecordError`` list (KIP-467).

Header changes in place are :mod:`kcodec.records.batch_header`'s and
:mod:`kcodec.records.message_header`'s; rebuilding a batch is
:func:`kcodec.records.rebuild.rebuild_batch`.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

from kcodec.compression import CompressionType, TimestampType
from kcodec.errors import CorruptRecordError, InvalidRecordError, KcodecError, UnsupportedCodecError
from kcodec.records import batch_header, message_header
from kcodec.records.framing import LOG_OVERHEAD, RECORD_BATCH_OVERHEAD, iter_entries, java_int
from kcodec.records.rebuild import rebuild_batch
from kcodec.records.record import record_size

__all__ = [
    "ValidatorConfig",
    "ValidationResult",
    "RecordError",
    "RecordValidationError",
    "ERRORS",
    "validate_and_assign_offsets",
    "target_compression",
    "magic_for_message_format_version",
]

INT64_MAX = (1 << 63) - 1
NO_TIMESTAMP = -1
DEFAULT_MAX_MESSAGE_BYTES = 1048588  # LogConfig.DEFAULT_MAX_MESSAGE_BYTES: 1 MiB + LOG_OVERHEAD
DEFAULT_SEGMENT_BYTES = 1 << 30

#: Kafka's ``Errors`` codes for the conditions this module reports.
ERRORS = {
    "UNKNOWN_SERVER_ERROR": -1,
    "CORRUPT_MESSAGE": 2,
    "MESSAGE_TOO_LARGE": 10,
    "RECORD_LIST_TOO_LARGE": 18,
    "INVALID_TIMESTAMP": 32,
    "UNSUPPORTED_FOR_MESSAGE_FORMAT": 43,
    "UNSUPPORTED_COMPRESSION_TYPE": 76,
    "INVALID_RECORD": 87,
}
_ERROR_NAMES = {v: k for k, v in ERRORS.items()}

def _wrap64(v: int) -> int:
    """Java ``long`` overflow: wrap an int into the signed 64-bit range."""
    v &= (1 << 64) - 1
    return v - (1 << 64) if v >= 1 << 63 else v


# --------------------------------------------------------------------------------------------
# errors

class RecordError(NamedTuple):
    """One rejected record: its index inside its batch and Kafka's message (``RecordError``)."""

    batch_index: int
    message: Optional[str]

    def __str__(self) -> str:
        msg = "null" if self.message is None else f"'{self.message}'"
        return f"RecordError(batchIndex={self.batch_index}, message={msg})"


class RecordValidationError(KcodecError):
    """The broker would reject the append; ``code``/``error_name`` are Kafka's ``Errors``.

    ``record_errors`` lists the offending records (empty when a whole batch
    or the request is at fault), as Kafka's ``RecordValidationException``.
    """

    def __init__(self, code: Union[int, str], message: str,
                 record_errors: Sequence[RecordError] = (), **context: Any) -> None:
        if isinstance(code, str):
            code = ERRORS[code]
        super().__init__(message, **context)
        self.code = int(code)
        self.error_name = _ERROR_NAMES.get(self.code, "UNKNOWN_SERVER_ERROR")
        self.record_errors = list(record_errors)

    def __str__(self) -> str:
        return f"{self.error_name} ({self.code}): {super().__str__()}"

    def __reduce__(self) -> Tuple[Any, ...]:
        return (_rebuild_error, (self.code, self.message, self.record_errors, self.position,
                                 self.batch_offset, self.source))


def _rebuild_error(code: Any, message: Any, record_errors: Any, position: Any, batch_offset: Any, source: Any) -> Any:
    return RecordValidationError(code, message, record_errors, position=position,
                                 batch_offset=batch_offset, source=source)


def _invalid(message: str, **ctx: Any) -> RecordValidationError:
    return RecordValidationError("INVALID_RECORD", message, **ctx)


def _from_reader_error(exc: Exception, tp: str, **ctx: Any) -> RecordValidationError:
    """Map an error raised while reading a batch to the code Kafka's broker answers with."""
    if isinstance(exc, RecordValidationError):
        return exc
    msg = getattr(exc, "message", None) or str(exc)
    # where the reader found it (the batch's offset, a byte), unless the caller knows better
    for name in ("position", "batch_offset", "source"):
        if ctx.get(name) is None:
            ctx[name] = getattr(exc, name, None)
    if isinstance(exc, CorruptRecordError):
        return RecordValidationError("CORRUPT_MESSAGE", msg, **ctx)
    if isinstance(exc, InvalidRecordError):
        return RecordValidationError("INVALID_RECORD", msg, **ctx)
    if isinstance(exc, UnsupportedCodecError):
        # Java throws IllegalArgumentException("Unknown compression type id") here; kcodec
        # answers with the code a client can act on.
        return RecordValidationError("UNSUPPORTED_COMPRESSION_TYPE", msg, **ctx)
    # A codec failure (CorruptCompressedDataError, LimitExceededError) is a
    # KafkaException("Failed to decompress record stream") in Java, which the broker
    # reports as UNKNOWN_SERVER_ERROR; builder refusals (RecordBuilderError) are
    # IllegalArgumentExceptions and end the same way, as does every other KcodecError.
    if isinstance(exc, KcodecError):
        return RecordValidationError("UNKNOWN_SERVER_ERROR", msg, **ctx)
    return RecordValidationError("UNKNOWN_SERVER_ERROR", f"{type(exc).__name__}: {exc}", **ctx)


# --------------------------------------------------------------------------------------------
# configuration

def magic_for_message_format_version(version: Union[str, int]) -> int:
    """Magic written for a ``message.format.version`` (``"0.9.0"`` -> 0, ``"0.10.2"`` -> 1, ``"0.11.0"``+ -> 2)."""
    if isinstance(version, int):
        if version not in (0, 1, 2):
            raise ValueError(f"magic must be 0, 1 or 2, got {version}")
        return version
    # Kafka knows each version by name: a part that is not a number names none, rather than a lower one
    given = str(version).split("-")[0].split(".")
    if not all(p.isdigit() for p in given):
        raise ValueError(f"invalid message.format.version {version!r}")
    parts = [int(p) for p in given[:2]]
    major = parts[0]
    minor = parts[1] if len(parts) > 1 else 0
    if major == 0 and minor < 10:
        return 0
    if major == 0 and minor == 10:
        return 1
    return 2


@dataclass(frozen=True)
class ValidatorConfig:
    """The topic and broker settings the append path reads.

    ``compression_type`` / ``compression_level`` are the topic-level
    ``compression.type`` and ``compression.<codec>.level``; ``None`` falls back
    to the broker-level values (``broker_compression_type``,
    ``broker_compression_level``), exactly as a topic config overrides the
    broker default.  Types are Kafka's names: ``producer``, ``uncompressed``,
    ``gzip``, ``snappy``, ``lz4``, ``zstd``.

    ``to_magic`` is the message format written (``message.format.version``;
    any Kafka 3.0+ broker forces 2).
    """

    compression_type: Optional[str] = None
    compression_level: Optional[int] = None
    broker_compression_type: str = "producer"
    broker_compression_level: Optional[int] = None
    to_magic: int = 2
    timestamp_type: TimestampType = TimestampType.CREATE_TIME
    timestamp_before_max_ms: int = INT64_MAX
    timestamp_after_max_ms: int = INT64_MAX
    compacted: bool = False
    partition_leader_epoch: int = -1
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    segment_bytes: int = DEFAULT_SEGMENT_BYTES
    topic_partition: str = "topic-0"

    @classmethod
    def from_kafka(cls, topic: Optional[Mapping[str, Any]] = None,
                   broker: Optional[Mapping[str, Any]] = None, **overrides: Any) -> "ValidatorConfig":
        """Build a config from Kafka property names (topic-level ``compression.type``,
        ``message.timestamp.type``, ``cleanup.policy``, ...; broker-level ``compression.type``)."""
        topic = dict(topic or {})
        broker = dict(broker or {})
        kw: dict = {}
        ctype = topic.get("compression.type")
        if ctype is not None:
            kw["compression_type"] = str(ctype)
            level = topic.get(f"compression.{ctype}.level")
            if level is not None:
                kw["compression_level"] = int(level)
        btype = broker.get("compression.type")
        if btype is not None:
            kw["broker_compression_type"] = str(btype)
        eff = kw.get("compression_type", kw.get("broker_compression_type", "producer"))
        for src, key in ((broker, "broker_compression_level"),):
            for name in ("gzip", "lz4", "zstd"):
                if eff == name and src.get(f"compression.{name}.level") is not None:
                    kw[key] = int(src[f"compression.{name}.level"])
        if "message.format.version" in topic:
            kw["to_magic"] = magic_for_message_format_version(topic["message.format.version"])
        if "message.timestamp.type" in topic:
            tt = str(topic["message.timestamp.type"])
            kw["timestamp_type"] = TimestampType.LOG_APPEND_TIME if tt == "LogAppendTime" else TimestampType.CREATE_TIME
        diff = topic.get("message.timestamp.difference.max.ms")
        before = topic.get("message.timestamp.before.max.ms")
        after = topic.get("message.timestamp.after.max.ms")
        # KIP-937: the new settings fall back to the deprecated one while left at their default.
        if before is None or int(before) == INT64_MAX:
            before = diff
        if after is None or int(after) == INT64_MAX:
            after = diff
        if before is not None:
            kw["timestamp_before_max_ms"] = int(before)
        if after is not None:
            kw["timestamp_after_max_ms"] = int(after)
        if "cleanup.policy" in topic:
            kw["compacted"] = "compact" in str(topic["cleanup.policy"])
        if "max.message.bytes" in topic:
            kw["max_message_bytes"] = int(topic["max.message.bytes"])
        if "segment.bytes" in topic:
            kw["segment_bytes"] = int(topic["segment.bytes"])
        kw.update(overrides)
        return cls(**kw)


def target_compression(config: ValidatorConfig, source: CompressionType) -> Tuple[CompressionType, Optional[int]]:
    """``BrokerCompressionType.targetCompression``: the codec and level the log stores.

    ``producer`` keeps the source codec but at its *default* level (the
    producer's level is not known to the broker); ``uncompressed`` is NONE.
    """
    name = (config.compression_type if config.compression_type is not None
            else config.broker_compression_type).lower()
    level = config.compression_level if config.compression_type is not None else config.broker_compression_level
    if name == "producer":
        return source, source.default_level
    if name == "uncompressed":
        return CompressionType.NONE, None
    ctype = CompressionType.of(name)
    if ctype is CompressionType.NONE:
        return ctype, None
    return ctype, ctype.validate_level(level)


# --------------------------------------------------------------------------------------------
# result

@dataclass
class ValidationResult:
    """What the leader appends, and Kafka's ``ValidationResult`` / ``LogAppendInfo`` numbers."""

    batches: List[bytes]
    first_offset: int
    last_offset: int
    max_timestamp: int
    shallow_offset_of_max_timestamp: int
    log_append_time_ms: int
    message_size_maybe_changed: bool
    records_converted: int
    temporary_memory_bytes: int
    conversion_time_ns: int
    path: str
    source_compression: CompressionType
    target_compression: CompressionType
    target_level: Optional[int]
    record_count: int
    valid_bytes: int
    trimmed_bytes: int = 0
    stored_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        self.stored_bytes = sum(len(b) for b in self.batches)

    @property
    def records(self) -> bytes:
        """The stored record set: every batch, concatenated."""
        return b"".join(self.batches)

    @property
    def next_offset(self) -> int:
        return self.last_offset + 1


# --------------------------------------------------------------------------------------------
def _split_entries(buf: bytes) -> List[bytes]:
    return [bytes(buf[e.position:e.position + e.size]) for e in iter_entries(buf)]


# --------------------------------------------------------------------------------------------
# record-level checks (LogValidator.validateRecord and friends)

def _record_repr(batch: Any, rec: Any, header: Optional[Tuple[int, int, int]] = None) -> str:
    """The record as Kafka's ``toString`` prints it; ``header`` is the (magic, attributes, CRC-32) of a
    v0/v1 record's own message."""
    key = 0 if rec.key is None else len(rec.key)
    value = 0 if rec.value is None else len(rec.value)
    if batch.magic >= 2:
        return f"DefaultRecord(offset={rec.offset}, timestamp={rec.timestamp}, key={key} bytes, value={value} bytes)"
    magic, attributes, crc = header if header is not None else (batch.magic, batch.attributes, batch.crc)
    # LegacyRecord.toString: a v0 message has no timestamp to print
    ts = ""
    if magic > 0:
        lat = rec.timestamp_type == TimestampType.LOG_APPEND_TIME or attributes & message_header.TIMESTAMP_TYPE_MASK
        ts = f"{'LogAppendTime' if lat else 'CreateTime'}={rec.timestamp}, "
    codec = message_header.compression_of(attributes & message_header.COMPRESSION_MASK)
    return (f"LegacyRecordBatch(offset={rec.offset}, Record(magic={magic}, attributes={attributes}, "
            f"compression={getattr(codec, 'name', codec)}, crc={crc}, {ts}key={key} bytes, value={value} bytes))")


def _validate_record(cfg: ValidatorConfig, batch: Any, rec: Any, index: int, now: int,
                     header: Optional[Tuple[int, int, int]] = None) -> Optional[Tuple[int, RecordError]]:
    """``LogValidator.validateRecord``; ``header`` is the (magic, attributes, CRC-32) of a v0/v1 record's
    own message.  Kafka's check that an inner message has no codec of its own never runs here: the
    iteration refuses such a message first, as Kafka's DeepRecordsIterator does."""
    tp = cfg.topic_partition
    if header is not None and header[0] != batch.magic:
        return ERRORS["INVALID_RECORD"], RecordError(
            index, f"Record {_record_repr(batch, rec, header)}'s magic does not match outer magic {batch.magic} "
                   f"in topic partition {tp}.")
    if cfg.compacted and rec.key is None:
        return ERRORS["INVALID_RECORD"], RecordError(
            index, f"Compacted topic cannot accept message without key in topic partition {tp}.")
    ts = rec.timestamp
    if cfg.timestamp_type == TimestampType.CREATE_TIME and ts != NO_TIMESTAMP:
        diff = _wrap64(now - ts)
        if diff > cfg.timestamp_before_max_ms or _wrap64(-diff) > cfg.timestamp_after_max_ms:
            lo = _wrap64(now - cfg.timestamp_before_max_ms)
            hi = _wrap64(now + cfg.timestamp_after_max_ms)
            return ERRORS["INVALID_TIMESTAMP"], RecordError(
                index, f"Timestamp {ts} of message with offset {rec.offset} is out of range. "
                       f"The timestamp should be within [{lo}, {hi}]")
    elif batch.timestamp_type == TimestampType.LOG_APPEND_TIME:
        return ERRORS["INVALID_TIMESTAMP"], RecordError(
            index, f"Invalid timestamp type in message {_record_repr(batch, rec, header)}. "
                   "Producer should not set timestamp type to LogAppendTime.")
    return None


def _raise_record_errors(errors: List[Tuple[int, RecordError]], batch: Any) -> None:
    if not errors:
        return
    recs = [e for _, e in errors]
    if any(code == ERRORS["INVALID_TIMESTAMP"] for code, _ in errors):
        raise RecordValidationError("INVALID_TIMESTAMP",
                                    "One or more records have been rejected due to invalid timestamp",
                                    recs, batch_offset=batch.base_offset)
    shown = ", ".join(str(e) for e in recs[:3])
    raise RecordValidationError(
        "INVALID_RECORD",
        f"One or more records have been rejected due to {len(recs)} record errors in total, and only "
        f"showing the first three errors at most: [{shown}]", recs, batch_offset=batch.base_offset)


def _validate_batch(cfg: ValidatorConfig, first: Any, batch: Any, origin: str, to_magic: int) -> None:
    tp = cfg.topic_partition
    if first.magic != batch.magic:
        raise _invalid(f"Batch magic {batch.magic} is not the same as the first batch's magic byte "
                       f"{first.magic} in topic partition {tp}", batch_offset=batch.base_offset)
    if origin == "client":
        if batch.magic >= 2:
            count_from_offsets = batch.last_offset - batch.base_offset + 1
            if count_from_offsets <= 0:
                raise _invalid(f"Batch has an invalid offset range: [{batch.base_offset}, {batch.last_offset}] "
                               f"in topic partition {tp}.", batch_offset=batch.base_offset)
            count = batch.record_count
            if count <= 0:
                raise _invalid(f"Invalid reported count for record batch: {count} in topic partition {tp}.",
                               batch_offset=batch.base_offset)
            if count_from_offsets != count:
                raise _invalid(f"Inconsistent batch offset range [{batch.base_offset}, {batch.last_offset}] "
                               f"and count of records {count} in topic partition {tp}.",
                               batch_offset=batch.base_offset)
        if batch.is_control:
            raise _invalid(f"Clients are not allowed to write control records in topic partition {tp}.",
                           batch_offset=batch.base_offset)
        if batch.producer_id > -1 and batch.base_sequence < 0:
            raise _invalid(f"Invalid sequence number {batch.base_sequence} in record batch with producerId "
                           f"{batch.producer_id} in topic partition {tp}.", batch_offset=batch.base_offset)
    if batch.is_transactional and to_magic < 2:
        raise RecordValidationError("UNSUPPORTED_FOR_MESSAGE_FORMAT",
                                    f"Transactional records cannot be used with magic version {to_magic}",
                                    batch_offset=batch.base_offset)
    if batch.producer_id > -1 and to_magic < 2:
        raise RecordValidationError("UNSUPPORTED_FOR_MESSAGE_FORMAT",
                                    f"Idempotent records cannot be used with magic version {to_magic}",
                                    batch_offset=batch.base_offset)


def _record_size(batch: Any, rec: Any, base_ts: int) -> int:
    """Bytes the record occupies uncompressed (``Record.sizeInBytes``), for the memory statistic."""
    if batch.magic < 2:
        return LOG_OVERHEAD + message_header.record_size(batch.magic, rec.key, rec.value)
    # The deltas as the batch stores them (an int32 and an int64), whatever wrapping the sums took: a record
    # without a timestamp (-1) in a batch whose base is set, or the reverse, stores a delta as long as any.
    return record_size(java_int(rec.offset - batch.base_offset), _wrap64(rec.timestamp - base_ts),
                       rec.key, rec.value, rec.headers or ())


def _batch_header_size(magic: int, compression: CompressionType) -> int:
    """``AbstractRecords.recordBatchHeaderSizeInBytes``."""
    if magic >= 2:
        return RECORD_BATCH_OVERHEAD
    if compression != CompressionType.NONE:
        return LOG_OVERHEAD + message_header.record_overhead(magic)
    return 0


def _records_info(magic: int, compression: CompressionType, timestamp_type: TimestampType,
                  log_append_time: int, base_offset: int, last_offset: int,
                  max_ts: int, offset_of_max_ts: int) -> Tuple[int, int]:
    """``MemoryRecordsBuilder.info()``: (maxTimestamp, shallowOffsetOfMaxTimestamp) of a built set."""
    if timestamp_type == TimestampType.LOG_APPEND_TIME:
        if compression != CompressionType.NONE or magic >= 2:
            return log_append_time, last_offset
        return log_append_time, base_offset
    if max_ts == NO_TIMESTAMP:
        return NO_TIMESTAMP, -1
    if compression != CompressionType.NONE or magic >= 2:
        return max_ts, last_offset
    return max_ts, offset_of_max_ts


# --------------------------------------------------------------------------------------------
# the entry point: UnifiedLog.analyzeAndValidateRecords, then LogValidator's dispatch

_ORIGINS = ("client", "coordinator", "raft_leader")


@dataclass
class _Append:
    """One partition's produce payload on its way through the validator: what each of
    ``LogValidator``'s cases reads (Kafka keeps the same state in the validator's fields)."""

    cfg: ValidatorConfig
    buf: bytearray
    batches: List[Any]
    next_offset: int
    now: int
    origin: str
    source: CompressionType
    target: CompressionType
    level: Optional[int]

    @property
    def first(self) -> Any:
        return self.batches[0]

    @property
    def to_magic(self) -> int:
        return self.cfg.to_magic


def validate_and_assign_offsets(batches_bytes: Union[bytes, bytearray, memoryview, Sequence[Any]],
                                config: Optional[ValidatorConfig] = None, *, next_offset: int,
                                now_ms: Optional[int] = None, origin: str = "client") -> ValidationResult:
    """Validate one partition's produce payload and assign offsets from ``next_offset``.

    ``batches_bytes`` is the record set (bytes-like) or a sequence of batch
    buffers.  ``origin`` is Kafka's ``AppendOrigin``: ``client``,
    ``coordinator`` (transaction markers, group metadata: control batches
    and non-zero base offsets allowed) or ``raft_leader`` (the batch epoch
    must equal ``config.partition_leader_epoch``).

    Bytes after the last complete batch are trimmed, as the broker does.  A
    payload without a complete batch is rejected with INVALID_RECORD
    ("Record batch has no batches at all"), Kafka's validator message; the
    broker itself silently appends nothing in that case.
    """
    cfg = config or ValidatorConfig()
    if origin not in _ORIGINS:
        raise ValueError(f"origin must be 'client', 'coordinator' or 'raft_leader', got {origin!r}")
    now = int(time.time() * 1000) if now_ms is None else int(now_ms)
    if isinstance(batches_bytes, (list, tuple)):
        raw = b"".join(bytes(b) for b in batches_bytes)
    else:
        raw = bytes(batches_bytes)
    append, trimmed = _analyze(raw, cfg, next_offset, now, origin)
    try:
        result = _validate(append)
    except RecordValidationError:
        raise
    except KcodecError as exc:
        raise _from_reader_error(exc, cfg.topic_partition) from exc
    result.valid_bytes = len(append.buf)
    result.trimmed_bytes = trimmed
    _check_stored_sizes(cfg, result)
    return result


def _read(buf: Any, tp: str) -> Any:
    from kcodec.records import read_batches
    try:
        return list(read_batches(buf, validate=False))
    except Exception as exc:  # framing errors: size < 14, bad magic
        raise _from_reader_error(exc, tp) from exc


def _validate(a: _Append) -> ValidationResult:
    """``LogValidator.validateMessagesAndAssignOffsets``: one case per call.

    - offsets only (A1): uncompressed in and out, every batch already at the topic's magic;
    - magic conversion (A2): uncompressed in and out, some batch at another magic;
    - in place (B-in): compressed, and the payload can be kept as it is;
    - rebuild (B-re): compressed, and it cannot.
    """
    if a.source == CompressionType.NONE and a.target == CompressionType.NONE:
        if all(b.magic == a.to_magic for b in a.batches):
            return _assign_offsets_in_place(a)
        return _convert_and_assign_offsets(a)
    start = time.perf_counter_ns()
    scan = _scan_compressed(a)
    if scan.in_place:
        return _assign_offsets_compressed_in_place(a, scan)
    return _rebuild(a, scan.records, "B-re", scan.temporary_bytes, start)


def _analyze(raw: bytes, cfg: ValidatorConfig, next_offset: int, now: int,
             origin: str) -> Tuple[_Append, int]:
    """``UnifiedLog.analyzeAndValidateRecords``: framing, sizes and CRCs, the source codec.

    Returns the payload cut after its last complete batch, and the number of bytes cut."""
    tp = cfg.topic_partition
    try:
        entries = list(iter_entries(raw))
    except Exception as exc:
        raise _from_reader_error(exc, tp) from exc
    valid_bytes = sum(e.size for e in entries)
    buf = bytearray(raw[:valid_bytes])
    batches = _read(buf, tp)
    if not batches:
        raise _invalid("Record batch has no batches at all")
    source = CompressionType.NONE
    for b in batches:
        _analyze_batch(cfg, b, origin)
        try:
            comp = CompressionType.of(b.compression)
        except Exception as exc:
            raise _from_reader_error(exc, tp, batch_offset=_header_offset(b)) from exc
        if comp != CompressionType.NONE:
            source = comp

    target, level = target_compression(cfg, source)
    if target != CompressionType.NONE and not target.supports_magic(cfg.to_magic):
        raise RecordValidationError("UNSUPPORTED_COMPRESSION_TYPE",
                                    f"{target.kafka_name} compression requires message format v2, "
                                    f"the topic writes v{cfg.to_magic}")
    if batches[0].magic >= 2 or source != CompressionType.NONE:
        if len(batches) > 1:
            raise _invalid("Compressed outer record has more than one batch")
    append = _Append(cfg=cfg, buf=buf, batches=batches, next_offset=next_offset, now=now, origin=origin,
                     source=source, target=target, level=level)
    return append, len(raw) - valid_bytes


def _header_offset(b: Any) -> int:
    """The offset that names a batch in an error raised before its records are read: a v0/v1 wrapper's
    first offset would mean decompressing it, so the entry's own offset (its last), as the reader names it."""
    return b.base_offset if b.magic >= 2 else b.last_offset


def _analyze_batch(cfg: ValidatorConfig, b: Any, origin: str) -> None:
    """The checks ``analyzeAndValidateRecords`` makes of each batch before the validator runs."""
    tp = cfg.topic_partition
    if origin == "raft_leader" and b.partition_leader_epoch != cfg.partition_leader_epoch:
        raise _invalid("Append from Raft leader did not set the batch epoch correctly",
                       batch_offset=_header_offset(b))
    if b.magic >= 2 and origin == "client" and b.base_offset != 0:
        raise _invalid(f"The baseOffset of the record batch in the append to {tp} should be 0, "
                       f"but it is {b.base_offset}", batch_offset=b.base_offset)
    if b.size_in_bytes > cfg.max_message_bytes:
        raise RecordValidationError(
            "MESSAGE_TOO_LARGE",
            f"The record batch size in the append to {tp} is {b.size_in_bytes} bytes which exceeds "
            f"the maximum configured value of {cfg.max_message_bytes}.", batch_offset=_header_offset(b))
    if not b.is_valid():  # a size and a checksum compared: nothing to raise
        raise RecordValidationError("CORRUPT_MESSAGE",
                                    f"Record is corrupt (stored crc = {b.crc}) in topic partition {tp}.",
                                    batch_offset=_header_offset(b), position=b.position)


def _check_stored_sizes(cfg: ValidatorConfig, result: ValidationResult) -> None:
    """What ``UnifiedLog.append`` checks after validation: a rebuilt batch may have grown."""
    tp = cfg.topic_partition
    if result.message_size_maybe_changed:
        for b in result.batches:
            if len(b) > cfg.max_message_bytes:
                raise RecordValidationError(
                    "MESSAGE_TOO_LARGE",
                    f"Message batch size is {len(b)} bytes in append to partition {tp} which exceeds the "
                    f"maximum configured size of {cfg.max_message_bytes}.")
    if result.stored_bytes > cfg.segment_bytes:
        raise RecordValidationError(
            "RECORD_LIST_TOO_LARGE",
            f"Message batch size is {result.stored_bytes} bytes in append to partition {tp}, which exceeds "
            f"the maximum configured segment size of {cfg.segment_bytes}.")


def _check_inner_crcs(cfg: ValidatorConfig, batch: Any) -> None:
    """Compressed v0/v1: every inner message's CRC-32 (``record.ensureValid()``) and size."""
    if batch.magic <= 1 and batch.compression != CompressionType.NONE:
        try:
            batch.ensure_valid(deep=True)
        except CorruptRecordError as exc:
            raise RecordValidationError("CORRUPT_MESSAGE", f"{exc.message} in topic partition "
                                        f"{cfg.topic_partition}.", batch_offset=batch.base_offset,
                                        position=batch.position) from exc


def _message_headers(batch: Any) -> List[Tuple[int, int, int]]:
    """(magic, attributes, CRC-32) of each v0/v1 record's own message; none for a v2 batch.  A wrapper's
    inner messages were read, and checked, by _check_inner_crcs already."""
    return batch.message_headers() if batch.magic < 2 else []


def _iter_records(batch: Any) -> Iterator[Any]:
    try:
        yield from batch
    except KcodecError as exc:
        raise exc.with_context(batch_offset=batch.base_offset)


# --------------------------------------------------------------------------------------------
# the four cases

def _assign_offsets_in_place(a: _Append) -> ValidationResult:
    """Offsets only, A1 (``assignOffsetsNonCompressed``)."""
    cfg, buf = a.cfg, a.buf
    counter = a.next_offset
    max_ts = NO_TIMESTAMP
    shallow = -1
    count = 0
    lat = cfg.timestamp_type == TimestampType.LOG_APPEND_TIME
    for batch in a.batches:
        _validate_batch(cfg, a.first, batch, a.origin, a.to_magic)
        batch_max = NO_TIMESTAMP
        errors: List[Tuple[int, RecordError]] = []
        headers = _message_headers(batch)
        for index, rec in enumerate(_iter_records(batch)):
            err = _validate_record(cfg, batch, rec, index, a.now, headers[index] if headers else None)
            if err is not None:
                errors.append(err)
            counter += 1
            count += 1
            if batch.magic > 0 and rec.timestamp > batch_max:
                batch_max = rec.timestamp
        _raise_record_errors(errors, batch)
        pos, size = batch.position, batch.size_in_bytes
        if batch.magic > 0 and batch_max > max_ts:
            max_ts = batch_max
            shallow = counter - 1
        if batch.magic >= 2:
            batch_header.set_last_offset(buf, pos, counter - 1)
            batch_header.set_partition_leader_epoch(buf, pos, cfg.partition_leader_epoch)
        else:
            message_header.set_last_offset(buf, pos, counter - 1)
        if batch.magic > 0:
            header = batch_header if batch.magic >= 2 else message_header
            header.set_max_timestamp(buf, pos, size, batch, lat, a.now if lat else batch_max)
    if lat:
        max_ts = a.now
        shallow = counter - 1 if a.to_magic >= 2 else a.next_offset
    out = [bytes(buf[b.position:b.position + b.size_in_bytes]) for b in a.batches]
    return ValidationResult(
        batches=out, first_offset=a.next_offset, last_offset=counter - 1, max_timestamp=max_ts,
        shallow_offset_of_max_timestamp=shallow, log_append_time_ms=a.now, message_size_maybe_changed=False,
        records_converted=0, temporary_memory_bytes=0, conversion_time_ns=0, path="A1",
        source_compression=CompressionType.NONE, target_compression=CompressionType.NONE, target_level=None,
        record_count=count, valid_bytes=len(buf))


def _convert_and_assign_offsets(a: _Append) -> ValidationResult:
    """Magic conversion, A2 (``convertAndAssignOffsetsNonCompressed``)."""
    start = time.perf_counter_ns()
    records = []
    for batch in a.batches:
        _validate_batch(a.cfg, a.first, batch, a.origin, a.to_magic)
        errors: List[Tuple[int, RecordError]] = []
        headers = _message_headers(batch)
        for index, rec in enumerate(_iter_records(batch)):
            err = _validate_record(a.cfg, batch, rec, index, a.now, headers[index] if headers else None)
            if err is not None:
                errors.append(err)
            elif not errors:
                records.append(rec)
        _raise_record_errors(errors, batch)
    return _rebuild(a, records, "A2", None, start)


@dataclass
class _CompressedScan:
    """What ``validateMessagesAndAssignOffsetsCompressed`` learns reading every record."""

    records: List[Any]
    in_place: bool
    max_timestamp: int
    temporary_bytes: int


def _scan_compressed(a: _Append) -> _CompressedScan:
    """Validate every record of a compressed payload, and decide whether it can stay as it is."""
    cfg, first = a.cfg, a.first
    in_place = a.source == a.target
    if first.magic != a.to_magic or a.to_magic == 0:
        in_place = False
    if a.source == CompressionType.NONE and first.is_control:
        in_place = True
    max_ts = NO_TIMESTAMP
    expected = 0
    records = []
    temp = 0
    for batch in a.batches:
        _validate_batch(cfg, first, batch, a.origin, a.to_magic)
        _check_inner_crcs(cfg, batch)
        temp += _batch_header_size(a.to_magic, batch.compression)
        base_ts = batch.base_timestamp if batch.base_timestamp is not None else NO_TIMESTAMP
        # A v2 batch flagged LogAppendTime reads every record at its maxTimestamp, not at the delta it stores;
        # its records then measure as the region they fill (the reader refuses bytes left after the last).
        as_stored = batch.magic >= 2 and batch.timestamp_type == TimestampType.LOG_APPEND_TIME
        errors: List[Tuple[int, RecordError]] = []
        headers = _message_headers(batch)
        for index, rec in enumerate(_iter_records(batch)):
            exp = expected
            expected += 1
            err = _validate_record(cfg, batch, rec, index, a.now, headers[index] if headers else None)
            if err is None and batch.magic > 0 and a.to_magic > 0:
                if rec.timestamp > max_ts:
                    max_ts = rec.timestamp
                # Old clients wrote wrong inner offsets; Kafka rewrites rather than rejects them.
                if rec.offset != exp:
                    in_place = False
            if err is not None:
                errors.append(err)
            else:
                if not as_stored:
                    temp += _record_size(batch, rec, base_ts)
                records.append(rec)
        _raise_record_errors(errors, batch)
        if as_stored:
            temp += len(batch.records_data())
    return _CompressedScan(records=records, in_place=in_place, max_timestamp=max_ts, temporary_bytes=temp)


def _assign_offsets_compressed_in_place(a: _Append, scan: _CompressedScan) -> ValidationResult:
    """In place, B-in: the compressed payload is kept; only the outer header changes."""
    buf = a.buf
    batch = a.first
    pos, size = batch.position, batch.size_in_bytes
    last = a.next_offset + len(scan.records) - 1
    header = batch_header if batch.magic >= 2 else message_header
    header.set_last_offset(buf, pos, last)
    lat = a.cfg.timestamp_type == TimestampType.LOG_APPEND_TIME
    max_ts = a.now if lat else scan.max_timestamp
    if a.to_magic >= 1:
        header.set_max_timestamp(buf, pos, size, batch, lat, max_ts)
    if a.to_magic >= 2:
        batch_header.set_partition_leader_epoch(buf, pos, a.cfg.partition_leader_epoch)
    return ValidationResult(
        batches=[bytes(buf[pos:pos + size])], first_offset=a.next_offset, last_offset=last, max_timestamp=max_ts,
        shallow_offset_of_max_timestamp=last, log_append_time_ms=a.now, message_size_maybe_changed=False,
        records_converted=0, temporary_memory_bytes=scan.temporary_bytes, conversion_time_ns=0, path="B-in",
        source_compression=a.source, target_compression=a.target, target_level=a.level,
        record_count=len(scan.records), valid_bytes=len(buf))


def _rebuild(a: _Append, records: List[Any], path: str, temp_bytes: Optional[int],
             start_ns: int) -> ValidationResult:
    """Rebuild, A2 and B-re: the validated records as one new batch from ``next_offset``
    (``buildRecordsAndAssignOffsets``)."""
    cfg, first, now = a.cfg, a.first, a.now
    target, level = a.target, a.level  # A2 runs only when both are none (and none has no level)
    n = len(records)
    ts_type = cfg.timestamp_type
    out = rebuild_batch(
        records, magic=a.to_magic, compression=target, level=level, base_offset=a.next_offset,
        timestamp_type=ts_type, log_append_time=now, producer_id=first.producer_id,
        producer_epoch=first.producer_epoch, base_sequence=first.base_sequence,
        is_transactional=first.is_transactional, is_control=False,
        partition_leader_epoch=cfg.partition_leader_epoch)
    max_ts = NO_TIMESTAMP
    off_of_max = -1
    if a.to_magic > 0:
        for i, rec in enumerate(records):
            ts = now if ts_type == TimestampType.LOG_APPEND_TIME else rec.timestamp
            if ts > max_ts:
                max_ts, off_of_max = ts, a.next_offset + i
    last = a.next_offset + n - 1
    info = _records_info(a.to_magic, target, ts_type, now, a.next_offset, last, max_ts, off_of_max)
    if temp_bytes is None:
        # A2 reports MemoryRecordsBuilder.uncompressedBytesWritten(): header plus records.
        temp_bytes = len(out)
    return ValidationResult(
        batches=_split_entries(out), first_offset=a.next_offset, last_offset=last, max_timestamp=info[0],
        shallow_offset_of_max_timestamp=info[1], log_append_time_ms=now, message_size_maybe_changed=True,
        records_converted=n, temporary_memory_bytes=temp_bytes,
        conversion_time_ns=time.perf_counter_ns() - start_ns, path=path, source_compression=a.source,
        target_compression=target, target_level=level, record_count=n, valid_bytes=0)
