"""A race over a topic's grid: rounds over common ranges, each ending by dropping the settings that cannot win.

Every setting of a topic is measured on the same ranges (chunks), so what two
settings cost differs range by range far less than each cost varies on its
own: the race compares them in pairs.  After each round, a setting is dropped
when, with the confidence of the sampling target, its monthly cost lies above
the leader's (the cheapest setting the rule allows) by more than the two
settings' tie margin, the uncertainty within which the rule counts costs as
equal (:func:`kcodec.advise.recommend.pick`); or when, with the same
confidence, it builds or reads slower than the rule allows, or its
``linger.ms`` is past ``--max-linger-ms``.  The next round measures only the
settings still running.

Why the best setting survives with confidence ``1 - alpha``: the best is
dropped only if one of the tests of it fails.  A cost test of a setting
against a leader fails with probability at most its ``alpha_k``, and the best
can meet at most ``K - 1`` leaders in a round; a third of ``alpha`` is spread
over those ``K - 1`` leaders and over the rounds as ``2**-k`` (round 1, which
measures every setting, expensive ones included, gets the largest share, so
an expensive setting is decided early), the speed tests take another third
the same way, and the knee's tests (below) the last, so the chances of all
failures together add up to at most ``alpha`` whatever the number of rounds
(:func:`round_alpha`).

Under ``--knee``, settings race within their ``linger.ms`` and ``batch.size``
group, and a whole group is dropped when, with the same confidence, every
one of its settings saves less than the knee's share of what the leader
saves, by more than the widest tie span: the knee can then never pick it
(:func:`knee_drops`).  ``docs/race.md`` says more, and where the ranges'
independence, on which the intervals rest, holds.

Every input is a byte count or the CPU model's figure for byte counts, and the
intervals are computed with exact sums and a deterministic quantile, so the
same data and flags drop the same settings in the same rounds on any machine.
This module is pure: the measuring loop gives it each round's per-range
figures and takes back what to measure next.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["ALPHA", "dollars", "Contender", "Limit", "Gap", "Drop", "RoundLog", "Race", "paired_gap", "ratio_bound",
           "t_upper", "round_alpha", "leader", "tied", "eliminate", "knee_drops", "group_names"]

#: The chance the race may lose the best setting: the sampling target's 95%.
ALPHA = 0.05


def dollars(x: float) -> str:
    """$ to the cent, or to three figures below a dollar (a small topic's gaps are fractions of a cent)."""
    return f"${x:,.2f}" if abs(x) >= 1 or x == 0 else f"${x:.3g}"


def _t_two_sided(t: float, df: int) -> float:
    """P(|T| < t) for Student's t with ``df`` (a whole number) degrees of freedom: the closed forms of
    Abramowitz and Stegun 26.7.3 and 26.7.4, a finite sum for any whole ``df``."""
    theta = math.atan(t / math.sqrt(df))
    s, c2 = math.sin(theta), math.cos(theta) ** 2
    if df % 2 == 0:
        term, total = 1.0, 1.0
        for k in range(2, df, 2):
            term *= c2 * (k - 1) / k
            total += term
        return s * total
    if df == 1:
        return 2 * theta / math.pi
    term, total = math.cos(theta), math.cos(theta)
    for k in range(3, df - 1, 2):
        term *= c2 * (k - 1) / k
        total += term
    return 2 / math.pi * (theta + s * total)


def t_upper(df: int, alpha: float) -> float:
    """Student's t quantile at ``1 - alpha`` (one-sided) for ``df`` degrees of freedom, by bisection on the
    exact distribution up to 2000 degrees, past that Cornish-Fisher's expansion about the normal's."""
    if df < 1:
        raise ValueError("at least one degree of freedom")
    if not 0 < alpha < 0.5:
        raise ValueError("alpha between 0 and 0.5")
    if df > 2000:
        z = NormalDist().inv_cdf(1 - alpha)
        return z + (z ** 3 + z) / (4 * df) + (5 * z ** 5 + 16 * z ** 3 + 3 * z) / (96 * df ** 2)
    want = 1 - 2 * alpha  # P(|T| < t) at the one-sided quantile
    lo, hi = 0.0, 1.0
    while _t_two_sided(hi, df) < want:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if _t_two_sided(mid, df) < want:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def round_alpha(round_no: int, comparisons: int, alpha: float = ALPHA) -> float:
    """The chance one test of round ``round_no`` (from 1) may fail: a third of ``alpha`` (the other thirds are
    the other two kinds of test's: cost, speed, knee), over ``comparisons`` tests of one setting in a round,
    times ``2**-round_no`` so that the rounds' shares add up to less than one however many rounds run."""
    if round_no < 1:
        raise ValueError("rounds count from 1")
    return alpha / 3 * 0.5 ** round_no / max(1, comparisons)


@dataclass(frozen=True)
class Gap:
    """A paired difference of two totals over the measured ranges and its standard error."""

    estimate: float
    se: float
    df: int

    def lower(self, alpha: float) -> float:
        """The one-sided ``1 - alpha`` lower bound: -inf below two ranges."""
        if self.se == 0:
            return self.estimate
        if self.df < 1 or not math.isfinite(self.se):
            return -math.inf
        return self.estimate - t_upper(self.df, alpha) * self.se


def _total_gap(diffs: Sequence[float], sizes: Sequence[float], population: int) -> Gap:
    """Σdiffs and its standard error as the ratio estimator's, with ``sizes`` as the auxiliary figure: ranges
    drawn without replacement from ``population`` ranges, scaled to the sample's total."""
    n = len(diffs)
    if n != len(sizes):
        raise ValueError("one size per range")
    total = math.fsum(diffs)
    if n >= population:
        return Gap(total, 0.0, max(0, n - 1))
    if n < 2:
        return Gap(total, math.inf, 0)
    size = math.fsum(sizes)
    if size <= 0:
        return Gap(total, math.inf, n - 1)
    per = total / size
    residual = math.fsum((d - per * s) ** 2 for d, s in zip(diffs, sizes)) / (n - 1)
    return Gap(total, math.sqrt(n * (1 - n / population) * residual), n - 1)


def paired_gap(costs: Sequence[float], versus: Sequence[float], sizes: Sequence[float], population: int) -> Gap:
    """How much more ``costs`` total than ``versus`` on the same ranges (each list one figure per range,
    in the same order), with its standard error: the ranges' differences, not each side's spread."""
    if len(costs) != len(versus):
        raise ValueError("both settings measured on the same ranges")
    return _total_gap([a - b for a, b in zip(costs, versus)], sizes, population)


def ratio_bound(numerators: Sequence[float], sizes: Sequence[float], population: int,
                alpha: float) -> float:
    """The one-sided ``1 - alpha`` lower bound of Σnumerators / Σsizes (0 when unknown)."""
    size = math.fsum(sizes)
    if size <= 0:
        return 0.0
    low = _total_gap(numerators, sizes, population).lower(alpha)
    return max(0.0, low / size) if math.isfinite(low) else 0.0


@dataclass(frozen=True)
class Limit:
    """A speed the rule asks of a setting: ``seconds`` (CPU per range) must buy at least ``mbps`` MB of
    payload per second; ``what`` names it (build, read)."""

    what: str
    seconds: Tuple[float, ...]
    mbps: float


@dataclass(frozen=True)
class Contender:
    """One setting in a round: its $/month split over the measured ranges (they add up to its cost), its tie
    margin ($/month: the uncertainty within which the rule counts its cost equal to another's), its place in
    the rule's tie order, whether the rule allows it at its estimate, the speeds asked of it, and why the rule
    leaves it out whatever is measured (a flag, e.g. its linger.ms), if it does."""

    name: str
    costs: Tuple[float, ...]
    margin: float
    order: tuple
    allowed: bool = True
    limits: Tuple[Limit, ...] = ()
    out_of_rule: Optional[str] = None

    @property
    def cost(self) -> float:
        return math.fsum(self.costs)


@dataclass(frozen=True)
class Drop:
    """A setting the race dropped: in which round, why (``cost``, ``knee`` or ``rule``), against which leader, and
    the bound that decided it ($/month the cost lies above the leader's at least, for ``cost``; below the knee's
    bar, for ``knee``)."""

    name: str
    round: int
    reason: str
    leader: str
    bound: float
    detail: str

    def doc(self) -> Dict[str, object]:
        return {"setting": self.name, "round": self.round, "reason": self.reason, "leader": self.leader,
                "bound": self.bound, "detail": self.detail}


@dataclass
class RoundLog:
    """One round of one topic: the ranges measured so far, the settings measured in it, its leader and drops."""

    round: int
    ranges: int
    running: int
    leader: Optional[str]
    drops: List[Drop] = field(default_factory=list)

    def doc(self) -> Dict[str, object]:
        return {"round": self.round, "ranges": self.ranges, "running": self.running, "leader": self.leader,
                "dropped": [d.doc() for d in self.drops]}


def leader(contenders: Sequence[Contender]) -> Optional[Contender]:
    """The cheapest contender the rule allows (the tie order after the cost), or None."""
    allowed = [c for c in contenders if c.allowed and c.out_of_rule is None]
    return min(allowed, key=lambda c: (c.cost, c.order)) if allowed else None


def tied(contenders: Sequence[Contender]) -> bool:
    """Whether the race is decided: the contenders the rule allows are one, or all tied with the leader under
    the rule's tie margin (their estimates, not bounds), so that more ranges would not change which is picked
    among them but through the tie order."""
    best = leader(contenders)
    if best is None:
        return True
    return all(c.cost - best.cost <= c.margin + best.margin
               for c in contenders if c.allowed and c.out_of_rule is None)


def eliminate(contenders: Sequence[Contender], sizes: Sequence[float], population: int, round_no: int,
              initial: int, alpha: float = ALPHA) -> Tuple[Optional[Contender], List[Drop]]:
    """Round ``round_no``'s leader and drops among ``contenders`` (the settings still running, measured on
    the same ranges of ``sizes``: payload bytes per range, of ``population`` ranges in the topic).
    ``initial`` is how many settings the race began with: the tests a setting may meet per round."""
    a = round_alpha(round_no, initial - 1, alpha)
    a_speed = round_alpha(round_no, 1, alpha)
    # the rule's drops first: a setting out of the rule never leads
    out: Dict[str, Tuple[str, float]] = {}
    for c in contenders:
        if c.out_of_rule is not None:
            out[c.name] = (c.out_of_rule, 0.0)
            continue
        for lim in c.limits:
            bound = ratio_bound(lim.seconds, sizes, population, a_speed)
            if bound * lim.mbps * 1e6 > 1:
                top = 1 / bound / 1e6
                out[c.name] = (f"{lim.what}s at most {top:.0f} MB/s, below {lim.mbps:g}", top)
                break
    best = leader([c for c in contenders if c.name not in out])
    drops: List[Drop] = []
    for c in contenders:
        if c.name in out:
            detail, bound = out[c.name]
            drops.append(Drop(c.name, round_no, "rule", best.name if best else "", bound, detail))
            continue
        if best is None or c is best:
            continue
        low = paired_gap(c.costs, best.costs, sizes, population).lower(a)
        if low > c.margin + best.margin:
            drops.append(Drop(c.name, round_no, "cost", best.name, low,
                              f"cost at least {dollars(low)}/month above {best.name}'s, past the tie margin of "
                              f"{dollars(c.margin + best.margin)}"))
    return best, drops


def knee_drops(contenders: Sequence[Contender], groups: Dict[str, object], today: Sequence[float], share: float,
               sizes: Sequence[float], population: int, round_no: int, initial: int, widest: float,
               alpha: float = ALPHA) -> List[Drop]:
    """The groups (``groups``: name -> its ``linger.ms`` and ``batch.size``) the knee can no longer pick, every
    running setting of each: ``contenders`` are the settings running after the round's other drops, ``today``
    today's $/month split over the same ranges, ``share`` the knee (``--knee``).

    The knee picks the smallest group with a setting saving at least ``share`` of what the rule's pick saves.
    The pick costs at most the cheapest setting's cost plus their tie margin, and the cheapest at most the
    leader's; with ``span`` the widest tie margin of two settings running at the round's start (twice
    ``widest``, the widest margin among them, those the round's other drops took included), a setting ``g`` is
    therefore never
    near the pick when ``cost(g) - (1 - share) today - share cost(leader) > share span``.  A group goes when
    that holds for each of its settings at the lower bound of its paired interval.  Only two settings must
    not go for the answer to stand: the knee's pick and the rule's pick.  Each meets one leader a round, one
    of ``initial - 1`` (Bonferroni, as the cost tests), at :func:`round_alpha` halved between the two.

    Nothing goes while the leader saves less than ``span`` at the round's estimates: there the pick may save
    nothing, the knee then returns the pick itself, and the bar above does not hold."""
    best = leader(contenders)
    if best is None or share >= 1:
        return []
    span = 2 * widest
    if math.fsum(today) - best.cost <= span:
        return []
    a = round_alpha(round_no, initial - 1, alpha) / 2
    by_group: Dict[object, List[Contender]] = {}
    for c in contenders:
        by_group.setdefault(groups[c.name], []).append(c)
    drops: List[Drop] = []
    # the leader's own group is tested too, and never goes: past the gate above, the leader's own difference
    # is (1 - share) (its cost - today's), below 0, so its bound never passes
    for members in by_group.values():
        lows: List[float] = []
        for c in members:
            diffs = [x - (1 - share) * t - share * y for x, t, y in zip(c.costs, today, best.costs)]
            low = _total_gap(diffs, sizes, population).lower(a) - share * span
            if not low > 0:
                break
            lows.append(low)
        else:
            drops.extend(Drop(c.name, round_no, "knee", best.name, low,
                              f"saves at least {dollars(low)}/month less than --knee {share:g} of what {best.name} "
                              f"saves, beyond the tie span of {dollars(span)}")
                         for c, low in zip(members, lows))
    return drops


class Race:
    """One topic's race: which settings still run, and every round's leaders and drops.

    ``groups`` (one key per name) races settings only against their own group's: the rule's knee picks
    within one ``linger.ms`` and ``batch.size``, so each of those keeps its own best until the knee (``knee``,
    its share) can no longer pick the group (:func:`knee_drops`).
    """

    def __init__(self, names: Sequence[str], alpha: float = ALPHA, groups: Optional[Sequence[object]] = None,
                 knee: float = 1.0) -> None:
        self.names = list(names)
        self.alpha = alpha
        self.knee = knee
        keys: List[object] = list(groups) if groups is not None else [None] * len(self.names)
        if len(keys) != len(self.names):
            raise ValueError("one group per setting")
        self.group = dict(zip(self.names, keys))
        self.sizes = {k: keys.count(k) for k in keys}
        self.running = list(names)
        self.dropped: Dict[str, Drop] = {}
        self.before: List[Drop] = []
        self.rounds: List[RoundLog] = []
        self.decided = all(n <= 1 for n in self.sizes.values())

    def exclude(self, reasons: Dict[str, Tuple[str, float]]) -> List[Drop]:
        """Before round 1, leave out the settings the rule excludes whatever the data (name -> why, and the
        figure that decides it, e.g. the most MB/s the CPU model allows it). A group that would be left with
        none keeps its own, so the rule still says why none is allowed. The settings left are the tests a
        setting may meet per round."""
        if self.rounds or self.before:
            raise ValueError("settings are left out before the first round only")
        gone = [n for n in self.names if n in reasons]
        for key in self.sizes:
            if all(n in reasons for n in self.names if self.group[n] == key):
                gone = [n for n in gone if self.group[n] != key]
        self.before = [Drop(n, 0, "rule", "", reasons[n][1], reasons[n][0]) for n in gone]
        for d in self.before:
            self.dropped[d.name] = d
        self.running = [n for n in self.running if n not in self.dropped]
        self.sizes = {k: sum(self.group[n] == k for n in self.running) for k in self.sizes}
        self.decided = all(n <= 1 for n in self.sizes.values())
        return self.before

    def round(self, contenders: Sequence[Contender], sizes: Sequence[float], population: int,
              today: Optional[Sequence[float]] = None) -> RoundLog:
        """Take one round's figures of the running settings; drop those that cannot win. ``today`` (today's
        $/month split over the same ranges) lets a race of several groups drop the groups the knee cannot
        pick."""
        names = {c.name for c in contenders}
        if names != set(self.running) or len(names) != len(contenders):
            raise ValueError("a round gives figures for exactly the settings still running")
        if today is not None and len(today) != len(sizes):
            raise ValueError("today's cost split over the same ranges")
        no = len(self.rounds) + 1
        by_group: Dict[object, List[Contender]] = {}
        for c in sorted(contenders, key=lambda c: self.names.index(c.name)):
            by_group.setdefault(self.group[c.name], []).append(c)
        drops: List[Drop] = []
        leaders: List[str] = []
        for key, members in by_group.items():
            best, gone = eliminate(members, sizes, population, no, self.sizes[key], self.alpha)
            if best is not None:
                leaders.append(best.name)
            drops.extend(gone)
        out = {d.name for d in drops}
        left = [c for c in contenders if c.name not in out]
        if today is not None:
            knee = knee_drops(left, self.group, today, self.knee, sizes, population, no,
                              len(self.names) - len(self.before), max(c.margin for c in contenders), self.alpha)
            drops.extend(knee)
            gone_knee = {d.name for d in knee}
            leaders = [n for n in leaders if n not in gone_knee]
            left = [c for c in left if c.name not in gone_knee]
        log = RoundLog(no, len(sizes), len(contenders), leaders.pop() if len(leaders) == 1 else None, drops)
        for d in drops:
            self.dropped[d.name] = d
        self.running = [n for n in self.running if n not in self.dropped]
        self.decided = all(tied([c for c in left if self.group[c.name] == key]) for key in by_group)
        self.rounds.append(log)
        return log

    def text(self) -> List[str]:
        """Per round: how many settings it dropped and why, grouped."""
        out = []
        if self.before:
            names = group_names([d.name for d in self.before], self.names)
            why = _grouped_details(self.before)
            out.append(f"left out before round 1 ({len(self.before)} of {len(self.names)}, whatever the data): "
                       f"{', '.join(names)} outside the rule ({'; '.join(why)})")
        for log in self.rounds:
            if not log.drops:
                continue
            parts = []
            cost = [d for d in log.drops if d.reason == "cost"]
            if cost:
                names = group_names([d.name for d in cost], self.names)
                leaders = group_names(sorted({d.leader for d in cost}), self.names)
                above = (f"{leaders[0]}'s" if len(leaders) == 1 and "*" not in leaders[0] else
                         f"their group's leader's ({', '.join(leaders)})")
                parts.append(f"{', '.join(names)}, their cost at least {dollars(min(d.bound for d in cost))}/month "
                             f"above {above} beyond the tie margin")
            knee = [d for d in log.drops if d.reason == "knee"]
            if knee:
                leaders = sorted({d.leader for d in knee})
                parts.append(f"{', '.join(group_names([d.name for d in knee], self.names))}, every setting of their "
                             f"linger.ms and batch.size saving at least {dollars(min(d.bound for d in knee))}/month "
                             f"less than --knee {self.knee:g} of what {', '.join(leaders)} saves, beyond the tie span")
            rule = [d for d in log.drops if d.reason == "rule"]
            if rule:
                why = sorted({d.detail if d.bound == 0 else d.detail.split(" at most")[0] + " too slow"
                              for d in rule})
                parts.append(f"{', '.join(group_names([d.name for d in rule], self.names))} outside the rule "
                             f"({'; '.join(why)})")
            out.append(f"dropped after round {log.round} ({len(log.drops)} of {log.running}, {log.ranges} "
                       f"ranges): " + "; ".join(parts))
        return out

    def doc(self) -> Dict[str, object]:
        return {"settings": len(self.names), "running": list(self.running), "decided": self.decided,
                "alpha": self.alpha, "knee": self.knee, "before": [d.doc() for d in self.before],
                "rounds": [r.doc() for r in self.rounds]}


def _grouped_details(drops: Sequence[Drop]) -> List[str]:
    """The reasons of ``drops``, those of one limit as one line: "builds at most 8.2-48 MB/s ..., below 50"."""
    fixed: set = set()
    speeds: Dict[Tuple[str, str], List[float]] = {}
    for d in drops:
        head, sep, tail = d.detail.partition(" at most ")
        if d.bound > 0 and sep and " MB/s" in tail:
            speeds.setdefault((head, tail.split(" MB/s", 1)[1]), []).append(d.bound)
        else:
            fixed.add(d.detail)
    for (head, tail), tops in speeds.items():
        lo, hi = min(tops), max(tops)
        span = f"{lo:.2g}" if f"{lo:.2g}" == f"{hi:.2g}" else f"{lo:.2g}-{hi:.2g}"
        fixed.add(f"{head} at most {span} MB/s{tail}")
    return sorted(fixed)


def group_names(names: Sequence[str], every: Sequence[str]) -> List[str]:
    """``names`` with every group of one codec (the part before ``@``) that is whole in ``every`` shown as
    ``codec@*``, the rest as they are, in ``every``'s order."""
    chosen = set(names)
    groups: Dict[str, List[str]] = {}
    for n in every:
        groups.setdefault(n.split("@", 1)[0], []).append(n)
    out, shown = [], set()
    for n in every:
        if n not in chosen or n in shown:
            continue
        head = n.split("@", 1)[0]
        members = groups[head]
        if len(members) > 1 and all(m in chosen for m in members):
            out.append(f"{head}@*")
            shown.update(members)
        else:
            out.append(n)
            shown.add(n)
    return out
