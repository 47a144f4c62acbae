"""Kafka's rules for names, and the one way kcodec turns names into paths.

Topic names and partition numbers reach kcodec from data (a Parquet column, a
folder name, a decoded record), so before one becomes part of a path it is
checked against Kafka's own rules:

* a topic is 1 to 249 characters of ``[a-zA-Z0-9._-]`` and is neither ``.``
  nor ``..`` (``org.apache.kafka.common.internals.Topic.validate``);
* a partition is an integer from 0 to 2^31 - 1;
* a partition folder is ``<topic>-<partition>``; topics may contain ``-``, so
  the partition is what follows the last ``-``, written in decimal without
  leading zeros as Kafka writes it;
* a segment file is its base offset (0 to 2^63 - 1) in 20 digits plus a suffix;
* Kafka's tiered storage (``LocalTieredStorage``) names a partition folder
  ``<topic>-<partition>-<topic id>`` and a segment file
  ``<base offset in 20 digits>-<segment id>`` plus a suffix, ids being Kafka
  Uuids in unpadded base64url (22 characters).

:func:`safe_join` adds names to a target directory (or an object-store
prefix such as ``s3://bucket/logs``) and refuses a result that leaves it,
including through a symlink inside the target that points elsewhere.
Everything works on plain strings, local paths and URLs alike.
"""
from __future__ import annotations

import operator
import os
import re
from pathlib import PurePath
from typing import Any, Optional, Tuple, TypeVar

from kcodec.errors import InvalidNameError
from kcodec.storage import is_url

__all__ = [
    "MAX_TOPIC_LENGTH",
    "MAX_PARTITION",
    "TOPIC_PATTERN",
    "KAFKA_DIR_SUFFIXES",
    "STAGING_PREFIX",
    "check_topic",
    "check_partition",
    "check_base_offset",
    "partition_dir_name",
    "parse_partition_dir_name",
    "parse_tiered_dir_name",
    "segment_file_name",
    "parse_segment_file_name",
    "offset_from_file_name",
    "segment_log_offset",
    "safe_join",
    "SEGMENT_SUFFIXES",
    "INDEX_SUFFIXES",
    "CLEANED",
    "SWAP",
    "DELETED",
]

MAX_TOPIC_LENGTH = 249
MAX_PARTITION = 2 ** 31 - 1
MAX_OFFSET = 2 ** 63 - 1
#: Folders a broker renames partitions to while deleting or moving them (never read as partitions).
KAFKA_DIR_SUFFIXES = ("-delete", "-future", "-stray")
#: Folders a kcodec writer stages partitions in before renaming them into place.
STAGING_PREFIX = ".kcodec-staging-"
TOPIC_RULE = f"1 to {MAX_TOPIC_LENGTH} ASCII letters, digits, '.', '_' or '-', and not '.' or '..'"
#: The characters and length of a topic as one regular expression (for engines such as Spark SQL);
#: ``.`` and ``..`` still have to be refused beside it.
TOPIC_PATTERN = r"[a-zA-Z0-9._-]{1,%d}" % MAX_TOPIC_LENGTH

_TOPIC = re.compile(TOPIC_PATTERN)
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
_UUID = r"[A-Za-z0-9_-]{22}"
_SEGMENT_LOG = re.compile(r"(?P<offset>\d{20})\.log")
_TIERED_SEGMENT_LOG = re.compile(r"(?P<offset>\d{20})-(?P<segment_id>%s)\.log" % _UUID)
_TIERED_DIR = re.compile(r"(?P<partition_dir>.+)-(?P<topic_id>%s)" % _UUID)
_SHOWN = 60
#: A segment's files: its log and the indexes beside it.
SEGMENT_SUFFIXES = (".log", ".index", ".timeindex", ".txnindex")
INDEX_SUFFIXES = SEGMENT_SUFFIXES[1:]
#: What a segment file's name gains while the swap protocol moves it (Kafka's ``LogFileUtils``):
#: written but not committed, committed but not yet in place, replaced and about to go.
CLEANED, SWAP, DELETED = ".cleaned", ".swap", ".deleted"
_SEGMENT_FILE = re.compile(r"(\d{20})(\.log|\.index|\.timeindex|\.txnindex)(\.cleaned|\.swap|\.deleted)?")

