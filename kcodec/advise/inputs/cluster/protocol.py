"""A read-only conversation with a Kafka cluster over kafka-python's protocol layer.

Only reads are ever sent: ApiVersions (by the library, on connect), Metadata,
ListOffsets and Fetch to sample; DescribeConfigs for the topics' settings; and,
only when the user allows it, ListGroups, FindCoordinator and OffsetFetch to
count the consumer groups reading a topic.  There is no consumer, so no group
is joined and no offset is committed.  Every wait is bounded by the session's
timeout, and every failure becomes a one-line :class:`ClusterError` naming
the address, topic or partition.
"""
from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

from kcodec.advise.inputs.cluster.security import PLAINTEXT, ClientSecurity, check_connection, client_args, denied
from kcodec.errors import ClusterError

__all__ = ["BrokerSession", "PartitionMeta", "FetchedRecords", "LeaderMoved", "OffsetOutOfRange", "parse_bootstrap",
           "error_name", "EARLIEST", "LATEST", "TOPIC_RESOURCE"]

EARLIEST = -2  # ListOffsets timestamps with a special meaning (Kafka's OffsetSpec)
LATEST = -1
_NO_LEADER = -1
# Fetch v13 names topics by id instead of name; v12 (Kafka 2.7+) carries all this reader needs.
_FETCH_MAX_VERSION = 12
# A fetch at an offset with data returns at once; the wait only matters to brokers
# (Tansu) that answer a zero wait with an empty response.
_FETCH_WAIT_MS = 200
_CLIENT_ID = "kcodec-advise"
TOPIC_RESOURCE = 2  # DescribeConfigs resource type of a topic (Kafka's ConfigResource.Type.TOPIC)
_GROUP_KEY = 0  # FindCoordinator key type of a consumer group
# OffsetFetch v8 (Kafka 3.0+) asks by groups; older brokers get v2-7's one group.  Tansu answers
# "all topics" (null topics) only in the v8 layout.  v10 names topics by id.
_OFFSET_FETCH_GROUPS_VERSION = 8
_OFFSET_FETCH_MAX_VERSION = 9
_FIND_COORDINATOR_MAX_VERSION = 3
_OFFSET_OUT_OF_RANGE = 1
# LEADER_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER, FENCED_LEADER_EPOCH, UNKNOWN_LEADER_EPOCH
_LEADER_MOVED = frozenset({5, 6, 74, 76})


class OffsetOutOfRange(ClusterError):
    """The fetch offset is outside the partition's log (retention moved its start since planning)."""


class LeaderMoved(ClusterError):
    """The broker asked no longer leads the partition (a leader election since metadata was read)."""


@dataclass(frozen=True)
class PartitionMeta:
    topic: str
    partition: int
    leader: int  #: broker node id, -1 when the partition has no leader
    error: int  #: Kafka error code from Metadata, 0 when fine
    internal: bool
    replicas: Tuple[int, ...] = ()  #: broker ids holding a replica (the replication factor is their count)


@dataclass(frozen=True)
class FetchedRecords:
    records: bytes  #: the Fetch response's record set, as the broker sent it
    high_watermark: int
    log_start_offset: int  #: -1 where the Fetch version does not carry it


def parse_bootstrap(bootstrap: str) -> List[Tuple[str, int]]:
    """``HOST:PORT[,HOST:PORT...]`` as (host, port) pairs; ClusterError when malformed."""
    pairs = []
    for part in bootstrap.split(","):
        part = part.strip()
        host, sep, port = part.rpartition(":")
        host = host[1:-1] if host.startswith("[") and host.endswith("]") else host
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ClusterError(f"bootstrap server {part!r} in {bootstrap!r} is not HOST:PORT")
        pairs.append((host, int(port)))
    return pairs


def _kafka():
    try:
        import kafka.errors
        from kafka.net.compat import KafkaNetClient
        from kafka.protocol.consumer import FetchRequest, ListOffsetsRequest
        from kafka.protocol.metadata import MetadataRequest
    except ImportError as exc:
        raise ClusterError(
            f'reading a live cluster needs kafka-python 3.0 or newer ({exc}): pip install "kcodec[cluster]"') from None
    return kafka.errors, KafkaNetClient, MetadataRequest, ListOffsetsRequest, FetchRequest


