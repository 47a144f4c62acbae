"""Kafka's ``.txnindex``: the aborted transactions of a segment (``TransactionIndex``).

Each entry is 34 bytes, big-endian: ``version:int16`` (0), ``producerId:int64``,
``firstOffset:int64``, ``lastOffset:int64``, ``lastStableOffset:int64``.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import List, Sequence

__all__ = ["AbortedTxn", "read_txn_index", "encode_txn_index"]

_TXN_ENTRY = struct.Struct(">hqqqq")


@dataclass(frozen=True)
class AbortedTxn:
    """A ``.txnindex`` entry."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int


def read_txn_index(data: bytes) -> List[AbortedTxn]:
    """The entries of a ``.txnindex`` file's bytes (a trailing partial entry is ignored)."""
    out = []
    for pos in range(0, len(data) - len(data) % _TXN_ENTRY.size, _TXN_ENTRY.size):
        _v, pid, first, last, lso = _TXN_ENTRY.unpack_from(data, pos)
        out.append(AbortedTxn(pid, first, last, lso))
    return out


def encode_txn_index(entries: Sequence[AbortedTxn]) -> bytes:
    """The ``.txnindex`` bytes of ``entries``, in the order given."""
    return b"".join(_TXN_ENTRY.pack(0, t.producer_id, t.first_offset, t.last_offset, t.last_stable_offset)
                    for t in entries)
