"""From a topic's measurements to what to set: costs per setting, the stated rule, Kafka configuration.

The rule, applied to the settings measured for a topic:

1. A setting is allowed when it builds at ``--min-compress-mbps`` or more and
   reads at ``--min-read-mbps`` or more (MB of key, value and header bytes per
   CPU second of one core, from :mod:`kcodec.advise.cpu`'s model of kcodec's
   builder and reader) and its ``linger.ms`` is within ``--max-linger-ms``.
2. Each allowed setting costs $/month (storage + network + CPU) with an
   uncertainty: the CPU cost's (the model's error) plus the sampling's (the
   spread of the compression ratio over the sampled chunks, for storage and
   network).
3. The cheapest allowed setting and every allowed setting whose cost is
   within the two settings' combined uncertainty of it are equal; among them
   the first in this order is chosen: less CPU ($/month), then smaller
   ``linger.ms``, then smaller ``batch.size``, then the codec in Kafka's
   ``CompressionType`` order (none, gzip, snappy, lz4, zstd), then the lower
   level (the codec's default first).
4. With ``--knee`` below 1, the smallest ``linger.ms``, then ``batch.size``,
   whose saving is at least that share of what step 3's pick saves is chosen
   instead (:func:`kcodec.advise.latency.knee`; step 3 decides among settings
   of that ``linger.ms`` and ``batch.size``).
5. It is recommended when it saves at least ``--min-saving`` of today's
   $/month; otherwise today's settings stay.

Every input of the rule depends only on the data and the flags, so the same
data and flags give the same answer on an idle or a loaded machine.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, List, Optional, Protocol, Sequence, Tuple, TypeVar

from kcodec.advise.aggregate import SettingLine, TopicAggregate
from kcodec.advise.assumptions import Assumption
from kcodec.advise.auto_sample import SampleReach
from kcodec.advise.cost import MonthlyCost, Prices, TopicEconomics, monthly_cost, recompress_cpu
from kcodec.advise.cpu import CpuCost, cpu_cost
from kcodec.advise.grid import Setting
from kcodec.advise.latency import LingerPoint, ProducerMemory, knee, linger_curve
from kcodec.advise.notes import excluded_note, keep_note
from kcodec.advise.race import Drop
from kcodec.advise.replay import DEFAULT_CLIENT, ClientRules, client_config, client_rules
from kcodec.advise.task import TODAY
from kcodec.advise.topic_profile import TopicProfile
from kcodec.advise.volumes import daily_volume

__all__ = ["Rule", "Exclusion", "Measured", "TopicAdvice", "advise_topic", "pick", "tie_margin", "tie_order",
           "CODEC_ORDER"]

#: Kafka's CompressionType ids: the last tie-break of the rule.
CODEC_ORDER = ("none", "gzip", "snappy", "lz4", "zstd")
#: a measured setting's: ``Setting`` for one of the grid, ``None`` for today's batches
S = TypeVar("S", bound=Optional[Setting])


class RaceRecord(Protocol):
    """What the report reads of a topic's race (:class:`kcodec.advise.racing.TopicRace`, which builds on this
    module, so it is named by what it offers rather than imported)."""

    def text(self) -> List[str]: ...

    def doc(self) -> Dict[str, Any]: ...


@dataclass(frozen=True)
class Rule:
    """The rule a recommendation follows (the module's steps 1 to 5); its defaults are ``kcodec advise``'s."""

    min_compress_mbps: float = 50.0
    min_read_mbps: float = 100.0
    max_linger_ms: float = 100.0
    min_saving: float = 0.05  # fraction of today's $/month a change must save to be worth making
    cpu: str = "model"  # where the CPU of the bill and of the speed limits comes from: "model" or "measured"
    knee: float = 0.9  # share of the best saving within budget the smallest linger.ms/batch.size must keep (1: none)

    def exclusions(self, m: "Measured[Setting]") -> List[Exclusion]:
        """The limits setting ``m`` is past (step 1), in the order the flags are listed; empty when it is within all."""
        out = []
        if not m.compress_mbps >= self.min_compress_mbps:
            out.append(Exclusion("--min-compress-mbps", m.compress_mbps, self.min_compress_mbps))
        if not m.read_mbps >= self.min_read_mbps:
            out.append(Exclusion("--min-read-mbps", m.read_mbps, self.min_read_mbps))
        if not m.setting.linger_ms <= self.max_linger_ms:
            out.append(Exclusion("--max-linger-ms", m.setting.linger_ms, self.max_linger_ms))
        return out

    def fast_enough(self, m: "Measured[Setting]") -> bool:
        """Within the speed limits, whatever its linger.ms (the saving at each linger.ms is shown)."""
        return m.setting is not None and all(x.flag == "--max-linger-ms" for x in self.exclusions(m))

    def allows(self, m: "Measured[Setting]") -> bool:
        return m.setting is not None and not self.exclusions(m)


@dataclass(frozen=True)
class Exclusion:
    """One limit of the rule a setting is past: the flag that sets it, the setting's figure and the limit."""

    flag: str
    value: float
    limit: float


@dataclass
class Measured(Generic[S]):
    """One setting (or today's batches, ``setting=None``) summed over a topic's sampled chunks.

    ``compress_seconds``/``read_seconds`` are this run's measured CPU times
    (medians of repetitions) and ``*_spread`` half their ranges; :attr:`cpu`
    is what the bill uses.  ``Measured[Setting]`` is a setting of the grid,
    ``Measured[None]`` today's batches.
    """

    setting: S
    records: int
    payload_bytes: int
    plain_bytes: int
    batches: int
    stored_bytes: int
    compress_seconds: float
    read_seconds: float
    ratio_mean: float
    ratio_std: float
    chunks: int
    compress_spread: float = 0.0
    read_spread: float = 0.0
    cpu: Optional[CpuCost] = None
    stored_per_day: float = 0.0
    #: stored bytes with every record in a batch of its own, where the replayed batches depend on the
    #: sender's load (Java at linger.ms=0): the most such a setting can store, and what it is priced at
    worst_stored_bytes: Optional[int] = None
    dropped: Optional[Drop] = None  #: the race dropped it: its figures are those of the round it was dropped
    _cost: Optional[MonthlyCost] = field(default=None, init=False, repr=False)

    @property
    def cost(self) -> MonthlyCost:
        """$/month at this setting, once :func:`advise_topic` has priced it (it prices every one)."""
        if self._cost is None:
            raise AttributeError(f"{self.label} is not priced yet")
        return self._cost

    @cost.setter
    def cost(self, value: MonthlyCost) -> None:
        self._cost = value

    @property
    def label(self) -> str:
        return TODAY if self.setting is None else self.setting.label

    @property
    def ratio(self) -> float:
        """Uncompressed bytes (today's batches without compression) / stored bytes."""
        return self.plain_bytes / max(1, self.stored_bytes)

    @property
    def priced_bytes(self) -> int:
        """The stored bytes the bill takes: the worst case where there is one, else the replay's."""
        return self.stored_bytes if self.worst_stored_bytes is None else self.worst_stored_bytes

    @property
    def worst_ratio(self) -> Optional[float]:
        return None if self.worst_stored_bytes is None else self.plain_bytes / max(1, self.worst_stored_bytes)

    def _mbps(self, seconds: float) -> float:
        return self.payload_bytes / 1e6 / max(seconds, 1e-9)

    @property
    def billed_compress_seconds(self) -> float:
        """CPU seconds building the batches, as the bill and the rule count them: the CPU model's, not this
        run's measurement (unless ``--cpu-cost measured`` or a codec the model does not cover)."""
        return self.cpu.compress_seconds if self.cpu else self.compress_seconds

    @property
    def billed_read_seconds(self) -> float:
        """CPU seconds reading the batches, as the bill and the rule count them."""
        return self.cpu.read_seconds if self.cpu else self.read_seconds

    @property
    def compress_mbps(self) -> float:
        """MB/s of CPU building the batches, as the bill counts it."""
        return self._mbps(self.billed_compress_seconds)

    @property
    def read_mbps(self) -> float:
        """MB/s of CPU reading the batches, as the bill counts it."""
        return self._mbps(self.billed_read_seconds)

    @property
    def measured_compress_mbps(self) -> float:
        return self._mbps(self.compress_seconds)

    @property
    def measured_read_mbps(self) -> float:
        return self._mbps(self.read_seconds)

    @property
    def compress_spread_share(self) -> float:
        """The measured build's spread over repetitions, relative to it."""
        return self.compress_spread / max(self.compress_seconds, 1e-12)

    @property
    def read_spread_share(self) -> float:
        return self.read_spread / max(self.read_seconds, 1e-12)

    @property
    def cpu_source(self) -> str:
        """Where the bill's CPU figures come from: kcodec's CPU ``model`` or this run's ``measured`` time."""
        return self.cpu.source if self.cpu is not None else "measured"

    def measured_text(self) -> str:
        """This run's measured CPU speeds, build/read, each with its spread over the sampled chunks."""
        return (f"{self.measured_compress_mbps:.0f}+/-{self.compress_spread_share * 100:.0f}%/"
                f"{self.measured_read_mbps:.0f}+/-{self.read_spread_share * 100:.0f}%")

    @property
    def records_per_batch(self) -> float:
        return self.records / max(1, self.batches)

    @property
    def cost_uncertainty(self) -> float:
        """$/month within which this setting's cost is not known better: CPU model error plus sampling."""
        if self._cost is None:
            return 0.0
        cpu_share = self.cpu.uncertainty if self.cpu is not None and self.cpu.uncertainty is not None else 0.0
        sampled = 0.0
        if self.chunks > 1 and self.ratio_mean > 0 and math.isfinite(self.ratio_std):
            sampled = self.ratio_std / self.ratio_mean / math.sqrt(self.chunks)
        return self.cost.cpu * cpu_share + (self.cost.storage + self.cost.network) * sampled


@dataclass
class TopicAdvice:
    topic: str
    profile: TopicProfile
    today: Measured[None]
    results: List[Measured[Setting]]
    best: Optional[Measured[Setting]]  # None: keep today's settings
    best_without_level: Optional[Measured[Setting]]
    chosen_by: str
    stored_per_day: float
    per_day_source: str
    partitions: int
    notes: List[str] = field(default_factory=list)
    recompress_cpu: float = 0.0  # $/month of CPU if brokers rebuild every batch in another codec
    priced: bool = True  # False: bytes per day unknown, the topic is left out of the estate's dollars
    volume_source: str = ""  # where bytes per day came from, in a few words
    assumptions: List[Assumption] = field(default_factory=list)  # what the bill rests on
    cheapest: Optional[Measured[Setting]] = None  # the lowest $/month within the rule, when the knee chose another
    curve: List[LingerPoint] = field(default_factory=list)  # per linger.ms of the grid
    memory: Optional[ProducerMemory] = None  # of the recommended batch.size
    rule: Optional[Rule] = None  # the rule the choice followed, to mark the rows it left out
    sample: Optional[SampleReach] = None  # how far --sample auto read
    race: Optional["RaceRecord"] = None  # the race over the grid, where it ran

    @property
    def codec_mix(self) -> Dict[str, float]:
        total = sum(self.profile.codec_bytes.values()) or 1
        return {k: v / total for k, v in self.profile.codec_bytes.items() if v}

    @property
    def timestamp_type(self) -> str:
        lat = self.profile.log_append_batches
        return "CreateTime" if not lat else ("LogAppendTime" if lat >= self.today.batches else
                                            "CreateTime and LogAppendTime")

    @property
    def saving(self) -> float:
        if self.best is None:
            return 0.0
        return self.today.cost.total - self.best.cost.total

    @property
    def client(self) -> ClientRules:
        """The producer client whose rules the replay followed."""
        return _client(self.profile)

    def config(self) -> Dict[str, str]:
        """The recommended setting in the configuration names of :attr:`client`."""
        if self.best is None:
            return {}
        s = self.best.setting
        return client_config(self.client, s.codec, s.level, s.default_level, s.batch_bytes, s.linger_ms)


def _client(prof: TopicProfile) -> ClientRules:
    return client_rules(prof.replay.client if prof.replay is not None else DEFAULT_CLIENT.name)


def tie_order(m: Measured[Setting]) -> Tuple[float, int, int, int, str, int, int]:
    """The rule's order among settings of equal cost: less CPU, smaller linger.ms, batch.size, codec id, level."""
    s = m.setting
    codec = CODEC_ORDER.index(s.codec) if s.codec in CODEC_ORDER else len(CODEC_ORDER)
    return (m.cost.cpu, s.linger_ms, s.batch_bytes, codec, s.codec, -1 if s.level is None else 0,
            s.level or 0)


def tie_margin(a: Measured, b: Measured) -> float:
    """$/month within which the costs of ``a`` and ``b`` are equal: the sum of their uncertainties. The rule's
    pick, the race's drops (each contender's margin is its :attr:`Measured.cost_uncertainty`) and the estate's
    shared settings all count costs equal within it."""
    return a.cost_uncertainty + b.cost_uncertainty


def pick(candidates: Sequence[Measured[Setting]]) -> Optional[Measured[Setting]]:
    """The rule's pick among costed settings: the cheapest, unless others are equal within uncertainty,
    then the first of those by less CPU, smaller linger.ms, smaller batch.size, codec id, level."""
    if not candidates:
        return None
    cheapest = min(candidates, key=lambda m: (m.cost.total, tie_order(m)))
    equal = [m for m in candidates
             if m.cost.total - cheapest.cost.total <= tie_margin(m, cheapest)]
    return min(equal, key=tie_order)


def _measured(line: SettingLine, setting: S, dominant: str, cpu: str = "model") -> Measured[S]:
    """The measurement of one line of the grid (``setting``) or of today's batches (None)."""
    m = Measured(setting, line.records, line.payload_bytes, line.plain_bytes, line.batches, line.stored_bytes,
                 line.compress_seconds, line.read_seconds, line.ratio_mean or 0.0, line.ratio_std or 0.0,
                 line.chunks, line.compress_spread, line.read_spread)
    worst = line.worst_stored_bytes
    m.worst_stored_bytes = None if worst is None else int(worst)
    codec, level = (setting.codec, setting.level) if setting is not None else (dominant, None)
    # a worst case is billed as what it is: every record a batch of its own
    batches = m.batches if worst is None else m.records
    m.cpu = cpu_cost(codec, level, m.payload_bytes, m.priced_bytes, batches, m.records, m.compress_seconds,
                     m.read_seconds, measured=cpu == "measured")
    return m


def _expressible(results: List[Measured[Setting]], prof: TopicProfile) -> List[Measured[Setting]]:
    """The settings the replayed client can be configured with: a level other than its own only where it sets
    levels."""
    if prof.replay is not None and not prof.replay.recognised:
        return results
    rules = _client(prof)
    return [m for m in results if rules.expresses(m.setting.codec, m.setting.level)]


def advise_topic(topic: str, agg: TopicAggregate, known_bytes: Optional[int], econ: TopicEconomics, prices: Prices,
                 rule: Rule, current: Optional[Setting] = None, choose: Optional[Setting] = None,
                 sampled_partitions: Optional[int] = None, *, min_span_ms: float = 0.0,
                 topic_offsets: Optional[int] = None, given: str = "--prices") -> TopicAdvice:
    """Cost every measured setting of one topic and pick what to set.

    Bytes per day: ``econ.bytes_per_day`` when given (``given`` names the flag
    or file); else ``known_bytes`` (all segments of the topic) over the
    timestamps' span; for a live cluster, the ``topic_offsets`` between each
    partition's earliest and latest offset, at the sample's stored bytes per
    record, over the partitions' timestamp span; else the measured records
    over their span.  A span shorter than ``min_span_ms`` (a burst, a new
    topic) cannot tell a daily volume: the costs are still worked out on the
    span's rate, so the settings rank as they would at any volume (every cost
    is proportional to it), but the topic is marked not priced.
    """
    rows = agg.settings
    prof = agg.profile
    dominant = prof.dominant
    today = _measured(agg.today, None, dominant, rule.cpu)
    grid = [(r, r.grid_setting) for r in rows]
    results = sorted((_measured(r, s, dominant, rule.cpu) for r, s in grid if s is not None),
                     key=lambda m: m.setting)
    results = _expressible(results, prof)
    partitions = max(r.partitions for r in rows)
    volume = daily_volume(today.stored_bytes, today.records, known_bytes, topic_offsets, sampled_partitions,
                          prof.partition_rate, prof.span_ms, econ.bytes_per_day, given, min_span_ms)
    notes: List[str] = list(volume.notes)
    per_day, source, tag, priced = volume.per_day, volume.source, volume.tag, volume.priced
    raw_per_day = per_day * today.payload_bytes / max(1, today.stored_bytes)
    today.stored_per_day = per_day
    today.cost = monthly_cost(per_day, raw_per_day, today.compress_mbps if dominant != "none" else None,
                              today.read_mbps, prices, econ)
    for m in results:
        m.stored_per_day = per_day * m.priced_bytes / max(1, today.stored_bytes)
        m.cost = monthly_cost(m.stored_per_day, raw_per_day, m.compress_mbps if m.setting.codec != "none" else None,
                              m.read_mbps, prices, econ)
    ok = [m for m in results if rule.allows(m)]
    best: Optional[Measured[Setting]]
    if choose is not None:
        best = next(m for m in results if m.setting == choose)
        chosen_by = f"--choose {choose.label}"
    else:
        best = knee(ok, today.cost.total, rule.knee, pick)
        chosen_by = "rule"
        if best is None:
            notes.append("no setting meets the rule; lower --min-compress-mbps / --min-read-mbps")
        elif today.cost.total - best.cost.total < rule.min_saving * today.cost.total:
            notes.append(keep_note(best, today.cost.total, rule))
            best = None
        excluded = _best_excluded(results, rule, (best or today).cost.total)
        if excluded is not None:
            notes.append(excluded_note(excluded, today.cost.total, rule))
    without = None
    if best is not None and not best.setting.default_level:
        plain = [m for m in ok if m.setting.default_level and m.cost.total < today.cost.total]
        without = pick(plain)
    recompress = 0.0
    if best is not None:
        recompress = recompress_cpu(best.stored_per_day, raw_per_day, best.compress_mbps, best.read_mbps, prices)
    unmodelled = sorted({m.setting.codec_label for m in results if m.cpu_source != "model"}) \
        if rule.cpu == "model" else []
    if unmodelled:
        notes.append(f"{', '.join(unmodelled)}: not in kcodec's CPU model; their CPU cost is this run's "
                     f"measurement, which moves with the machine's load")
    if current is not None:
        notes.append(f"today's batches were built from records with --current-codec/--current-batch-size/"
                     f"--current-linger-ms ({current.label})")
    cheapest = pick(ok)
    return TopicAdvice(topic, prof, today, results, best, without, chosen_by, per_day, source, partitions, notes,
                       recompress, priced, tag,
                       cheapest=cheapest if best is not None and cheapest is not best else None,
                       curve=linger_curve(results, today.cost.total, rule.fast_enough, rule.max_linger_ms, pick),
                       rule=rule)


def _best_excluded(results: Sequence[Measured[Setting]], rule: Rule, below: float) -> Optional[Measured[Setting]]:
    """The cheapest setting the rule leaves out that costs less than ``below`` $/month, or None."""
    out = [m for m in results if not rule.allows(m) and m.cost.total < below]
    return min(out, key=lambda m: m.cost.total) if out else None
