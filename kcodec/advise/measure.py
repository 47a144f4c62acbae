"""What one Spark task measures on one chunk: today's batches, and every setting's batches replayed.

A chunk is a run of whole batches of one partition as stored.  Its records are
decoded once into Arrow columns; "today" is profiled from the batch headers, and
for every setting the producer's batching is replayed (:mod:`kcodec.advise.replay`)
and the batches are really built with kcodec and read back, timing both.
"""
from __future__ import annotations

import functools
import time
from typing import Dict, Iterator, List, Optional, Sequence

import numpy as np

from kcodec.advise.replay import (BATCH_OVERHEAD, JAVA, ClientRules, SenderModel, calibrate, client_rules,
                                  detect_client, form_batches, producer_groups, record_sizes,
                                  record_upper_bounds, warm_estimate)
from kcodec._native.columnar import encode_columnar
from kcodec.advise.grid import Setting
from kcodec.arrow import _compressed_batches, to_arrow
from kcodec.errors import KcodecError, RecordBuilderError
from kcodec.escape import json_text

__all__ = ["METRICS_DDL", "TODAY", "CODEC_NAMES", "HIST_BINS", "measure_chunk", "record_columns",
           "BatchEncoder"]

TODAY = "today"
CHUNK_ERROR = "kcodec advise chunk error: "
CODEC_NAMES = ("none", "gzip", "snappy", "lz4", "zstd", "other")
HIST_BINS = 32  # record sizes in powers of two: bin i holds sizes in [2**(i-1), 2**i)
ONE_BATCH = 2 ** 31 - 1

METRICS_DDL = (
    "topic string, partition int, chunk int, setting string, codec string, level int, batch_size int, "
    "linger_ms int, records long, payload_bytes long, plain_bytes long, batches long, stored_bytes long, "
    "compress_seconds double, read_seconds double, codec_bytes array<long>, magic_batches array<long>, "
    "log_append_batches long, min_ts long, max_ts long, batch_records array<int>, batch_bytes array<int>, "
    "record_size_hist array<long>, client string, sender_delay_ms double, sender_calibrated boolean, "
    "replay_batches long, producer_ids int, producers_replayed int")


def metrics_schema():
    """:data:`METRICS_DDL` as Arrow (mapInArrow matches columns by position and width)."""
    import pyarrow as pa

    i32, i64, f64, s = pa.int32(), pa.int64(), pa.float64(), pa.string()
    return pa.schema([
        ("topic", s), ("partition", i32), ("chunk", i32), ("setting", s), ("codec", s), ("level", i32),
        ("batch_size", i32), ("linger_ms", i32), ("records", i64), ("payload_bytes", i64), ("plain_bytes", i64),
        ("batches", i64), ("stored_bytes", i64), ("compress_seconds", f64), ("read_seconds", f64),
        ("codec_bytes", pa.list_(i64)), ("magic_batches", pa.list_(i64)), ("log_append_batches", i64),
        ("min_ts", i64), ("max_ts", i64), ("batch_records", pa.list_(i32)), ("batch_bytes", pa.list_(i32)),
        ("record_size_hist", pa.list_(i64)), ("client", s), ("sender_delay_ms", f64),
        ("sender_calibrated", pa.bool_()), ("replay_batches", i64), ("producer_ids", i32),
        ("producers_replayed", i32)])


def _lengths(arr) -> np.ndarray:
    import pyarrow.compute as pc

    return pc.fill_null(pc.binary_length(arr), -1).to_numpy(zero_copy_only=False).astype(np.int64)


