"""What the ``timestamp`` column of record inputs (Parquet, JSON) holds, decided before Spark starts.

Kafka's record timestamp is milliseconds since the epoch.  Record files carry
it in many shapes: Arrow/Parquet timestamps (with their unit), ISO-8601
strings, or plain numbers of seconds, milliseconds, microseconds or
nanoseconds.  A number's unit is detected from a sample of the first file
when every sampled value is a date between 1990 and 2100 in exactly one unit
(the four ranges do not overlap); otherwise ``--timestamp-unit`` must say it.
Spark then reads the column as a timestamp, so today's batches and every
replayed setting see the same times.
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.errors import KcodecError

__all__ = ["UNITS", "TimestampPlan", "detect_timestamps", "timestamp_column"]

UNITS = ("s", "ms", "us", "ns")
_UNIT_NAMES = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}
_PER_SECOND = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}
# Dates a Kafka record's timestamp plausibly holds: 1990-01-01 to 2100-01-01, in seconds.
_EARLIEST_S, _LATEST_S = 631_152_000, 4_102_444_800
_SAMPLE_VALUES = 1000
_SAMPLE_BYTES = 1 << 20


@dataclass(frozen=True)
class TimestampPlan:
    kind: str  #: "none" (no column), "timestamp" (a timestamp type), "iso" (ISO-8601 strings) or "epoch"
    unit: Optional[str] = None  #: of "epoch": s, ms, us or ns
    how: str = ""  #: what decided it, for the user

    def text(self) -> str:
        if self.unit is not None:  # only an epoch plan has one
            return f"epoch {_UNIT_NAMES[self.unit]} ({self.how})"
        if self.kind == "none":
            return "no timestamp column: linger.ms cannot be replayed"
        if self.kind == "timestamp":
            return f"timestamp column of type timestamp ({self.how})"
        return f"ISO-8601 timestamp strings ({self.how})"


def _unit_of(value: float) -> Optional[str]:
    for unit, scale in _PER_SECOND.items():
        if _EARLIEST_S * scale <= value < _LATEST_S * scale:
            return unit
    return None


def _iso(text: str) -> Optional[_dt.datetime]:
    try:
        return _dt.datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        return None


def _decide(values: Sequence[Any], where: str, unit_flag: Optional[str]) -> TimestampPlan:
    """The plan for sampled ``values`` (JSON scalars or Python values of an Arrow column)."""
    present = [v for v in values if v is not None]
    if not present:
        return TimestampPlan("none", how=f"{where}: every sampled timestamp is null")
    if all(isinstance(v, str) for v in present):
        bad = next((v for v in present if _iso(v) is None), None)
        if bad is not None:
            raise KcodecError(f"{where}: timestamp {bad!r} is not an ISO-8601 date and time "
                              f"(e.g. 2024-05-01T12:00:00.250Z) nor a number")
        if unit_flag:
            raise KcodecError(f"--timestamp-unit {unit_flag}: {where} holds ISO-8601 strings, which carry "
                              f"their own unit; leave the flag out")
        return TimestampPlan("iso", how=f"{len(present)} values of {where}")
    if any(isinstance(v, (str, bool)) or not isinstance(v, (int, float)) for v in present):
        kinds = sorted({type(v).__name__ for v in present})
        raise KcodecError(f"{where}: timestamps of mixed kinds ({', '.join(kinds)}): give numbers or ISO-8601 strings")
    if unit_flag:
        return TimestampPlan("epoch", unit_flag, "--timestamp-unit")
    units = {_unit_of(float(v)) for v in present}
    unit = units.pop() if len(units) == 1 else None
    if unit is not None:
        return TimestampPlan("epoch", unit, f"detected from {len(present)} values of {where}: all dates "
                                            f"between 1990 and 2100 in {_UNIT_NAMES[unit]}")
    lo, hi = min(present), max(present)
    raise KcodecError(f"{where}: the timestamp numbers ({lo:g} to {hi:g}) are not dates between 1990 and 2100 in "
                      f"one unit: give --timestamp-unit s, ms, us or ns")


def _json_values(storage, inner: str, where: str) -> List[Any]:
    size = storage.size(inner)
    head = storage.read_range(inner, 0, min(size, _SAMPLE_BYTES))
    lines = head.split(b"\n")
    if size > len(head):
        lines = lines[:-1]  # the last line may be cut by the sample
    values = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            doc = json.loads(line)
        except ValueError as exc:
            raise KcodecError(f"{where}: line {n} is not a JSON object ({exc}); advise reads one object a line") \
                from None
        if not isinstance(doc, dict):
            raise KcodecError(f"{where}: line {n} is not a JSON object; advise reads one object a line")
        if "timestamp" in doc:
            values.append(doc["timestamp"])
        if len(values) >= _SAMPLE_VALUES:
            break
    return values


def _parquet_values(storage, inner: str, where: str) -> Tuple[Optional[str], List[Any]]:
    """(the Arrow type of the timestamp column, or None when it has none; sampled values)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    with storage.open_read(inner) as f:
        try:
            pf = pq.ParquetFile(f)
        except (pa.ArrowInvalid, OSError) as exc:
            raise KcodecError(f"{where}: not a Parquet file ({exc})") from None
        schema = pf.schema_arrow
        if "timestamp" not in schema.names:
            return None, []
        kind = schema.field("timestamp").type
        if pa.types.is_timestamp(kind) or pa.types.is_date(kind):
            return str(kind), []
        if pf.metadata.num_row_groups == 0:
            return str(kind), []
        column = pf.read_row_group(0, columns=["timestamp"]).column("timestamp").slice(0, _SAMPLE_VALUES)
    if pa.types.is_binary(kind) or pa.types.is_large_binary(kind):
        return str(kind), [None if v is None else v.decode("utf-8", "replace") for v in column.to_pylist()]
    if not (pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_string(kind)
            or pa.types.is_large_string(kind)):
        raise KcodecError(f"{where}: the timestamp column is of type {kind}: give timestamps, numbers or "
                          f"ISO-8601 strings")
    return str(kind), column.to_pylist()


