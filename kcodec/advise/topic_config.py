"""A topic's own retention and replication, from the cluster, for its bill (``--metadata-log``, ``--bootstrap-server``).

The bill of a topic depends on how long it is kept and on how many replicas
store it.  With ``--metadata-log DIR`` each topic's ``retention.ms`` and its
partitions' replica count come from the cluster's own metadata; with
``--bootstrap-server`` the live cluster's answers
(:mod:`kcodec.advise.inputs.cluster.settings`) add ``retention.bytes``, tiered
storage and, when counted, the consumer groups.  The report says so next to
the figures.  Precedence: a topic's entry in ``--prices`` first, then flags,
then the cluster, then the ``defaults`` of ``--prices``, then the defaults.
A ``retention.ms`` the cluster does not give (decided by the brokers'
``server.properties``) or one of -1 (kept forever) is not guessed: the
default days are used and the note says so.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import AbstractSet, Dict, List, Mapping, Optional

from kcodec.advise.assumptions import CLUSTER, DEFAULT, FLAGS, PRICES_FILE, Source, flag_name
from kcodec.advise.cost import ECONOMICS_FIELDS, TopicEconomics

__all__ = ["PricedTopic", "price_topic", "read_metadata"]

DAY_MS = 86_400_000


@dataclass
class PricedTopic:
    economics: TopicEconomics
    notes: List[str] = field(default_factory=list)
    sources: Dict[str, Source] = field(default_factory=dict)  #: TopicEconomics field -> (mark, detail)


def price_topic(topic: str, defaults: TopicEconomics, per_topic: Mapping[str, TopicEconomics],
                flags: AbstractSet[str], metadata=None, cluster=None, file_defaults: AbstractSet[str] = frozenset(),
                topic_fields: Optional[Mapping[str, AbstractSet[str]]] = None,
                prices_path: Optional[str] = None) -> PricedTopic:
    """The economics ``topic`` is priced with, the notes on them, and each field's source.

    ``per_topic`` are the topics of ``--prices`` (``topic_fields`` the fields each
    sets itself), ``flags`` the :class:`~kcodec.advise.cost.TopicEconomics`
    fields given as flags, ``file_defaults`` those the ``defaults`` of ``--prices``
    set, ``metadata`` a :class:`~kcodec.log.cluster_metadata.ClusterMetadata` or
    None and ``cluster`` the topic's
    :class:`~kcodec.advise.inputs.cluster.settings.TopicSettings` or None.
    """
    sources: Dict[str, Source] = {f: (DEFAULT, "") for f in ECONOMICS_FIELDS}
    for f in file_defaults:
        sources[f] = (PRICES_FILE, f"{prices_path}: defaults")
    for f in flags:
        sources[f] = (FLAGS, flag_name(f))
    if topic in per_topic:
        own = set(ECONOMICS_FIELDS) if topic_fields is None else set(topic_fields.get(topic, ()))
        for f in own:
            sources[f] = (PRICES_FILE, f"{prices_path}: topic {topic}")
        econ = per_topic[topic]
        if topic_fields is None:  # every field the entry's own: nothing of the cluster's is used
            return PricedTopic(econ, [], sources)
    else:
        own, econ = set(), defaults
    locked = own | set(flags)
    priced = PricedTopic(econ, [], sources)
    if metadata is not None:
        _from_metadata(priced, topic, metadata, locked)
    if cluster is not None:
        _from_cluster(priced, cluster, locked)
    return priced


def _use(priced: PricedTopic, name: str, value, detail: str, locked: AbstractSet[str]) -> None:
    """Price with the cluster's ``value`` of ``name`` unless a flag or the topic's --prices entry gave it."""
    if name in locked:
        priced.notes.append(f"{name.replace('_', ' ')} {getattr(priced.economics, name):g} "
                            f"{priced.sources[name][0]} ({priced.sources[name][1]}), though the cluster says {detail}")
        return
    priced.economics = replace(priced.economics, **{name: value})
    priced.sources[name] = (CLUSTER, detail)


def _from_metadata(priced: PricedTopic, topic: str, metadata, locked: AbstractSet[str]) -> None:
    from kcodec.log.cluster_metadata import KAFKA_DEFAULT, UnknownTopicError

    econ = priced.economics
    try:
        policy = metadata.policy(topic)
    except UnknownTopicError:
        priced.notes.append(f"topic not in the metadata log {metadata.path}: priced with the default retention "
                            f"({econ.retention_days:g} days) and replication factor ({econ.replication_factor})")
        return
    retention = policy.retention_ms
    if "retention_days" in locked:
        priced.notes.append(f"retention {econ.retention_days:g} days from {priced.sources['retention_days'][1]} "
                            f"(the metadata log says {retention})")
    elif retention.source.kind == KAFKA_DEFAULT:
        priced.notes.append(f"retention.ms is not set in the metadata log {metadata.path} (the brokers' "
                            f"server.properties decide): priced at the default {econ.retention_days:g} days")
    elif retention.value < 0:
        priced.notes.append(f"{retention}: kept forever, priced at the default {econ.retention_days:g} days")
    else:
        _use(priced, "retention_days", retention.value / DAY_MS, f"{retention} (metadata log)", locked)
        priced.notes.append(f"priced with {retention}")
    rf = policy.replication_factor
    if "replication_factor" in locked:
        priced.notes.append(f"replication factor {econ.replication_factor} from "
                            f"{priced.sources['replication_factor'][1]}")
    elif rf.value:
        _use(priced, "replication_factor", int(rf.value), f"{rf.source} (metadata log)", locked)
        priced.notes.append(f"priced with replication factor {rf.value} ({rf.source})")


def _ms(value: Optional[str]) -> Optional[int]:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def _from_cluster(priced: PricedTopic, s, locked: AbstractSet[str]) -> None:
    """``s``: the topic's TopicSettings read from --bootstrap-server."""
    econ = priced.economics
    unknown = []
    retention = _ms(s.get("retention.ms"))
    if retention is None:
        unknown.append("retention.ms")
    elif retention < 0:
        priced.notes.append(f"retention.ms={retention} (kept forever, from the cluster): priced at "
                            f"{econ.retention_days:g} days")
    else:
        _use(priced, "retention_days", retention / DAY_MS, f"retention.ms={retention} (DescribeConfigs)", locked)
    size = _ms(s.get("retention.bytes"))
    if size is None:
        unknown.append("retention.bytes")
    elif size >= 0 and s.partitions:
        _use(priced, "max_retained_bytes", float(size * s.partitions),
             f"retention.bytes={size} x {s.partitions} partitions (DescribeConfigs)", locked)
    if s.replication_factor:
        _use(priced, "replication_factor", s.replication_factor,
             f"{s.replication_factor} replicas per partition (Metadata)", locked)
    remote = s.get("remote.storage.enable")
    if remote is None:
        unknown.append("remote.storage.enable")
    elif remote.lower() == "true":
        local = _ms(s.get("local.retention.ms"))
        if local is not None and local >= 0:  # -2 keeps everything local for retention.ms
            _use(priced, "local_retention_days", local / DAY_MS,
                 f"remote.storage.enable=true, local.retention.ms={local} (DescribeConfigs)", locked)
    if s.consumer_groups is not None:
        _use(priced, "consumer_groups", float(s.consumer_groups),
             f"{s.consumer_groups} group(s) with committed offsets (ListGroups, OffsetFetch)", locked)
    codec = s.get("compression.type")
    if codec is None:
        unknown.append("compression.type")
    elif codec != "producer":
        priced.notes.append(f"the topic's compression.type={codec} (from the cluster): brokers rebuild every batch "
                            f"a producer sends in another codec; set compression.type=producer with the new setting")
    policy = s.get("cleanup.policy")
    if policy is None:
        unknown.append("cleanup.policy")
    elif "compact" in policy:
        priced.notes.append(f"cleanup.policy={policy} (from the cluster): compaction keeps fewer bytes than "
                            f"retention x bytes a day; the storage figures are an upper bound")
    if unknown:
        priced.notes.append(f"the cluster did not return {', '.join(unknown)} for this topic (Kafka returns its "
                            f"defaults; some brokers only what was set): their defaults or flags are used")


def read_metadata(path: Optional[str], storage_options: Optional[Mapping] = None):
    """The metadata log at ``path`` (None without one); its errors name the flag."""
    if path is None:
        return None
    from kcodec.log.arguments import read_metadata_log

    return read_metadata_log(path, dict(storage_options) if storage_options else None)
