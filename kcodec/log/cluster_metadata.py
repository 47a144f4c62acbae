"""A KRaft broker's metadata log, read into each topic's configuration and placement.

A KRaft cluster keeps its metadata in the partition ``__cluster_metadata-0``:
segments (``NNNNNNNNNNNNNNNNNNNN.log``) of v2 record batches whose records are
metadata records (:mod:`kcodec.log.metadata_records`), and snapshots
(``<end offset>-<epoch>.checkpoint``, ``Snapshots.filenameFromSnapshotId``)
holding the whole image as of their end offset, framed by a SnapshotHeader and
a SnapshotFooter control record.  :func:`read_cluster_metadata` replays them as
a broker's ``MetadataLoader`` does into the parts of ``TopicsImage`` and
``ConfigurationsImage`` that decide a topic's policy:

* Load order: the newest snapshot (highest end offset, then highest epoch),
  then every log record at or above its end offset.  Without a snapshot the
  log must start at offset 0; a gap between the snapshot and the log, or
  between two batches, is an error, because the records in it are lost.
* ``TopicRecord`` adds a topic, ``PartitionRecord`` a partition (or replaces
  it), ``PartitionChangeRecord`` changes the replicas (the fields it leaves
  null stay as they were, ``PartitionRegistration.merge``).
* ``ConfigRecord`` sets a key of a resource, a null value deletes it.  Topic
  configs are kept by topic name as in ``ConfigurationsImage``, and
  ``RemoveTopicRecord`` deletes the topic and every config of its name, as
  the controller does (``ReplicationControlManager.replay(RemoveTopicRecord)``
  calls ``ConfigurationControlManager.deleteTopicConfigs``), so a name
  created again under a new topic id starts without the old topic's configs.
  Resource type BROKER with an empty name holds the cluster-wide broker
  defaults, with a broker id the configs of that broker.
* Transactions (``BeginTransactionRecord`` ... ``EndTransactionRecord``):
  their records take effect at the end record; after an
  ``AbortTransactionRecord`` they are dropped and counted; a transaction
  still open at the end of the log is not applied either (the controller has
  not finished it; ``MetadataBatchLoader`` does not publish it) and is
  counted in ``unfinished_records``.
* Control batches (leader changes, KRaft versions and voters, the snapshot
  header and footer, transaction markers) carry no metadata records: their
  keys are checked and they are counted by type, nothing else.
* Records of a type this reader does not know, or of a version newer than
  its schema, are skipped and counted per ``(api key, version)`` in
  ``skipped``; known records it does not need (brokers, features, ACLs...) are
  counted by name in ``ignored``.
* What a broker's loader would report to its fault handler and go on from
  (a PartitionRecord for a topic id it does not have, the removal of an
  unknown topic, a transaction record out of place) is listed in
  ``problems`` and the record is not applied.
* Corrupt bytes (bad CRC, truncated snapshot, a metadata record whose fields
  do not parse) raise :class:`~kcodec.errors.CorruptDataError` naming the file
  and byte.  The active segment may end in a partial batch after a crash; it
  is ignored, as Kafka's recovery truncates it.

The high watermark is not kept on disk, so records a leader wrote but the
quorum had not committed yet are read too.

Example::

    from kcodec.log.cluster_metadata import read_cluster_metadata

    meta = read_cluster_metadata("/var/lib/kafka/meta/__cluster_metadata-0")
    policy = meta.policy("clickstream")
    print(policy.retention_ms)   # retention.ms = 86400000 (topic config in the metadata log /var/...)
    if policy.retention_ms.value >= 0: ...
"""
from __future__ import annotations

import base64
import re
import uuid
from dataclasses import dataclass, field
from typing import Any, Dict, Generic, Iterator, List, Mapping, Optional, Tuple, TypeVar, Union

