"""An estate of many small topics drawn from a few distributions, for ``kcodec advise`` at estate size.

Every topic is one partition of ``records`` records, produced in bursts of
``burst`` records (half a millisecond apart) evenly spread over ``span_hours``, and
stored as lz4 batches of at most 16 KiB, as a producer with Kafka's defaults writes them.
Topics of one distribution hold different records
drawn from the same generator, so their measured ratios differ by sampling noise
only.  Topic names carry their distribution (``<kind>-<n>``) so ``--group-by``
can tell them apart.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Dict, List

import numpy as np

KINDS = ("orders", "clicks", "logs")


def _orders(rng, n: int) -> List[bytes]:
    sku = rng.integers(0, 5000, n)
    qty = rng.integers(1, 9, n)
    cents = rng.integers(100, 50_000, n)
    state = rng.choice([b"created", b"paid", b"shipped", b"delivered"], n)
    return [b'{"order_id":"%016x","sku":"SKU-%05d","quantity":%d,"price_cents":%d,"currency":"EUR",'
            b'"status":"%s","customer":{"id":%d,"tier":"gold"}}'
            % (int(rng.integers(0, 2 ** 62)), s, q, c, st, int(s) * 7 % 9973)
            for s, q, c, st in zip(sku, qty, cents, state)]


def _clicks(rng, n: int) -> List[bytes]:
    user = rng.integers(0, 100_000, n)
    page = rng.integers(0, 300, n)
    action = rng.choice([b"view", b"click", b"scroll", b"add_to_cart"], n)
    return [b'{"event":"%s","user":%d,"page":"/catalog/item/%d","agent":"Mozilla/5.0 (X11; Linux x86_64)",'
            b'"session":"%08x"}' % (a, u, p, int(rng.integers(0, 2 ** 32))) for u, p, a in zip(user, page, action)]


def _logs(rng, n: int) -> List[bytes]:
    ms = rng.integers(1, 2000, n)
    status = rng.choice([200, 200, 200, 201, 404, 500], n)
    path = rng.choice([b"/cart", b"/checkout", b"/search?q=shoes", b"/account/orders"], n)
    return [b"INFO [checkout-api] request done status=%d duration_ms=%d path=%s trace=%012x"
            % (s, d, p, int(rng.integers(0, 2 ** 48))) for d, s, p in zip(ms, status, path)]


GENERATORS: Dict[str, Callable] = {"orders": _orders, "clicks": _clicks, "logs": _logs}


def build_many_topics(root: Path, topics: int, records: int = 1000, kinds=KINDS, span_hours: float = 24.0,
                      start_ms: int = 1_700_000_000_000, seed: int = 5, burst: int = 100,
                      name_format: str = "{kind}-{i:05d}") -> Dict[str, str]:
    """Write ``topics`` topics under ``root`` (a broker log directory); returns topic -> its distribution."""
    import pyarrow as pa

    import kcodec
    from kcodec.log import write_partition

    rng = np.random.default_rng(seed)
    i = np.arange(records)
    bursts = -(-records // burst)
    gap = span_hours * 3_600_000 / max(1, bursts - 1)
    ts = (start_ms + (i // burst) * gap + (i % burst) * 0.5).astype(np.int64) * 1000
    out: Dict[str, str] = {}
    for i in range(topics):
        kind = kinds[i % len(kinds)]
        name = name_format.format(kind=kind, i=i)
        values = GENERATORS[kind](rng, records)
        table = pa.table({"key": pa.array([None] * records, pa.binary()), "value": pa.array(values, pa.binary()),
                          "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC"))})
        batches = kcodec.from_arrow(table, compression="lz4", max_batch_bytes=16384)
        write_partition(root / f"{name}-0", [b"".join(batches)])
        out[name] = kind
    return out
