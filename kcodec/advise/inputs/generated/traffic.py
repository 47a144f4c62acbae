"""A realistic, deterministic sample data set for ``kcodec advise`` when no input is given.

Three kinds of traffic a Kafka estate typically carries, as three topics
interleaved by time: ``clicks``, JSON events keyed by user (repetitive field
names, a few distinct values); ``app-logs``, application log lines without
key; ``telemetry``, binary payloads with little redundancy (as protobuf/Avro
with random ids look to a codec).  About five thousand records a second.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Union

import numpy as np

__all__ = ["generate_traffic", "TOPICS"]

TOPICS = ("clicks", "app-logs", "telemetry")

_PAGES = ["/", "/search", "/cart", "/checkout", "/product/{}", "/account", "/help", "/category/{}"]
_AGENTS = ["Mozilla/5.0 (X11; Linux x86_64)", "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_5)",
           "Mozilla/5.0 (iPhone; CPU iPhone OS 17_4 like Mac OS X)", "okhttp/4.12.0"]
_LEVELS = ["INFO", "INFO", "INFO", "DEBUG", "WARN", "ERROR"]
_SERVICES = ["checkout-api", "search-indexer", "payment-gateway", "inventory-sync"]
_MESSAGES = [
    "request completed status={} duration_ms={} path={}",
    "cache miss key=product:{} fallback=db latency_ms={} shard={}",
    "retrying downstream call attempt={} backoff_ms={} target={}",
    "consumer lag partition={} lag={} group={}",
]


def generate_traffic(records: int = 200_000, seed: int = 7, start_ms: int = 1_700_000_000_000):
    """A pyarrow Table with key, value, timestamp (UTC, us), headers and topic columns."""
    import pyarrow as pa

    rng = np.random.default_rng(seed)
    kind = rng.choice(3, size=records, p=[0.6, 0.3, 0.1])
    ts_ms = start_ms + np.cumsum(rng.exponential(0.2, size=records)).astype(np.int64)
    users = rng.zipf(1.3, size=records) % 50_000
    nums = rng.integers(0, 100_000, size=(records, 3))
    keys: List[Optional[bytes]] = []  # app-logs lines have no key
    values: List[bytes] = []
    headers: List[Optional[List[Dict[str, Union[str, bytes]]]]] = []
    for i in range(records):
        k = kind[i]
        a, b, c = (int(x) for x in nums[i])
        if k == 0:
            uid = int(users[i])
            page = _PAGES[a % len(_PAGES)].format(b % 500)
            keys.append(f"user-{uid:08d}".encode())
            values.append(
                ('{"event":"%s","user_id":%d,"session":"s-%06x","page":"%s","ts":%d,'
                 '"agent":"%s","cart_items":%d,"price_cents":%d,"ab_bucket":"%s"}'
                 % (("view", "click", "add_to_cart", "purchase")[c % 4], uid, b * 7919 % 0xFFFFFF, page,
                    int(ts_ms[i]), _AGENTS[b % len(_AGENTS)], c % 7, (a * 13) % 20000,
                    "ABCD"[a % 4])).encode())
            headers.append([{"key": "content-type", "value": b"application/json"},
                            {"key": "trace-id", "value": f"{a:05x}{b:05x}{c:05x}".encode()}])
        elif k == 1:
            msg = _MESSAGES[a % len(_MESSAGES)].format(200 + b % 300, c % 900, _PAGES[b % len(_PAGES)])
            keys.append(None)
            values.append(("2023-11-14T22:13:%02d.%03dZ %-5s [%s] %s thread=worker-%d"
                           % (a % 60, b % 1000, _LEVELS[c % len(_LEVELS)], _SERVICES[a % 4], msg, c % 32)
                           ).encode())
            headers.append(None)
        else:
            n = 64 + a % 448
            body = rng.integers(0, 256, size=n, dtype=np.uint8).tobytes()
            keys.append(f"device-{b % 2000:05d}".encode())
            values.append(b"\x0a\x10" + f"{a:016x}".encode() + b"\x12" + bytes([n % 128]) + body)
            headers.append([{"key": "schema-id", "value": b"42"}])
    header_type = pa.list_(pa.struct([pa.field("key", pa.string()), pa.field("value", pa.binary())]))
    return pa.table({
        "key": pa.array(keys, pa.binary()),
        "value": pa.array(values, pa.binary()),
        "timestamp": pa.array(ts_ms * 1000, pa.timestamp("us", tz="UTC")),
        "headers": pa.array(headers, header_type),
        "topic": pa.array(np.array(TOPICS, dtype=object)[kind], pa.string()),
    })
