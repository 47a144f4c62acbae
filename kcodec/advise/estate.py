"""Many topics as one estate: one setting where one will do, and what that simplification costs.

A producer's configuration is set per application or as a fleet default, not per
topic, so an estate's advice is a few settings, each with the topics it serves.
Two topics whose best settings differ by less than their estimates' uncertainty
are one kind of traffic: they get one setting.  The choice is deterministic:

* a topic's *acceptable* settings are those the rule allows whose $/month is
  within the tie margin of the topic's best, the very margin within which the
  rule (:func:`kcodec.advise.recommend.pick`) and the race count two costs
  equal (:func:`kcodec.advise.recommend.tie_margin`: the two settings'
  uncertainties, the CPU model's error plus the sampling's), and never less
  than ``tolerance`` of the best's $/month (a cost sampled in one chunk and
  billed from a measured CPU time carries no uncertainty);
* the setting acceptable to the most topics is given to them (ties: the larger
  saving, then the setting's order), and so on until every topic has one.

Beside that, the one setting the whole estate (or each ``--group-by`` group)
could share, against the per-topic settings, in dollars.  Topics without a
known daily volume are left out of every dollar figure here.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

from kcodec.advise.cost import Prices, recompress_cpu
from kcodec.advise.grid import Setting
from kcodec.advise.notes import money
from kcodec.advise.recommend import Measured, Rule, TopicAdvice, tie_margin
from kcodec.errors import KcodecError

__all__ = ["DEFAULT_TOLERANCE", "OTHER_GROUP", "Estate", "SettingGroup", "SharedSetting", "acceptable", "group_of",
           "harmonise", "set_harmonised", "plan_estate", "shared_setting", "compile_group_by"]

DEFAULT_TOLERANCE = 0.02
OTHER_GROUP = "(no match)"


def acceptable(a: TopicAdvice, rule: Rule, tolerance: float) -> List[Measured]:
    """The settings of ``a`` the rule allows whose cost lies within the tie margin of its best's, or within
    ``tolerance`` of the best's $/month where that is wider."""
    best = a.best
    if best is None:
        return []
    out = []
    for m in a.results:
        if m is best:
            out.append(m)
        elif rule.allows(m) and m.dropped is None and \
                m.cost.total - best.cost.total <= max(tolerance * best.cost.total, tie_margin(m, best)):
            out.append(m)
    return out


def harmonise(advice: Sequence[TopicAdvice], rule: Rule, tolerance: float = DEFAULT_TOLERANCE,
              group_by: Optional[str] = None) -> Dict[str, Measured]:
    """topic -> the setting it is given (only topics with a recommendation; ``--choose`` is not harmonised).

    Within each ``group_by`` group (the whole estate without one), a greedy cover of the topics by
    their acceptable settings, the most shared first, each given the one its members save most by.
    """
    pattern = compile_group_by(group_by)
    if pattern is not None:
        groups: Dict[str, List[TopicAdvice]] = {}
        for a in advice:
            groups.setdefault(group_of(a.topic, pattern), []).append(a)
        out: Dict[str, Measured] = {}
        for key in sorted(groups):
            out.update(harmonise(groups[key], rule, tolerance))
        return out
    options: Dict[str, Dict[Setting, Measured]] = {
        a.topic: {m.setting: m for m in acceptable(a, rule, tolerance)} for a in advice if a.best is not None}
    today_cost = {a.topic: a.today.cost.total for a in advice}
    given: Dict[str, Measured] = {}
    left = set(options)
    while left:
        count: Dict[Setting, Tuple[int, float]] = {}
        for t in left:
            for s, m in options[t].items():
                n, saved = count.get(s, (0, 0.0))
                count[s] = (n + 1, saved + today_cost[t] - m.cost.total)
        pick = min(count, key=lambda s: (-count[s][0], -round(count[s][1], 6), s))
        members = sorted(t for t in left if pick in options[t])
        # Among the settings every member accepts, the one that saves them most.
        shared = set.intersection(*(set(options[t]) for t in members))
        pick = min(shared, key=lambda s: (-round(sum(today_cost[t] - options[t][s].cost.total for t in members), 6),
                                          s))
        for t in members:
            given[t] = options[t][pick]
            left.discard(t)
    return given


def set_harmonised(advice: Sequence[TopicAdvice], rule: Rule, prices: Prices, tolerance: float = DEFAULT_TOLERANCE,
                   group_by: Optional[str] = None) -> None:
    """Give each topic the setting :func:`harmonise` shares with topics like it, saying so in its notes."""
    given = harmonise(advice, rule, tolerance, group_by)
    for a in advice:
        m = given.get(a.topic)
        if m is None or m is a.best or a.best is None:
            continue
        own = a.best
        diff = m.cost.total - own.cost.total
        # The topic's own pick can be the knee's, not its cheapest: the shared setting may then cost less.
        a.notes.append(f"set as topics like it: {m.label} costs {money(abs(diff))}/month "
                       f"{'more' if diff >= 0 else 'less'} than this topic's own pick, {own.label}, within the "
                       f"estimates' uncertainty "
                       f"(--same-setting-within {tolerance:g})")
        a.best = m
        raw_per_day = a.stored_per_day * a.today.payload_bytes / max(1, a.today.stored_bytes)
        a.recompress_cpu = recompress_cpu(m.stored_per_day, raw_per_day, m.compress_mbps, m.read_mbps, prices)
        if m.setting.default_level:  # settable by every client: no older clients' alternative to name
            a.best_without_level = None


def _own_best_saving(a: TopicAdvice, rule: Rule) -> float:
    """What the topic's own cheapest allowed setting saves ($/month, 0 when none is cheaper than today)."""
    costs = [m.cost.total for m in a.results if rule.allows(m)]
    return max([0.0] + [a.today.cost.total - c for c in costs])


