"""What one Spark task does with one chunk: profile, replay, measure; one metrics row per setting.

A chunk is a run of whole batches of one partition as stored.  Its records
are decoded once into Arrow columns; today's batches are profiled
(:mod:`kcodec.advise.profile`), each producer's batching is replayed under
every setting (:mod:`kcodec.advise.replay`), and the replayed batches are
built and read back with kcodec's own builder and reader
(:mod:`kcodec.advise.measure`).  This module only passes values between
those stages, and does each piece of work once: settings that replay alike
(the same codec where Java learns its ratio, the same ``batch.size``, and
``linger.ms`` values that end each batch at the same record) share one
replay, and settings whose cuts come out the same share one build, read and
timing, since they are the same bytes.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from kcodec.advise.cpu import modelled
from kcodec.advise.grid import Setting
from kcodec.advise.measure import (
    MIN_REP_SECONDS,
    ZSTD_EMPTY_LAST_BLOCK,
    BatchEncoder,
    CpuTime,
    measure_build,
    measure_read,
    zstd_empty_last_blocks,
    zstd_one_shot_bytes,
)
from kcodec.advise.profile import CODEC_NAMES, HIST_BINS, TodayProfile, profile_chunk, record_columns
from kcodec.advise.replay import (
    DEFAULT_CLIENT,
    ClientRules,
    SenderModel,
    calibrate,
    client_rules,
    detect_client,
    producer_groups,
    replay_starts,
    time_limits,
    warm_records,
)
from kcodec.errors import KcodecError
from kcodec.escape import json_text

__all__ = ["METRICS", "METRICS_DDL", "TODAY", "CHUNK_ERROR", "CODEC_NAMES", "HIST_BINS", "measure_chunk",
           "measure_batches", "metrics_schema"]

TODAY = "today"
CHUNK_ERROR = "kcodec advise chunk error: "

#: the metrics row of one setting of one chunk: its setting and what its batches measure
_SETTING_COLUMNS = (
    ("topic", "string"), ("partition", "int"), ("chunk", "int"), ("setting", "string"), ("codec", "string"),
    ("level", "int"), ("batch_size", "int"), ("linger_ms", "int"), ("records", "long"), ("payload_bytes", "long"),
    ("plain_bytes", "long"), ("batches", "long"), ("stored_bytes", "long"), ("compress_seconds", "double"),
    ("compress_spread", "double"), ("read_seconds", "double"), ("read_spread", "double"),
)
#: what today's batches show, on today's row only (:mod:`kcodec.advise.profile`)
_PROFILE_COLUMNS = (
    ("codec_bytes", "array<long>"), ("magic_batches", "array<long>"), ("log_append_batches", "long"),
    ("min_ts", "long"), ("max_ts", "long"), ("batch_records", "array<int>"), ("batch_bytes", "array<int>"),
    ("record_size_hist", "array<long>"), ("client", "string"), ("sender_delay_ms", "double"),
    ("sender_calibrated", "boolean"), ("replay_batches", "long"), ("producer_ids", "int"),
    ("producers_replayed", "int"), ("client_recognised", "boolean"),
)
#: the worst case a load-bound setting is priced at
_WORST_COLUMNS = (
    ("worst_stored_bytes", "long"),
)
#: every metrics column, name and Spark SQL type, in the order a row is written: stated once, and
#: :data:`METRICS_DDL`, :func:`metrics_schema` and the profile's fields are read from it
METRICS = _SETTING_COLUMNS + _PROFILE_COLUMNS + _WORST_COLUMNS
METRICS_DDL = ", ".join(f"{name} {kind}" for name, kind in METRICS)


def metrics_schema():
    """:data:`METRICS` as Arrow (mapInArrow matches columns by position and width)."""
    import pyarrow as pa

    arrow = {"string": pa.string(), "int": pa.int32(), "long": pa.int64(), "double": pa.float64(),
             "boolean": pa.bool_(), "array<int>": pa.list_(pa.int32()), "array<long>": pa.list_(pa.int64())}
    return pa.schema([(name, arrow[kind]) for name, kind in METRICS])


_PROFILE_FIELDS = tuple(name for name, _ in _PROFILE_COLUMNS)


def _row(topic, partition, chunk, name, setting, records, payload, plain, batches, stored, cs: CpuTime,
         rs: CpuTime, worst: Optional[int] = None, **profile) -> Dict:
    row = {"topic": topic, "partition": partition, "chunk": chunk, "setting": name,
           "codec": setting.codec if setting else None, "level": setting.level if setting else None,
           "batch_size": setting.batch_bytes if setting else None,
           "linger_ms": setting.linger_ms if setting else None, "records": records, "payload_bytes": payload,
           "plain_bytes": plain, "batches": batches, "stored_bytes": stored, "compress_seconds": cs.seconds,
           "compress_spread": cs.spread, "read_seconds": rs.seconds, "read_spread": rs.spread,
           "worst_stored_bytes": worst}
    for k in _PROFILE_FIELDS:
        row[k] = profile.get(k)
    return row


def _sum(times: Sequence[CpuTime]) -> CpuTime:
    """CPU time of several producers' builds: medians and spreads add up."""
    return CpuTime(sum(t.seconds for t in times), sum(t.spread for t in times), min(t.reps for t in times),
                   sum(t.best for t in times))


