"""The metadata records of a KRaft metadata log, decoded (``MetadataRecordSerde``).

A metadata record's value is a frame (``AbstractApiMessageSerde``): the frame
version (unsigned varint, always 1), the record's api key and version
(unsigned varints), then the record in the message generator's flexible
encoding: ``int8``/``int32`` big-endian, a UUID as 16 bytes, compact strings
and arrays (unsigned varint length + 1, 0 for null) and, after the fixed
fields, the tagged fields (a count, then tag, size and value of each).

Only the records that shape a topic's configuration and placement are
decoded, from the schemas in Kafka's
``metadata/src/main/resources/common/metadata/``.  A record of another known
type is passed on undecoded, and so is one of a version newer than the
schema below knows: the caller counts it.
"""
from __future__ import annotations

import struct
import uuid
from dataclasses import dataclass
from typing import Any, Dict, Optional, Tuple
from uuid import UUID

from kcodec.errors import CorruptDataError

__all__ = ["MetadataRecord", "RECORD_NAMES", "decode_metadata_record", "FRAME_VERSION"]

#: The only frame version ``AbstractApiMessageSerde`` reads (0 was KRaft's preview in Kafka 2.8).
FRAME_VERSION = 1

#: Api key -> record name (Kafka's ``MetadataRecordType``).
RECORD_NAMES: Dict[int, str] = {
    0: "RegisterBrokerRecord", 1: "UnregisterBrokerRecord", 2: "TopicRecord", 3: "PartitionRecord",
    4: "ConfigRecord", 5: "PartitionChangeRecord", 7: "FenceBrokerRecord", 8: "UnfenceBrokerRecord",
    9: "RemoveTopicRecord", 10: "DelegationTokenRecord", 11: "UserScramCredentialRecord",
    12: "FeatureLevelRecord", 14: "ClientQuotaRecord", 15: "ProducerIdsRecord",
    17: "BrokerRegistrationChangeRecord", 18: "AccessControlEntryRecord",
    19: "RemoveAccessControlEntryRecord", 20: "NoOpRecord", 21: "ZkMigrationStateRecord",
    22: "RemoveUserScramCredentialRecord", 23: "BeginTransactionRecord", 24: "EndTransactionRecord",
    25: "AbortTransactionRecord", 26: "RemoveDelegationTokenRecord", 27: "RegisterControllerRecord",
}


@dataclass(frozen=True)
class _Field:
    name: str
    type: str  # int8, int32, uuid, string, []int32, []uuid
    since: int = 0  # first version carrying the field
    nullable: bool = False
    default: Any = None


@dataclass(frozen=True)
class _Schema:
    name: str
    max_version: int
    fields: Tuple[_Field, ...]
    tagged: Dict[int, _Field]


_I32S = "[]int32"

# Field order, types, nullability and tags as in the JSON schemas; every one of
# these records is flexible from version 0.
_SCHEMAS: Dict[int, _Schema] = {
    2: _Schema("TopicRecord", 0, (_Field("name", "string"), _Field("topic_id", "uuid")), {}),
    3: _Schema("PartitionRecord", 2, (
        _Field("partition_id", "int32"), _Field("topic_id", "uuid"), _Field("replicas", _I32S),
        _Field("isr", _I32S), _Field("removing_replicas", _I32S), _Field("adding_replicas", _I32S),
        _Field("leader", "int32"), _Field("leader_epoch", "int32"), _Field("partition_epoch", "int32"),
        _Field("directories", "[]uuid", since=1, default=()),
    ), {
        0: _Field("leader_recovery_state", "int8", default=0),
        1: _Field("eligible_leader_replicas", _I32S, since=2, nullable=True),
        2: _Field("last_known_elr", _I32S, since=2, nullable=True),
    }),
    4: _Schema("ConfigRecord", 0, (
        _Field("resource_type", "int8"), _Field("resource_name", "string"), _Field("name", "string"),
        _Field("value", "string", nullable=True),
    ), {}),
    5: _Schema("PartitionChangeRecord", 2, (_Field("partition_id", "int32"), _Field("topic_id", "uuid")), {
        0: _Field("isr", _I32S, nullable=True),
        1: _Field("leader", "int32", default=-2),
        2: _Field("replicas", _I32S, nullable=True),
        3: _Field("removing_replicas", _I32S, nullable=True),
        4: _Field("adding_replicas", _I32S, nullable=True),
        5: _Field("leader_recovery_state", "int8", default=-1),
        6: _Field("eligible_leader_replicas", _I32S, since=2, nullable=True),
        7: _Field("last_known_elr", _I32S, since=2, nullable=True),
        8: _Field("directories", "[]uuid", since=1, nullable=True),
    }),
    9: _Schema("RemoveTopicRecord", 0, (_Field("topic_id", "uuid"),), {}),
    23: _Schema("BeginTransactionRecord", 0, (), {0: _Field("name", "string", nullable=True)}),
    24: _Schema("EndTransactionRecord", 0, (), {}),
    25: _Schema("AbortTransactionRecord", 0, (), {0: _Field("reason", "string", nullable=True)}),
}

