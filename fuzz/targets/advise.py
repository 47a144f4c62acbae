"""advise's record-file path from the Arrow batches Spark hands it: the part kcodec parses itself.

Spark reads the JSON or Parquet files; kcodec then takes the columns
(``record_columns``), replays the producer's batching (``replay_starts``) and
builds real batches (``BatchEncoder``), and frames the batches the replay
kept.  The table here is hostile as in the ``builder`` target.  Oracles: bad
columns are refused with kcodec's error; the batches built hold every record
once, values unchanged; the framed batches are the built ones; every zstd batch
ends with the empty last block a librdkafka count takes off; splitting the
records among producers (``producer_groups``, over the replay's batches and
fuzzed producer ids) gives every record to one producer, keeps a batch
without an id whole, and hands each producer its records in time order; the
sender calibration's native batch count (``time_cuts``) is what the replay's
per-record time limits (``time_limits``) give.
"""
import numpy as np
import pyarrow as pa
from common import OracleMismatch, verdict
from provider import Provider

import kcodec
from kcodec.advise.grid import Setting
from kcodec.advise.measure import BatchEncoder, zstd_empty_last_blocks
from kcodec.advise.profile import record_columns
from kcodec.advise.replay import JAVA, SenderModel, arrival_ms, producer_groups, replay_starts, time_cuts, time_limits
from targets.builder import BINARY_TYPES, CODECS, _column, other_columns


def _replay(table, setting):
    cols = record_columns(table)
    encoder = BatchEncoder(table)
    starts = replay_starts(encoder, cols, setting)
    built = encoder.build(starts, setting.codec, setting.level)
    # the batches framed from those the replay kept are the batches built, byte for byte
    framed = encoder.framed(starts, setting.codec, setting.level)
    if framed is not None and (framed[0] != b"".join(built) or framed[1] != len(built)):
        raise OracleMismatch(f"replay({setting}): the framed batches are not the built ones")
    if setting.codec == "zstd" and zstd_empty_last_blocks(built) != len(built):
        raise OracleMismatch(f"replay({setting}): a zstd batch does not end with an empty last block")
    return built, starts, cols["ts"]


def _check_time_cuts(p: Provider, ts: np.ndarray) -> None:
    # the sender calibration's native count against the replay's own per-record limits (time_limits:
    # where each record's batch must end by time), chased from record 0; time_limits answers only for
    # records in arrival order, and the unit tests cover the rest
    sender = SenderModel(JAVA, p.int(0, 3000) / 1000.0, p.int(0, 3000) / 1000.0)
    linger = p.int(0, 20)
    limits = time_limits(ts, linger, JAVA, sender)
    if limits is None:
        return
    most = p.int(0, 4)
    a = expected = 0
    while a < len(ts):
        a = int(limits[a]) if not most else min(int(limits[a]), a + most)
        expected += 1
    got = time_cuts(arrival_ms(ts), sender.close_times(arrival_ms(ts), ts, linger), most)
    if got != expected:
        raise OracleMismatch(f"time_cuts over {len(ts)} records counted {got} batches, time_limits {expected}")


def _check_split(p: Provider, starts: np.ndarray, ts: np.ndarray) -> None:
    n = len(ts)
    batch_of = np.repeat(np.arange(len(starts) - 1), np.diff(starts))
    # a batch's records share a producer id: -1 (none) or one of three
    pids = np.array([[-1, -1, 7, 9][p.int(0, 3)] for _ in range(len(starts) - 1)], dtype=np.int64)[batch_of]
    k = p.int(1, 4)
    groups = producer_groups(pids, k, batch_of, ts)
    got = np.sort(np.concatenate(groups)) if groups else np.zeros(0, np.int64)
    if got.tolist() != list(range(n)):
        raise OracleMismatch(f"producer_groups over {n} records did not give each to one producer")
    for g in groups:
        if k > 1 and pids[g[0]] < 0 and np.any(np.diff(ts[g]) < 0):
            raise OracleMismatch("a producer's records without an id are not in time order")
        for b in np.unique(batch_of[g]):
            if pids[batch_of == b][0] < 0 and np.count_nonzero(batch_of[g] == b) != np.count_nonzero(batch_of == b):
                raise OracleMismatch(f"batch {b} without a producer id was split between producers")


def test_one_input(data: bytes) -> None:
    p = Provider(data)
    n = p.int(1, 12)
    cols = {"value": _column(p, BINARY_TYPES[p.int(0, len(BINARY_TYPES) - 1)], n)}
    cols.update(other_columns(p, n))
    table = pa.table(cols)
    setting = Setting(CODECS[p.int(0, 4)], None, p.int(1, 1 << 14), p.int(0, 50))
    got, error = verdict(lambda: _replay(table, setting))
    if error is not None:
        return
    built, starts, ts = got
    _check_split(p, starts, ts)
    _check_time_cuts(p, ts)
    values = [r.value for b in kcodec.read_batches(b"".join(built)) for r in b]
    if len(values) != n:
        raise OracleMismatch(f"replay({setting}) built {len(values)} records of {n}")
    if pa.types.is_binary(cols["value"].type) and values != cols["value"].to_pylist():
        raise OracleMismatch(f"replay({setting}) changed the values")