def _min_seconds(cpu_cost: str, codec: str, level) -> float:
    """How long a timing must run: long enough to bill where the bill takes it, one pass where it is only shown."""
    return MIN_REP_SECONDS if cpu_cost == "measured" or not modelled(codec, level) else 0.0


def measure_chunk(topic: str, partition: int, chunk: int, data: bytes, settings: Sequence[Setting],
                  client: str = "auto", today_linger_ms: Optional[int] = None, producers: int = 1,
                  cpu_cost: str = "model") -> List[Dict]:
    """One row for today's batches and one per setting, for one chunk.

    ``client`` is a client's name (:data:`~kcodec.advise.replay.CLIENTS`) or ``auto``: the one client
    whose framing every batch shows, else Java's rules, and the row says the client was not recognised.
    ``today_linger_ms`` is today's linger.ms where known (record inputs), for the sender calibration.
    Each producer id's records are replayed on their own; records without one are split among
    ``producers`` producers.  ``cpu_cost`` is the bill's source of CPU (``--cpu-cost``): where it is
    the model, measured times are shown only, and each build and read is timed once.
    """
    from kcodec.arrow.decode import to_arrow

    table = to_arrow(data, batch_fields=("batch_position", "producer_id"), use_threads=False)
    if table.num_rows == 0:
        return []
    cols = record_columns(table)
    prof = profile_chunk(data, table, cols)
    detected = detect_client(data) if client == "auto" else client
    rules = client_rules(detected or DEFAULT_CLIENT.name)
    replays, calibration = _producer_replays(table, cols, prof, rules, today_linger_ms, producers)
    calibration["client_recognised"] = detected is not None
    encoder = BatchEncoder(table)
    plain = sum(map(len, encoder.build(prof.starts, "none", None)))
    today_min = _min_seconds(cpu_cost, prof.dominant, None)
    _, compress_today = measure_build(encoder, prof.starts, prof.dominant, None, min_seconds=today_min)
    read_today = measure_read([data], min_seconds=today_min)
    payload = int(cols["payload"].sum())
    n = table.num_rows
    rows = [_row(topic, partition, chunk, TODAY, None, n, payload, plain, len(prof.starts) - 1, prof.stored_bytes,
                 compress_today, read_today, **calibration, **prof.fields())]
    reads: Dict[Tuple, CpuTime] = {}
    # a codec and level's kept batches are let go after its last setting: a chunk's batches of every
    # codec and level at once would hold several times the chunk
    last = {(s.codec, s.level): i for i, s in enumerate(settings)}
    for i, s in enumerate(settings):
        min_s = _min_seconds(cpu_cost, s.codec, s.level)
        built = [p.build(s, min_s) for p in replays]
        # Settings whose replays cut alike build the same batches: built, read and timed once.
        key = tuple(b.key for b in built)
        read = reads.get(key)
        if read is None:
            batches = [x for p, b in zip(replays, built) for x in p.batches(b)]
            read = reads[key] = measure_read(batches, min_seconds=min_s)
        # where batches at linger.ms=0 follow the sender's load, the stored bytes of every record alone bound them
        worst = sum(p.alone(s) for p in replays) if s.linger_ms == 0 and rules.load_bound_at_zero_linger else None
        rows.append(_row(topic, partition, chunk, s.label, s, n, payload, plain, sum(b.count for b in built),
                         sum(b.stored for b in built), _sum([b.seconds for b in built]), read, worst))
        if last[(s.codec, s.level)] == i:
            for p in replays:
                p.encoder.forget(s.codec, s.level)
    return rows


