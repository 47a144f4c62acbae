"""A partition whose last segment ends in a partial batch, found by Spark tasks, said as ``dump`` says it.

A broker that crashed while appending leaves a partial batch at the end of
its active segment, which it truncates when it recovers the log
(``LogSegment.recover``).  advise measures whole batches only; the tail
bytes are named in the topic's notes.  Each task reads one partition's last
segment from its last indexed batch to its end (the index interval, 4 KiB by
default), so the driver reads no segment data.
"""
from __future__ import annotations

import functools
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["partial_tails"]

_TAIL_DDL = "topic string, partition int, path string, start long, size long"
_NOTE_DDL = "topic string, note string"


def partial_tails(spark, tails: Sequence[Tuple[str, int, str, int, int]],
                  storage_options: Optional[Dict[str, Any]] = None) -> Dict[str, List[str]]:
    """topic -> notes, one per last segment ending in a partial batch."""
    if not tails:
        return {}
    frame = spark.createDataFrame(list(tails), _TAIL_DDL)
    rows = frame.repartition(max(1, min(len(tails), spark.sparkContext.defaultParallelism))).mapInArrow(
        functools.partial(_check, storage_options=storage_options), _NOTE_DDL).collect()
    out: Dict[str, List[str]] = {}
    for r in sorted(rows, key=lambda r: (r["topic"], r["note"])):
        out.setdefault(r["topic"], []).append(r["note"])
    return out


def _check(batches, storage_options: Optional[Dict[str, Any]] = None):
    import pyarrow as pa

    from kcodec.records.framing import valid_bytes
    from kcodec.storage import resolve

    for b in batches:
        notes = []
        for r in b.to_pylist():
            storage, inner = resolve(r["path"], storage_options)
            valid = r["start"] + valid_bytes(bytes(storage.read_range(inner, r["start"], r["size"])))
            if valid < r["size"]:
                notes.append((r["topic"], f"{r['path']}: the segment ends in {r['size'] - valid} bytes that are not "
                                          f"a complete batch (a partial write a broker truncates when it recovers "
                                          f"the log) at byte {valid}; they are not measured"))
        yield pa.RecordBatch.from_pydict({"topic": [t for t, _ in notes], "note": [n for _, n in notes]},
                                         schema=pa.schema([("topic", pa.string()), ("note", pa.string())]))
