"""The race (:mod:`kcodec.advise.race`) in the measuring loop: each round's metrics rows to contenders, and
the settings it dropped back into a topic's advice, marked, with their figures at the round they were dropped.

The race runs under ``--sample auto`` with ``--race on`` (the default) and
the CPU model's bill: a measured CPU time moves with the machine's load, and
the race decides from byte counts and the model only.  Under ``--knee``
below 1 (the default 0.9), the rule picks within one ``linger.ms`` and
``batch.size``, so each of those races apart and keeps its own best.
"""
from __future__ import annotations

import math
from dataclasses import replace
from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.aggregate import TopicAggregate
from kcodec.advise.cost import MonthlyCost
from kcodec.advise.cpu import cpu_cost, fastest_mbps
from kcodec.advise.grid import Setting
from kcodec.advise.race import Contender, Limit, Race
from kcodec.advise.recommend import Measured, Rule, TopicAdvice, tie_order
from kcodec.advise.task import TODAY

__all__ = ["TopicRace", "RangeBook", "race_off_reason", "outside_rule"]

_RANGE_COLUMNS = ("topic", "setting", "partition", "chunk", "payload_bytes", "stored_bytes", "batches", "records",
                  "compress_seconds", "read_seconds")


def race_off_reason(race: str, cpu: str, choose: Optional[Setting]) -> Optional[str]:
    """Why the grid is measured whole (None: it races)."""
    if race == "off":
        return "--race off: every setting measured on every range"
    if cpu == "measured":
        return "--cpu-cost measured: the race decides from the CPU model only, so every setting is measured"
    if choose is not None:
        return "--choose: every setting measured on every range"
    return None


def _past_linger(s: Setting, rule: Rule) -> Optional[str]:
    """Why ``s``'s linger.ms puts it out of the rule, if it does."""
    return (f"linger.ms {s.linger_ms} past --max-linger-ms {rule.max_linger_ms:g}"
            if s.linger_ms > rule.max_linger_ms else None)


def outside_rule(settings: Sequence[Setting], rule: Rule) -> Dict[str, Tuple[str, float]]:
    """The settings the rule excludes whatever a sample holds (label -> why, and the deciding figure): a
    ``linger.ms`` past ``--max-linger-ms``, or a codec and level to which the CPU model gives fewer MB/s
    than the rule asks on any data (:func:`kcodec.advise.cpu.fastest_mbps`). The bill and the rule's speeds
    are the model's, so measuring these could not bring them back."""
    out: Dict[str, Tuple[str, float]] = {}
    for s in settings:
        late = _past_linger(s, rule)
        if late is not None:
            out[s.label] = (late, 0.0)
            continue
        if rule.cpu == "measured":
            continue
        fastest = fastest_mbps(s.codec, s.level)
        if fastest is None:
            continue
        for what, top, flag, limit in (("builds", fastest[0], "--min-compress-mbps", rule.min_compress_mbps),
                                       ("reads", fastest[1], "--min-read-mbps", rule.min_read_mbps)):
            if top < limit:
                out[s.label] = (f"{what} at most {top:.3g} MB/s by the CPU model on any data, below {flag} "
                                f"{limit:g}", top)
                break
    return out


def _seconds(codec: str, level: Optional[int], ranges, rule: Rule) -> Tuple[List[float], List[float]]:
    """The CPU model's build and read seconds of each range's batches (or the measured ones, by ``rule.cpu``)."""
    build, read = [], []
    for _, (payload, stored, batches, records, cs, rs) in ranges:
        c = cpu_cost(codec, level, payload, stored, batches, records, cs, rs, measured=rule.cpu == "measured")
        build.append(c.compress_seconds)
        read.append(c.read_seconds)
    return build, read


def _split(cost: MonthlyCost, codec: str, build: List[float], read: List[float], ranges) -> Tuple[float, ...]:
    """A $/month over the measured ranges, adding up to it: storage and network by each range's stored bytes,
    CPU by the seconds of :func:`_seconds` for the range's batches (``build``, ``read``)."""
    stored_total = math.fsum(f[1] for _, f in ranges) or 1.0
    # the CPU the bill counts: building, where a codec compresses, and reading
    billed = [(b if codec != "none" else 0.0) + r for b, r in zip(build, read)]
    cpu_total = math.fsum(billed)
    volume = cost.storage + cost.network
    return tuple(volume * f[1] / stored_total + (cost.cpu * w / cpu_total if cpu_total > 0 else 0.0)
                 for (_, f), w in zip(ranges, billed))