def record_columns(table) -> Dict[str, np.ndarray]:
    """Per-record sizes and timestamps (ms) as numpy columns, Kafka's way of counting."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from kcodec.arrow import _as_binary, _column, _header_fields

    n = table.num_rows
    # Spark hands over whatever types the record files hold: anything but bytes is refused here.
    key = _column(table, "key")
    key_len = _lengths(_as_binary(key, "key")) if key is not None else np.full(n, -1, np.int64)
    value_len = _lengths(_as_binary(_column(table, "value")))
    hbytes = np.zeros(n, np.int64)
    hcount = np.zeros(n, np.int64)
    if "headers" in table.column_names and table["headers"].null_count < n:
        hdrs = table["headers"].combine_chunks()
        ki, vi = _header_fields(hdrs)
        hcount = pc.fill_null(pc.list_value_length(hdrs), 0).to_numpy(zero_copy_only=False).astype(np.int64)
        flat = pc.list_flatten(hdrs)
        if len(flat):
            from kcodec.advise.replay import varint_sizes

            kl = _lengths(_as_binary(pc.struct_field(flat, [ki]), "header key"))
            vl = _lengths(_as_binary(pc.struct_field(flat, [vi]), "header value"))
            each = varint_sizes(kl) + np.maximum(kl, 0) + varint_sizes(vl) + np.maximum(vl, 0)
            owner = np.repeat(np.arange(n), hcount)
            hbytes = np.bincount(owner, weights=each, minlength=n).astype(np.int64)
    stamps = _column(table, "timestamp")
    try:
        ts = stamps.cast(pa.int64()).to_numpy(zero_copy_only=False) if stamps is not None \
            else np.full(n, -1000, np.int64)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        raise RecordBuilderError(f"the timestamp column must hold timestamps or whole milliseconds, "
                                 f"not {stamps.type} values like these") from None
    ts = np.where(np.isnan(ts.astype(float)), -1000, ts).astype(np.int64) // 1000
    payload = np.maximum(key_len, 0) + np.maximum(value_len, 0) + hbytes
    return {"key_len": key_len, "value_len": value_len, "header_bytes": hbytes, "header_count": hcount,
            "ts": ts, "payload": payload,
            "sizes": record_sizes(key_len, value_len, hbytes, hcount),
            "upper": record_upper_bounds(key_len, value_len, hbytes)}


@functools.lru_cache(maxsize=None)
def _codec(name: str, level):
    from kcodec.compression import get_codec

    c = get_codec(name)
    return c, c.resolve_level(level)


class BatchEncoder:
    """Real Kafka v2 batches of a table's records cut where the caller says.

    The columns are prepared once; each batch is then one native encoding call
    on slices of them (plus one compression call), which keeps the cost per
    batch small when a replay makes thousands of tiny batches.
    """

    def __init__(self, table) -> None:
        from kcodec.arrow import _as_binary, _column, _header_fields, _offsets, _spec, _timestamps_ms

        n = table.num_rows
        key = _column(table, "key")
        self.key = _spec(_as_binary(key, "key")) if key is not None else None
        self.value = _spec(_as_binary(_column(table, "value")))
        self.hdrs = self.hkey = self.hval = None
        hdrs = _column(table, "headers")
        if hdrs is not None and hdrs.null_count < n:
            ki, vi = _header_fields(hdrs)
            structs = hdrs.values
            self.hdrs = (hdrs.buffers()[0] if hdrs.null_count else None, hdrs.offset,
                         _offsets(hdrs, hdrs.buffers()[1]), None)
            self.hkey = _spec(_as_binary(structs.field(ki), "header key"))
            self.hval = _spec(_as_binary(structs.field(vi), "header value"))
        self.ts = np.ascontiguousarray(_timestamps_ms(_column(table, "timestamp"), n), dtype=np.int64)

    @staticmethod
    def _slice(spec, a: int, b: int):
        return None if spec is None else (spec[0], spec[1] + a, spec[2][a:b + 1], spec[3])

    def batch(self, a: int, b: int, codec: str, level) -> bytes:
        """Records ``a:b`` as one batch."""
        c, lvl = _codec(codec, level)
        cols = (b - a, self._slice(self.key, a, b), self._slice(self.value, a, b), self._slice(self.hdrs, a, b),
                self.hkey, self.hval, self.ts[a:b], None, a, ONE_BATCH, 1.0, c.id != 0)
        if c.id == 0:
            return encode_columnar(*cols, direct=(0, -1, -1, -1, -1, -1))[0]
        return next(_compressed_batches(encode_columnar(*cols), c, lvl, -1, None, c.id, -1, -1, -1))

    def batches(self, starts: np.ndarray, codec: str, level) -> List[bytes]:
        """One batch per ``starts[i]:starts[i+1]``."""
        return [self.batch(a, b, codec, level) for a, b in zip(starts[:-1].tolist(), starts[1:].tolist())]


def _best_time(fn, min_seconds: float = 0.05, tries: int = 3) -> float:
    """Seconds ``fn()`` takes: the best of up to ``tries`` runs while runs are shorter than ``min_seconds``
    (a first call pays for imports and codec contexts; small chunks need more than one look)."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        fn()
        took = time.perf_counter() - t0
        best = min(best, took)
        if took >= min_seconds:
            break
    return best


