"""How the platform a cluster runs on bills it: one price profile per platform (``--platform``).

Each profile is a :class:`~kcodec.advise.cost.Prices` holding the platform's
public list prices (named with where and when they were published) and its two
billing rules: whether traffic between brokers is billed, and whether storage
is billed per replica or once.  Every price stays a flag and a field of
``--prices``; a profile only changes the defaults.

* ``ec2``: self-managed Kafka on Amazon EC2.  Brokers' EBS volumes hold every
  replica; every byte crossing availability zones is billed, replication too.
* ``msk``: Amazon MSK provisioned.  Storage is billed per GB-month of the
  brokers' volumes (every replica); data moving between brokers inside the
  cluster is not billed; clients' traffic into and out of the cluster pays
  AWS's ordinary inter-zone rate.  Broker instance hours do not depend on the
  codec and are left out.
* ``confluent-cloud``: a managed service billed per GB: data written
  (ingress), data read (egress) and data stored, measured once before
  replication, with no charge for zones.  Cluster units (eCKU) are left out.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict

from kcodec.advise.cost import PRICE_LIST, Prices
from kcodec.errors import KcodecError

__all__ = ["Platform", "PLATFORMS", "DEFAULT_PLATFORM", "platform"]


@dataclass(frozen=True)
class Platform:
    name: str  #: the ``--platform`` value
    title: str
    prices: Prices  #: list prices and billing rules
    price_list: str  #: where and when the prices were published
    left_out: str  #: what of the platform's bill the model does not price

    def billing(self) -> str:
        """The platform's billing rules, in a line."""
        p = self.prices
        return (f"storage billed {'per replica' if p.storage_per_replica else 'once, before replication'}; "
                f"replication traffic {'billed where it crosses zones' if p.replication_billed else 'not billed'}")


PLATFORMS: Dict[str, Platform] = {p.name: p for p in (
    Platform("ec2", "self-managed Kafka on Amazon EC2", Prices(), PRICE_LIST,
             "broker instance hours, IOPS and throughput of the volumes"),
    Platform("msk", "Amazon MSK provisioned (standard brokers)",
             Prices(block_gb_month=0.10, replication_billed=False),
             "aws.amazon.com/msk/pricing, us-east-1, 2024: storage $0.10 per GB-month, no charge for data "
             "transfer between brokers within a cluster; clients' inter-zone transfer $0.01 per GB each way "
             "(aws.amazon.com/ec2/pricing); client CPU at m5.large, $0.048 per vCPU-hour",
             "broker instance hours, provisioned storage throughput"),
    Platform("confluent-cloud", "managed service billed per GB (Confluent Cloud)",
             Prices(block_gb_month=0.08, object_gb_month=0.08, cross_zone_gb=0.0, ingress_gb=0.05, egress_gb=0.05,
                    replication_billed=False, storage_per_replica=False),
             "confluent.io/pricing, Basic cluster on AWS, as listed in 2026: data in $0.05 per GB, data out "
             "$0.05 per GB, storage $0.08 per GB-month before replication; client CPU at m5.large, $0.048 per "
             "vCPU-hour",
             "cluster units (eCKU hours), networking add-ons"),
)}
DEFAULT_PLATFORM = "ec2"


def platform(name: str) -> Platform:
    """The profile called ``name``; a KcodecError names the known ones."""
    try:
        return PLATFORMS[name]
    except KeyError:
        raise KcodecError(f"--platform {name}: unknown platform; known: {', '.join(PLATFORMS)}") from None
