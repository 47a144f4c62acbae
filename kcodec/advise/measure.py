"""What one Spark task measures: real Kafka batches built and read back with kcodec."""
from __future__ import annotations

import time
from typing import Dict, Iterable, List

from kcodec.advise.grid import Setting

__all__ = ["METRICS_DDL", "measure_table", "payload_bytes"]

METRICS_DDL = ("codec string, level int, batch_bytes long, records long, payload_bytes long, "
               "batches long, stored_bytes long, compress_seconds double, read_seconds double")


def payload_bytes(table) -> int:
    """Key, value and header bytes: what the user's data weighs before Kafka framing."""
    import pyarrow.compute as pc

    total = 0
    for name in ("key", "value"):
        if name in table.column_names:
            total += int(pc.sum(pc.binary_length(table[name])).as_py() or 0)
    if "headers" in table.column_names:
        flat = pc.list_flatten(table["headers"])
        if len(flat):
            total += int(pc.sum(pc.binary_length(pc.struct_field(flat, [0]))).as_py() or 0)
            total += int(pc.sum(pc.binary_length(pc.struct_field(flat, [1]))).as_py() or 0)
    return total


def measure_table(table, settings: Iterable[Setting], repeat: int = 3) -> List[Dict]:
    """Build every setting's batches from ``table`` and read them back, timing both.

    Reading is ``kcodec.to_arrow`` over the built batches: decompression,
    CRC check and record decoding, i.e. what a consumer pays.  Each timing
    is the best of ``repeat`` runs, which keeps scheduler noise out of small
    samples.
    """
    import kcodec

    rows = []
    weight = payload_bytes(table)
    for s in settings:
        compress_s = read_s = float("inf")
        for _ in range(max(1, repeat)):
            t0 = time.perf_counter()
            batches = kcodec.from_arrow(table, compression=s.codec, level=s.level, max_batch_bytes=s.batch_bytes)
            compress_s = min(compress_s, time.perf_counter() - t0)
            blob = b"".join(batches)
            t0 = time.perf_counter()
            back = kcodec.to_arrow(blob, use_threads=False)  # every codec read alike, on one core
            read_s = min(read_s, time.perf_counter() - t0)
        if back.num_rows != table.num_rows:
            raise RuntimeError(f"{s.label}: read back {back.num_rows} records of {table.num_rows}")
        rows.append({
            "codec": s.codec, "level": s.level, "batch_bytes": s.batch_bytes,
            "records": table.num_rows, "payload_bytes": weight, "batches": len(batches),
            "stored_bytes": len(blob), "compress_seconds": compress_s, "read_seconds": read_s,
        })
    return rows