def _first_file(storage, inner: str, fmt: str) -> str:
    if storage.isfile(inner):
        return inner
    suffixes = [s for s, f in {".parquet": "parquet", ".json": "json", ".jsonl": "json"}.items() if f == fmt]
    names = sorted(f.name for f in storage.list(inner) if not f.is_dir and os.path.splitext(f.name)[1] in suffixes)
    if not names:
        raise KcodecError(f"{storage.url(inner)}: no {fmt} files")
    return storage.join(inner, names[0])


def detect_timestamps(paths: Sequence[str], fmt: str, unit_flag: Optional[str] = None,
                      storage_options: Optional[Dict[str, Any]] = None) -> TimestampPlan:
    """What the ``timestamp`` column of the record inputs holds, from the first file of ``paths``."""
    from kcodec.storage import resolve

    if unit_flag is not None and unit_flag not in UNITS:
        raise KcodecError(f"--timestamp-unit {unit_flag}: choose s, ms, us or ns")
    storage, inner = resolve(paths[0], storage_options)
    first = _first_file(storage, inner, fmt)
    where = storage.url(first)
    if fmt == "parquet":
        kind, values = _parquet_values(storage, first, where)
        if kind is None:
            return TimestampPlan("none", how=where)
        if not values and ("timestamp" in kind or "date" in kind):
            if unit_flag:
                raise KcodecError(f"--timestamp-unit {unit_flag}: {where} holds {kind} values, which carry their "
                                  f"own unit; leave the flag out")
            return TimestampPlan("timestamp", how=f"{kind} in {where}")
        if not values:
            return TimestampPlan("none", how=f"{where}: no rows")
        return _decide(values, where, unit_flag)
    values = _json_values(storage, first, where)
    if not values:
        return TimestampPlan("none", how=f"{where}: no timestamp field in the first records")
    return _decide(values, where, unit_flag)


def timestamp_column(df, plan: TimestampPlan):
    """``df`` with its ``timestamp`` column as a Spark timestamp, as ``plan`` says to read it."""
    from pyspark.sql import functions as F

    if plan.kind in ("none", "timestamp") or "timestamp" not in df.columns:
        return df
    col = F.col("timestamp")
    if plan.kind == "iso":
        # the sample parsed; a later value that does not is a record without a timestamp
        return df.withColumn("timestamp", F.try_to_timestamp(col.cast("string")))
    if plan.unit == "s":
        return df.withColumn("timestamp", F.timestamp_seconds(col.cast("double")))
    if plan.unit == "ms":
        return df.withColumn("timestamp", F.timestamp_millis(col.cast("long")))
    if plan.unit == "us":
        return df.withColumn("timestamp", F.timestamp_micros(col.cast("long")))
    return df.withColumn("timestamp", F.timestamp_micros(F.floor(col.cast("double") / 1000).cast("long")))
