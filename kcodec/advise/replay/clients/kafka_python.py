"""kafka-python 3.0's producer (``KafkaProducer``), from its own source (kafka-python 3.0.12).

* Fill: a record joins the open batch while the batch's buffer (the 61-byte v2 header plus the
  records written so far, uncompressed) plus the record's own size stays within ``batch_size``;
  the first record always joins (``kafka/record/default_records.py``,
  ``DefaultRecordBatchBuilder.append``: ``required_size + len(main_buffer) > self._batch_size and
  not first_message``).  No record count limit.
* Send: ``RecordAccumulator.ready`` (``kafka/producer/record_accumulator.py``) takes a batch once it
  is full or ``linger_ms`` has passed since it was made, on ``time.time()`` (not whole milliseconds).
* Defaults: ``batch_size=16384``, ``linger_ms=0``, ``enable_idempotence=True``
  (``kafka/producer/kafka.py``, ``DEFAULT_CONFIG``).
* Codecs (``kafka/codec.py``): gzip through Python's ``gzip.GzipFile`` at level 9 (the header
  carries the time of compression, extra flags 2 and OS 255); snappy as a xerial stream of 32 KiB
  blocks; lz4 through ``lz4.frame.compress`` (a frame that states its content size: 8 bytes more
  than Java's); zstd through ``zstandard``'s one-shot ``compress`` at level 3 (a frame that states
  its content size and ends on its last data block).  No level can be set.  A batch whose
  compressed records are not smaller than its plain ones is sent uncompressed
  (``DefaultRecordBatchBuilder._maybe_compress``).
* Keyless records: ``DefaultPartitioner`` (``kafka/partitioner/default.py``) picks a random
  available partition per record.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

from kcodec.advise.replay.client import BatchMarks, ClientRules, framed_as

__all__ = ["RULES", "python_names"]


def _writes(m: BatchMarks) -> bool:
    if m.max_timestamp < 0 < m.records or (m.producer_id < 0 and m.base_sequence >= 0):
        return False
    # gzip: the header carries the time of compression; lz4: independent 64 KiB blocks, content size
    # stated; zstd: a frame stating its content size, ending on its last data block
    return framed_as(m, lambda g: g[0] != 0 and g[2] == 255, True, (0x68, 0x40), (True, False))


def python_names(batch_size: str) -> Callable[..., Dict[str, str]]:
    """kafka-python's way of naming a setting, its batch size called ``batch_size`` (aiokafka, written
    after it, calls it ``max_batch_size``)."""
    def names(rules: ClientRules, codec: str, level: Optional[int], default_level: bool, batch_bytes: int,
              linger_ms: int) -> Dict[str, str]:
        return {"compression_type": "None" if codec == "none" else repr(codec), batch_size: str(batch_bytes),
                "linger_ms": str(linger_ms)}
    return names


RULES = ClientRules("kafka-python", "uncompressed", None, False, 16384, 0, "", zstd_ends_on_data=True,
                    zstd_one_shot=True, load_bound_at_zero_linger=True, fill_overhead=61, next_record="size",
                    default_levels=(("gzip", 9),), lz4_frame_extra=8, writes=_writes,
                    names=python_names("batch_size"), config_suffix="py", config_line="{key}={value},",
                    summary="uncompressed fill, keyword arguments, no levels")