_INT8 = struct.Struct(">b")
_INT32 = struct.Struct(">i")
_MAX_STRING = 0x7FFF  # the generated readers refuse longer strings


@dataclass(frozen=True)
class MetadataRecord:
    """One framed metadata record: its api key and version, and its fields when decoded.

    ``fields`` is None when the record was not decoded: a type this reader
    does not need or does not know (``known`` False), or a version newer than
    its schema (``too_new`` True).
    """

    api_key: int
    version: int
    fields: Optional[Dict[str, Any]]
    too_new: bool = False

    @property
    def name(self) -> str:
        return RECORD_NAMES.get(self.api_key, f"unknown record type {self.api_key}")

    @property
    def known(self) -> bool:
        return self.api_key in RECORD_NAMES


class _Reader:
    """Reads one record value; errors name the byte where the problem starts.

    ``base`` is the value's position in its file (None when the value came out
    of a compressed batch and has no position of its own there).
    """

    __slots__ = ("data", "pos", "end", "base", "source", "what")

    def __init__(self, data: bytes, base: Optional[int], source: Optional[str], what: str) -> None:
        self.data = data
        self.pos = 0
        self.end = len(data)
        self.base = base
        self.source = source
        self.what = what

    def fail(self, message: str, at: Optional[int] = None) -> CorruptDataError:
        at = self.pos if at is None else at
        if self.base is None:
            return CorruptDataError(f"{self.what}: {message} (byte {at} of the record's value)", source=self.source)
        return CorruptDataError(f"{self.what}: {message}", position=self.base + at, source=self.source)

    def uvarint(self, what: str) -> int:
        start, shift, value = self.pos, 0, 0
        if start < self.end and self.data[start] < 0x80:  # one byte: nearly every length and count
            self.pos = start + 1
            return self.data[start]
        while True:
            if self.pos >= self.end:
                raise self.fail(f"truncated unsigned varint ({what})", start)
            b = self.data[self.pos]
            self.pos += 1
            value |= (b & 0x7F) << shift
            if not b & 0x80:
                return value
            shift += 7
            if shift > 28:  # ByteUtils.readUnsignedVarint: at most 5 bytes
                raise self.fail(f"unsigned varint longer than 5 bytes ({what})", start)

    def fixed(self, n: int, what: str) -> int:
        """The position of the next ``n`` bytes, which are then passed."""
        p = self.pos
        if n > self.end - p:
            raise self.fail(f"{what} needs {n} bytes but only {self.end - p} remain")
        self.pos = p + n
        return p

    def int8(self, f: _Field) -> int:
        return _INT8.unpack_from(self.data, self.fixed(1, f.name))[0]

    def int32(self, f: _Field) -> int:
        return _INT32.unpack_from(self.data, self.fixed(4, f.name))[0]

    def uuid(self, f: _Field) -> UUID:
        p = self.fixed(16, f.name)
        return uuid.UUID(bytes=bytes(self.data[p:p + 16]))

    def string(self, f: _Field) -> Optional[str]:
        start = self.pos
        n = self.uvarint(f.name) - 1
        if n < 0:
            if not f.nullable:
                raise self.fail(f"non-nullable field {f.name} was serialized as null", start)
            return None
        if n > _MAX_STRING:
            raise self.fail(f"string field {f.name} had invalid length {n}", start)
        p = self.fixed(n, f.name)
        try:
            return bytes(self.data[p:p + n]).decode("utf-8")
        except UnicodeDecodeError:
            raise self.fail(f"string field {f.name} is not valid UTF-8", start) from None

    def _count(self, f: _Field, size: int) -> int:
        """The element count of a compact array (-1 for null), checked against the bytes left."""
        start = self.pos
        n = self.uvarint(f.name) - 1
        if n < 0:
            if not f.nullable:
                raise self.fail(f"non-nullable field {f.name} was serialized as null", start)
            return -1
        if n * size > self.end - self.pos:
            raise self.fail(f"field {f.name} has {n} elements, more than the {self.end - self.pos} bytes left",
                            start)
        return n

    def int32s(self, f: _Field) -> Optional[Tuple[int, ...]]:
        n = self._count(f, 4)
        if n < 0:
            return None
        return struct.unpack_from(f">{n}i", self.data, self.fixed(4 * n, f.name))

    def uuids(self, f: _Field) -> Optional[Tuple[UUID, ...]]:
        n = self._count(f, 16)
        if n < 0:
            return None
        p, d = self.fixed(16 * n, f.name), self.data
        return tuple(uuid.UUID(bytes=bytes(d[p + 16 * i:p + 16 * i + 16])) for i in range(n))

    def field(self, f: _Field) -> Any:
        return _READERS[f.type](self, f)


