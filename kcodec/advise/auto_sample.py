"""Sampling to a target (``--sample auto``): chunks are read in rounds until each topic's answer is known.

A topic's candidate chunks (at most ``--sample-cap`` bytes, spread over its
partitions and time by the input's planner) are put in a *nested* order: every
prefix of the order is itself spread over partitions and time, so a round
only adds chunks and never discards one already measured.  The first round
measures the first :attr:`SampleTarget.first_chunks` of every topic; each later
round doubles the chunks of the topics still open.  A topic is done when the
95% confidence interval of its recommended setting's compression ratio is
within ``--sample-precision`` (a share of the ratio), when its candidates run
out (a topic smaller than the cap is then measured whole), or when the cap
stops it.

The ratio is the ratio of sums Σplain / Σstored over the measured chunks, so
its interval is the ratio estimator's: chunks are drawn without replacement
from the candidates, with Student's t for the few chunks of the first rounds.
Every figure is a byte count, so the chunks read depend on the data and the
flags only, never on the machine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Dict, Generic, Iterable, List, Optional, Sequence, Tuple, TypeVar

__all__ = ["SampleTarget", "SampleReach", "AutoSampler", "nested_order", "ratio_interval", "t_quantile",
           "DEFAULT_CAP", "DEFAULT_PRECISION", "FIRST_CHUNKS"]

DEFAULT_CAP = "64MiB"  #: per topic: never more than a fixed --sample read before auto
DEFAULT_PRECISION = 0.01  #: the 95% interval's half-width, as a share of the ratio
FIRST_CHUNKS = 4  #: the first round's chunks per topic: the fewest that tell a spread at all

# Student's t, 97.5th percentile (two-sided 95%), for 1 to 30 degrees of freedom.
_T975 = (12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
         2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042)
_Z975 = 1.959964

U = TypeVar("U")


def t_quantile(df: int) -> float:
    """Student's t at 97.5% for ``df`` degrees of freedom (the table to 30, then Cornish-Fisher's expansion)."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)


def ratio_interval(plain: Sequence[int], stored: Sequence[int], population: int) -> float:
    """The 95% interval's half-width of Σplain/Σstored, as a share of it, for chunks drawn without
    replacement from ``population`` chunks: 0 once every chunk is measured, infinite below two chunks."""
    n = len(plain)
    if n != len(stored):
        raise ValueError("one stored size per chunk")
    if n >= population:
        return 0.0
    if n < 2:
        return math.inf
    ys, xs = math.fsum(plain), math.fsum(stored)
    if xs <= 0 or ys <= 0:
        return math.inf
    ratio = ys / xs
    residual = math.fsum((y - ratio * x) ** 2 for y, x in zip(plain, stored)) / (n - 1)
    mean_x = xs / n
    variance = (1 - n / population) * residual / (n * mean_x * mean_x)
    return t_quantile(n - 1) * math.sqrt(variance) / ratio