from kcodec.errors import CorruptDataError, KcodecError, LogNotFoundError
from kcodec.log.metadata_records import MetadataRecord, decode_metadata_record
from kcodec.log.names import segment_log_offset
from kcodec.log.segment import LogSegment, NoSegmentsError, Partition
from kcodec.records.control import ControlRecordType, parse_control_key
from kcodec.records.framing import RECORD_BATCH_OVERHEAD
from kcodec.storage import Storage, resolve

__all__ = [
    "METADATA_PARTITION",
    "ConfigSource",
    "PolicySetting",
    "PartitionMetadata",
    "TopicMetadata",
    "TopicPolicy",
    "ClusterMetadata",
    "UnknownTopicError",
    "read_cluster_metadata",
    "partition_topic_id",
    "KAFKA_DEFAULTS",
    "KAFKA_DEFAULT",
    "BROKER_SYNONYMS",
]

#: The folder of the metadata log in a KRaft node's metadata log directory.
METADATA_PARTITION = "__cluster_metadata-0"

_TOPIC, _BROKER = 2, 4  # ConfigResource.Type ids
_TOPIC_RECORD, _PARTITION_RECORD, _CONFIG_RECORD, _PARTITION_CHANGE_RECORD, _REMOVE_TOPIC_RECORD = 2, 3, 4, 5, 9
_BEGIN_TXN, _END_TXN, _ABORT_TXN = 23, 24, 25
_SNAPSHOT_NAME = re.compile(r"(\d{20})-(\d{10})\.checkpoint")

#: Kafka's defaults of the topic configs read here (``LogConfig``/``ServerLogConfigs``).
KAFKA_DEFAULTS: Mapping[str, str] = {
    "retention.ms": "604800000",  # log.retention.hours = 168
    "retention.bytes": "-1",
    "cleanup.policy": "delete",
    "delete.retention.ms": "86400000",
    "min.compaction.lag.ms": "0",
    "compression.type": "producer",
}

#: The broker config that gives a topic config its default (``ServerTopicConfigSynonyms``: the first
#: synonym, the only one a broker accepts as a dynamic config and so the only one in the metadata log).
BROKER_SYNONYMS: Mapping[str, str] = {
    "retention.ms": "log.retention.ms",
    "retention.bytes": "log.retention.bytes",
    "cleanup.policy": "log.cleanup.policy",
    "delete.retention.ms": "log.cleaner.delete.retention.ms",
    "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
    "compression.type": "compression.type",
}

TOPIC_CONFIG = "topic config"
BROKER_DEFAULT = "broker default"
BROKER_CONFIG = "broker config"
PARTITIONS = "partition records"
KAFKA_DEFAULT = "Kafka default"


class UnknownTopicError(KcodecError, LookupError):
    """A topic the metadata log does not hold (never created, or deleted), or held under another topic id."""


@dataclass(frozen=True)
class ConfigSource:
    """Where a value came from.

    ``kind`` is ``"topic config"``, ``"broker default"`` (the cluster-wide
    dynamic default), ``"broker config"`` (one broker's, ``broker`` says
    which), ``"partition records"`` or ``"Kafka default"``;
    ``metadata_log`` the directory read, ``file`` and ``offset`` the record
    that set the value (``offset`` is None inside a snapshot).
    """

    kind: str
    metadata_log: Optional[str] = None
    file: Optional[str] = None
    offset: Optional[int] = None
    broker: Optional[str] = None

    def __str__(self) -> str:
        if self.metadata_log is None:
            return self.kind
        kind = self.kind if self.broker is None else f"{self.kind} of broker {self.broker}"
        return f"{kind} in the metadata log {self.metadata_log}"

    @property
    def record(self) -> str:
        """The file and offset of the record, for a detailed report."""
        if self.file is None:
            return ""
        return self.file if self.offset is None else f"{self.file}, offset {self.offset}"


T = TypeVar("T")


