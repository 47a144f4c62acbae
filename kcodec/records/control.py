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


def parse_control_key(key: Optional[bytes]) -> tuple:
    """(ControlRecordType, type id) from a control record key, with Kafka's checks."""
    if key is None or len(key) < 4:
        n = 0 if key is None else len(key)
        raise InvalidRecordError(
            "Invalid value size found for end control record key. Must have at least 4 bytes, "
            f"but found only {n}")
    version, type_id = _KEY.unpack_from(key, 0)
    if version < 0:
        raise InvalidRecordError(
            f"Invalid version found for control record: {version}. May indicate data corruption")
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
        if value is None or len(value) < 6:
            n = 0 if value is None else len(value)
            raise InvalidRecordError(
                "Invalid value size found for end transaction marker. Must have at least 6 bytes, "
                f"but found only {n}")
        version, epoch = _END_TXN.unpack_from(value, 0)
        if version < 0:
            raise InvalidRecordError(
                f"Invalid version found for end transaction marker: {version}. May indicate data corruption")
        return cls(control_type, epoch)
