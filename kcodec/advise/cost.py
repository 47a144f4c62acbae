"""What a topic costs per month: storage, network and CPU, from explicit, overridable prices.

Defaults are Amazon Web Services on-demand list prices for us-east-1 (N. Virginia)
as published on aws.amazon.com/ebs/pricing, /s3/pricing and /ec2/pricing in 2024:
EBS gp3 storage $0.08 per GB-month, S3 Standard $0.023 per GB-month (first 50 TB),
data transfer between Availability Zones $0.01 per GB in each direction ($0.02 per GB
crossing), and m5.large at $0.096 per hour for 2 vCPUs ($0.048 per vCPU-hour).  AWS
bills a GB as 2**30 bytes.

The model, per topic and month (30 days), with ``B`` the bytes a producer sends per
day in the chosen setting (what the broker stores):

* storage: ``B x retention days`` on block storage ``x replication factor``; with
  tiered storage only ``local retention days`` stay on block storage and the rest
  is kept once on object storage;
* network: producer -> leader (``B x producer cross-zone share``), leader ->
  followers (``B x (RF - 1) x replication cross-zone share``) and consumers
  (``B x consumer groups x consumer cross-zone share``), all at the cross-zone price;
* CPU, the counterweight: compressing ``uncompressed bytes / compress MB/s`` once
  per produced byte and decompressing ``/ read MB/s`` once per consumer group (and
  once more on the broker when the topic's codec differs from the producer's),
  at the vCPU-hour price.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Dict, Optional

from kcodec.errors import KcodecError

__all__ = ["Prices", "TopicEconomics", "MonthlyCost", "monthly_cost", "load_prices", "GB", "PRICE_LIST",
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
    retained_gb = stored_per_day * t.retention_days / GB
    if t.local_retention_days is not None and t.local_retention_days < t.retention_days:
        local_gb = stored_per_day * t.local_retention_days / GB
        storage = (local_gb * t.replication_factor * prices.block_gb_month
                   + (retained_gb - local_gb) * prices.object_gb_month)
    else:
        storage = retained_gb * t.replication_factor * prices.block_gb_month
    month_gb = stored_per_day * DAYS_PER_MONTH / GB
    crossing = (t.producer_cross_zone + (t.replication_factor - 1) * t.replication_cross_zone
                + t.consumer_groups * t.consumer_cross_zone)
    network = month_gb * crossing * prices.cross_zone_gb
    raw_mb = uncompressed_per_day * DAYS_PER_MONTH / 1e6
    core_seconds = 0.0
    if compress_mbps:
        core_seconds += raw_mb / compress_mbps * (2 if broker_recompresses else 1)
    if read_mbps:
        core_seconds += raw_mb / read_mbps * (t.consumer_groups + (1 if broker_recompresses else 0))
    return MonthlyCost(storage, network, core_seconds / 3600 * prices.vcpu_hour)


def load_prices(path: Optional[str], overrides: Dict[str, Optional[float]]):
    """Prices, default economics and per-topic economics from ``--prices FILE`` and flags.

    The file is JSON: ``{"prices": {...Prices fields}, "defaults": {...TopicEconomics
    fields}, "topics": {"name": {...TopicEconomics fields}}}``; flags win over the file.
    """
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
    prices = _build(Prices, doc.get("prices", {}), f"--prices {path}: prices")
    prices = replace(prices, **{k: v for k, v in overrides.items() if v is not None and k in _names(Prices)})
    defaults = _build(TopicEconomics, doc.get("defaults", {}), f"--prices {path}: defaults")
    defaults = replace(defaults, **{k: v for k, v in overrides.items()
                                    if v is not None and k in _names(TopicEconomics)})
    specs = _object(doc.get("topics") or {}, f"--prices {path}: topics")
    topics = {name: _build(TopicEconomics,
                           {**asdict(defaults), **_object(spec or {}, f"--prices {path}: topic {name}")},
                           f"--prices {path}: topic {name}")
              for name, spec in specs.items()}
    return prices, defaults, topics


def _names(cls):
    return {f.name for f in fields(cls)}


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
    return cls(**values)

