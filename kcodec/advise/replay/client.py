"""Each producer client's batching rules, its configuration names, and the framing it leaves.

Java (``RecordAccumulator.tryAppend`` -> ``MemoryRecordsBuilder.hasRoomFor``) fills ``batch.size``
with *estimated compressed* bytes: the records appended so far times the topic's
``CompressionRatioEstimator`` estimate times 1.05.  librdkafka
(``rd_kafka_msgset_writer_write_msgq``) fills it with *uncompressed* bytes: the request written so
far plus the next record's worst-case wire size must stay within ``batch.size``, and a batch holds at
most ``batch.num.messages`` records.  Its ``batch.size`` counts the ProduceRequest's own header too,
which :data:`LIBRDKAFKA_REQUEST_OVERHEAD` approximates.  The other clients are one module each under
:mod:`kcodec.advise.replay.clients`, and :mod:`kcodec.advise.replay.registry` lists them all.

Every client's rules say which stored batches it can have written (:attr:`ClientRules.writes`),
from the marks a batch keeps of its writer (:class:`BatchMarks`): the gzip header's time, extra
flags and OS bytes, snappy-java's xerial stream against a raw snappy block, the LZ4 frame's flag
and block descriptor bytes, whether a zstd frame states its content size and how it ends, the
producer id and base sequence of a batch without idempotence, and a max timestamp left at -1.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Callable, Dict, Optional, Tuple

__all__ = ["ClientRules", "BatchMarks", "JAVA", "LIBRDKAFKA", "client_config", "kafka_config",
           "LIBRDKAFKA_REQUEST_OVERHEAD", "batch_marks", "framed_as", "gzip_header", "lz4_frame", "zstd_frame",
           "XERIAL", "ZSTD_EMPTY_END"]

# ProduceRequest header, client id "rdkafka", topic and partition framing, and the 61-byte v2 batch
# header: what rd_buf_len() already holds when the first record is written.
LIBRDKAFKA_REQUEST_OVERHEAD = 120

XERIAL = b"\x82SNAPPY\x00"
_GZIP_MAGIC = b"\x1f\x8b"
_LZ4_MAGIC = b"\x04\x22\x4d\x18"
_ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
#: a zstd frame's empty last block (last-block flag, raw, size 0): how a flushed and closed stream ends
ZSTD_EMPTY_END = b"\x01\x00\x00"
_GZIP_OS_UNKNOWN = 255  # java.util.zip.GZIPOutputStream, Python's gzip and Go's compress/gzip
_GZIP_OS_UNIX = 3  # zlib's OS_CODE on Unix, as librdkafka calls it
_BASE = struct.Struct(">qiibIhiqqqhii")


@dataclass(frozen=True)
class BatchMarks:
    """What one stored v2 batch keeps of the client that wrote it."""

    codec: int
    body: bytes  #: the records region's first 16 bytes
    tail: bytes  #: its last 3 bytes
    producer_id: int
    base_sequence: int
    max_timestamp: int
    records: int


def batch_marks(buf, position: int, size: int) -> Optional[BatchMarks]:
    """The marks of the v2 batch at ``position`` (None for a control batch, which the broker writes)."""
    (_, _, _, _, _, attributes, _, _, max_ts, pid, _, base_seq, count) = _BASE.unpack_from(buf, position)
    if attributes & 0x20:
        return None
    start, end = position + _BASE.size, position + size
    return BatchMarks(attributes & 0x07, bytes(buf[start:min(end, start + 16)]), bytes(buf[max(start, end - 3):end]),
                      pid, base_seq, max_ts, count)


def gzip_header(m: BatchMarks) -> Optional[Tuple[int, int, int]]:
    """A gzip batch's (MTIME, XFL, OS) header fields, or None when its body is not a gzip member."""
    if m.codec != 1 or len(m.body) < 10 or m.body[:2] != _GZIP_MAGIC:
        return None
    return int.from_bytes(m.body[4:8], "little"), m.body[8], m.body[9]


def lz4_frame(m: BatchMarks) -> Optional[Tuple[int, int]]:
    """An LZ4 batch's frame (FLG, BD) bytes, or None when its body is not an LZ4 frame."""
    if m.codec != 3 or len(m.body) < 6 or m.body[:4] != _LZ4_MAGIC:
        return None
    return m.body[4], m.body[5]


