"""Control records: transaction markers and KRaft control types (Kafka's ControlRecordType)."""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Optional

from kcodec.errors import InvalidRecordError

__all__ = ["ControlRecordType", "EndTransactionMarker", "control_key", "parse_control_key"]

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


class ControlRecordType(enum.IntEnum):
    UNKNOWN = -1
    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6

    @classmethod
    def of_id(cls, type_id: int) -> "ControlRecordType":
        try:
            return cls(type_id)
        except ValueError:
            return cls.UNKNOWN


def control_key(control_type: ControlRecordType, version: int = 0) -> bytes:
    """The 4-byte key of a control record: version int16, type int16."""
    return _KEY.pack(version, int(control_type))


def _versioned(layout: struct.Struct, data: Optional[bytes], size_what: str, version_what: str) -> tuple:
    """``data`` unpacked by ``layout``, whose first field is a version, with Kafka's checks:
    at least ``layout.size`` bytes, and a version that is not negative."""
    if data is None or len(data) < layout.size:
        n = 0 if data is None else len(data)
        raise InvalidRecordError(
            f"Invalid value size found for {size_what}. Must have at least {layout.size} bytes, "
            f"but found only {n}")
    fields = layout.unpack_from(data, 0)
    if fields[0] < 0:
        raise InvalidRecordError(
            f"Invalid version found for {version_what}: {fields[0]}. May indicate data corruption")
    return fields


def parse_control_key(key: Optional[bytes]) -> tuple:
    """(ControlRecordType, type id) from a control record key, with Kafka's checks."""
    _, type_id = _versioned(_KEY, key, "end control record key", "control record")
    return ControlRecordType.of_id(type_id), type_id


@dataclass(frozen=True)
class EndTransactionMarker:
    """The value of a COMMIT or ABORT control record."""

    control_type: ControlRecordType
    coordinator_epoch: int

    def key(self) -> bytes:
        return control_key(self.control_type)

    def value(self) -> bytes:
        return _END_TXN.pack(0, self.coordinator_epoch)

    @classmethod
    def decode(cls, control_type: ControlRecordType, value: Optional[bytes]) -> "EndTransactionMarker":
        _, epoch = _versioned(_END_TXN, value, "end transaction marker", "end transaction marker")
        return cls(control_type, epoch)