def simulate(encoder: BatchEncoder, cols: Dict[str, np.ndarray], setting: Setting, client: ClientRules = JAVA,
             sender: Optional[SenderModel] = None):
    """The setting's batches for one producer's records of one partition, and the seconds building them took.

    Only building the batches is timed (each batch is built as it closes,
    since Java's ratio estimate needs its size), not the replay's own
    bookkeeping.
    """
    built: List[bytes] = []
    compressed = setting.codec != "none"
    sizes = cols["sizes"]
    spent = 0.0

    def close(a: int, b: int) -> float:
        nonlocal spent
        t0 = time.perf_counter()
        batch = encoder.batch(a, b, setting.codec, setting.level)
        spent += time.perf_counter() - t0
        built.append(batch)
        return (len(batch) - BATCH_OVERHEAD) / max(1, int(sizes[a:b].sum()))

    def ratio(a: int, b: int) -> float:
        return (len(encoder.batch(a, b, setting.codec, setting.level)) - BATCH_OVERHEAD) / max(1, int(sizes[a:b].sum()))

    encoder.batch(0, 1, setting.codec, setting.level)  # codec contexts and imports are not the data's cost
    # A chunk is a slice of a running producer's stream: its ratio estimate is warmed up, not 1.0.
    estimate = warm_estimate(cols["ts"], sizes, cols["upper"], setting.batch_bytes, setting.linger_ms, ratio,
                             client, sender) if compressed else 1.0
    form_batches(cols["ts"], sizes, cols["upper"], setting.batch_bytes, setting.linger_ms, compressed=compressed,
                 close=close, client=client, sender=sender, estimate=estimate)
    return built, spent


def _profile(data, table, cols) -> Dict:
    """Today's batches: codec mix, magic, records and bytes per batch, timestamps, record sizes."""
    from kcodec.records.framing import iter_entries

    entries = list(iter_entries(data))  # one tuple per batch, never per record
    pos = np.array([e.position for e in entries], np.int64)
    size = np.array([e.size for e in entries], np.int64)
    magic = np.array([e.magic for e in entries], np.int64)
    buf = np.frombuffer(data, np.uint8)
    # attributes: v2 int16 at +21 (low byte at +22); v0/v1 int8 at +17
    attr = np.where(magic == 2, buf[np.minimum(pos + 22, len(buf) - 1)], buf[np.minimum(pos + 17, len(buf) - 1)])
    codec = (attr & 0x07).astype(np.int64)
    log_append = int(((attr & 0x08) != 0)[magic > 0].sum())
    codec_bytes = np.bincount(np.minimum(codec, 5), weights=size, minlength=6).astype(np.int64)
    bp = table["batch_position"].to_numpy(zero_copy_only=False) if table.num_rows else np.zeros(0, np.int64)
    owner = np.searchsorted(pos, bp)
    per_batch = np.bincount(owner, minlength=len(pos))
    data_batches = per_batch > 0  # control batches carry no data records
    ts = cols["ts"]
    valid = ts >= 0
    rs = cols["payload"]
    hist = np.bincount(np.minimum(np.ceil(np.log2(np.maximum(rs, 1) + 1)).astype(np.int64), HIST_BINS - 1),
                       minlength=HIST_BINS)
    return {"codec_bytes": codec_bytes.tolist(), "magic_batches": np.bincount(magic, minlength=3).tolist(),
            "log_append_batches": log_append,
            "min_ts": int(ts[valid].min()) if valid.any() else None,
            "max_ts": int(ts[valid].max()) if valid.any() else None,
            "batch_records": per_batch[data_batches].astype(np.int32).tolist(),
            "batch_bytes": size[data_batches].astype(np.int32).tolist(),
            "record_size_hist": hist.astype(np.int64).tolist(), "stored_today": int(size.sum()),
            "dominant": CODEC_NAMES[int(np.argmax(codec_bytes[:5]))], "owner": owner}


def _row(topic, partition, chunk, name, setting, records, payload, plain, batches, stored, cs, rs, **profile):
    row = {"topic": topic, "partition": partition, "chunk": chunk, "setting": name,
           "codec": setting.codec if setting else None, "level": setting.level if setting else None,
           "batch_size": setting.batch_bytes if setting else None,
           "linger_ms": setting.linger_ms if setting else None, "records": records, "payload_bytes": payload,
           "plain_bytes": plain, "batches": batches, "stored_bytes": stored, "compress_seconds": cs,
           "read_seconds": rs}
    for k in ("codec_bytes", "magic_batches", "log_append_batches", "min_ts", "max_ts", "batch_records",
              "batch_bytes", "record_size_hist", "client", "sender_delay_ms", "sender_calibrated", "replay_batches", "producer_ids",
              "producers_replayed"):
        row[k] = profile.get(k)
    return row


def _read_seconds(data) -> float:
    """What a consumer pays: CRC check, decompression and decoding of every batch."""
    return _best_time(lambda: to_arrow(data, use_threads=False))


