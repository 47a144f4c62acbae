"""aiokafka 0.14's producer (``AIOKafkaProducer``), from its own source.

* Fill: as kafka-python's: the 61-byte v2 header plus the records so far plus the next record's
  own size within ``max_batch_size``, the first record always
  (``aiokafka/record/default_records.py``, ``DefaultRecordBatchBuilder.append``).
* Send: a batch is drained once ``linger_ms`` has passed since it was made
  (``aiokafka/producer/message_accumulator.py``, ``MessageBatch.remaining_linger`` on
  ``time.monotonic()``) or it is full.
* Defaults: ``max_batch_size=16384``, ``linger_ms=0``, ``enable_idempotence=False``
  (``aiokafka/producer/producer.py``); without idempotence a batch carries producer id -1 and base
  sequence 0.
* Codecs (``aiokafka/codec.py``): gzip through Python's ``gzip.GzipFile`` at level 9; snappy as a
  xerial stream of 32 KiB blocks (``cramjam``); lz4 through ``cramjam.lz4.Compressor`` at level 9
  (LZ4HC) with block checksums (4 bytes per block more than Java's frame); zstd through
  ``cramjam.zstd.compress`` at level 3 (a frame stating its content size, ending on data).  No
  level can be set.  A batch whose compressed records are not smaller is sent uncompressed.
* Keyless records: ``DefaultPartitioner`` picks a random available partition per record.
"""
from __future__ import annotations

from kcodec.advise.replay.client import BatchMarks, ClientRules, framed_as
from kcodec.advise.replay.clients.kafka_python import python_names

__all__ = ["RULES"]

#: cramjam's LZ4 level 9 is LZ4HC; kcodec's level 9 is Java's fast compressor, and its nearest HC level is 10
_LZ4_HC = 10


def _writes(m: BatchMarks) -> bool:
    if m.max_timestamp < 0 < m.records or (m.producer_id < 0 and m.base_sequence < 0):
        return False
    # gzip: the header carries the time of compression; lz4: independent 64 KiB blocks with block
    # checksums; zstd: a frame stating its content size, ending on its last data block
    return framed_as(m, lambda g: g[0] != 0 and g[2] == 255, True, (0x70, 0x40), (True, False))


RULES = ClientRules("aiokafka", "uncompressed", None, False, 16384, 0, "", zstd_ends_on_data=True,
                    zstd_one_shot=True, load_bound_at_zero_linger=True, fill_overhead=61, next_record="size",
                    default_levels=(("gzip", 9), ("lz4", _LZ4_HC)), lz4_frame_extra=4, writes=_writes,
                    names=python_names("max_batch_size"), config_suffix="py", config_line="{key}={value},",
                    summary="uncompressed fill, keyword arguments, no levels")
