"""What a setting costs the producer: the latency ``linger.ms`` adds, the memory ``batch.size`` holds,
and the knee of the saving against ``linger.ms``.

Kafka's producer (``RecordAccumulator``) holds one open batch of up to
``batch.size`` bytes per partition it writes to, all out of ``buffer.memory``
(``ProducerConfig``, 32 MiB by default); a record waits in its batch up to
``linger.ms`` before ``Sender`` may send it.  The longest linger and largest
batch usually save the most, but most of the saving is often reached long
before: the *knee* is the smallest ``linger.ms``, then ``batch.size``, whose
saving is at least a stated share (``--knee``) of the best saving within the
latency budget (``--max-linger-ms``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, List, Optional, Protocol, Sequence, TypeVar

from kcodec.advise.cost import MonthlyCost
from kcodec.advise.grid import Setting, format_size

__all__ = ["DEFAULT_BUFFER_MEMORY", "knee", "LingerPoint", "linger_curve", "ProducerMemory",
           "producer_memory", "percent"]

DEFAULT_BUFFER_MEMORY = 32 * 1024 * 1024  # ProducerConfig's buffer.memory default


class Priced(Protocol):
    """A priced setting of the grid (``kcodec.advise.recommend.Measured[Setting]``), as the knee reads it."""

    setting: Setting

    @property
    def cost(self) -> MonthlyCost: ...


P = TypeVar("P", bound=Priced)


def knee(allowed: Sequence[P], today_total: float, share: float,
         pick: Callable[[Sequence[P]], Optional[P]]) -> Optional[P]:
    """Of ``allowed`` settings (``Measured``), the smallest ``linger.ms``, then ``batch.size``, saving at least
    ``share`` of what the rule's pick among all of them saves (``pick`` again decides among settings of that
    linger.ms and batch.size); the pick itself when nothing saves; None when none is allowed."""
    best = pick(allowed)
    if best is None:
        return None
    best_saving = today_total - best.cost.total
    if share >= 1 or best_saving <= 0:
        return best
    near = [m for m in allowed if today_total - m.cost.total >= share * best_saving]
    smallest = min((m.setting.linger_ms, m.setting.batch_bytes) for m in near)
    return pick([m for m in near if (m.setting.linger_ms, m.setting.batch_bytes) == smallest])


@dataclass
class LingerPoint:
    linger_ms: int
    best: Optional[object]  #: the cheapest setting at this linger.ms that meets the speed rules
    saving: float  #: today's $/month minus its
    in_budget: bool  #: linger.ms within --max-linger-ms


def linger_curve(results: Sequence, today_total: float, fast_enough: Callable, max_linger_ms: float,
                 pick: Callable) -> List[LingerPoint]:
    """The saving at each ``linger.ms`` of the grid: the rule's pick among its settings fast enough for it."""
    out = []
    for linger in sorted({m.setting.linger_ms for m in results}):
        best = pick([m for m in results if m.setting.linger_ms == linger and fast_enough(m)])
        out.append(LingerPoint(linger, best, today_total - best.cost.total if best else 0.0,
                               linger <= max_linger_ms))
    return out


@dataclass(frozen=True)
class ProducerMemory:
    batch_bytes: int
    partitions: int  #: partitions one producer writes to
    buffer_memory: int

    @property
    def needed(self) -> int:
        """One open batch per partition (RecordAccumulator), before any in flight."""
        return self.batch_bytes * self.partitions

    @property
    def share(self) -> float:
        return self.needed / self.buffer_memory

    def text(self) -> str:
        verdict = ("fits" if self.needed <= self.buffer_memory else
                   "exceeds it: send() blocks up to max.block.ms once it is full; raise buffer.memory or lower "
                   "batch.size")
        return (f"batch.size {format_size(self.batch_bytes)} x {self.partitions} partition(s) = "
                f"{format_size(self.needed)} of buffer.memory {format_size(self.buffer_memory)} "
                f"({percent(self.share)}): {verdict}")


def percent(share: float) -> str:
    """A share as a whole percentage; one too small to show as 1% is "<1%", never "0%"."""
    if 0 < share < 0.005:
        return "<1%"
    return f"{share * 100:.0f}%"


def producer_memory(batch_bytes: int, partitions: int, buffer_memory: int = DEFAULT_BUFFER_MEMORY) -> ProducerMemory:
    return ProducerMemory(batch_bytes, max(1, partitions), buffer_memory)
