"""What a topic costs per month: storage, network and CPU, from explicit, overridable prices.

Defaults are Amazon Web Services on-demand list prices for us-east-1 (N. Virginia)
as published on aws.amazon.com/ebs/pricing, /s3/pricing and /ec2/pricing in 2024:
EBS gp3 storage $0.08 per GB-month, S3 Standard $0.023 per GB-month (first 50 TB),
data transfer between Availability Zones $0.01 per GB in each direction ($0.02 per GB
crossing), and m5.large at $0.096 per hour for 2 vCPUs ($0.048 per vCPU-hour).  AWS
bills a GB as 2**30 bytes.

The model, per topic and month (30 days), with ``B`` the bytes a producer sends per
day in the chosen setting (what the broker stores):

* storage: ``B x retention days`` (at most ``max_retained_bytes``, a topic's
  ``retention.bytes`` times its partitions) on block storage ``x replication
  factor`` (``x 1`` where the platform bills the data once, before replication); with
  tiered storage only ``local retention days`` stay on block storage and the rest
  is kept once on object storage;
* network: producer -> leader (``B x producer cross-zone share``), leader ->
  followers (``B x (RF - 1) x replication cross-zone share``, where the platform
  bills replication) and consumers (``B x consumer groups x consumer cross-zone
  share``), all at the cross-zone price; plus, on platforms that bill data in
  and out per GB, ``B x ingress $/GB`` and ``B x consumer groups x egress $/GB``;
* CPU, the counterweight: compressing ``uncompressed bytes / compress MB/s`` once
  per produced byte and decompressing ``/ read MB/s`` once per consumer group (and
  once more on the broker when the topic's codec differs from the producer's),
  at the vCPU-hour price.

How each platform bills (self-managed on EC2, Amazon MSK, per-GB managed
services) is :mod:`kcodec.advise.platforms`.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Dict, Mapping, Optional

from kcodec.errors import KcodecError

__all__ = ["Prices", "TopicEconomics", "MonthlyCost", "monthly_cost", "recompress_cpu", "load_prices",
           "read_prices_file", "GB", "PRICE_LIST", "PRICE_FIELDS", "ECONOMICS_FIELDS", "value_problem",
           "DAYS_PER_MONTH"]

GB = 2 ** 30
DAYS_PER_MONTH = 30
PRICE_LIST = "AWS us-east-1 on-demand list prices, 2024 (EBS gp3, S3 Standard, inter-AZ transfer, m5.large)"


@dataclass(frozen=True)
class Prices:
    block_gb_month: float = 0.08
    object_gb_month: float = 0.023
    cross_zone_gb: float = 0.02
    vcpu_hour: float = 0.048
    ingress_gb: float = 0.0  # $ per GB producers write, where the platform bills it (managed services)
    egress_gb: float = 0.0  # $ per GB consumers read, where the platform bills it
    # How the platform bills, set by its profile (kcodec.advise.platforms), not by a price:
    replication_billed: bool = True  # False on Amazon MSK: traffic between brokers is free
    storage_per_replica: bool = True  # False where storage is billed once, before replication


@dataclass(frozen=True)
class TopicEconomics:
    """What a topic's bill depends on besides its bytes; any field can be given per topic."""

    retention_days: float = 7.0  # Kafka's default retention.ms
    replication_factor: int = 3
    consumer_groups: float = 1.0
    producer_cross_zone: float = 2 / 3  # clients spread over three zones, one leader
    replication_cross_zone: float = 1.0  # replicas in other zones
    consumer_cross_zone: float = 2 / 3  # no follower fetching
    local_retention_days: Optional[float] = None  # tiered storage: days kept on brokers' disks
    max_retained_bytes: Optional[float] = None  # retention.bytes x partitions: the most a replica keeps
    bytes_per_day: Optional[float] = None  # stored bytes produced per day, when known better than measured


@dataclass
class MonthlyCost:
    storage: float
    network: float
    cpu: float

    @property
    def total(self) -> float:
        return self.storage + self.network + self.cpu


def monthly_cost(stored_per_day: float, uncompressed_per_day: float, compress_mbps: Optional[float],
                 read_mbps: Optional[float], prices: Prices, topic: TopicEconomics,
                 broker_recompresses: bool = False) -> MonthlyCost:
    """$ per month of one topic whose producers send ``stored_per_day`` bytes a day."""
    t = topic
    retained = stored_per_day * t.retention_days
    if t.max_retained_bytes is not None:  # Kafka's retention.bytes deletes segments past the size
        retained = min(retained, t.max_retained_bytes)
    retained_gb = retained / GB
    replicas = t.replication_factor if prices.storage_per_replica else 1
    if t.local_retention_days is not None and t.local_retention_days < t.retention_days:
        local_gb = min(stored_per_day * t.local_retention_days, retained) / GB
        storage = (local_gb * replicas * prices.block_gb_month
                   + (retained_gb - local_gb) * prices.object_gb_month)
    else:
        storage = retained_gb * replicas * prices.block_gb_month
    month_gb = stored_per_day * DAYS_PER_MONTH / GB
    crossing = t.producer_cross_zone + t.consumer_groups * t.consumer_cross_zone
    if prices.replication_billed:
        crossing += (t.replication_factor - 1) * t.replication_cross_zone
    network = (month_gb * crossing * prices.cross_zone_gb + month_gb * prices.ingress_gb
               + month_gb * t.consumer_groups * prices.egress_gb)
    raw_mb = uncompressed_per_day * DAYS_PER_MONTH / 1e6
    core_seconds = 0.0
    if compress_mbps:
        core_seconds += raw_mb / compress_mbps * (2 if broker_recompresses else 1)
    if read_mbps:
        core_seconds += raw_mb / read_mbps * (t.consumer_groups + (1 if broker_recompresses else 0))
    return MonthlyCost(storage, network, core_seconds / 3600 * prices.vcpu_hour)


