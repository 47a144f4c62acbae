"""Command-line arguments naming the partitions an operation works on, and the policy source."""
from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Union

from kcodec.errors import KcodecError
from kcodec.log.segment import NoSegmentsError, Partition, require_partitions
from kcodec.storage import parse_storage_option

if TYPE_CHECKING:  # pragma: no cover
    import uuid

    from kcodec.log.cluster_metadata import ClusterMetadata, TopicPolicy

__all__ = ["add_partition_command", "add_target_arguments", "target_partitions", "storage_options", "METADATA_TOPIC",
           "add_metadata_log_argument", "metadata_log", "topic_policy", "partition_policy",
           "add_storage_option_argument", "read_metadata_log"]

#: ``Topic.CLUSTER_METADATA_TOPIC_NAME``: the KRaft metadata log's topic, never rewritten.
METADATA_TOPIC = "__cluster_metadata"


def add_partition_command(subparsers: Any, name: str, *, help: str, description: str,
                          metadata_log: bool = False) -> argparse.ArgumentParser:
    """Register ``kcodec NAME``, a command over partitions: PATH..., ``--topic`` and ``--storage-option``,
    and ``--metadata-log`` where the command takes topic configs from it."""
    p = subparsers.add_parser(name, help=help, description=description)
    add_target_arguments(p)
    if metadata_log:
        add_metadata_log_argument(p)
    return p


def add_target_arguments(p: argparse.ArgumentParser, *, many: bool = True) -> None:
    p.add_argument("log_dirs", nargs="+" if many else None, metavar="PATH",
                   help="a partition folder (topic-N), or a broker log directory holding such folders; "
                        "a path or a URL (s3://, gs://, abfs://, hdfs://, file://)")
    p.add_argument("--topic", metavar="REGEX", default=None,
                   help="only partitions whose topic matches this regular expression (the whole name)")
    add_storage_option_argument(p)


def add_storage_option_argument(p: "argparse._ActionsContainer") -> None:
    p.add_argument("--storage-option", metavar="KEY=VALUE", action="append", default=[],
                   help="an fsspec storage option for URLs (repeatable; VALUE may be JSON), "
                        "e.g. endpoint_url=http://127.0.0.1:9000")


def storage_options(args: Any) -> Dict[str, Any]:
    return dict(parse_storage_option(t) for t in getattr(args, "storage_option", None) or [])


def target_partitions(args: Any) -> List[Partition]:
    """The broker-layout partitions under every PATH argument, for operations that rewrite them.

    A PATH without Kafka segments, or holding tiered-storage segments, is an
    error naming it.
    """
    paths = args.log_dirs if isinstance(args.log_dirs, list) else [args.log_dirs]
    opts = storage_options(args)
    out: List[Partition] = []
    for path in paths:
        found = require_partitions(path, topic=args.topic, storage_options=opts)
        tiered = [p for p in found if p.layout == "tiered"]
        if tiered:
            where = tiered[0].storage.url(str(tiered[0].path))
            raise NoSegmentsError(
                f"{where} is Kafka tiered storage (LocalTieredStorage's layout): kcodec reads it but does not "
                "rewrite it, because the broker's remote log metadata records each segment as uploaded",
                source=where)
        metadata = [p for p in found if p.topic == METADATA_TOPIC]
        if metadata and len(metadata) == len(found):
            where = metadata[0].storage.url(str(metadata[0].path))
            raise NoSegmentsError(
                f"{where} is the KRaft metadata log: its controllers manage it together with their snapshots, "
                "so kcodec does not rewrite it (it reads it with --metadata-log)", source=where)
        if metadata:
            print(f"kcodec: skipped {metadata[0].storage.url(str(metadata[0].path))}, the KRaft metadata log "
                  "(its controllers manage it)", file=sys.stderr)
        out.extend(p for p in found if p.topic != METADATA_TOPIC)
    return out


def add_metadata_log_argument(p: "argparse._ActionsContainer") -> None:
    p.add_argument("--metadata-log", metavar="DIR", default=None,
                   help="the KRaft metadata log directory (__cluster_metadata-0) whose topic configs are used; "
                        "a path or a URL")


_READ = "_metadata_log_read"  # the ClusterMetadata read for these args, kept on the namespace


def metadata_log(args: Any) -> Optional["ClusterMetadata"]:
    """The metadata log named by ``--metadata-log``, read once for these parsed ``args``; None without it.

    Errors (a missing directory, corrupt records) are kcodec errors whose
    message starts with ``--metadata-log DIR:`` and names the file and byte.
    """
    path = getattr(args, "metadata_log", None)
    if path is None:
        return None
    found = vars(args).get(_READ)
    if found is None:
        found = read_metadata_log(path, storage_options(args))
        setattr(args, _READ, found)
    return found


def read_metadata_log(path: str, storage_options: Optional[Dict[str, Any]] = None) -> "ClusterMetadata":
    """The metadata log at ``path``; its errors start with ``--metadata-log PATH:``."""
    from kcodec.log.cluster_metadata import read_cluster_metadata

    try:
        return read_cluster_metadata(path, storage_options=storage_options)
    except KcodecError as exc:
        exc.message = f"--metadata-log {path}: {exc.message}"
        raise


def topic_policy(args: Any, topic: str, *, topic_id: Union[uuid.UUID, str, None] = None,
                 broker_id: Optional[int] = None) -> Optional["TopicPolicy"]:
    """Topic ``topic``'s policy from ``--metadata-log``, each setting with its source; None without the flag.

    ``topic_id`` (a UUID, or Kafka's base64 form from ``partition.metadata``)
    makes sure the partition is the live incarnation of the name.  A topic
    the metadata log does not hold is an
    :class:`~kcodec.log.cluster_metadata.UnknownTopicError` naming the flag::

        add_metadata_log_argument(p)            # in cli_add_parser
        ...
        policy = partition_policy(args, part)   # in cli_run, per partition (topic_policy for a bare name)
        if policy is not None:
            retention_ms = policy.retention_ms.value
            print(policy.retention_ms)  # retention.ms = 86400000 (topic config in the metadata log DIR)
    """
    meta = metadata_log(args)
    if meta is None:
        return None
    try:
        return meta.policy(topic, topic_id=topic_id, broker_id=broker_id)
    except KcodecError as exc:
        exc.message = f"--metadata-log {args.metadata_log}: {exc.message}"
        raise


def partition_policy(args: Any, partition: Partition) -> Optional["TopicPolicy"]:
    """:func:`topic_policy` for a partition folder, checked against the topic id in its ``partition.metadata``
    (when the folder has one), so a folder left by a deleted topic of the same name is refused."""
    if getattr(args, "metadata_log", None) is None:
        return None
    from kcodec.log.cluster_metadata import partition_topic_id

    return topic_policy(args, partition.topic, topic_id=partition_topic_id(partition))
