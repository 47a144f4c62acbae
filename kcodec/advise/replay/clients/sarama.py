"""sarama's ``AsyncProducer`` as Debian packages it (1.22.1), from its own source.

* Fill: one produce set per broker; a record counts as its key and value plus
  ``maximumRecordOverhead`` (36 bytes, ``record.go``) and a partition's batch starts at
  ``recordBatchOverhead`` (49, ``record_batch.go``) (``produce_set.go``, ``produceSet.add``).  The
  set is ready once it holds ``Producer.Flush.Bytes`` or more, or ``Producer.Flush.Messages``
  records (``produceSet.readyToFlush``): the record that crosses the limit is in it.  A
  partition's batch never reaches ``Producer.MaxMessageBytes`` (1,000,000; ``wouldOverflow``).
* Send: ``Producer.Flush.Frequency`` after the first record of a set a timer fires
  (``async_producer.go``, ``brokerProducer.run``); a ready set is handed to the one goroutine that
  sends a request and waits for its answer, and records keep joining it until that goroutine
  takes it.  With Frequency, Bytes and Messages all 0 a set is ready at once: records that arrive
  while a request is out make the next batch.  Bytes or Messages without a Frequency never flush
  on time, so a 0 ms setting is all three at 0 and only MaxMessageBytes limits its batches.
* Defaults: Frequency, Bytes and Messages 0; ``Version`` 0.8.2 (v0 message sets: v2 batches need
  ``Version`` 0.11 or later, zstd 2.1); ``Idempotent`` false, which writes producer id -1 and base
  sequence 0; ``MaxTimestamp`` is never set and is written as -1 (``record_batch.go``).
* Codecs (``compress.go``): gzip through Go's ``compress/gzip`` (header time 0, OS 255); snappy as
  one raw block (``go-xerial-snappy``'s ``Encode``); lz4 through ``pierrec/lz4`` (a frame with 4 MiB
  blocks and a content checksum: 4 bytes more than Java's below 64 KiB); zstd through
  ``DataDog/zstd``'s one-shot ``CompressLevel``, at ``CompressionLevelDefault`` (-1000) unless
  ``Producer.CompressionLevel`` is set: zstd's fastest level, which stores the records nearly as
  they are.
* Keyless records: ``NewHashPartitioner`` falls back to a random partition per record.
"""
from __future__ import annotations

from typing import Dict, Optional

from kcodec.advise.replay.client import BatchMarks, ClientRules, framed_as

__all__ = ["RULES", "MAX_MESSAGE_BYTES"]

MAX_MESSAGE_BYTES = 1000000  # Producer.MaxMessageBytes' default
_CODECS = {"none": "CompressionNone", "gzip": "CompressionGZIP", "snappy": "CompressionSnappy",
           "lz4": "CompressionLZ4", "zstd": "CompressionZSTD"}


def _writes(m: BatchMarks) -> bool:
    if not m.max_timestamp < 0 < m.records:
        return False
    # snappy: one raw block; lz4: independent 4 MiB blocks, content checksum; zstd: a frame stating
    # its content size, ending on its last data block
    return framed_as(m, lambda g: g[0] == 0 and g[2] == 255, False, (0x64, 0x70), (True, False))


def _names(rules: ClientRules, codec: str, level: Optional[int], default_level: bool, batch_bytes: int,
           linger_ms: int) -> Dict[str, str]:
    out = {"Producer.Compression": f"sarama.{_CODECS[codec]}"}
    if level is not None and not default_level:
        out["Producer.CompressionLevel"] = str(level)
    if linger_ms:
        out["Producer.Flush.Bytes"] = str(batch_bytes)
        out["Producer.Flush.Frequency"] = f"{linger_ms} * time.Millisecond"
    else:  # as fast as possible: Bytes without a Frequency would hold records until Bytes arrive
        out["Producer.Flush.Bytes"] = "0"
        out["Producer.Flush.Frequency"] = "0"
    return out


RULES = ClientRules("sarama", "uncompressed", None, False, MAX_MESSAGE_BYTES, 0, "Producer.CompressionLevel",
                    raw_snappy=True, zstd_ends_on_data=True, zstd_one_shot=True, load_bound_at_zero_linger=True,
                    fill_overhead=49, next_record="none", record_overhead=36, max_batch_bytes=MAX_MESSAGE_BYTES,
                    zero_linger_unbounded=True, default_levels=(("zstd", -1000),), lz4_frame_extra=4, writes=_writes,
                    names=_names, config_suffix="go", config_line="config.{key} = {value}", config_comment="//",
                    summary="Producer.Flush.*")