@dataclass(frozen=True)
class PolicySetting(Generic[T]):
    """One value of a topic's policy and its :class:`ConfigSource`; ``str()`` is ``name = value (source)``."""

    name: str
    value: T
    source: ConfigSource

    def __str__(self) -> str:
        shown = ",".join(self.value) if isinstance(self.value, tuple) else self.value
        return f"{self.name} = {shown} ({self.source})"


@dataclass(frozen=True)
class PartitionMetadata:
    """A partition's replicas (``PartitionRegistration``); the adding/removing ones while reassigned."""

    partition: int
    replicas: Tuple[int, ...]
    adding_replicas: Tuple[int, ...] = ()
    removing_replicas: Tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicMetadata:
    """A live topic: name, id, partitions, and every config key set on it with its source."""

    name: str
    topic_id: uuid.UUID
    partitions: Mapping[int, PartitionMetadata]
    configs: Mapping[str, str]
    config_sources: Mapping[str, ConfigSource]

    @property
    def replication_factor(self) -> Optional[int]:
        """As ``kafka-topics --describe`` shows it: the first partition's replicas, less those being
        added by a reassignment (``TopicCommand.getReplicationFactor``); None without partitions."""
        if not self.partitions:
            return None
        first = self.partitions[min(self.partitions)]
        return len(first.replicas) - len(first.adding_replicas)


@dataclass(frozen=True)
class TopicPolicy:
    """A topic's retention, cleaning and compression settings, each with where it came from.

    Each setting is the topic's own config if set, else the broker's config
    (with ``broker_id``), else the cluster-wide broker default, else Kafka's
    default.  Broker settings in a broker's ``server.properties`` are not in
    the metadata log: the ``Kafka default`` source says that none was found
    there.  ``retention_ms`` and ``retention_bytes`` are -1 for no limit, as
    in Kafka.
    """

    topic: str
    topic_id: uuid.UUID
    retention_ms: PolicySetting[int]
    retention_bytes: PolicySetting[int]
    cleanup_policy: PolicySetting[Tuple[str, ...]]
    delete_retention_ms: PolicySetting[int]
    min_compaction_lag_ms: PolicySetting[int]
    compression_type: PolicySetting[str]
    replication_factor: PolicySetting[Optional[int]]
    configs: Mapping[str, str]  #: every config key set on the topic

    def settings(self) -> List[PolicySetting]:
        return [self.retention_ms, self.retention_bytes, self.cleanup_policy, self.delete_retention_ms,
                self.min_compaction_lag_ms, self.compression_type, self.replication_factor]

    def describe(self) -> str:
        """One line per setting, ``name = value (source)``."""
        return "\n".join(str(s) for s in self.settings())


