"""A topic's own retention and replication, from a KRaft metadata log, for its bill (``--metadata-log``).

The bill of a topic depends on how long it is kept and on how many replicas
store it.  With ``--metadata-log DIR`` each topic's ``retention.ms`` and its
partitions' replica count come from the cluster's own metadata, and the
report says so next to the figures.  Precedence: a topic's entry in
``--prices`` first, then ``--retention-days`` / ``--replication-factor``,
then the metadata log, then the defaults.  A ``retention.ms`` the metadata
log does not hold (decided by the brokers' ``server.properties``) or one of
-1 (kept forever) is not guessed: the default days are used and the note
says so.
"""
from __future__ import annotations

from dataclasses import replace
from typing import AbstractSet, List, Mapping, Optional, Tuple

from kcodec.advise.cost import TopicEconomics

__all__ = ["topic_economics", "read_metadata"]

DAY_MS = 86_400_000


def topic_economics(topic: str, defaults: TopicEconomics, per_topic: Mapping[str, TopicEconomics],
                    flags: AbstractSet[str], metadata) -> Tuple[TopicEconomics, List[str]]:
    """(the economics ``topic`` is priced with, notes naming where its retention and replication came from).

    ``per_topic`` are the topics of ``--prices``, ``flags`` the
    :class:`~kcodec.advise.cost.TopicEconomics` fields given as flags, and
    ``metadata`` a :class:`~kcodec.log.cluster_metadata.ClusterMetadata` or None.
    """
    if topic in per_topic:
        return per_topic[topic], []
    if metadata is None:
        return defaults, []
    from kcodec.log.cluster_metadata import KAFKA_DEFAULT, UnknownTopicError

    try:
        policy = metadata.policy(topic)
    except UnknownTopicError:
        return defaults, [f"topic not in the metadata log {metadata.path}: priced with the default retention "
                          f"({defaults.retention_days:g} days) and replication factor ({defaults.replication_factor})"]
    changes = {}
    notes = []
    retention = policy.retention_ms
    if "retention_days" in flags:
        notes.append(f"retention {defaults.retention_days:g} days from --retention-days (the metadata log says "
                     f"{retention})")
    elif retention.source.kind == KAFKA_DEFAULT:
        notes.append(f"retention.ms is not set in the metadata log {metadata.path} (the brokers' server.properties "
                     f"decide): priced at the default {defaults.retention_days:g} days")
    elif retention.value < 0:
        notes.append(f"{retention}: kept forever, priced at the default {defaults.retention_days:g} days")
    else:
        changes["retention_days"] = retention.value / DAY_MS
        notes.append(f"priced with {retention}")
    rf = policy.replication_factor
    if "replication_factor" in flags:
        notes.append(f"replication factor {defaults.replication_factor} from --replication-factor")
    elif rf.value:
        changes["replication_factor"] = int(rf.value)
        notes.append(f"priced with replication factor {rf.value} ({rf.source})")
    return replace(defaults, **changes), notes


def read_metadata(path: Optional[str], storage_options: Optional[Mapping] = None):
    """The metadata log at ``path`` (None without one); its errors name the flag."""
    if path is None:
        return None
    from kcodec.log._cli import read_metadata_log

    return read_metadata_log(path, dict(storage_options) if storage_options else None)
