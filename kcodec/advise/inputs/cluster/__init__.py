"""A live cluster (``--bootstrap-server``) as an input of ``kcodec advise``.

The cluster is listed once: one Metadata request names its topics, partitions,
leaders and replicas, and everything after it (the offsets, the sample's plan,
the topics' settings, the Spark tasks' fetches) starts from that answer.  The
reading itself is :mod:`kcodec.advise.inputs.cluster.fetch`'s; every connection is made as
:mod:`kcodec.advise.inputs.cluster.security` says (TLS and SASL, ``--command-config``).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence, Tuple

from kcodec.advise.inputs.cluster.security import PLAINTEXT, ClientSecurity
from kcodec.advise.inputs.source import Sampling, Source
from kcodec.errors import ClusterError, KcodecError

__all__ = ["ClusterSource", "open_cluster"]


def open_cluster(bootstrap: str, timeout_s: float, security: ClientSecurity = PLAINTEXT) -> "ClusterSource":
    """The cluster at ``bootstrap``, its Metadata read, over TLS and SASL as ``security`` says
    (``--command-config``); errors name the address."""
    try:
        from kcodec.advise.inputs.cluster.protocol import BrokerSession
    except ImportError as exc:
        raise KcodecError(f"--bootstrap-server {bootstrap}: the cluster reader is not available ({exc})") from None
    with BrokerSession(bootstrap, timeout_s, security) as session:
        metas = session.metadata()
    return ClusterSource(bootstrap, metas, timeout_s, security)


class ClusterSource(Source):
    """The topics of a live cluster, read through Fetch as the broker stores them."""

    def __init__(self, bootstrap: str, metas: Sequence[Any], timeout_s: float,
                 security: ClientSecurity = PLAINTEXT) -> None:
        """``metas``: the cluster's Metadata, every partition of every topic
        (:class:`~kcodec.advise.inputs.cluster.protocol.PartitionMeta`)."""
        super().__init__(f"cluster {bootstrap}" + ("" if security == PLAINTEXT else f" ({security.describe()})"))
        self.bootstrap = bootstrap
        self.timeout_s = timeout_s
        self.security = security
        self._metas = list(metas)
        self.partitions: List[Any] = []  #: the chosen partitions' Metadata
        self._ranges: Optional[List[Any]] = None
        #: partitions whose change ``--check`` bisected for, the broker's ListOffsets answer not holding
        self.change_searched = 0

    def select_topics(self, regex: Optional[str]) -> None:
        """Internal topics only when ``regex`` spells out their ``__`` prefix; with no regex, every other topic."""
        from kcodec.advise.inputs.cluster.fetch import select_partitions

        try:
            self.partitions = select_partitions(self._metas, regex, self.bootstrap)
        except ClusterError as exc:
            if self.security.sasl or self.security.cert_file or self.security.cert_pem:
                # Kafka leaves out of Metadata every topic the principal may not Describe.
                raise ClusterError(f"{exc}; this principal sees only the topics its ACLs allow it to "
                                   "Describe") from None
            raise
        self.topic_partitions = {}
        for m in self.partitions:
            self.topic_partitions[m.topic] = self.topic_partitions.get(m.topic, 0) + 1
        if regex is not None:
            self.topic_regex = regex
            self.description += f" topics /{regex}/"

    @property
    def leaders(self) -> Dict[Tuple[str, int], int]:
        return {(m.topic, m.partition): m.leader for m in self.partitions}

    def offset_ranges(self) -> List[Any]:
        """Each chosen partition's offsets (ListOffsets), asked once."""
        if self._ranges is None:
            from kcodec.advise.inputs.cluster.fetch import list_offset_ranges

            self._ranges = list_offset_ranges(self.bootstrap, self.partitions, self.timeout_s, self.security)
        return self._ranges

    def rate_partitions(self, topic: str) -> Optional[int]:
        return self.topic_partitions.get(topic)

    def topic_settings(self, count_groups: bool = False) -> Dict[str, Any]:
        from kcodec.advise.inputs.cluster.settings import read_cluster_settings

        return read_cluster_settings(self.bootstrap, sorted(self.topic_partitions), self.timeout_s, count_groups,
                                     metas=self.partitions, security=self.security)

    def plan(self, sampling: Sampling) -> List[Any]:
        """The chunks the Spark tasks fetch (:func:`kcodec.advise.inputs.cluster.fetch.plan_chunks`)."""
        from kcodec.advise.inputs.cluster.fetch import plan_chunks

        return plan_chunks(self.offset_ranges(), sampling.sample_bytes, sampling.chunk_bytes)

    def read_volumes(self, sampling: Sampling) -> None:
        """Each topic's offsets and the time they span, from the first and last batch of each partition."""
        from kcodec.advise.inputs.cluster.fetch import cluster_volumes

        self.topic_offsets, self.topic_span_ms = cluster_volumes(self.bootstrap, self.offset_ranges(), self.leaders,
                                                                 self.timeout_s, sampling.fetch_retry_s, self.security)

    def chunks(self, spark, sampling: Sampling) -> Tuple[Any, Optional[int]]:
        from kcodec.advise.inputs.cluster.fetch import fetch_chunks

        self.read_volumes(sampling)
        return fetch_chunks(spark, self.bootstrap, self.plan(sampling), self.leaders, self.timeout_s,
                            sampling.fetch_retry_s, self.security), None

    def check_chunks(self, spark, sampling: Sampling, since_ms: Optional[int]) -> Tuple[Any, Optional[int]]:
        """``--sample`` from each partition's offsets since the change, found by timestamp
        (:func:`~kcodec.advise.inputs.cluster.fetch.change_offsets`), and ``--sample`` from those before it: a
        sample spread over a week of offsets would reach a change made an hour ago in a chunk or two, or none."""
        if since_ms is None:
            return self.chunks(spark, sampling)
        from kcodec.advise.inputs.cluster.fetch import change_offsets, fetch_chunks, plan_check_chunks

        self.read_volumes(sampling)
        changes, self.change_searched = change_offsets(self.bootstrap, self.offset_ranges(), self.leaders, since_ms,
                                                       self.timeout_s, sampling.fetch_retry_s, self.security)
        planned = plan_check_chunks(self.offset_ranges(), changes, sampling.sample_bytes, sampling.chunk_bytes)
        return fetch_chunks(spark, self.bootstrap, planned, self.leaders, self.timeout_s,
                            sampling.fetch_retry_s, self.security), None

    def check_write(self, out: str) -> None:
        raise KcodecError(f"--write {out}: needs log directories or record files, not --bootstrap-server")

    def write_records(self, spark, sampling: Sampling):
        raise KcodecError("--write needs log directories or record files, not --bootstrap-server")