class RangeBook:
    """Every measured range's figures per topic and setting, added to round by round."""

    def __init__(self) -> None:
        self.rows: Dict[Tuple[str, str], Dict[Tuple[int, int], Tuple]] = {}

    def add(self, table) -> None:
        cols = table.select(list(_RANGE_COLUMNS)).to_pydict()
        for i in range(len(cols["topic"])):
            key = (cols["topic"][i], cols["setting"][i])
            self.rows.setdefault(key, {})[(cols["partition"][i], cols["chunk"][i])] = tuple(
                cols[c][i] for c in _RANGE_COLUMNS[4:])

    def ranges(self, topic: str, setting: str) -> List[Tuple[Tuple[int, int], Tuple]]:
        """(range, figures) of ``setting`` in (partition, chunk) order."""
        return sorted(self.rows.get((topic, setting), {}).items())


class TopicRace:
    """One topic's race over its grid, and the settings it dropped as they were costed when dropped."""

    def __init__(self, settings: Sequence[Setting], knee: float, rule: Optional[Rule] = None) -> None:
        self.settings = {s.label: s for s in settings}
        # the knee picks within a linger.ms and batch.size: each races apart
        groups = [(s.linger_ms, s.batch_bytes) for s in settings] if knee < 1 else None
        self.race = Race([s.label for s in settings], groups=groups, knee=knee)
        self.frozen: Dict[str, Measured] = {}
        if rule is not None:
            self.race.exclude(outside_rule(settings, rule))

    @property
    def running(self) -> List[Setting]:
        return [self.settings[n] for n in self.race.running]

    def keep(self, agg: TopicAggregate) -> TopicAggregate:
        """The topic's aggregate with only today's line and the running settings' (the dropped ones were
        summed over fewer ranges)."""
        running = set(self.race.running)
        return replace(agg, settings=tuple(r for r in agg.settings if r.setting == TODAY or r.setting in running))

    def round(self, advice: TopicAdvice, book: RangeBook, population: int, rule: Rule) -> None:
        """One round: ``advice`` costs the running settings over every range so far."""
        costed = {m.label: m for m in advice.results}
        today = book.ranges(advice.topic, TODAY)
        sizes = [f[0] for _, f in today]
        where = [r for r, _ in today]
        contenders = [self._contender(costed[name], book.ranges(advice.topic, name), where, rule)
                      for name in self.race.running]
        today_costs = None
        if advice.today.cost is not None:
            dominant = advice.profile.dominant
            today_costs = _split(advice.today.cost, dominant, *_seconds(dominant, None, today, rule), today)
        log = self.race.round(contenders, sizes, population, today_costs)
        for d in log.drops:
            m = costed[d.name]
            m.dropped = d
            self.frozen[d.name] = m

    @staticmethod
    def _contender(m: Measured, ranges, where: List, rule: Rule) -> Contender:
        if [r for r, _ in ranges] != where:
            raise ValueError(f"{m.label}: not measured on the same ranges as today's batches")
        s, cost = m.setting, m.cost
        if s is None or cost is None:
            raise ValueError("the race takes costed settings, not today's batches")
        build, read = _seconds(s.codec, s.level, ranges, rule)
        out = _past_linger(s, rule)
        return Contender(m.label, _split(cost, s.codec, build, read, ranges), m.cost_uncertainty, tie_order(m),
                         rule.allows(m), (Limit("build", tuple(build), rule.min_compress_mbps),
                                          Limit("read", tuple(read), rule.min_read_mbps)), out)

    def finish(self, advice: TopicAdvice) -> None:
        """The dropped settings into ``advice``'s table, marked, with their figures at the round dropped."""
        advice.results = sorted(list(advice.results) + list(self.frozen.values()), key=lambda m: m.label)
        advice.race = self

    def text(self) -> List[str]:
        """The race's lines for a topic's report: none for a grid of one setting, which has no race."""
        if len(self.race.names) <= 1:
            return []
        lines = self.race.text()
        state = ("decided" if self.race.decided else "not decided: more ranges would be needed to tell the "
                 "settings still running apart")
        lines.append(f"{len(self.race.running)} of {len(self.race.names)} settings ran to the end, "
                     f"{len(self.race.rounds)} round(s); {state}")
        return lines

    def doc(self) -> Dict[str, Any]:
        return self.race.doc()