def zstd_frame(m: BatchMarks) -> Optional[Tuple[bool, bool]]:
    """A zstd batch's (states its content size, ends with an empty last block), or None when not a zstd frame.

    The frame header descriptor's single-segment flag or content-size flag means the frame was
    compressed in one call that knew the input's size; a stream opened without it leaves both clear.
    """
    if m.codec != 4 or len(m.body) < 5 or m.body[:4] != _ZSTD_MAGIC:
        return None
    descriptor = m.body[4]
    return bool(descriptor & 0xE0), m.tail == ZSTD_EMPTY_END


def _xerial(m: BatchMarks) -> bool:
    return m.body[:8] == XERIAL


def framed_as(m: BatchMarks, gzip: Callable[[Tuple[int, int, int]], bool], xerial: bool, lz4: Tuple[int, int],
              zstd: Tuple[bool, bool]) -> bool:
    """Whether ``m``'s records are framed as one client frames them: ``gzip`` tests the gzip header's
    (MTIME, XFL, OS), ``xerial`` is snappy-java's stream (else one raw snappy block), ``lz4`` the frame's
    (FLG, BD) bytes, ``zstd`` the frame's :func:`zstd_frame` marks.  Uncompressed records pass."""
    if m.codec == 1:
        g = gzip_header(m)
        return g is not None and gzip(g)
    if m.codec == 2:
        return _xerial(m) == xerial
    if m.codec == 3:
        return lz4_frame(m) == lz4
    if m.codec == 4:
        return zstd_frame(m) == zstd
    return True


def kafka_config(client: "ClientRules", codec: str, level: Optional[int], default_level: bool, batch_bytes: int,
                 linger_ms: int) -> Dict[str, str]:
    """A setting in the Java and librdkafka configuration names (Java's level names need clients 3.8+, KIP-390)."""
    out = {"compression.type": codec}
    if level is not None and not default_level:
        out[client.level_key(codec)] = str(level)
    out["batch.size"] = str(batch_bytes)
    out["linger.ms"] = str(linger_ms)
    return out