def _spread_order(n: int) -> List[int]:
    """0..n-1 so that every prefix is spread out: the middle first, then each time the index farthest
    from every one taken (the lower on a tie)."""
    if n <= 0:
        return []
    order = [(n - 1) // 2]
    gap = [abs(i - order[0]) for i in range(n)]
    for _ in range(n - 1):
        best = max(range(n), key=lambda i: (gap[i], -i))
        order.append(best)
        gap = [min(g, abs(i - best)) for i, g in enumerate(gap)]
    return order


def nested_order(units: Iterable[U], partition: Callable[[U], int], position: Callable[[U], int]) -> List[U]:
    """One topic's candidate chunks in an order whose every prefix is spread over partitions and time.

    Within a partition (chunks in ``position`` order), :func:`_spread_order`.
    Across partitions, the j-th chunk of a partition of n candidates comes at
    (j + 1/2) / n, so a prefix takes from each partition in proportion to its
    candidates (the planner gave each partition candidates in proportion to its bytes).
    """
    parts: Dict[int, List[U]] = {}
    for u in units:
        parts.setdefault(partition(u), []).append(u)
    keyed: List[Tuple[float, int, U]] = []
    for p, us in parts.items():
        us = sorted(us, key=position)
        for j, i in enumerate(_spread_order(len(us))):
            keyed.append(((j + 0.5) / len(us), p, us[i]))
    keyed.sort(key=lambda k: (k[0], k[1]))
    return [u for _, _, u in keyed]


@dataclass(frozen=True)
class SampleTarget:
    """``--sample auto``'s target and bounds."""

    precision: float = DEFAULT_PRECISION  #: --sample-precision
    cap_bytes: int = 64 << 20  #: --sample-cap, per topic
    first_chunks: int = FIRST_CHUNKS


@dataclass
class SampleReach:
    """How far sampling went for one topic."""

    chunks: int  #: chunks measured
    candidates: int  #: chunks it could have measured: the whole topic, or the cap's worth
    sampled_bytes: int  #: stored bytes of the measured chunks
    half_width: float  #: the 95% interval's half-width of the recommended setting's ratio, a share of it
    setting: str  #: the setting whose ratio it is
    stop: str  #: "precision", "whole" (every chunk of the topic) or "cap" (--sample-cap's chunks, all read)
    rounds: int
    target: float  #: --sample-precision

    def text(self) -> str:
        from kcodec.advise.grid import format_size

        read = f"{self.chunks} of {self.candidates} chunks ({format_size(self.sampled_bytes)})"
        if self.stop == "whole":
            return f"{read}: the whole topic, no sampling error"
        within = (f"{self.setting}'s ratio known to +/-{self.half_width * 100:.2f}% (95%)"
                  if math.isfinite(self.half_width) else f"too few chunks to know {self.setting}'s ratio's interval")
        if self.stop == "precision":
            return f"{read} in {self.rounds} round(s): {within}, inside the target of +/-{self.target * 100:g}%"
        return (f"{read}: --sample-cap reached with {within}, wider than the target of +/-{self.target * 100:g}%; "
                f"a larger --sample-cap reads more")

    def doc(self) -> Dict[str, object]:
        return {"chunks": self.chunks, "candidates": self.candidates, "sampled_bytes": self.sampled_bytes,
                "half_width": self.half_width if math.isfinite(self.half_width) else None,
                "setting": self.setting, "stop": self.stop, "rounds": self.rounds, "target": self.target}


class AutoSampler(Generic[U]):
    """The rounds of ``--sample auto`` over every topic's candidates.

    ``candidates`` maps each topic to its candidate chunks in :func:`nested_order`;
    ``population`` to the chunks the whole topic has (as many as its candidates when they are all of
    it); ``size`` tells a chunk's stored bytes.
    """

    def __init__(self, candidates: Dict[str, List[U]], population: Dict[str, int], size: Callable[[U], int],
                 target: SampleTarget) -> None:
        self.candidates = candidates
        self.population = population
        self.size = size
        self.target = target
        self.taken: Dict[str, int] = {t: 0 for t in candidates}
        self.reach: Dict[str, SampleReach] = {}
        self.rounds = 0

    @property
    def open_topics(self) -> List[str]:
        return sorted(t for t in self.candidates if t not in self.reach)

    def next_round(self) -> List[U]:
        """The chunks the next round measures: the first chunks of every topic, then twice as many
        of each open topic; empty when every topic is done."""
        out: List[U] = []
        for t in self.open_topics:
            have = self.taken[t]
            want = min(len(self.candidates[t]), self.target.first_chunks if have == 0 else 2 * have)
            out.extend(self.candidates[t][have:want])
            self.taken[t] = want
        if out:
            self.rounds += 1
        return out

    def settle(self, topic: str, setting: str, plain: Sequence[int], stored: Sequence[int],
               decided: bool = True) -> Optional[SampleReach]:
        """After a round: the topic's recommended ``setting`` and its per-chunk plain and stored bytes (every
        chunk measured so far), and whether the race over its grid is decided (a topic whose race is not
        reads on past its precision). Returns the topic's reach once it is done, else None."""
        n, total = self.taken[topic], len(self.candidates[topic])
        population = max(total, self.population.get(topic, total))
        half = ratio_interval(plain, stored, population)
        if n >= population:
            stop = "whole"
        elif half <= self.target.precision and decided:  # reached on the cap's last chunks too: the target stopped it
            stop = "precision"
        elif n >= total:
            stop = "cap"
        else:
            return None
        sampled = sum(self.size(u) for u in self.candidates[topic][:n])
        self.reach[topic] = SampleReach(n, total, sampled, half, setting, stop, self.rounds,
                                         self.target.precision)
        return self.reach[topic]
