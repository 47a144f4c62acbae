"""A topic's batches of today, as the stages after Spark read them: typed values and their results.json form.

:func:`kcodec.advise.today.today_profiles` builds one :class:`TopicProfile` per
topic from its chunks' metrics rows; the rule, the bill and every rendering
read it by attribute.  :meth:`TopicProfile.doc` is the ``profile`` object of
``results.json``: these fields, in this order, with a spread or replay that was
not measured left out.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Dict, Mapping, Optional, Tuple

__all__ = ["Spread", "ReplayProfile", "TopicProfile"]


@dataclass(frozen=True)
class Spread:
    """A per-batch figure over a topic's batches: exact percentiles (interpolated between ranks) and the mean."""

    p10: float
    p50: float
    p90: float
    mean: float

    def doc(self) -> Dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class ReplayProfile:
    """Whose batching the replay followed and how its sender was set, over a topic's chunks."""

    client: str  #: the client whose rules were followed: Java's where the chunks name none or disagree
    clients: Tuple[str, ...]  #: the clients the chunks' framing named, sorted
    recognised: bool  #: every chunk's framing named that one client
    sender_delay_ms: float  #: the median chunk's sender delay (a chunk's own value, never a blend)
    calibrated_share: float  #: the share of chunks whose sender delay was calibrated on today's batches
    calibration_error: float  #: today's batches over the replay's of today's setting, less 1
    producer_ids: int  #: the most producer ids seen in one chunk (0: batches without ids)
    producers_replayed: int  #: the most producers a chunk was replayed with

    def doc(self) -> Dict[str, Any]:
        return {**asdict(self), "clients": list(self.clients)}


@dataclass(frozen=True)
class TopicProfile:
    """Today's batches of one topic, summed over its sampled chunks."""

    codec_bytes: Mapping[str, int]  #: stored bytes per codec name (:data:`kcodec.advise.profile.CODEC_NAMES`)
    min_ts: Optional[int] = None  #: the earliest and latest timestamps (ms): the span the volume is taken over
    max_ts: Optional[int] = None
    log_append_batches: int = 0  #: batches stamped by the broker (LogAppendTime)
    partition_rate: Optional[float] = None  #: stored bytes per ms of a partition, averaged over the chunks
    magic_batches: Mapping[int, int] = field(default_factory=dict)  #: batches per message format (0, 1, 2)
    record_size_hist: Tuple[int, ...] = ()  #: records per power-of-two size class of key+value+headers
    batch_records: Optional[Spread] = None  #: records per batch; None where no chunk recorded a batch
    batch_bytes: Optional[Spread] = None  #: stored bytes per batch; None where no chunk recorded a batch
    replay: Optional[ReplayProfile] = None  #: None where nothing was replayed

    def doc(self) -> Dict[str, Any]:
        out: Dict[str, Any] = {"min_ts": self.min_ts, "max_ts": self.max_ts,
                               "log_append_batches": self.log_append_batches, "partition_rate": self.partition_rate,
                               "codec_bytes": dict(self.codec_bytes), "magic_batches": dict(self.magic_batches),
                               "record_size_hist": list(self.record_size_hist)}
        for name, spread in (("batch_records", self.batch_records), ("batch_bytes", self.batch_bytes)):
            if spread is not None:
                out[name] = spread.doc()
        if self.replay is not None:
            out["replay"] = self.replay.doc()
        return out

    @property
    def dominant(self) -> str:
        """The codec of most of today's stored bytes: the one today's batches are billed in."""
        return max(self.codec_bytes, key=lambda k: self.codec_bytes[k])

    @property
    def span_ms(self) -> int:
        """The timestamps' span (ms), 0 where no timestamp was read."""
        return self.max_ts - self.min_ts if self.min_ts is not None and self.max_ts is not None else 0
