"""Each producer client's batching rules, its configuration names, and telling the clients apart.

Java (``RecordAccumulator.tryAppend`` -> ``MemoryRecordsBuilder.hasRoomFor``) fills ``batch.size``
with *estimated compressed* bytes: the records appended so far times the topic's
``CompressionRatioEstimator`` estimate times 1.05.  librdkafka
(``rd_kafka_msgset_writer_write_msgq``) fills it with *uncompressed* bytes: the request written so
far plus the next record's worst-case wire size must stay within ``batch.size``, and a batch holds at
most ``batch.num.messages`` records.  Its ``batch.size`` counts the ProduceRequest's own header too,
which :data:`LIBRDKAFKA_REQUEST_OVERHEAD` approximates.

The stored batches tell the clients apart where a codec leaves a mark (the framing each client
writes): snappy-java's xerial stream against librdkafka's raw snappy block, and the gzip header's
OS byte (Java's ``GZIPOutputStream`` writes 255, zlib as librdkafka calls it writes 3).  LZ4 and zstd
frames of the two clients carry no difference this replay relies on, and uncompressed batches none.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Optional

__all__ = ["ClientRules", "JAVA", "LIBRDKAFKA", "CLIENTS", "client_rules", "detect_client", "client_config",
           "LIBRDKAFKA_REQUEST_OVERHEAD"]

# ProduceRequest header, client id "rdkafka", topic and partition framing, and the 61-byte v2 batch
# header: what rd_buf_len() already holds when the first record is written.
LIBRDKAFKA_REQUEST_OVERHEAD = 120

_XERIAL = b"\x82SNAPPY\x00"
_GZIP_MAGIC = b"\x1f\x8b"
_GZIP_OS_JAVA = 255  # java.util.zip.GZIPOutputStream's OS_UNKNOWN
_GZIP_OS_ZLIB = 3  # zlib's OS_CODE on Unix


@dataclass(frozen=True)
class ClientRules:
    """How one producer client cuts batches and names its settings."""

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
    #: configuration name of the level; ``{codec}`` is replaced by the codec's name
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

    def level_key(self, codec: str) -> str:
        return self.level_name.format(codec=codec)


JAVA = ClientRules("java", "estimated", None, True, 16384, 5, "compression.{codec}.level")
LIBRDKAFKA = ClientRules("librdkafka", "uncompressed", 10000, False, 1000000, 5, "compression.level",
                        raw_snappy=True, zstd_ends_on_data=True)
CLIENTS: Dict[str, ClientRules] = {c.name: c for c in (JAVA, LIBRDKAFKA)}


def client_rules(name: str) -> ClientRules:
    """The rules of ``java`` or ``librdkafka``."""
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValueError(f"unknown producer client {name!r} (choose {', '.join(CLIENTS)} or auto)") from None


def detect_client(data) -> Optional[str]:
    """The client whose framing the compressed v2 batches of ``data`` show, or None when none tells.

    A mixed answer (both clients' marks) is None too: the replay then follows the client the
    user names, or Java's rules.
    """
    from kcodec.records.batch_header import ATTRIBUTES, COMPRESSION_MASK, HEADER
    from kcodec.records.framing import iter_entries

    buf = memoryview(data).cast("B")
    seen = set()
    for e in iter_entries(buf):
        if e.magic != 2 or e.size < HEADER.size + 10:
            continue
        codec = buf[e.position + ATTRIBUTES + 1] & COMPRESSION_MASK
        body = bytes(buf[e.position + HEADER.size:e.position + HEADER.size + 10])
        if codec == 2:
            seen.add("java" if body[:8] == _XERIAL else "librdkafka")
        elif codec == 1 and body[:2] == _GZIP_MAGIC:
            if body[9] == _GZIP_OS_JAVA:
                seen.add("java")
            elif body[9] == _GZIP_OS_ZLIB:
                seen.add("librdkafka")
        else:
            continue
        if len(seen) > 1:
            return None
    return seen.pop() if seen else None


def client_config(client: ClientRules, codec: str, level: Optional[int], default_level: bool, batch_bytes: int,
                  linger_ms: int) -> Dict[str, str]:
    """A setting in the client's own configuration names (Java's level names need clients 3.8+, KIP-390)."""
    out = {"compression.type": codec}
    if level is not None and not default_level:
        out[client.level_key(codec)] = str(level)
    out["batch.size"] = str(batch_bytes)
    out["linger.ms"] = str(linger_ms)
    return out
