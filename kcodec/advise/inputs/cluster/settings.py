"""A live cluster's own settings for the topics advise prices (``--bootstrap-server``).

Read-only, through :class:`~kcodec.advise.inputs.cluster.protocol.BrokerSession`: each
topic's ``retention.ms``, ``retention.bytes``, ``compression.type``,
``cleanup.policy``, ``remote.storage.enable`` and ``local.retention.ms``
(DescribeConfigs, as Kafka's ``Admin.describeConfigs``), its replication factor
(the replicas Metadata lists for its partitions), and, only with
``--count-consumer-groups``, how many consumer groups have committed offsets
on it (ListGroups, then OffsetFetch at each group's coordinator, as
``Admin.listConsumerGroups`` and ``listConsumerGroupOffsets``).

A setting the cluster does not return is left unknown: the bill then uses the
flag or default and says so.  Kafka returns every setting, its defaults
included; some Kafka-compatible brokers (Tansu) return only the settings given
when the topic was created.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional, Sequence

from kcodec.advise.inputs.cluster.protocol import BrokerSession, PartitionMeta
from kcodec.advise.inputs.cluster.security import PLAINTEXT, ClientSecurity

__all__ = ["TopicSettings", "SETTINGS", "read_cluster_settings"]

#: the topic settings a bill or a note depends on
SETTINGS = ("retention.ms", "retention.bytes", "compression.type", "cleanup.policy", "remote.storage.enable",
            "local.retention.ms")


@dataclass(frozen=True)
class TopicSettings:
    topic: str
    partitions: int
    replication_factor: Optional[int]  #: None when Metadata lists no replicas
    configs: Mapping[str, Optional[str]] = field(default_factory=dict)  #: of SETTINGS, those the cluster returned
    consumer_groups: Optional[int] = None  #: None unless counted (--count-consumer-groups)

    def get(self, name: str) -> Optional[str]:
        return self.configs.get(name)


def read_cluster_settings(bootstrap: str, topics: Sequence[str], timeout_s: float = 10.0,
                          count_groups: bool = False,
                          metas: Optional[Sequence[PartitionMeta]] = None,
                          security: ClientSecurity = PLAINTEXT) -> Dict[str, TopicSettings]:
    """The settings of ``topics`` at ``bootstrap``; ClusterError names the address and topic on failure.

    ``metas``: the topics' partitions as a Metadata request already listed them (asked here when None)."""
    with BrokerSession(bootstrap, timeout_s, security) as session:
        if metas is None:
            metas = session.metadata(list(topics))
        configs = session.topic_configs(list(topics))
        readers: Dict[str, int] = {t: 0 for t in topics}
        if count_groups:
            for group in session.consumer_groups():
                for t in session.group_topics(group):
                    if t in readers:
                        readers[t] += 1
    out = {}
    for t in topics:
        parts = [m for m in metas if m.topic == t]
        rf = max((len(m.replicas) for m in parts), default=0)
        returned = configs.get(t, {})
        out[t] = TopicSettings(t, len(parts), rf or None, {k: returned[k] for k in SETTINGS if k in returned},
                               readers[t] if count_groups else None)
    return out
