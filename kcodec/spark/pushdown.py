"""What a ``kafka-log`` query needs: the ``columns`` option and the filters Spark pushes down.

Spark hands a Python data source its filters as ``EqualTo``, ``In``,
``GreaterThan`` ... objects.  :class:`PushedFilters` keeps those on
``offset``, ``timestamp``, ``topic`` and ``partition`` whose literal has the
column's type, and applies each of them exactly: topic and partition ones
choose Kafka partitions while planning; offset and timestamp ones narrow the
reader's :class:`~kcodec.log.selection.RecordRange` (so the indexes choose
segments and bytes) and then drop rows.
"""
from __future__ import annotations

import dataclasses
import datetime as dt
import operator
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from kcodec.log.selection import RecordRange
from kcodec.spark.transforms import KAFKA_DDL

if TYPE_CHECKING:  # pyarrow is imported on first use
    import pyarrow

__all__ = ["PushedFilters", "columns_ddl", "selected_columns", "KAFKA_COLUMNS"]


def _top_level_fields(ddl: str) -> List[str]:
    """``name type`` pieces of a DDL string, split at commas outside ``<...>``."""
    pieces, depth, begin = [], 0, 0
    for i, ch in enumerate(ddl):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            pieces.append(ddl[begin:i].strip())
            begin = i + 1
    return pieces + [ddl[begin:].strip()]


_FIELD_DDL = {piece.split(" ", 1)[0]: piece for piece in _top_level_fields(KAFKA_DDL)}
#: Spark's Kafka schema, in order.
KAFKA_COLUMNS = tuple(_FIELD_DDL)


def columns_ddl(columns: List[str]) -> str:
    """The DDL of those columns of Spark's Kafka schema, in the given order."""
    return ", ".join(_FIELD_DDL[name] for name in columns)

_OPS: Dict[str, Callable[[Any, Any], bool]] = {
    "EqualTo": operator.eq, "GreaterThan": operator.gt, "GreaterThanOrEqual": operator.ge,
    "LessThan": operator.lt, "LessThanOrEqual": operator.le, "In": lambda x, values: x in values,
}
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)


def selected_columns(options: dict) -> Optional[List[str]]:
    """The ``columns`` option as a list of schema names (any order, each once), or None when absent."""
    raw = options.get("columns")
    if raw is None or not str(raw).strip():
        return None
    by_lower = {c.lower(): c for c in KAFKA_COLUMNS}
    names = [part.strip() for part in str(raw).split(",")]
    unknown = [n for n in names if n.lower() not in by_lower]
    if unknown:
        raise ValueError(f"kafka-log: columns names {unknown!r}, not in the Kafka schema {list(KAFKA_COLUMNS)}")
    out = [by_lower[n.lower()] for n in names]
    if len(set(out)) != len(out):
        raise ValueError(f"kafka-log: columns names a column twice: {raw!r}")
    return out


def _micros(value: dt.datetime) -> int:
    """Microseconds since the epoch; a naive datetime is UTC (Spark hands over aware ones)."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=dt.timezone.utc)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _literal(column: str, value: Any) -> Any:
    """The literal in the form the column is compared in, or None when this source does not take it."""
    if column in ("offset", "partition"):
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    if column == "topic":
        return value if isinstance(value, str) else None
    if column == "timestamp":
        return _micros(value) if isinstance(value, dt.datetime) else None
    return None


class PushedFilters:
    """The filters a reader applies itself, each ``(column, op, literal)``; ``In`` literals are tuples."""

    def __init__(self) -> None:
        self.tests: List[Tuple[str, str, Any]] = []

    def add(self, f: Any) -> bool:
        """Take ``f`` when it can be applied exactly; False leaves it to Spark."""
        op = type(f).__name__
        attribute: Tuple[str, ...] = getattr(f, "attribute", ())
        if op not in _OPS or len(attribute) != 1:
            return False
        column = attribute[0]
        if op == "In":
            values = tuple(_literal(column, v) for v in f.value)
            if not values or any(v is None for v in values):
                return False
            literal: Any = values
        else:
            literal = _literal(column, f.value)
            if literal is None:
                return False
        self.tests.append((column, op, literal))
        return True

    def keeps_partition(self, topic: str, partition: int) -> bool:
        """Whether every topic and partition filter holds for this Kafka partition."""
        have = {"topic": topic, "partition": partition}
        return all(_OPS[op](have[col], lit) for col, op, lit in self.tests if col in have)

    def narrow(self, wanted: RecordRange) -> RecordRange:
        """``wanted`` cut to the offsets and timestamps (ms) the pushed filters allow."""
        lo_off, hi_off = wanted.start_offset, wanted.end_offset
        lo_ts, hi_ts = wanted.start_timestamp, wanted.end_timestamp
        for col, op, lit in self.tests:
            if col == "offset":
                lo, hi = _offset_bounds(op, lit)
                lo_off, hi_off = _tighter(lo_off, lo, max), _tighter(hi_off, hi, min)
            elif col == "timestamp":
                lo, hi = _millisecond_bounds(op, lit)
                lo_ts, hi_ts = _tighter(lo_ts, lo, max), _tighter(hi_ts, hi, min)
        return dataclasses.replace(wanted, start_offset=lo_off, end_offset=hi_off,
                                   start_timestamp=lo_ts, end_timestamp=hi_ts)

    def filter(self, table: "pyarrow.Table") -> "pyarrow.Table":
        """The rows of a table in Spark's Kafka schema for which every offset and timestamp filter holds."""
        import pyarrow as pa
        import pyarrow.compute as pc

        mask = None
        for col, op, lit in self.tests:
            if col not in ("offset", "timestamp"):
                continue
            kind = table.schema.field(col).type
            column = table[col]
            if op == "In":
                test = pc.is_in(column, value_set=pa.array(lit, kind))
            else:
                test = getattr(pc, _ARROW[op])(column, pa.scalar(lit, kind))
            mask = test if mask is None else pc.and_(mask, test)
        return table if mask is None else table.filter(mask)


_ARROW = {"EqualTo": "equal", "GreaterThan": "greater", "GreaterThanOrEqual": "greater_equal",
          "LessThan": "less", "LessThanOrEqual": "less_equal"}


def _tighter(current: Optional[int], new: Optional[int], pick: Any) -> Optional[int]:
    return new if current is None else current if new is None else pick(current, new)


def _offset_bounds(op: str, lit: Any) -> Tuple[Optional[int], Optional[int]]:
    """``[lo, hi)`` of offsets that can satisfy the test (None: open)."""
    if op == "In":
        return min(lit), max(lit) + 1
    return {"EqualTo": (lit, lit + 1), "GreaterThan": (lit + 1, None), "GreaterThanOrEqual": (lit, None),
            "LessThan": (None, lit), "LessThanOrEqual": (None, lit + 1)}[op]


def _millisecond_bounds(op: str, micros: Any) -> Tuple[Optional[int], Optional[int]]:
    """``[lo, hi)`` of millisecond timestamps ``ms`` for which ``ms * 1000 op micros`` can hold."""
    if op == "In":
        return -(-min(micros) // 1000), max(micros) // 1000 + 1
    up, down = -(-micros // 1000), micros // 1000
    return {"EqualTo": (up, down + 1), "GreaterThan": (down + 1, None), "GreaterThanOrEqual": (up, None),
            "LessThan": (None, up), "LessThanOrEqual": (None, down + 1)}[op]
