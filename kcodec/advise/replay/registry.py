"""The producer clients the replay knows, and which of them wrote a topic's batches.

A new client is one module under :mod:`kcodec.advise.replay.clients` and one entry in
:data:`CLIENTS`.  :func:`detect_client` keeps, batch after batch, the clients that can have
written every batch seen (:attr:`ClientRules.writes`): it names a client only when exactly one is
left, so a topic whose framing more than one client writes alike is not recognised rather than
given to a client that did not write it.
"""
from __future__ import annotations

from typing import Dict, List, Optional

from kcodec.advise.replay.client import JAVA, LIBRDKAFKA, ClientRules, batch_marks
from kcodec.advise.replay.clients import aiokafka, kafka_python, sarama

__all__ = ["CLIENTS", "DEFAULT_CLIENT", "client_rules", "detect_client", "NOT_RECOGNISED", "clients_help"]

CLIENTS: Dict[str, ClientRules] = {c.name: c for c in (JAVA, LIBRDKAFKA, kafka_python.RULES, aiokafka.RULES,
                                                       sarama.RULES)}
#: the client whose rules are followed where neither the user nor the batches' framing names one
DEFAULT_CLIENT = JAVA
#: what the report says of a topic whose framing no single client writes
NOT_RECOGNISED = "client not recognised: Java's rules assumed (--producer-client to choose)"


def client_rules(name: str) -> ClientRules:
    """The rules of the client ``name`` (a key of :data:`CLIENTS`)."""
    try:
        return CLIENTS[name]
    except KeyError:
        raise ValueError(f"unknown producer client {name!r} (choose {', '.join(CLIENTS)} or auto)") from None


def clients_help() -> str:
    """The clients ``--producer-client`` offers, each with its summary; clients summed up alike share one."""
    alike: Dict[str, List[str]] = {}
    for c in CLIENTS.values():
        alike.setdefault(c.summary, []).append(c.name)
    parts = [f"{' and '.join(names)} ({summary})" for summary, names in alike.items()]
    return " or ".join([", ".join(parts[:-1]), parts[-1]]) if len(parts) > 1 else parts[0]


def detect_client(data) -> Optional[str]:
    """The one client that can have written every v2 batch of ``data``, or None when none or several can."""
    from kcodec.records.framing import iter_entries

    buf = memoryview(data).cast("B")
    left = set(CLIENTS)
    seen: Dict[tuple, frozenset] = {}
    for e in iter_entries(buf):
        if e.magic != 2:
            continue
        m = batch_marks(buf, e.position, e.size)
        if m is None:
            continue
        # a producer's gzip headers, xerial streams and batch fields repeat, so batches alike are judged once;
        # the key holds every mark the clients' tests read (the body's first 10 bytes, its last 3, and the
        # signs of the producer id, base sequence and max timestamp): a test that reads more must add it here
        key = (m.codec, m.body[:10], m.tail, m.producer_id < 0, m.base_sequence < 0, m.max_timestamp < 0 < m.records)
        can = seen.get(key)
        if can is None:
            can = seen[key] = frozenset(n for n, c in CLIENTS.items() if c.wrote(m))
        left &= can
        if not left:
            return None
    return left.pop() if len(left) == 1 else None