P = TypeVar("P", str, PurePath)


def _show(value: object) -> str:
    """``repr`` of a value for a message: escaped (no control characters reach a terminal), cut short."""
    if isinstance(value, str) and len(value) > _SHOWN:
        return f"{value[:_SHOWN]!r}... ({len(value)} characters)"
    return repr(value)


def _topic_problem(topic: object) -> Optional[str]:
    if topic is None:
        return "the topic is missing (null)"
    if not isinstance(topic, str):
        return f"a topic is a string, not {type(topic).__name__}"
    if topic == "":
        return "the empty string is not a topic name"
    if topic in (".", ".."):
        return f"{topic!r} is reserved"
    if len(topic) > MAX_TOPIC_LENGTH:
        return f"it is longer than {MAX_TOPIC_LENGTH} characters"
    if not _TOPIC.fullmatch(topic):
        bad = next(c for c in topic if not _TOPIC.fullmatch(c))
        return f"it contains {bad!r}"
    return None


def check_topic(topic: object, *, source: Optional[str] = None) -> str:
    """``topic`` if Kafka accepts it as a topic name, else :class:`InvalidNameError`."""
    problem = _topic_problem(topic)
    if problem is not None:
        raise InvalidNameError(f"invalid Kafka topic name {_show(topic)}: {problem} (a topic name is {TOPIC_RULE})",
                               value=topic, source=source)
    return topic  # type: ignore[return-value]


def _check_integer(value: Any, what: str, high: int, source: Optional[str]) -> int:
    try:
        if isinstance(value, bool):
            raise TypeError
        number = operator.index(value)  # ints and numpy integers; not floats or strings
    except TypeError:
        raise InvalidNameError(f"invalid {what} {_show(value)}: it must be an integer",
                               value=value, source=source) from None
    if not 0 <= number <= high:
        raise InvalidNameError(f"invalid {what} {number}: it must be 0 to {high}", value=value, source=source)
    return number


def check_partition(partition: object, *, source: Optional[str] = None) -> int:
    """``partition`` as an int if it is a Kafka partition number (0 to 2^31 - 1)."""
    return _check_integer(partition, "Kafka partition", MAX_PARTITION, source)


def check_base_offset(offset: object, *, source: Optional[str] = None) -> int:
    """``offset`` as an int if it can name a segment (0 to 2^63 - 1)."""
    return _check_integer(offset, "segment base offset", MAX_OFFSET, source)


def partition_dir_name(topic: object, partition: object, *, source: Optional[str] = None) -> str:
    """``<topic>-<partition>``, the folder Kafka keeps a partition's segments in (both checked)."""
    return f"{check_topic(topic, source=source)}-{check_partition(partition, source=source)}"


def parse_partition_dir_name(name: str, *, source: Optional[str] = None) -> Tuple[str, int]:
    """``(topic, partition)`` of a folder named ``<topic>-<partition>``, or :class:`InvalidNameError`."""
    topic, dash, digits = name.rpartition("-")
    if not dash or not _DECIMAL.fullmatch(digits):
        raise InvalidNameError(
            f"{_show(name)} is not a partition folder name: it must be <topic>-<partition> with the "
            "partition in decimal digits (no leading zeros) after the last '-'", value=name, source=source)
    try:
        return check_topic(topic, source=source), check_partition(int(digits), source=source)
    except InvalidNameError as exc:
        raise InvalidNameError(f"{_show(name)} is not a partition folder name: {exc.message}",
                               value=name, source=source) from None