@dataclass(frozen=True)
class _Built:
    """One producer's batches under a setting, as counted and timed (the batches themselves are not kept)."""

    key: Tuple
    count: int
    stored: int
    seconds: CpuTime


class _Producer:
    """One producer's records of a chunk, replayed and built per setting.

    Settings that replay alike share the replay, and settings whose cuts come out the same share
    the build: the batches are the same bytes, so their counts, sizes and times are too.
    """

    def __init__(self, encoder: BatchEncoder, cols: Dict[str, np.ndarray], rules: ClientRules,
                 sender: SenderModel) -> None:
        self.encoder, self.cols, self.rules, self.sender = encoder, cols, rules, sender
        self._limits: Dict[int, Optional[Tuple[bytes, bytes]]] = {}
        self._starts: Dict[Tuple, np.ndarray] = {}
        self._built: Dict[Tuple, _Built] = {}
        self._alone: Dict[Tuple, int] = {}
        # the batches just built; a framed uncompressed build is a view of the encoder's scratch
        # buffer, valid until its next such build
        self._fresh: Optional[Tuple[Tuple, Sequence[Union[bytes, memoryview]]]] = None

    def _time_key(self, linger_ms) -> Optional[Tuple[bytes, bytes]]:
        """What the replay takes from ``linger_ms``, over the chunk and over the records the warm-up replays."""
        if linger_ms not in self._limits:
            ts = self.cols["ts"]
            whole = time_limits(ts, linger_ms, self.rules, self.sender)
            warm = time_limits(ts[:warm_records(self.cols["sizes"])], linger_ms, self.rules, self.sender)
            self._limits[linger_ms] = None if whole is None or warm is None else (whole.tobytes(), warm.tobytes())
        return self._limits[linger_ms]

    def starts(self, s: Setting) -> np.ndarray:
        """The replay's cuts under ``s``."""
        limits = self._time_key(s.linger_ms)
        if limits is None:
            return replay_starts(self.encoder, self.cols, s, self.rules, self.sender)
        compressed = s.codec != "none"
        # Only Java's compressed fill learns the ratio, the one step that depends on the codec and level.
        learns = compressed and self.rules.learns_ratio
        key = (compressed, (s.codec, s.level) if learns else None, s.batch_bytes, limits)
        got = self._starts.get(key)
        if got is None:
            got = self._starts[key] = replay_starts(self.encoder, self.cols, s, self.rules, self.sender)
        return got

    def build(self, s: Setting, min_seconds: float) -> _Built:
        starts = self.starts(s)
        # a client that compresses a codec at a level of its own where none is set is built at that level
        level = self.rules.build_level(s.codec, s.level)
        key = (s.codec, level, starts.tobytes())
        got = self._built.get(key)
        if got is None:
            # A bill taken from measurements times the build on its own, repeated until long enough to
            # time; otherwise the batches Java's estimate already made are framed, not made again.
            framed = self.encoder.framed(starts, s.codec, level) if min_seconds == 0 else None
            batches: Sequence[Union[bytes, memoryview]]
            if framed is None:
                batches, cs = measure_build(self.encoder, starts, s.codec, level, min_seconds=min_seconds)
                count = len(batches)
            else:
                blob, count, seconds = framed
                batches, cs = [blob], CpuTime(seconds, 0.0, 1, seconds)
            got = self._built[key] = _Built(key, count, self._stored(starts, batches, s.codec, count, level), cs)
            self._fresh = (key, batches)
        return got

    def _stored(self, starts: np.ndarray, batches: Sequence[Union[bytes, memoryview]], codec: str, count: int,
                level: Optional[int]) -> int:
        """Stored bytes of ``batches`` as the client frames them."""
        stored = sum(map(len, batches))
        if codec == "zstd" and self.rules.zstd_one_shot:
            stored = zstd_one_shot_bytes(batches, level)
        elif codec == "snappy" and self.rules.raw_snappy:
            stored = self.encoder.raw_snappy_bytes(starts)
        elif codec == "zstd" and self.rules.zstd_ends_on_data:
            stored -= len(ZSTD_EMPTY_LAST_BLOCK) * zstd_empty_last_blocks(batches)
        elif codec == "lz4":
            stored += self.rules.lz4_frame_extra * count
        return stored

    def alone(self, s: Setting) -> int:
        """Stored bytes of this producer's records each in a batch of its own under ``s``'s codec and level:
        what an idle sender stores at linger.ms=0, and the most any sender stores there."""
        level = self.rules.build_level(s.codec, s.level)
        got = self._alone.get((s.codec, level))
        if got is None:
            n = len(self.cols["ts"])
            starts = np.arange(n + 1, dtype=np.int64)
            got = self._alone[(s.codec, level)] = self._stored(starts, self.encoder.build(starts, s.codec, level),
                                                               s.codec, n, level)
        return got

    def batches(self, b: _Built) -> Sequence[Union[bytes, memoryview]]:
        """The batches of ``b``: those just built, else built again (untimed)."""
        if self._fresh is not None and self._fresh[0] == b.key:
            return self._fresh[1]
        codec, level, _ = b.key
        return self.encoder.build(np.frombuffer(b.key[2], dtype=np.int64), codec, level)