@dataclass
class ClusterMetadata:
    """What :func:`read_cluster_metadata` found; :meth:`policy` resolves one topic's settings."""

    path: str  #: the metadata log directory read
    topics: Dict[str, TopicMetadata] = field(default_factory=dict)  #: live topics by name
    broker_defaults: Dict[str, str] = field(default_factory=dict)  #: cluster-wide broker configs
    broker_configs: Dict[str, Dict[str, str]] = field(default_factory=dict)  #: by broker id (a string)
    snapshot: Optional[str] = None  #: the snapshot loaded first
    snapshot_end_offset: int = 0
    end_offset: int = 0  #: the offset after the last record read
    files: List[str] = field(default_factory=list)  #: snapshot and segments read, in order
    skipped: Dict[Tuple[int, int], int] = field(default_factory=dict)  #: (api key, version) -> records
    ignored: Dict[str, int] = field(default_factory=dict)  #: record name -> records not needed here
    control_records: Dict[str, int] = field(default_factory=dict)  #: control record type -> records
    aborted_records: int = 0
    unfinished_records: int = 0
    problems: List[str] = field(default_factory=list)
    _config_sources: Dict[Tuple[int, str], Dict[str, ConfigSource]] = field(default_factory=dict, repr=False)

    def topic(self, name: str, topic_id: Union[uuid.UUID, str, None] = None) -> TopicMetadata:
        """The live topic ``name``; with ``topic_id`` (from a partition's ``partition.metadata``)
        it must also be that incarnation of the name.  :class:`UnknownTopicError` otherwise."""
        found = self.topics.get(name)
        if found is None:
            raise UnknownTopicError(f"topic {name!r} is not in the metadata log {self.path} "
                                    "(never created, or deleted)", source=self.path)
        if topic_id is not None and found.topic_id != _as_uuid(topic_id):
            raise UnknownTopicError(
                f"topic {name!r} has topic id {found.topic_id} in the metadata log {self.path}, not {topic_id}: "
                "the partition belongs to a deleted topic of the same name", source=self.path)
        return found

    def policy(self, name: str, *, topic_id: Union[uuid.UUID, str, None] = None,
               broker_id: Optional[int] = None) -> TopicPolicy:
        """Topic ``name``'s settings with their sources (see :class:`TopicPolicy`)."""
        topic = self.topic(name, topic_id)
        broker = None if broker_id is None else str(int(broker_id))

        def resolve_key(key: str) -> Tuple[str, ConfigSource]:
            if key in topic.configs:
                return topic.configs[key], topic.config_sources[key]
            synonym = BROKER_SYNONYMS[key]
            if broker is not None and synonym in self.broker_configs.get(broker, {}):
                return self.broker_configs[broker][synonym], self._config_sources[(_BROKER, broker)][synonym]
            if synonym in self.broker_defaults:
                return self.broker_defaults[synonym], self._config_sources[(_BROKER, "")][synonym]
            return KAFKA_DEFAULTS[key], ConfigSource(KAFKA_DEFAULT)

        def long_setting(key: str) -> PolicySetting[int]:
            raw, src = resolve_key(key)
            return PolicySetting(key, _parse_long(key, raw, src), src)

        policy_raw, policy_src = resolve_key("cleanup.policy")
        comp_raw, comp_src = resolve_key("compression.type")
        rf = topic.replication_factor
        rf_src = ConfigSource(PARTITIONS if rf is not None else "no partition records", self.path)
        return TopicPolicy(
            topic=topic.name, topic_id=topic.topic_id,
            retention_ms=long_setting("retention.ms"),
            retention_bytes=long_setting("retention.bytes"),
            cleanup_policy=PolicySetting("cleanup.policy", _parse_list(policy_raw), policy_src),
            delete_retention_ms=long_setting("delete.retention.ms"),
            min_compaction_lag_ms=long_setting("min.compaction.lag.ms"),
            compression_type=PolicySetting("compression.type", comp_raw.strip(), comp_src),
            replication_factor=PolicySetting("replication.factor", rf, rf_src),
            configs=dict(topic.configs),
        )


def _as_uuid(value: Any) -> uuid.UUID:
    """A topic id given as a UUID, its text, or Kafka's own text form."""
    if isinstance(value, uuid.UUID):
        return value
    text = str(value)
    try:
        return uuid.UUID(text)
    except ValueError:
        return _kafka_uuid(text)


def _kafka_uuid(text: str) -> uuid.UUID:
    # Uuid.fromString: 16 bytes in URL-safe base64 without padding, as Uuid.toString writes them.
    raw = b""
    if re.fullmatch(r"[A-Za-z0-9_-]{22}", text):
        raw = base64.urlsafe_b64decode(text + "==")
    if len(raw) != 16:
        raise KcodecError(f"{text!r} is not a topic id (a UUID, or Kafka's base64 form)")
    return uuid.UUID(bytes=raw)