def recompress_cpu(stored_per_day: float, uncompressed_per_day: float, compress_mbps: Optional[float],
                   read_mbps: Optional[float], prices: Prices) -> float:
    """$/month of CPU the brokers spend when a topic's ``compression.type`` differs from the producer's, so
    they rebuild every batch: one more read and build of its bytes.  It does not depend on the topic's
    economics: only on its bytes, the codec's speeds and the vCPU price."""
    plain = TopicEconomics()
    return (monthly_cost(stored_per_day, uncompressed_per_day, compress_mbps, read_mbps, prices, plain,
                         broker_recompresses=True).cpu
            - monthly_cost(stored_per_day, uncompressed_per_day, compress_mbps, read_mbps, prices, plain).cpu)


def load_prices(path: Optional[str], overrides: Mapping[str, Optional[float]], base: Optional[Prices] = None):
    """Prices, default economics and per-topic economics from ``--prices FILE`` and flags.

    The file is JSON: ``{"prices": {...Prices fields}, "defaults": {...TopicEconomics
    fields}, "topics": {"name": {...TopicEconomics fields}}}``; flags win over the file,
    and the file over ``base`` (a platform's list prices, default :class:`Prices`).
    """
    return _load(path, overrides, base or Prices())[:3]


def read_prices_file(path: Optional[str]) -> Dict:
    """The ``--prices`` document (empty without one), checked to be an object of the three sections."""
    doc: Dict = {}
    if path:
        p = Path(path)
        if not p.is_file():
            raise KcodecError(f"--prices {path}: no such file")
        try:
            doc = json.loads(p.read_text())
        except (ValueError, UnicodeDecodeError) as exc:
            raise KcodecError(f"--prices {path}: not JSON ({exc})") from None
        if not isinstance(doc, dict) or set(doc) - {"prices", "defaults", "topics"}:
            raise KcodecError(f"--prices {path}: expected an object with prices, defaults and topics")
    return doc


def _load(path: Optional[str], overrides: Mapping[str, Optional[float]], base: Prices):
    doc = read_prices_file(path)
    given = _object(doc.get("prices", {}), f"--prices {path}: prices")
    _build(Prices, given, f"--prices {path}: prices")
    prices = replace(base, **given)
    # only Prices' number fields (_names) are replaced, which mypy cannot tell from its two bool fields
    prices = replace(prices, **{k: v for k, v in overrides.items()  # type: ignore[arg-type]
                                if v is not None and k in _names(Prices)})
    defaults = _build(TopicEconomics, doc.get("defaults", {}), f"--prices {path}: defaults")
    defaults = replace(defaults, **{k: v for k, v in overrides.items()
                                    if v is not None and k in _names(TopicEconomics)})
    specs = _object(doc.get("topics") or {}, f"--prices {path}: topics")
    topics = {name: _build(TopicEconomics,
                           {**asdict(defaults), **_object(spec or {}, f"--prices {path}: topic {name}")},
                           f"--prices {path}: topic {name}")
              for name, spec in specs.items()}
    return prices, defaults, topics, doc


def _names(cls):
    # the billing rules of Prices come with a platform's profile, never from a file or a flag
    return {f.name for f in fields(cls) if f.type in ("float", "int", "Optional[float]")}


def _object(values, where: str) -> Dict:
    if not isinstance(values, dict):
        raise KcodecError(f"{where}: expected an object")
    return values


def _build(cls, values, where: str):
    _object(values, where)
    unknown = set(values) - _names(cls)
    if unknown:
        raise KcodecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}; "
                          f"known: {', '.join(sorted(_names(cls)))}")
    for k, v in values.items():
        if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v < 0):
            raise KcodecError(f"{where}: {k} must be a non-negative number, not {v!r}")
        problem = value_problem(k, v)
        if problem:
            raise KcodecError(f"{where}: {k} {problem}, not {v!r}")
    return cls(**values)


# Fields whose range is narrower than "a non-negative number".
_SHARES = frozenset({"producer_cross_zone", "replication_cross_zone", "consumer_cross_zone"})


def value_problem(name: str, value) -> Optional[str]:
    """Why ``value`` cannot be the price or topic field ``name`` (None when it can)."""
    if value is None:
        return None
    if not value >= 0 or value == float("inf"):
        return "must be a non-negative number"
    if name in _SHARES and value > 1:
        return "is a share of the traffic: between 0 and 1"
    if name == "replication_factor" and (value < 1 or value != int(value)):
        return "must be a whole number, 1 or more"
    if name in ("retention_days", "bytes_per_day", "max_retained_bytes") and value == 0:
        return "must be more than 0"
    return None



PRICE_FIELDS = frozenset(_names(Prices))
ECONOMICS_FIELDS = frozenset(_names(TopicEconomics))
