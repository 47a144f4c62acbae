"""Aborted transactions: Kafka's ``.txnindex`` file (``TransactionIndex``) and the cleaner's walk through them.

Each ``.txnindex`` entry is 34 bytes, big-endian: ``version:int16`` (0),
``producerId:int64``, ``firstOffset:int64``, ``lastOffset:int64``,
``lastStableOffset:int64``.  :class:`CleanedTransactionMetadata` follows the
aborted transactions while a cleaner reads batches in offset order.
"""
from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Any, Dict, List, Sequence, Set

__all__ = ["AbortedTxn", "read_txn_index", "encode_txn_index", "CleanedTransactionMetadata"]

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


class CleanedTransactionMetadata:
    """Which transactional batches and markers a cleaner reading in offset order may remove.

    ``on_batch`` and ``on_control_batch`` return whether the batch may be
    discarded; ``kept_aborted`` collects the aborted transactions whose
    markers stay, for the cleaned segment's ``.txnindex``.
    """

    def __init__(self) -> None:
        self._pending: List[AbortedTxn] = []
        self._added: Set[AbortedTxn] = set()
        self.ongoing_committed: Set[int] = set()
        self.ongoing_aborted: Dict[int, List[Any]] = {}  # pid -> [txn, last observed batch offset]
        self.kept_aborted: List[AbortedTxn] = []

    def add(self, txns: Sequence[AbortedTxn]) -> None:
        for t in txns:
            if t not in self._added:
                self._added.add(t)
                self._pending.append(t)
        self._pending.sort(key=lambda t: t.first_offset)

    def _consume_up_to(self, offset: int) -> None:
        while self._pending and self._pending[0].first_offset <= offset:
            t = self._pending.pop(0)
            self.ongoing_aborted.setdefault(t.producer_id, [t, None])

    def on_control_batch(self, batch: Any) -> bool:
        self._consume_up_to(batch.last_offset)
        recs = iter(batch)
        rec = next(recs, None)
        if rec is None:
            return True  # an emptied marker from an earlier clean
        ctype = getattr(rec, "control_type", None)
        ctype = None if ctype is None else int(ctype)
        pid = batch.producer_id
        if ctype == 0:
            meta = self.ongoing_aborted.pop(pid, None)
            if meta is not None and meta[1] is not None:
                self.kept_aborted.append(meta[0])
                return False
            return True
        if ctype == 1:
            if pid in self.ongoing_committed:
                self.ongoing_committed.discard(pid)
                return False
            return True
        return False

    def on_batch(self, batch: Any) -> bool:
        self._consume_up_to(batch.last_offset)
        if batch.is_transactional:
            meta = self.ongoing_aborted.get(batch.producer_id)
            if meta is not None:
                meta[1] = batch.last_offset
                return True
            self.ongoing_committed.add(batch.producer_id)
        return False