_READERS = {"int8": _Reader.int8, "int32": _Reader.int32, "uuid": _Reader.uuid, "string": _Reader.string,
            _I32S: _Reader.int32s, "[]uuid": _Reader.uuids}


def _decode_fields(r: _Reader, schema: _Schema, version: int) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for f in schema.fields:
        out[f.name] = r.field(f) if version >= f.since else f.default
    for f in schema.tagged.values():
        out[f.name] = f.default
    # As the generated readers do, tags are taken in any order and a repeated tag's last value wins.
    count = r.uvarint("number of tagged fields")
    for _ in range(count):
        start = r.pos
        tag = r.uvarint("tag")
        size = r.uvarint(f"size of tagged field {tag}")
        tagged = schema.tagged.get(tag)
        if tagged is None or version < tagged.since:
            r.fixed(size, f"unknown tagged field {tag}")  # kept as unknown by Kafka, ignored here
            continue
        value_end = r.pos + size
        if value_end > r.end:
            raise r.fail(f"tagged field {tag} ({tagged.name}) of {size} bytes runs past the end of the record",
                         start)
        saved_end, r.end = r.end, value_end
        out[tagged.name] = r.field(tagged)
        if r.pos != value_end:
            raise r.fail(f"tagged field {tag} ({tagged.name}) holds {value_end - r.pos} bytes after its value")
        r.end = saved_end
    return out


def decode_metadata_record(value: bytes, *, position: Optional[int] = None, source: Optional[str] = None,
                           offset: Optional[int] = None) -> MetadataRecord:
    """Decode one metadata record's value (``AbstractApiMessageSerde.read``).

    ``position`` is where the value starts in ``source`` (None when it was
    decompressed), ``offset`` the record's offset, both for error messages.
    A frame version other than 1, a truncated or overlong field, or bytes
    left after the record raise :class:`~kcodec.errors.CorruptDataError`
    naming the file and byte.
    """
    what = "metadata record" if offset is None else f"metadata record at offset {offset}"
    r = _Reader(value, position, source, what)
    frame = r.uvarint("frame version")
    if frame != FRAME_VERSION:
        hint = " (frame version 0 is the KRaft preview of Kafka 2.8, which Kafka does not read either)" \
            if frame == 0 else ""
        raise r.fail(f"unknown frame version {frame}, only {FRAME_VERSION} is defined{hint}", 0)
    api_key = r.uvarint("type")
    version = r.uvarint("version")
    if api_key > 0x7FFF or version > 0x7FFF:
        raise r.fail("record type or version too large for a 16-bit value", 0)
    schema = _SCHEMAS.get(api_key)
    if schema is None:
        return MetadataRecord(api_key, version, None)
    if version > schema.max_version:
        return MetadataRecord(api_key, version, None, too_new=True)
    r.what = f"{schema.name} v{version}" + ("" if offset is None else f" at offset {offset}")
    fields = _decode_fields(r, schema, version)
    if r.pos != r.end:
        raise r.fail(f"{r.end - r.pos} byte(s) left after the record")
    return MetadataRecord(api_key, version, fields)
