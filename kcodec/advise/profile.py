"""Today's state of one chunk, from its batches as stored: codec mix, magic, records and bytes per batch.

The batch walk is the native one (:func:`kcodec.records.framing.iter_entries`)
and every header field is read at the offsets of its one home,
:mod:`kcodec.records.batch_header` (v2) and :mod:`kcodec.records.message_header`
(v0/v1), never at offsets written here.  Record sizes are counted the way
Kafka's ``DefaultRecord.sizeInBytes`` counts them, for the replay.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, List, Optional

import numpy as np

from kcodec.advise.replay import record_sizes, record_upper_bounds
from kcodec.records import batch_header, message_header

__all__ = ["CODEC_NAMES", "HIST_BINS", "TodayProfile", "record_columns", "profile_chunk"]

CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd", "other")
HIST_BINS = 32  # record sizes in powers of two: bin i holds sizes in [2**(i-1), 2**i)


@dataclass
class TodayProfile:
    """One chunk's batches as stored (``starts``: the first record of each data batch, then the record count)."""

    codec_bytes: List[int]
    magic_batches: List[int]
    log_append_batches: int
    min_ts: Optional[int]
    max_ts: Optional[int]
    batch_records: List[int]
    batch_bytes: List[int]
    record_size_hist: List[int]
    stored_bytes: int
    dominant: str
    starts: np.ndarray
    owner: np.ndarray  #: per record, the index of its batch among all entries

    def fields(self) -> Dict:
        """The columns of the chunk's metrics row that describe today's batches."""
        return {k: getattr(self, k) for k in ("codec_bytes", "magic_batches", "log_append_batches", "min_ts",
                                               "max_ts", "batch_records", "batch_bytes", "record_size_hist")}


def _lengths(arr) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(pc.binary_length(arr), -1).to_numpy(zero_copy_only=False).astype(np.int64)


def record_columns(table) -> Dict[str, np.ndarray]:
    """Per-record sizes and timestamps (ms) as numpy columns, Kafka's way of counting."""
    import pyarrow.compute as pc

    from kcodec.arrow.columns import as_binary, column, header_fields, timestamps_ms

    n = table.num_rows
    # Spark hands over whatever types the record files hold: anything but bytes is refused here.
    key = column(table, "key")
    key_len = _lengths(as_binary(key, "key")) if key is not None else np.full(n, -1, np.int64)
    value_len = _lengths(as_binary(column(table, "value")))
    hbytes = np.zeros(n, np.int64)
    hcount = np.zeros(n, np.int64)
    if "headers" in table.column_names and table["headers"].null_count < n:
        hdrs = table["headers"].combine_chunks()
        ki, vi = header_fields(hdrs)
        hcount = pc.fill_null(pc.list_value_length(hdrs), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(hdrs)
        if len(flat):
            from kcodec.advise.replay import varint_sizes

            kl = _lengths(as_binary(pc.struct_field(flat, [ki]), "header key"))
            vl = _lengths(as_binary(pc.struct_field(flat, [vi]), "header value"))
            each = varint_sizes(kl) + np.maximum(kl, 0) + varint_sizes(vl) + np.maximum(vl, 0)
            owner = np.repeat(np.arange(n), hcount)
            hbytes = np.bincount(owner, weights=each, minlength=n).astype(np.int64)
    # A record without a timestamp counts as Kafka's NO_TIMESTAMP (-1), not as the time it is read.
    ts = timestamps_ms(column(table, "timestamp"), n, missing=-1)
    payload = np.maximum(key_len, 0) + np.maximum(value_len, 0) + hbytes
    return {"key_len": key_len, "value_len": value_len, "header_bytes": hbytes, "header_count": hcount,
            "ts": ts, "payload": payload,
            "sizes": record_sizes(key_len, value_len, hbytes, hcount),
            "upper": record_upper_bounds(key_len, value_len, hbytes)}


def _attributes(data, position: np.ndarray, magic: np.ndarray) -> np.ndarray:
    """Each entry's attributes byte: the low byte of v2's int16, v0/v1's int8."""
    buf = np.frombuffer(data, np.uint8)
    last = len(buf) - 1
    v2 = buf[np.minimum(position + batch_header.ATTRIBUTES + 1, last)]
    legacy = buf[np.minimum(position + message_header.ATTRIBUTES, last)]
    return np.where(magic == 2, v2, legacy).astype(np.int64)


def profile_chunk(data, table, cols: Dict[str, np.ndarray]) -> TodayProfile:
    """Today's batches of a chunk; ``table`` is its records with the ``batch_position`` field."""
    from kcodec.records.framing import iter_entries

    entries = list(iter_entries(data))  # one tuple per batch, never per record
    pos = np.array([e.position for e in entries], np.int64)
    size = np.array([e.size for e in entries], np.int64)
    magic = np.array([e.magic for e in entries], np.int64)
    attr = _attributes(data, pos, magic)
    # COMPRESSION_MASK and TIMESTAMP_TYPE_MASK have the same bits in both formats.
    codec = attr & batch_header.COMPRESSION_MASK
    log_append = int(((attr & batch_header.TIMESTAMP_TYPE_MASK) != 0)[magic > 0].sum())
    codec_bytes = np.bincount(np.minimum(codec, 5), weights=size, minlength=6).astype(np.int64)
    bp = table["batch_position"].to_numpy(zero_copy_only=False) if table.num_rows else np.zeros(0, np.int64)
    owner = np.searchsorted(pos, bp)
    per_batch = np.bincount(owner, minlength=len(pos))
    data_batches = per_batch > 0  # control batches carry no data records
    ts = cols["ts"]
    valid = ts >= 0
    hist = np.bincount(np.minimum(np.ceil(np.log2(np.maximum(cols["payload"], 1) + 1)).astype(np.int64),
                                  HIST_BINS - 1), minlength=HIST_BINS)
    starts = np.concatenate(([0], np.flatnonzero(np.diff(owner)) + 1, [table.num_rows])).astype(np.int64)
    return TodayProfile(
        codec_bytes=codec_bytes.tolist(), magic_batches=np.bincount(magic, minlength=3).tolist(),
        log_append_batches=log_append,
        min_ts=int(ts[valid].min()) if valid.any() else None, max_ts=int(ts[valid].max()) if valid.any() else None,
        batch_records=per_batch[data_batches].astype(np.int32).tolist(),
        batch_bytes=size[data_batches].astype(np.int32).tolist(),
        record_size_hist=hist.astype(np.int64).tolist(), stored_bytes=int(size.sum()),
        dominant=CODEC_NAMES[int(np.argmax(codec_bytes[:5]))], starts=starts, owner=owner)