@dataclass(frozen=True)
class ClientRules:
    """How one producer client cuts batches, names its settings, and frames what it writes."""

    name: str
    #: ``estimated`` (Java: compressed bytes estimated with the ratio estimator) or ``uncompressed``
    fill: str
    #: most records in one batch (librdkafka's batch.num.messages), None for no limit
    max_records: Optional[int]
    #: whether linger.ms counts from the start of the first record's millisecond (Java's ms clock)
    #: or from the first record itself (librdkafka's microsecond clock)
    millisecond_clock: bool
    default_batch_size: int
    default_linger_ms: int
    #: configuration name of the level; ``{codec}`` is replaced by the codec's name ("" where none can be set)
    level_name: str
    #: sender delays (milliseconds) where today's batches cannot calibrate them: after the linger
    #: timer, and at linger.ms=0 (an idle sender sends 93-99.8% of records alone at 4 records/ms)
    default_delay_ms: float = 0.5
    default_immediate_delay_ms: float = 0.05
    #: whether a snappy batch's records are one raw snappy block (librdkafka) rather than
    #: snappy-java's stream of 32 KiB chunks behind a 16-byte header (Java)
    raw_snappy: bool = False
    #: whether a zstd frame ends on its last data block (librdkafka ends the stream once) rather than
    #: with an empty last block of 3 bytes after a flush (Java's zstd-jni stream, as kcodec writes it)
    zstd_ends_on_data: bool = False
    #: whether a zstd batch's records are compressed in one call that knows their size (a frame stating
    #: it, with parameters for that size) rather than as a stream
    zstd_one_shot: bool = False
    #: an uncompressed fill's bytes before the first record (librdkafka's request header and batch header)
    fill_overhead: int = LIBRDKAFKA_REQUEST_OVERHEAD
    #: what the next record adds to an uncompressed fill's test: ``upper`` (its worst case, librdkafka),
    #: ``size`` (its own size), or ``none`` (a record joins while the bytes before it are below the limit)
    next_record: str = "upper"
    #: an uncompressed fill counting each record as its key, value and headers plus this many bytes
    #: instead of its own size (None: its own size)
    record_overhead: Optional[int] = None
    #: the level each codec is compressed at where no level is set, where it is not the codec's default
    default_levels: Tuple[Tuple[str, int], ...] = ()
    #: bytes no batch reaches, whatever the setting (sarama's Producer.MaxMessageBytes; None: none)
    max_batch_bytes: Optional[int] = None
    #: whether a linger.ms=0 setting leaves batch.size unset (sarama flushes as fast as it can only then)
    zero_linger_unbounded: bool = False
    #: whether its batches at linger.ms=0 hold what arrives while its sender is busy, which the stored
    #: batches cannot say of the next run: such settings are priced at their worst case, every record alone
    load_bound_at_zero_linger: bool = False
    #: bytes each batch's LZ4 frame adds to the frame kcodec writes (Java's)
    lz4_frame_extra: int = 0
    #: the batches this client can have written (None: any)
    writes: Optional[Callable[[BatchMarks], bool]] = None
    #: a setting in the client's own names: (rules, codec, level, level is the default, batch bytes, linger ms)
    names: Callable[..., Dict[str, str]] = kafka_config
    #: what ``--producer-client``'s help says of its fill and configuration names
    summary: str = ""
    #: the client in a sentence of the report ("a Java producer's batches"); its name where empty
    title: str = ""
    #: the client version from which a codec's level can be set, where older ones cannot (the report
    #: then offers them the best setting at the codec's default level); None: every version can, or none
    levels_since: Optional[str] = None
    #: how ``--emit`` writes a setting for it: the file's extension, one line per name (``{key}`` and
    #: ``{value}`` replaced) and what starts a comment line in that language
    config_suffix: str = "properties"
    config_line: str = "{key}={value}"
    config_comment: str = "#"

    def level_key(self, codec: str) -> str:
        return self.level_name.format(codec=codec)

    @property
    def learns_ratio(self) -> bool:
        """Whether it fills ``batch.size`` with compressed bytes estimated from the ratio of the batches it
        closed (Java's ``CompressionRatioEstimator``), so a replay under a codec builds batches to learn it."""
        return self.fill == "estimated"

    @property
    def display_name(self) -> str:
        return self.title or self.name

    @property
    def sets_levels(self) -> bool:
        """Whether a level other than the codec's default can be configured."""
        return bool(self.level_name)

    def expresses(self, codec: str, level: Optional[int]) -> bool:
        """Whether the client can be configured to compress ``codec`` at ``level``: any level where it sets
        levels, else only the level it compresses at by itself (kafka-python's zstd is level 3)."""
        if self.sets_levels or level is None:
            return True
        own = self.build_level(codec, None)
        if own is None:
            from kcodec.compression import get_codec

            own = get_codec(codec).default_level
        return level == own

    def build_level(self, codec: str, level: Optional[int]) -> Optional[int]:
        """The level a batch is compressed at: ``level``, else the client's own default for the codec."""
        if level is not None:
            return level
        return dict(self.default_levels).get(codec)

    def wrote(self, m: BatchMarks) -> bool:
        return self.writes is None or self.writes(m)


def _java_writes(m: BatchMarks) -> bool:
    # a max timestamp of -1 over records is sarama's; a batch without a producer id has no sequence
    if m.max_timestamp < 0 < m.records or (m.producer_id < 0 and m.base_sequence >= 0):
        return False
    # GZIPOutputStream's fixed header; KafkaLZ4BlockOutputStream's independent 64 KiB blocks without
    # checksums; zstd-jni's stream, flushed and closed
    return framed_as(m, lambda g: g == (0, 0, _GZIP_OS_UNKNOWN), True, (0x60, 0x40), (False, True))


def _librdkafka_writes(m: BatchMarks) -> bool:
    if m.max_timestamp < 0 < m.records or (m.producer_id < 0 and m.base_sequence >= 0):
        return False
    # zstd: a stream ended once, on its last data block
    return framed_as(m, lambda g: g[0] == 0 and g[2] == _GZIP_OS_UNIX, False, (0x60, 0x40), (False, False))


def client_config(client: ClientRules, codec: str, level: Optional[int], default_level: bool, batch_bytes: int,
                  linger_ms: int) -> Dict[str, str]:
    """A setting in the client's own configuration names."""
    return client.names(client, codec, level, default_level, batch_bytes, linger_ms)


JAVA = ClientRules("java", "estimated", None, True, 16384, 5, "compression.{codec}.level", fill_overhead=61,
                   writes=_java_writes, load_bound_at_zero_linger=True,
                   summary="estimated compressed fill, compression.<codec>.level", title="Java", levels_since="3.8")
LIBRDKAFKA = ClientRules("librdkafka", "uncompressed", 10000, False, 1000000, 5, "compression.level",
                         raw_snappy=True, zstd_ends_on_data=True, writes=_librdkafka_writes,
                         summary="uncompressed fill, batch.num.messages, compression.level")