@dataclass
class SharedSetting:
    """One setting for a set of topics, against each topic's own."""

    name: str  #: the group ("all topics" or a --group-by key)
    topics: int
    setting: Optional[Setting]  #: None: no setting the rule allows for every topic of the group
    saving: float  #: $/month saved by the one setting
    per_topic_saving: float  #: $/month saved by each topic's own cheapest setting the rule allows
    bytes_per_day: float

    @property
    def cost(self) -> float:
        """What the simplification costs, $/month."""
        return self.per_topic_saving - self.saving


def shared_setting(name: str, advice: Sequence[TopicAdvice], rule: Rule) -> SharedSetting:
    """The one setting, allowed by the rule for every topic, that saves the group most (priced topics only)."""
    priced = [a for a in advice if a.priced]
    per_topic = sum(_own_best_saving(a, rule) for a in priced)
    volume = sum(a.stored_per_day for a in priced)
    if not priced:
        return SharedSetting(name, len(advice), None, 0.0, 0.0, 0.0)
    # A setting's speed over the whole group, from the CPU the rule counts (the model's, as each topic's own
    # pick takes it): a measured time moves with the machine's load, and the answer must not.
    totals: Dict[Setting, List[float]] = {}
    for a in priced:
        for m in a.results:
            t = totals.setdefault(m.setting, [0.0, 0.0, 0.0, 0.0, 0])
            t[0] += m.cost.total
            t[1] += m.payload_bytes
            t[2] += m.billed_compress_seconds
            t[3] += m.billed_read_seconds
            t[4] += 1
    allowed = {s: t[0] for s, t in totals.items()
               if t[4] == len(priced) and s.linger_ms <= rule.max_linger_ms
               and t[1] / 1e6 / max(t[2], 1e-9) >= rule.min_compress_mbps
               and t[1] / 1e6 / max(t[3], 1e-9) >= rule.min_read_mbps}
    if not allowed:
        return SharedSetting(name, len(advice), None, 0.0, per_topic, volume)
    today = sum(a.today.cost.total for a in priced)
    pick = min(allowed, key=lambda s: (round(allowed[s], 6), s))
    # A fleet default that costs more than today is not one to set: keep today's (saving 0).
    saving = max(0.0, today - allowed[pick])
    return SharedSetting(name, len(advice), pick if saving > 0 else None, saving, per_topic, volume)


def group_of(topic: str, pattern: "re.Pattern[str]") -> str:
    """The ``--group-by`` key of ``topic``: the regex's first group if it has one, else its whole match."""
    m = pattern.search(topic)
    if m is None:
        return OTHER_GROUP
    return (m.group(1) if pattern.groups and m.group(1) is not None else m.group(0)) or OTHER_GROUP


def compile_group_by(text: Optional[str]) -> Optional["re.Pattern[str]"]:
    if not text:
        return None
    try:
        return re.compile(text)
    except re.error as exc:
        raise KcodecError(f"--group-by {text}: not a regular expression ({exc})") from None


@dataclass
class SettingGroup:
    """The topics given one setting (``setting`` None: keep today's)."""

    setting: Optional[Setting]
    topics: List[TopicAdvice] = field(default_factory=list)

    @property
    def priced(self) -> List[TopicAdvice]:
        return [a for a in self.topics if a.priced]

    @property
    def saving(self) -> float:
        return sum(a.saving for a in self.priced)

    @property
    def bytes_per_day(self) -> float:
        return sum(a.stored_per_day for a in self.priced)


@dataclass
class Estate:
    """The advice of many topics taken together: what the terminal, HTML and JSON summaries show."""

    topics: List[TopicAdvice]
    groups: List[SettingGroup]  #: by saving, largest first; "keep today's" last
    whole: SharedSetting
    by_group: List[SharedSetting]  #: per --group-by key, largest per-topic saving first
    group_by: Optional[str]
    tolerance: float

    @property
    def priced(self) -> List[TopicAdvice]:
        return [a for a in self.topics if a.priced]

    @property
    def unpriced(self) -> List[TopicAdvice]:
        return [a for a in self.topics if not a.priced]

    @property
    def today(self) -> float:
        return sum(a.today.cost.total for a in self.priced)

    @property
    def after(self) -> float:
        return sum((a.best or a.today).cost.total for a in self.priced)

    @property
    def ranked(self) -> List[TopicAdvice]:
        """Topics by saving, largest first (unpriced ones last), then by name."""
        return sorted(self.topics, key=lambda a: (not a.priced, -round(a.saving, 6), a.topic))


def plan_estate(advice: Sequence[TopicAdvice], rule: Rule, group_by: Optional[str] = None,
                tolerance: float = DEFAULT_TOLERANCE) -> Estate:
    """Group the topics by the setting they are given (after :func:`harmonise` has been applied)."""
    by_setting: Dict[Optional[Setting], SettingGroup] = {}
    for a in advice:
        s = a.best.setting if a.best is not None else None
        by_setting.setdefault(s, SettingGroup(s)).topics.append(a)
    groups = sorted(by_setting.values(), key=lambda g: (g.setting is None, -round(g.saving, 6), -len(g.topics),
                                                        g.setting or Setting("", None, 0)))
    whole = shared_setting("all topics", advice, rule)
    by_group: List[SharedSetting] = []
    pattern = compile_group_by(group_by)
    if pattern is not None:
        members: Dict[str, List[TopicAdvice]] = {}
        for a in advice:
            members.setdefault(group_of(a.topic, pattern), []).append(a)
        by_group = sorted((shared_setting(k, v, rule) for k, v in members.items()),
                          key=lambda g: (-round(g.per_topic_saving, 6), g.name))
    return Estate(list(advice), groups, whole, by_group, group_by, tolerance)