def parse_tiered_dir_name(name: str, *, source: Optional[str] = None) -> Tuple[str, int, str]:
    """``(topic, partition, topic id)`` of a tiered-storage folder ``<topic>-<partition>-<topic id>``."""
    m = _TIERED_DIR.fullmatch(name)
    if m is None:
        raise InvalidNameError(f"{_show(name)} is not a tiered-storage partition folder name: it must be "
                               "<topic>-<partition>-<topic id in 22 base64url characters>", value=name, source=source)
    topic, partition = parse_partition_dir_name(m.group("partition_dir"), source=source)
    return topic, partition, m.group("topic_id")


def segment_file_name(base_offset: int, suffix: str = ".log") -> str:
    """``00000000000000012345.log`` for base offset 12345."""
    return f"{check_base_offset(base_offset):020d}{suffix}"


def parse_segment_file_name(name: str) -> Optional[Tuple[int, str, Optional[str]]]:
    """``(base offset, suffix, swap suffix or None)`` of a broker segment file name such as
    ``00000000000000012345.index.swap``; None for any other name."""
    m = _SEGMENT_FILE.fullmatch(name)
    return None if m is None else (int(m.group(1)), m.group(2), m.group(3))


def segment_log_offset(name: str) -> Optional[Tuple[str, int]]:
    """``("broker", offset)`` for ``NNNNNNNNNNNNNNNNNNNN.log``, ``("tiered", offset)`` for
    tiered storage's ``NNNNNNNNNNNNNNNNNNNN-<segment id>.log``, None for any other file name."""
    m = _SEGMENT_LOG.fullmatch(name)
    if m is not None:
        return "broker", int(m.group("offset"))
    m = _TIERED_SEGMENT_LOG.fullmatch(name)
    if m is not None:
        return "tiered", int(m.group("offset"))
    return None


def offset_from_file_name(name: str) -> int:
    """Kafka's ``offsetFromFileName``: the digits before the first dot (before the ``-<segment id>``
    of a tiered-storage name)."""
    head = os.path.basename(name).split(".", 1)[0]
    tiered = _TIERED_SEGMENT_LOG.fullmatch(head + ".log")
    if tiered is not None:
        head = tiered.group("offset")
    if not (head.isascii() and head.isdigit()):
        raise InvalidNameError(f"not a segment file name: {_show(name)}", value=name)
    return int(head)


def _check_component(name: object, source: Optional[str]) -> str:
    if not isinstance(name, str) or name in ("", ".", "..") or any(c in name for c in "/\\\0"):
        raise InvalidNameError(f"{_show(name)} cannot be used as a file or folder name",
                               value=name, source=source)
    return name


def safe_join(root: P, *names: str, source: Optional[str] = None) -> P:
    """``root/name/...``, refused unless it stays inside ``root``.

    Each name must be a single path component (not empty, ``.`` or ``..``, no
    ``/``, ``\\`` or NUL).  For a local ``root`` the joined path is also
    resolved: a symlink inside ``root`` that leads outside it is refused, so
    nothing is ever written through one.  A URL root (``s3://bucket/prefix``)
    is joined with ``/``; a ``file://`` root is checked as the local folder it
    names.  Returns the same type as ``root``.
    """
    for name in names:
        _check_component(name, source)
    text = os.fspath(root)
    if text.startswith("file://"):
        # a local folder: checked as one, given back as a URL
        local = safe_join(text[len("file://"):] or "/", *names, source=source)
        return "file://" + local  # type: ignore[return-value]
    if is_url(text):
        joined = "/".join([text.rstrip("/"), *names])
        return type(root)(joined) if isinstance(root, PurePath) else joined
    joined_path = os.path.join(text, *names)
    real_root = os.path.realpath(text)
    real = os.path.realpath(joined_path)
    if os.path.commonpath([real_root, real]) != real_root:
        raise InvalidNameError(
            f"{joined_path!r} leads outside {text!r} (to {real!r}); kcodec does not write through a symlink "
            "that points out of its target", value=joined_path, source=source)
    return type(root)(joined_path) if isinstance(root, PurePath) else joined_path