def measure_chunk(topic: str, partition: int, chunk: int, data: bytes, settings: Sequence[Setting],
                  client: str = "auto", today_linger_ms: Optional[int] = None, producers: int = 1) -> List[Dict]:
    """One row for today's batches and one per setting, for one chunk.

    ``client`` is ``java``, ``librdkafka`` or ``auto`` (the stored framing tells, else Java).
    ``today_linger_ms`` is today's linger.ms where known (record inputs), for the sender calibration.
    Each producer id's records are replayed on their own; records without one are split among
    ``producers`` producers.
    """
    table = to_arrow(data, batch_fields=("batch_position", "producer_id"), use_threads=False)
    if table.num_rows == 0:
        return []
    cols = record_columns(table)
    prof = _profile(data, table, cols)
    owner = prof.pop("owner")
    starts = np.concatenate(([0], np.flatnonzero(np.diff(owner)) + 1, [table.num_rows]))
    rules = client_rules(detect_client(data) or JAVA.name) if client == "auto" else client_rules(client)
    replays, calibration = _producer_replays(table, cols, owner, len(starts) - 1, rules, today_linger_ms, producers)
    encoder = BatchEncoder(table)
    plain = sum(len(b) for b in encoder.batches(starts, "none", None))
    compress_today = _best_time(lambda: encoder.batches(starts, prof["dominant"], None))
    read_today = _read_seconds(data)
    payload = int(cols["payload"].sum())
    n = table.num_rows
    rows = [_row(topic, partition, chunk, TODAY, None, n, payload, plain, len(starts) - 1, prof.pop("stored_today"),
                 compress_today, read_today, **calibration, **prof)]
    for s in settings:
        batches: List[bytes] = []
        cs = 0.0
        for enc, sub_cols, sender in replays:
            built, spent = simulate(enc, sub_cols, s, rules, sender)
            batches += built
            cs += spent
        rows.append(_row(topic, partition, chunk, s.label, s, n, payload, plain, len(batches),
                         sum(len(b) for b in batches), cs, _read_seconds(b"".join(batches))))
    return rows


def _producer_replays(table, cols, owner, today_batches: int, rules: ClientRules, today_linger_ms: Optional[int],
                      producers: int):
    """Per producer: its encoder, columns and calibrated sender; and the calibration's row fields."""
    import pyarrow as pa

    pids = table["producer_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    groups = producer_groups(pids, producers)
    n = table.num_rows
    out, delays, fits = [], [], []
    for g in groups:
        whole = len(groups) == 1
        sub = table if whole else table.take(pa.array(g))
        sub_cols = cols if whole else record_columns(sub)
        if whole:
            mine = today_batches
        elif pids[g[0]] >= 0:
            mine = len(np.unique(owner[g]))
        else:  # records without a producer id were split in turn: a share of today's batches each
            mine = max(1, round(today_batches * len(g) / n))
        cal = calibrate(sub_cols["ts"], mine, today_linger_ms, rules)
        out.append((BatchEncoder(sub), sub_cols, cal.model(rules)))
        delays.append(cal.delay_ms)
        fits.append(cal)
    fields = {"client": rules.name, "sender_delay_ms": float(np.median(delays)),
              "sender_calibrated": all(c.applies for c in fits),
              "replay_batches": sum(c.replay_batches for c in fits),
              "producer_ids": int(len(np.unique(pids[pids >= 0]))), "producers_replayed": len(groups)}
    return out, fields


def measure_batches(batches: Iterator, settings: Sequence[Setting], client: str = "auto",
                    today_linger_ms: Optional[int] = None, producers: int = 1):
    """mapInArrow body: chunk rows in, metric rows out."""
    import pyarrow as pa

    schema = metrics_schema()
    for b in batches:
        for i in range(b.num_rows):  # one chunk (megabytes) per step
            topic = b.column(0)[i].as_py()
            partition = b.column(1)[i].as_py()
            chunk = b.column(2)[i].as_py()
            data = b.column(3)[i].as_buffer()
            try:
                rows = measure_chunk(topic, partition, chunk, memoryview(data).tobytes() if data else b"", settings,
                                     client, today_linger_ms, producers)
            except KcodecError as exc:
                # Spark wraps a task's exception in its own; the marked line lets the driver say it in one
                # line, with the file and byte it knows for the range.
                # JSON keeps it one ASCII line whatever the topic name holds.
                fields = [topic, partition, chunk, exc.position, exc.batch_offset, exc.message]
                raise KcodecError(CHUNK_ERROR + json_text(fields)) from None
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)
