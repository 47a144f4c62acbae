"""Every number a bill rests on, with where it came from, for the terminal, the HTML and results.json.

A bill is only as good as its prices, retention, replication factor,
consumer groups and zone shares.  Each is an :class:`Assumption` marked with
its source: ``measured`` (from the data read), ``from the cluster`` (its
metadata log or its answers to DescribeConfigs, Metadata and ListGroups),
``from flags``, ``from --prices`` or ``default`` (the platform profile's list
price, or Kafka's and the model's defaults).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import AbstractSet, Dict, List, Mapping, Optional, Tuple

from kcodec.advise.cost import PRICE_FIELDS, Prices, TopicEconomics
from kcodec.advise.grid import format_size

__all__ = ["Assumption", "MEASURED", "CLUSTER", "FLAGS", "PRICES_FILE", "DEFAULT", "flag_name", "bill_assumptions",
           "topic_assumptions", "Source"]

MEASURED = "measured"
CLUSTER = "from the cluster"
FLAGS = "from flags"
PRICES_FILE = "from --prices"
DEFAULT = "default"

Source = Tuple[str, str]  # (one of the five marks, what exactly: a flag, a file section, a request)

_PRICE_LABELS = {
    "block_gb_month": "storage $/GB-month",
    "object_gb_month": "tiered (object) storage $/GB-month",
    "cross_zone_gb": "crossing zones $/GB",
    "vcpu_hour": "CPU $/vCPU-hour",
    "ingress_gb": "data in $/GB",
    "egress_gb": "data out $/GB",
}
_TOPIC_LABELS = {
    "retention_days": "retention, days",
    "max_retained_bytes": "retention.bytes x partitions",
    "local_retention_days": "local retention (tiered), days",
    "replication_factor": "replication factor",
    "consumer_groups": "consumer groups",
    "producer_cross_zone": "producer traffic crossing zones",
    "replication_cross_zone": "replication crossing zones",
    "consumer_cross_zone": "consumer traffic crossing zones",
}


@dataclass(frozen=True)
class Assumption:
    name: str
    value: str
    source: str  #: MEASURED, CLUSTER, FLAGS, PRICES_FILE or DEFAULT
    detail: str = ""

    def text(self) -> str:
        return f"{self.name} {self.value} ({self.source}{': ' + self.detail if self.detail else ''})"

    def doc(self) -> Dict[str, str]:
        return asdict(self)


def flag_name(field: str) -> str:
    """The ``kcodec advise`` flag of a price or topic field."""
    return "--" + field.replace("_", "-")


def _number(field: str, value) -> str:
    if value is None:
        return "none"
    if field == "max_retained_bytes":
        return format_size(value)
    if field.endswith("_cross_zone"):
        return f"{value * 100:.0f}%"
    return f"{value:g}"


def bill_assumptions(platform, platform_given: bool, prices: Prices, flagged: AbstractSet[str],
                     from_file: AbstractSet[str], prices_path: Optional[str]) -> List[Assumption]:
    """The platform, its billing rules and every price, each with its source."""
    where = "--platform" if platform_given else ""
    out = [Assumption("platform", f"{platform.name} ({platform.title})", FLAGS if platform_given else DEFAULT, where),
           Assumption("billing", platform.billing(), FLAGS if platform_given else DEFAULT,
                      f"{platform.name} profile; not priced: {platform.left_out}")]
    for f in fields(Prices):
        if f.name not in PRICE_FIELDS:
            continue
        if f.name in flagged:
            source = (FLAGS, flag_name(f.name))
        elif f.name in from_file:
            source = (PRICES_FILE, f"{prices_path}: prices")
        else:
            source = (DEFAULT, f"{platform.name} list price: {platform.price_list}")
        out.append(Assumption(_PRICE_LABELS[f.name], _number(f.name, getattr(prices, f.name)), *source))
    return out


def topic_assumptions(econ: TopicEconomics, sources: Mapping[str, Source], per_day: float,
                      per_day_source: str, prices: Optional[Prices] = None) -> List[Assumption]:
    """One topic's retention, replication, consumers and zone shares, and its bytes a day."""
    out = [Assumption("bytes a day", format_size(per_day),
                      PRICES_FILE if per_day_source.startswith("given") else MEASURED, per_day_source)]
    for name, label in _TOPIC_LABELS.items():
        value = getattr(econ, name)
        if value is None and name in ("max_retained_bytes", "local_retention_days"):
            continue  # not set: no limit by size, no tiered storage
        source, detail = sources.get(name, (DEFAULT, ""))
        if name == "replication_cross_zone" and prices is not None and not prices.replication_billed:
            detail = "; ".join(filter(None, [detail, "not billed on this platform"]))
        out.append(Assumption(label, _number(name, value), source, detail))
    return out
