"""Log directories whose right sampling answer is known: a topic of one steady kind of traffic, and a topic
whose records turn from repetitive JSON into random bytes over its life (its ratio drifts with time)."""
from __future__ import annotations

from pathlib import Path
from typing import List

import numpy as np

from builders import make_log

T0_MS = 1_700_000_000_000


def _steady(rng, n: int) -> List[bytes]:
    users = rng.integers(0, 5000, n)
    amounts = rng.integers(0, 100_000, n)
    actions = np.array(["view", "click", "add_to_cart", "purchase"])[rng.integers(0, 4, n)]
    return [b'{"user":"u%05d","action":"%s","amount_cents":%d,"currency":"EUR","ok":true}'
            % (u, a.encode(), m) for u, a, m in zip(users, actions, amounts)]


def _drifting(rng, n: int) -> List[bytes]:
    out = []
    for i, v in enumerate(_steady(rng, n)):
        noise = int(120 * i / n)  # from no random bytes at the start to 120 per record at the end
        out.append(v + rng.integers(0, 256, noise, dtype=np.uint8).tobytes())
    return out


def build_drift_topics(root: Path, records: int = 40_000, batch_records: int = 50, segments: int = 4) -> Path:
    """``steady-0`` and ``drifting-0`` under ``root``: lz4 batches of ``batch_records`` records, two records
    a millisecond, in ``segments`` segments with their indexes."""
    import pyarrow as pa

    import kcodec

    rng = np.random.default_rng(11)
    for name, make in (("steady", _steady), ("drifting", _drifting)):
        values = make(rng, records)
        ts = T0_MS * 1000 + np.arange(records, dtype=np.int64) * 500
        table = pa.table({"key": pa.array([None] * records, pa.binary()), "value": pa.array(values, pa.binary()),
                          "timestamp": pa.array(ts, pa.timestamp("us", tz="UTC"))})
        batches = []
        for start in range(0, records, batch_records):
            batches += kcodec.from_arrow(table.slice(start, batch_records), compression="lz4", base_offset=start)
        per = -(-len(batches) // segments)
        make_log(root / f"{name}-0", [batches[i:i + per] for i in range(0, len(batches), per)])
    return root
