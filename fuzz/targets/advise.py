"""advise's record-file path from the Arrow batches Spark hands it: the part kcodec parses itself.

Spark reads the JSON or Parquet files; kcodec then takes the columns
(``record_columns``), replays the producer's batching (``replay_starts``) and
builds real batches (``BatchEncoder``).  The table here is hostile as in
the ``builder`` target.  Oracles: bad columns are refused with kcodec's
error; the batches built hold every record once, values unchanged.
"""
import pyarrow as pa

import kcodec
from kcodec.advise.grid import Setting
from kcodec.advise.measure import BatchEncoder
from kcodec.advise.profile import record_columns
from kcodec.advise.task import replay_starts

from common import OracleMismatch, verdict
from provider import Provider
from targets.builder import BINARY_TYPES, CODECS, _column, other_columns


def _replay(table, setting):
    cols = record_columns(table)
    encoder = BatchEncoder(table)
    return encoder.build(replay_starts(encoder, cols, setting), setting.codec, setting.level)


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
