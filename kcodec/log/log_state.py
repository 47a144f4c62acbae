"""What one pass over a partition's batch headers finds: producers, transactions, segment facts.

:func:`scan_log` reads every batch header once (and the record of each
control batch) and returns a :class:`LogState`: each producer's epoch and
last data batch (Kafka's producer state), the transactions still open (which
bound the last stable offset) and the aborted ones, and each segment's
largest timestamp and next offset.  Aborted transactions are found by
reading the ABORT markers (a transaction spans from its producer's first
transactional batch after the previous marker to its ABORT marker), not from
``.txnindex`` files, which may be missing.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from kcodec.log.segment_list import SegmentInfo, errors_name, list_segments, open_log
from kcodec.log.transaction_index import AbortedTxn
from kcodec.storage import Storage

__all__ = ["LogState", "scan_log"]


@dataclass
class _Producer:
    epoch: int = -1
    last_data_offset: int = -1
    last_timestamp: int = -1
    txn_first_offset: Optional[int] = None


@dataclass
class LogState:
    """What one header pass over the whole log finds: producers, transactions, segment facts."""

    segments: List[SegmentInfo]
    log_end_offset: int
    last_stable_offset: int
    aborted: List[AbortedTxn]
    producers: Dict[int, _Producer]
    largest_timestamp: Dict[int, int]
    first_batch_timestamp: Dict[int, int]
    next_offset: Dict[int, int]

    def active_producers(self, now: int, expiration_ms: int) -> Dict[int, Tuple[Optional[int], int]]:
        """``lastRecordsOfActiveProducers``: pid -> (last data offset or None, epoch)."""
        out = {}
        for pid, p in self.producers.items():
            if p.txn_first_offset is None and now - p.last_timestamp >= expiration_ms:
                continue
            out[pid] = (p.last_data_offset if p.last_data_offset >= 0 else None, p.epoch)
        return out

    def aborted_overlapping(self, start: int, end: int) -> List[AbortedTxn]:
        """``collectAbortedTransactions(start, end)``: aborted txns touching ``[start, end)``."""
        return [t for t in self.aborted if t.last_offset >= start and t.first_offset < end]


def _control_type(batch: Any) -> Optional[int]:
    for rec in batch:
        ct = getattr(rec, "control_type", None)
        return None if ct is None else int(ct)
    return None


def scan_log(log_dir: str, segments: Optional[List[SegmentInfo]] = None,
             storage: Optional[Storage] = None) -> LogState:
    """Read every batch header of the log (and the record of each control batch)."""
    from kcodec.records import read_batches
    segments = list_segments(log_dir, storage) if segments is None else segments
    producers: Dict[int, _Producer] = {}
    ongoing: Dict[int, int] = {}  # pid -> first offset of its open transaction
    aborted: List[AbortedTxn] = []
    largest: Dict[int, int] = {}
    first_ts: Dict[int, int] = {}
    nxt: Dict[int, int] = {}
    end = segments[0].base_offset if segments else 0
    for seg in segments:
        seg_max = -1
        seg_next = seg.base_offset
        with open_log(seg.path(), seg.storage) as buf, errors_name(seg):
            for batch in read_batches(buf, validate=False):
                last = batch.last_offset
                seg_next = last + 1
                if batch.max_timestamp > seg_max:
                    seg_max = batch.max_timestamp
                if seg.base_offset not in first_ts:
                    first_ts[seg.base_offset] = batch.max_timestamp
                pid = batch.producer_id
                if batch.magic < 2 or pid < 0:
                    continue
                p = producers.setdefault(pid, _Producer())
                if batch.producer_epoch != p.epoch:
                    # ProducerStateEntry.maybeUpdateProducerEpoch drops the cached batches.
                    p.last_data_offset = -1
                    p.epoch = batch.producer_epoch
                p.last_timestamp = batch.max_timestamp
                if batch.is_control:
                    ctype = _control_type(batch)
                    if ctype in (0, 1):
                        first = ongoing.pop(pid, None)
                        p.txn_first_offset = None
                        if ctype == 0 and first is not None:
                            lso = min(ongoing.values()) if ongoing else last + 1
                            aborted.append(AbortedTxn(pid, first, last, lso))
                else:
                    p.last_data_offset = last
                    if batch.is_transactional and pid not in ongoing:
                        ongoing[pid] = batch.base_offset
                        p.txn_first_offset = batch.base_offset
        largest[seg.base_offset] = seg_max if seg_max >= 0 else int(seg.mtime * 1000)
        nxt[seg.base_offset] = seg_next
        end = max(end, seg_next)
    lso = min(ongoing.values()) if ongoing else end
    return LogState(segments, end, lso, aborted, producers, largest, first_ts, nxt)
