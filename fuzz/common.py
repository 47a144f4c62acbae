"""What every target shares: the verdict rule and the comparisons the oracles make.

A target calls kcodec on the fuzzer's bytes.  kcodec may refuse them with
its own error (:class:`kcodec.errors.KcodecError`); anything else it raises,
a crash, a hang or a sanitizer report is a finding.  An oracle's
disagreement raises :class:`OracleMismatch`, a finding too.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

from kcodec.errors import KcodecError

#: Limits small enough that a fuzzing run does not spend its time on bombs.
MAX_DECOMPRESSED = 1 << 22


class OracleMismatch(AssertionError):
    """Two ways of reading the same bytes disagree, or what kcodec wrote does not read back."""


def verdict(call: Callable[[], Any]) -> Tuple[Optional[Any], Optional[KcodecError]]:
    """``(result, None)`` or ``(None, kcodec's error)``; any other exception propagates."""
    try:
        return call(), None
    except KcodecError as exc:
        return None, exc


def same_verdict(what: str, a: Tuple[Any, Optional[KcodecError]], b: Tuple[Any, Optional[KcodecError]],
                 equal: Callable[[Any, Any], bool] = lambda x, y: x == y) -> None:
    """Both refused, or both read and ``equal``."""
    (ra, ea), (rb, eb) = a, b
    if (ea is None) != (eb is None):
        raise OracleMismatch(f"{what}: one path read the input, the other refused it: {ea or eb!r}")
    if ea is None and not equal(ra, rb):
        raise OracleMismatch(f"{what}: the two paths read different results")


def rows(table) -> list:
    """A table in Spark's Kafka schema as plain rows (binary views compare as bytes)."""
    import pyarrow as pa

    cols = {}
    for name in table.column_names:
        col = table[name]
        if pa.types.is_binary_view(col.type):
            col = col.cast(pa.binary())
        elif pa.types.is_timestamp(col.type):  # Kafka's timestamps reach past Python's datetime
            col = col.cast(pa.int64())
        cols[name] = col.to_pylist()
    return list(zip(*cols.values())) if cols else []