def partition_topic_id(partition: Partition) -> Optional[uuid.UUID]:
    """The topic id a broker wrote in the partition folder's ``partition.metadata``, None without the file.

    The file is ``version: 0`` and ``topic_id: <Uuid.toString()>`` on two lines
    (``PartitionMetadataFile``); a malformed one raises
    :class:`~kcodec.errors.CorruptDataError` naming it, as
    ``PartitionMetadataReadBuffer`` refuses it.
    """
    storage = partition.storage
    path = storage.join(str(partition.path), "partition.metadata")
    where = storage.url(path)
    try:
        text = storage.read_bytes(path).decode("utf-8")
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise CorruptDataError("partition.metadata is not UTF-8 text", source=where) from None
    lines = text.split("\n")
    version = re.split(r":\s+", lines[0])
    if len(version) != 2 or not re.fullmatch(r"[+-]?[0-9]+", version[1]) or int(version[1]) < 0:
        raise CorruptDataError(f"malformed line in partition.metadata: {lines[0]!r}", source=where)
    topic = re.split(r":\s+", lines[1]) if len(lines) > 1 else []
    if len(topic) != 2:
        raise CorruptDataError(f"malformed line in partition.metadata: {lines[1] if len(lines) > 1 else ''!r}",
                               source=where)
    try:
        topic_id = _kafka_uuid(topic[1])
    except KcodecError as exc:
        raise CorruptDataError(f"partition.metadata: {exc.message}", source=where) from None
    if topic_id.int == 0:
        raise CorruptDataError("invalid topic ID in partition.metadata (all zeros)", source=where)
    return topic_id


def _where(src: ConfigSource) -> str:
    return str(src) + (f" ({src.record})" if src.record else "")


def _parse_long(key: str, raw: str, src: ConfigSource) -> int:
    # ConfigDef.parseType(LONG): Long.parseLong of the trimmed text.
    text = raw.strip()
    if re.fullmatch(r"[+-]?[0-9]+", text):
        value = int(text)
        if -(1 << 63) <= value < (1 << 63):
            return value
    raise CorruptDataError(f"{key} = {raw!r} is not a 64-bit integer ({_where(src)})", source=src.file)


def _parse_list(raw: str) -> Tuple[str, ...]:
    # ConfigDef.parseType(LIST): split on commas with surrounding whitespace; empty text is an empty list.
    text = raw.strip()
    return tuple(re.split(r"\s*,\s*", text)) if text else ()


# ----------------------------------------------------------------------------------------------------------
# Loading


@dataclass
class _Partition:
    replicas: Tuple[int, ...]
    adding: Tuple[int, ...]
    removing: Tuple[int, ...]


@dataclass
class _Topic:
    name: str
    topic_id: uuid.UUID
    partitions: Dict[int, _Partition] = field(default_factory=dict)


@dataclass
class _Located:
    record: MetadataRecord
    file: str
    offset: Optional[int]