def _producer_replays(table, cols, prof: TodayProfile, rules: ClientRules, today_linger_ms: Optional[int],
                      producers: int) -> Tuple[List["_Producer"], Dict]:
    """Per producer: its encoder, columns and calibrated sender; and the calibration's row fields."""
    import pyarrow as pa

    pids = table["producer_id"].to_numpy(zero_copy_only=False).astype(np.int64)
    groups = producer_groups(pids, producers, prof.owner, cols["ts"])
    today_batches = len(prof.starts) - 1
    out, delays, fits = [], [], []
    for g in groups:
        whole = len(groups) == 1
        sub = table if whole else table.take(pa.array(g))
        sub_cols = cols if whole else record_columns(sub)
        if whole:
            mine = today_batches
        else:  # a producer id's batches, or those the split gave a producer without one
            mine = len(np.unique(prof.owner[g]))
        cal = calibrate(sub_cols["ts"], mine, today_linger_ms, rules)
        out.append(_Producer(BatchEncoder(sub), sub_cols, rules, cal.model(rules)))
        delays.append(cal.delay_ms)
        fits.append(cal)
    fields = {"client": rules.name, "sender_delay_ms": float(np.median(delays)),
              "sender_calibrated": all(c.applies for c in fits),
              "replay_batches": sum(c.replay_batches for c in fits),
              "producer_ids": int(len(np.unique(pids[pids >= 0]))), "producers_replayed": len(groups)}
    return out, fields


def measure_batches(batches: Iterator, settings: Union[Sequence[Setting], Mapping[str, Sequence[Setting]]],
                    client: str = "auto", today_linger_ms: Optional[int] = None, producers: int = 1,
                    cpu_cost: str = "model"):
    """mapInArrow body: chunk rows in, metric rows out; ``settings`` for every topic, or per topic (the
    settings still running in each topic's race)."""
    import pyarrow as pa

    schema = metrics_schema()
    for b in batches:
        for i in range(b.num_rows):  # one chunk (megabytes) per step
            topic = b.column(0)[i].as_py()
            partition = b.column(1)[i].as_py()
            chunk = b.column(2)[i].as_py()
            data = b.column(3)[i].as_buffer()
            try:
                mine = settings.get(topic, ()) if isinstance(settings, Mapping) else settings
                rows = measure_chunk(topic, partition, chunk, memoryview(data).tobytes() if data else b"", mine,
                                     client, today_linger_ms, producers, cpu_cost)
            except KcodecError as exc:
                # Spark wraps a task's exception in its own; the marked line lets the driver say it in one
                # line, with the file and byte it knows for the range.
                # JSON keeps it one ASCII line whatever the topic name holds.
                fields = [topic, partition, chunk, exc.position, exc.batch_offset, exc.message]
                raise KcodecError(CHUNK_ERROR + json_text(fields)) from None
            if rows:
                yield pa.RecordBatch.from_pylist(rows, schema=schema)
