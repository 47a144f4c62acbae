"""advise's record-file path from the Arrow batches Spark hands it: the part kcodec parses itself.

Spark reads the JSON or Parquet files; kcodec then takes the columns
(``record_columns``), replays the producer's batching (``replay_starts``) and
builds real batches (``BatchEncoder``), and frames the batches the replay
kept.  The table here is hostile as in the ``builder`` target.  Oracles: bad
columns are refused with kcodec's error; the batches built hold every record
once, values unchanged; the framed batches are the built ones.
"""
import pyarrow as pa
from common import OracleMismatch, verdict
from provider import Provider

import kcodec
from kcodec.advise.grid import Setting
from kcodec.advise.measure import BatchEncoder
from kcodec.advise.profile import record_columns
from kcodec.advise.task import replay_starts
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
    return built


def test_one_input(data: bytes) -> None:
    p = Provider(data)
    n = p.int(1, 12)
    cols = {"value": _column(p, BINARY_TYPES[p.int(0, len(BINARY_TYPES) - 1)], n)}
    cols.update(other_columns(p, n))
    table = pa.table(cols)
    setting = Setting(CODECS[p.int(0, 4)], None, p.int(1, 1 << 14), p.int(0, 50))
    built, error = verdict(lambda: _replay(table, setting))
    if error is not None:
        return
    values = [r.value for b in kcodec.read_batches(b"".join(built)) for r in b]
    if len(values) != n:
        raise OracleMismatch(f"replay({setting}) built {len(values)} records of {n}")
    if pa.types.is_binary(cols["value"].type) and values != cols["value"].to_pylist():
        raise OracleMismatch(f"replay({setting}) changed the values")