class _Loader:
    """The replay of metadata records (``MetadataDelta.replay``), the part that shapes topic policies."""

    def __init__(self, result: ClusterMetadata) -> None:
        self.result = result
        self.topics: Dict[uuid.UUID, _Topic] = {}
        self.ids: Dict[str, uuid.UUID] = {}
        self.configs: Dict[Tuple[int, str], Dict[str, Tuple[str, ConfigSource]]] = {}
        self.txn: Optional[List[_Located]] = None  # records of the open transaction
        self.txn_start: Optional[str] = None

    def problem(self, loc: _Located, message: str) -> None:
        at = loc.file if loc.offset is None else f"{loc.file}, offset {loc.offset}"
        self.result.problems.append(f"{loc.record.name} ({at}): {message}")

    def feed(self, loc: _Located) -> None:
        rec = loc.record
        if rec.fields is None:
            if rec.too_new or not rec.known:
                key = (rec.api_key, rec.version)
                self.result.skipped[key] = self.result.skipped.get(key, 0) + 1
            else:
                self.result.ignored[rec.name] = self.result.ignored.get(rec.name, 0) + 1
            return
        if rec.api_key == _BEGIN_TXN:
            if self.txn is not None:
                self.problem(loc, f"a transaction is already open (since {self.txn_start})")
                return
            self.txn, self.txn_start = [], (loc.file if loc.offset is None else f"offset {loc.offset}")
        elif rec.api_key in (_END_TXN, _ABORT_TXN):
            if self.txn is None:
                self.problem(loc, "no transaction is open")
                return
            pending, self.txn = self.txn, None
            if rec.api_key == _END_TXN:
                for p in pending:
                    self.apply(p)
            else:
                self.result.aborted_records += len(pending)
        elif self.txn is not None:
            self.txn.append(loc)
        else:
            self.apply(loc)

    def finish(self) -> None:
        if self.txn is not None:
            self.result.unfinished_records += len(self.txn)
            self.txn = None

    def apply(self, loc: _Located) -> None:
        f, key = loc.record.fields, loc.record.api_key
        assert f is not None
        if key == _TOPIC_RECORD:
            old = self.ids.get(f["name"])
            if old is not None and old != f["topic_id"]:
                self.problem(loc, f"topic {f['name']!r} already exists with topic id {old}; replaced")
                del self.topics[old]
            self.topics[f["topic_id"]] = _Topic(f["name"], f["topic_id"])
            self.ids[f["name"]] = f["topic_id"]
        elif key == _PARTITION_RECORD:
            topic = self.topics.get(f["topic_id"])
            if topic is None:
                self.problem(loc, f"no topic has topic id {f['topic_id']}")
                return
            topic.partitions[f["partition_id"]] = _Partition(f["replicas"], f["adding_replicas"],
                                                             f["removing_replicas"])
        elif key == _PARTITION_CHANGE_RECORD:
            topic = self.topics.get(f["topic_id"])
            part = None if topic is None else topic.partitions.get(f["partition_id"])
            if part is None:
                self.problem(loc, f"no partition {f['partition_id']} of topic id {f['topic_id']}")
                return
            # PartitionRegistration.merge: a null field leaves the value as it was.
            if f["replicas"] is not None:
                part.replicas = f["replicas"]
            if f["adding_replicas"] is not None:
                part.adding = f["adding_replicas"]
            if f["removing_replicas"] is not None:
                part.removing = f["removing_replicas"]
        elif key == _CONFIG_RECORD:
            resource = (f["resource_type"], f["resource_name"])
            if f["value"] is None:
                entries = self.configs.get(resource)
                if entries is not None:
                    entries.pop(f["name"], None)
                    if not entries:
                        del self.configs[resource]
            else:
                broker = f["resource_name"] if f["resource_type"] == _BROKER and f["resource_name"] else None
                src = ConfigSource(self._kind(resource), self.result.path, loc.file, loc.offset, broker)
                self.configs.setdefault(resource, {})[f["name"]] = (f["value"], src)
        elif key == _REMOVE_TOPIC_RECORD:
            topic = self.topics.pop(f["topic_id"], None)
            if topic is None:
                self.problem(loc, f"no topic has topic id {f['topic_id']}")
                return
            del self.ids[topic.name]
            # ConfigurationControlManager.deleteTopicConfigs: the topic's configs go with it.
            self.configs.pop((_TOPIC, topic.name), None)

    @staticmethod
    def _kind(resource: Tuple[int, str]) -> str:
        if resource[0] == _TOPIC:
            return TOPIC_CONFIG
        if resource[0] == _BROKER:
            return BROKER_DEFAULT if resource[1] == "" else BROKER_CONFIG
        return f"config of resource type {resource[0]}"

    def build(self) -> None:
        res = self.result
        for topic in sorted(self.topics.values(), key=lambda t: t.name):
            entries = self.configs.get((_TOPIC, topic.name), {})
            parts = {pid: PartitionMetadata(pid, p.replicas, p.adding, p.removing)
                     for pid, p in sorted(topic.partitions.items())}
            res.topics[topic.name] = TopicMetadata(
                topic.name, topic.topic_id, parts,
                {k: v for k, (v, _) in sorted(entries.items())},
                {k: s for k, (_, s) in sorted(entries.items())})
        for (rtype, rname), entries in self.configs.items():
            if rtype != _BROKER:
                continue
            values = {k: v for k, (v, _) in sorted(entries.items())}
            if rname == "":
                res.broker_defaults = values
            else:
                res.broker_configs[rname] = values
            res._config_sources[(rtype, rname)] = {k: s for k, (_, s) in entries.items()}