def error_name(code: int) -> str:
    """kafka-python's name for a Kafka error code (``OffsetOutOfRangeError`` for 1)."""
    return _kafka()[0].for_code(code).__name__


class BrokerSession:
    """One client connection set to the cluster behind ``bootstrap``; use as a context manager."""

    def __init__(self, bootstrap: str, timeout_s: float = 10.0, security: ClientSecurity = PLAINTEXT) -> None:
        """``security``: TLS and SASL (``--command-config``); its first connection is checked by
        :func:`~kcodec.advise.inputs.cluster.security.check_connection` so that a refusal is one line."""
        if not timeout_s > 0:
            raise ClusterError(f"timeout must be positive, got {timeout_s}")
        self.bootstrap = bootstrap
        self.timeout_ms = max(1, int(timeout_s * 1000))
        _, client_cls, self._Metadata, self._ListOffsets, self._Fetch = _kafka()
        host, port = _probe(parse_bootstrap(bootstrap), bootstrap, timeout_s)
        check_connection(host, port, security, timeout_s, bootstrap)
        self._client = client_cls(
            bootstrap_servers=bootstrap, client_id=_CLIENT_ID,
            request_timeout_ms=self.timeout_ms,
            socket_connection_setup_timeout_ms=self.timeout_ms,
            socket_connection_setup_timeout_max_ms=self.timeout_ms,
            reconnect_backoff_max_ms=min(1000, self.timeout_ms),
            receive_message_max_bytes=1 << 30, **client_args(security))
        try:
            self._client.check_version(timeout_ms=self.timeout_ms)
        except Exception as exc:
            self.close()
            raise ClusterError(f"no Kafka broker answered at {bootstrap} within "
                               f"{self.timeout_ms / 1000:g} s ({_one_line(exc)})") from None

    # -- lifecycle -------------------------------------------------------------------------------
    def close(self) -> None:
        client, self._client = getattr(self, "_client", None), None
        if client is not None:
            client.close()

    def __enter__(self) -> "BrokerSession":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests --------------------------------------------------------------------------------
    def _version(self, request, minimum: int, maximum: int = 1 << 15) -> None:
        """Send ``request`` at the newest version both ends speak, refusing brokers older than ``minimum``."""
        try:
            version = self._client.api_version(type(request), max_version=maximum)
        except Exception as exc:
            version, problem = -1, _one_line(exc)
        else:
            problem = f"it speaks version {version}"
        if version < minimum:
            raise ClusterError(f"{type(request).__name__} {minimum}+ is needed, but the broker at "
                               f"{self.bootstrap} does not offer it ({problem})")
        request.API_VERSION = version

    def _error(self, code: int, operation: str, resource: str, message: str) -> ClusterError:
        """The ClusterError of a Kafka error code; an ACL refusal names the operation and the resource."""
        return ClusterError(denied(code, operation, resource, self.bootstrap) or message)

    def _send(self, node: Optional[int], request, what: str):
        if node is None:
            node = self._client.least_loaded_node(bootstrap_fallback=True)
        try:
            return self._client.send_and_receive(node, request, timeout_ms=self.timeout_ms)
        except Exception as exc:
            broker = self._client.cluster.broker_metadata(node)
            where = f"broker {node} at {broker.host}:{broker.port}" if broker is not None else f"broker {node}"
            raise ClusterError(f"{what}: {where} (bootstrap {self.bootstrap}) gave no answer "
                               f"({_one_line(exc)}; timeout {self.timeout_ms / 1000:g} s)") from None

    def metadata(self, topics: Optional[Sequence[str]] = None) -> List[PartitionMeta]:
        """Every partition of ``topics`` (all topics when None), never creating a topic."""
        M = self._Metadata
        request = M(topics=None if topics is None else [M.MetadataRequestTopic(name=t) for t in topics],
                    allow_auto_topic_creation=False, include_cluster_authorized_operations=False,
                    include_topic_authorized_operations=False)
        self._version(request, 1)
        response = self._send(None, request, f"metadata from {self.bootstrap}")
        out = []
        for t in response.topics:
            if t.error_code and not t.partitions:
                raise self._error(t.error_code, "Describe", f"topic {t.name!r}",
                                  f"topic {t.name!r} at {self.bootstrap}: {error_name(t.error_code)}")
            for p in t.partitions:
                out.append(PartitionMeta(t.name, p.partition_index, p.leader_id, p.error_code,
                                         bool(t.is_internal), tuple(p.replica_nodes or ())))
        return sorted(out, key=lambda m: (m.topic, m.partition))

    def topic_configs(self, topics: Sequence[str]) -> Dict[str, Dict[str, Optional[str]]]:
        """Each topic's configuration as DescribeConfigs returns it (name -> value; sensitive values None).

        Kafka returns every setting, defaults included; a broker may return only those set on the topic."""
        from kafka.protocol.admin import DescribeConfigsRequest as D

        request = D(resources=[D.DescribeConfigsResource(resource_type=TOPIC_RESOURCE, resource_name=t,
                                                         configuration_keys=None) for t in topics],
                    include_synonyms=False, include_documentation=False)
        self._version(request, 0)
        response = self._send(None, request, f"topic configurations from {self.bootstrap}")
        out: Dict[str, Dict[str, Optional[str]]] = {}
        for r in response.results:
            if r.error_code:
                raise self._error(r.error_code, "DescribeConfigs", f"topic {r.resource_name!r}",
                                  f"configuration of topic {r.resource_name!r} at {self.bootstrap}: "
                                  f"{error_name(r.error_code)}" + (f" ({r.error_message})" if r.error_message else ""))
            out[r.resource_name] = {c.name: None if c.is_sensitive else c.value for c in r.configs}
        return out

    def consumer_groups(self) -> List[str]:
        """Every group of the cluster: ListGroups asked of each broker (each answers for the groups it
        coordinates)."""
        from kafka.protocol.admin import ListGroupsRequest

        groups: Set[str] = set()
        for node in sorted(b.node_id for b in self._client.cluster.brokers()):
            request = ListGroupsRequest(states_filter=[], types_filter=[])
            self._version(request, 0)
            response = self._send(node, request, f"groups listed by broker {node}")
            if response.error_code:
                raise self._error(response.error_code, "Describe", "groups",
                                  f"groups listed by broker {node} at {self.bootstrap}: "
                                  f"{error_name(response.error_code)}")
            groups.update(g.group_id for g in response.groups)
        return sorted(groups)

    def group_topics(self, group: str) -> List[str]:
        """The topics ``group`` has committed offsets for (OffsetFetch of all its partitions, at its coordinator)."""
        from kafka.protocol.consumer import OffsetFetchRequest
        from kafka.protocol.metadata import FindCoordinatorRequest

        find = FindCoordinatorRequest(key=group, key_type=_GROUP_KEY, coordinator_keys=[group])
        self._version(find, 0, _FIND_COORDINATOR_MAX_VERSION)
        answer = self._send(None, find, f"coordinator of group {group!r}")
        if answer.error_code:
            raise self._error(answer.error_code, "Describe", f"group {group!r}",
                              f"coordinator of group {group!r} at {self.bootstrap}: {error_name(answer.error_code)}")
        fetch = OffsetFetchRequest
        request = fetch(groups=[fetch.OffsetFetchRequestGroup(group_id=group, topics=None)], require_stable=False)
        self._version(request, 2, _OFFSET_FETCH_MAX_VERSION)
        if request.API_VERSION < _OFFSET_FETCH_GROUPS_VERSION:
            request = fetch(group_id=group, topics=None, require_stable=False)
            self._version(request, 2, _OFFSET_FETCH_GROUPS_VERSION - 1)
        response = self._send(answer.node_id, request, f"offsets of group {group!r}")
        if request.API_VERSION >= _OFFSET_FETCH_GROUPS_VERSION:
            answers = [(g.error_code, g.topics) for g in response.groups]
        else:
            answers = [(response.error_code, response.topics)]
        topics: Set[str] = set()
        for code, found in answers:
            if code:
                raise self._error(code, "Describe", f"group {group!r} or its topics",
                                  f"offsets of group {group!r} at {self.bootstrap}: {error_name(code)}")
            topics.update(t.name for t in found if any(p.committed_offset >= 0 for p in t.partitions))
        return sorted(topics)

    def list_offsets(self, leader: int, topic: str, partitions: Iterable[int], spec: int) -> Dict[int, int]:
        """``spec`` (EARLIEST or LATEST) offset of each partition led by ``leader``; ``spec`` a timestamp in
        milliseconds: the earliest offset whose timestamp is at or after it, -1 where there is none."""
        L = self._ListOffsets
        parts = [L.ListOffsetsTopic.ListOffsetsPartition(partition_index=p, timestamp=spec,
                                                         current_leader_epoch=-1, max_num_offsets=1)
                 for p in partitions]
        request = L(replica_id=-1, isolation_level=0, timeout_ms=self.timeout_ms,
                    topics=[L.ListOffsetsTopic(name=topic, partitions=parts)])
        self._version(request, 1)
        response = self._send(leader, request, f"offsets of topic {topic!r}")
        out = {}
        for t in response.topics:
            for p in t.partitions:
                if p.error_code:
                    raise self._error(p.error_code, "Describe", f"topic {topic!r}",
                                      f"offsets of {topic}-{p.partition_index} at {self.bootstrap}: "
                                      f"{error_name(p.error_code)}")
                out[p.partition_index] = p.offset
        return out

    def fetch(self, leader: int, topic: str, partition: int, offset: int, max_bytes: int) -> FetchedRecords:
        """One Fetch of at most ``max_bytes`` from ``offset`` (the broker may return one larger
        first batch, KIP-74); error codes other than 0 raise ClusterError."""
        F = self._Fetch
        fp = F.FetchTopic.FetchPartition(partition=partition, fetch_offset=offset, partition_max_bytes=max_bytes,
                                         current_leader_epoch=-1, log_start_offset=-1)
        request = F(replica_id=-1, max_wait_ms=_FETCH_WAIT_MS, min_bytes=1, max_bytes=max_bytes,
                    isolation_level=0, session_id=0, session_epoch=-1,
                    topics=[F.FetchTopic(topic=topic, partitions=[fp])], forgotten_topics_data=[], rack_id="")
        self._version(request, 4, _FETCH_MAX_VERSION)
        where = f"{topic}-{partition} at offset {offset}"
        response = self._send(leader, request, f"fetch of {where}")
        if getattr(response, "error_code", 0):
            raise self._error(response.error_code, "Read", f"topic {topic!r}",
                              f"fetch of {where} from {self.bootstrap}: {error_name(response.error_code)}")
        for t in response.responses:
            for p in t.partitions:
                if t.topic != topic or p.partition_index != partition:
                    continue
                if p.error_code:
                    message = f"fetch of {where} from {self.bootstrap}: {error_name(p.error_code)}"
                    if p.error_code == _OFFSET_OUT_OF_RANGE:
                        raise OffsetOutOfRange(message)
                    if p.error_code in _LEADER_MOVED:
                        raise LeaderMoved(message)
                    raise self._error(p.error_code, "Read", f"topic {topic!r}", message)
                log_start = getattr(p, "log_start_offset", -1)
                return FetchedRecords(bytes(p.records or b""), p.high_watermark,
                                      -1 if log_start is None else log_start)
        # A broker that has nothing ready yet may leave the partition out of its answer.
        return FetchedRecords(b"", -1, -1)


def _probe(addresses: Sequence[Tuple[str, int]], bootstrap: str, timeout_s: float) -> Tuple[str, int]:
    """The first bootstrap server that accepts a TCP connection; fail at once, naming the address,
    when none does (the client library would otherwise retry until its timeout)."""
    problems = []
    for host, port in addresses:
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                return host, port
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc.strerror or exc}")
    raise ClusterError(f"cannot reach Kafka at {bootstrap} ({'; '.join(problems)})")


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__