def _metadata_dir(storage: Storage, inner: str, shown: str) -> Tuple[str, List[Any]]:
    """(directory, listing) of the metadata log at ``inner`` or in its ``__cluster_metadata-0`` folder."""
    if not storage.isdir(inner):
        raise LogNotFoundError(f"no such metadata log directory: {shown}", source=shown)
    listing = storage.list(inner)

    def holds_log(files: Any) -> bool:
        return any(not f.is_dir and (segment_log_offset(f.name) or _SNAPSHOT_NAME.fullmatch(f.name))
                   for f in files)

    if not holds_log(listing) and any(f.is_dir and f.name == METADATA_PARTITION for f in listing):
        inner = storage.join(inner, METADATA_PARTITION)
        listing = storage.list(inner)
    if not holds_log(listing):
        raise NoSegmentsError(
            f"no KRaft metadata log in {shown} (expected {METADATA_PARTITION} holding NNNNNNNNNNNNNNNNNNNN.log "
            "segments or <offset>-<epoch>.checkpoint snapshots)", source=shown)
    return inner, listing


def _records_of_batch(batch: Any, file: str, start: int) -> Iterator[_Located]:
    """The metadata records of one data batch with offsets >= ``start``."""
    idx, data = batch.scan()
    compressed = batch.compression_id != 0
    offsets = idx.offset_delta.tolist()
    vpos, vlen = idx.value_pos.tolist(), idx.value_len.tolist()
    for i, delta in enumerate(offsets):
        offset = batch.base_offset + delta
        if offset < start:
            continue
        position = None if compressed else batch.position + RECORD_BATCH_OVERHEAD + vpos[i]
        if vlen[i] < 0:
            raise CorruptDataError(f"metadata record at offset {offset} has a null value",
                                   position=batch.position if compressed else position,
                                   batch_offset=batch.base_offset, source=file)
        value = bytes(data[vpos[i]:vpos[i] + vlen[i]])
        yield _Located(decode_metadata_record(value, position=position, source=file, offset=offset), file, offset)


def _count_control(result: ClusterMetadata, batch: Any, file: str) -> List[ControlRecordType]:
    types = []
    for rec in batch.records():
        ctype, type_id = parse_control_key(rec.key)
        name = ctype.name if ctype != ControlRecordType.UNKNOWN else f"type {type_id}"
        result.control_records[name] = result.control_records.get(name, 0) + 1
        types.append(ctype)
    return types


def _v2(batch: Any, file: str) -> Any:
    if getattr(batch, "magic", 2) != 2:
        raise CorruptDataError(f"a batch of magic {batch.magic}: a metadata log holds only magic v2 batches",
                               position=batch.position, batch_offset=batch.base_offset, source=file)
    return batch


def _read_snapshot(storage: Storage, path: str, loader: _Loader, result: ClusterMetadata) -> None:
    from kcodec.records import read_batches

    snapshot = LogSegment(path, storage, base_offset=0)  # a memory map of the file, or its bytes from a store
    where = snapshot.url
    first = True
    last_types: List[ControlRecordType] = []
    end = 0
    try:
        # strict: a snapshot is complete once renamed to .checkpoint, so a partial batch is a truncated file
        for batch in read_batches(snapshot.data, strict=True):
            batch = _v2(batch, where)
            end = batch.position + batch.size_in_bytes
            last_types = _count_control(result, batch, where) if batch.is_control else []
            if first and last_types[:1] != [ControlRecordType.SNAPSHOT_HEADER]:
                raise CorruptDataError("a snapshot must start with a SnapshotHeader control record "
                                       "(RecordsSnapshotReader)", position=batch.position,
                                       batch_offset=batch.base_offset, source=where)
            if not batch.is_control:
                for loc in _records_of_batch(batch, where, -(1 << 63)):
                    loc.offset = None  # offsets inside a snapshot do not name log positions
                    loader.feed(loc)
            first = False
    except KcodecError as exc:
        raise exc.with_context(source=where)
    finally:
        snapshot.close()
    if not last_types or last_types[-1] != ControlRecordType.SNAPSHOT_FOOTER:
        raise CorruptDataError("the snapshot does not end with a SnapshotFooter control record (written last, "
                               "when the snapshot is frozen)", position=end, source=where)


def read_cluster_metadata(path: Any, *, storage_options: Optional[Mapping[str, Any]] = None) -> ClusterMetadata:
    """Read a KRaft metadata log directory (``__cluster_metadata-0``, or the folder holding it).

    ``path`` is a local path or a URL (``s3://``..., with ``storage_options``).
    Returns a :class:`ClusterMetadata`; see the module's documentation for
    what is read, in which order, and what is skipped and counted.
    """
    storage, inner = resolve(path, storage_options)
    inner, listing = _metadata_dir(storage, inner, storage.url(inner))
    result = ClusterMetadata(storage.url(inner))
    loader = _Loader(result)

    snapshots = []
    logs = []
    for f in listing:
        if f.is_dir:
            continue
        m = _SNAPSHOT_NAME.fullmatch(f.name)
        if m is not None:
            snapshots.append((int(m.group(1)), int(m.group(2)), f.name))
        named = segment_log_offset(f.name)
        if named is not None and named[0] == "broker":
            logs.append((named[1], f))
    start = 0
    if snapshots:
        end_offset, _epoch, name = max(snapshots)
        snap_path = storage.join(inner, name)
        result.snapshot, result.snapshot_end_offset = storage.url(snap_path), end_offset
        result.files.append(result.snapshot)
        _read_snapshot(storage, snap_path, loader, result)
        start = end_offset
    result.end_offset = start

    logs.sort(key=lambda t: t[0])
    expected = start
    applied = False  # whether a batch at or above ``start`` was read yet
    for i, (base, info) in enumerate(logs):
        nxt = logs[i + 1][0] if i + 1 < len(logs) else None
        if nxt is not None and nxt <= start:
            continue  # every record of this segment is in the snapshot
        seg = LogSegment(storage.join(inner, info.name), storage, base_offset=base,
                         size=None if not storage.remote else info.size)
        where = seg.url
        read_any = False
        try:
            for batch in seg.batches():
                batch = _v2(batch, where)
                if batch.last_offset < start:
                    continue
                if batch.base_offset > expected:
                    if applied:
                        what = "the previous batch"
                    elif snapshots:
                        what = "the snapshot's end offset"
                    else:
                        what = "offset 0, where a log without a snapshot starts"
                    raise CorruptDataError(
                        f"offsets {expected} to {batch.base_offset - 1} are missing: the batch starts at "
                        f"{batch.base_offset}, after {what}", position=batch.position,
                        batch_offset=batch.base_offset, source=where)
                if batch.base_offset < expected and applied:
                    raise CorruptDataError(
                        f"the batch starts at offset {batch.base_offset}, before the end of the previous batch "
                        f"({expected})", position=batch.position, batch_offset=batch.base_offset, source=where)
                read_any = applied = True
                if batch.is_control:
                    _count_control(result, batch, where)
                else:
                    for loc in _records_of_batch(batch, where, start):
                        loader.feed(loc)
                expected = batch.next_offset
        except KcodecError as exc:
            raise exc.with_context(source=where)
        finally:
            seg.close()
        if read_any:
            result.files.append(where)
    loader.finish()
    result.end_offset = expected
    loader.build()
    return result
