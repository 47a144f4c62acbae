"""Builds KRaft metadata logs for tests: metadata records, batches, segments and snapshots.

The encoders follow Kafka's JSON schemas under
``metadata/src/main/resources/common/metadata/`` field by field (every record
here is flexible from version 0) and ``AbstractApiMessageSerde.write`` for
the frame.  They are written separately from kcodec's decoder so that a
mistake in one is not repeated in the other.
"""
from __future__ import annotations

import struct
import uuid
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from kcodec.records import ControlRecordType, RecordBatchBuilder

TOPIC, BROKER = 2, 4
TS = 1_700_000_000_000


def uvarint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def compact_string(s: Optional[str]) -> bytes:
    if s is None:
        return uvarint(0)
    raw = s.encode("utf-8")
    return uvarint(len(raw) + 1) + raw


def compact_int32s(xs: Optional[Sequence[int]]) -> bytes:
    if xs is None:
        return uvarint(0)
    return uvarint(len(xs) + 1) + b"".join(struct.pack(">i", x) for x in xs)


def compact_uuids(xs: Optional[Sequence[uuid.UUID]]) -> bytes:
    if xs is None:
        return uvarint(0)
    return uvarint(len(xs) + 1) + b"".join(x.bytes for x in xs)


def tagged(fields: Dict[int, bytes]) -> bytes:
    """The tagged-field section: count, then tag, size and bytes of each, tags ascending."""
    out = uvarint(len(fields))
    for tag in sorted(fields):
        out += uvarint(tag) + uvarint(len(fields[tag])) + fields[tag]
    return out


def frame(api_key: int, version: int, body: bytes, frame_version: int = 1) -> bytes:
    return uvarint(frame_version) + uvarint(api_key) + uvarint(version) + body


def topic_record(name: str, topic_id: uuid.UUID) -> bytes:
    return frame(2, 0, compact_string(name) + topic_id.bytes + tagged({}))


def partition_record(topic_id: uuid.UUID, partition: int, replicas: Sequence[int], *, version: int = 0,
                     isr: Optional[Sequence[int]] = None, adding: Sequence[int] = (), removing: Sequence[int] = (),
                     leader: Optional[int] = None, leader_epoch: int = 0, partition_epoch: int = 0,
                     directories: Optional[Sequence[uuid.UUID]] = None, recovery_state: Optional[int] = None,
                     elr: Optional[Sequence[int]] = None) -> bytes:
    body = struct.pack(">i", partition) + topic_id.bytes
    body += compact_int32s(replicas) + compact_int32s(list(replicas) if isr is None else isr)
    body += compact_int32s(removing) + compact_int32s(adding)
    body += struct.pack(">i", replicas[0] if leader is None and replicas else (-1 if leader is None else leader))
    body += struct.pack(">ii", leader_epoch, partition_epoch)
    if version >= 1:
        body += compact_uuids([uuid.UUID(int=0)] * len(replicas) if directories is None else directories)
    tags: Dict[int, bytes] = {}
    if recovery_state is not None:
        tags[0] = struct.pack(">b", recovery_state)
    if version >= 2 and elr is not None:
        tags[1] = compact_int32s(elr)
    return frame(3, version, body + tagged(tags))


def partition_change_record(topic_id: uuid.UUID, partition: int, *, version: int = 0,
                            replicas: Optional[Sequence[int]] = None, isr: Optional[Sequence[int]] = None,
                            leader: Optional[int] = None, adding: Optional[Sequence[int]] = None,
                            removing: Optional[Sequence[int]] = None,
                            directories: Optional[Sequence[uuid.UUID]] = None) -> bytes:
    tags: Dict[int, bytes] = {}
    if isr is not None:
        tags[0] = compact_int32s(isr)
    if leader is not None:
        tags[1] = struct.pack(">i", leader)
    if replicas is not None:
        tags[2] = compact_int32s(replicas)
    if removing is not None:
        tags[3] = compact_int32s(removing)
    if adding is not None:
        tags[4] = compact_int32s(adding)
    if version >= 1 and directories is not None:
        tags[8] = compact_uuids(directories)
    return frame(5, version, struct.pack(">i", partition) + topic_id.bytes + tagged(tags))


def config_record(resource_type: int, resource_name: str, name: str, value: Optional[str]) -> bytes:
    body = struct.pack(">b", resource_type) + compact_string(resource_name) + compact_string(name)
    return frame(4, 0, body + compact_string(value) + tagged({}))


def remove_topic_record(topic_id: uuid.UUID) -> bytes:
    return frame(9, 0, topic_id.bytes + tagged({}))


def begin_transaction_record(name: Optional[str] = None) -> bytes:
    return frame(23, 0, tagged({} if name is None else {0: compact_string(name)}))


def end_transaction_record() -> bytes:
    return frame(24, 0, tagged({}))


def abort_transaction_record(reason: Optional[str] = None) -> bytes:
    return frame(25, 0, tagged({} if reason is None else {0: compact_string(reason)}))


def feature_level_record(name: str, level: int) -> bytes:
    return frame(12, 0, compact_string(name) + struct.pack(">h", level) + tagged({}))


def no_op_record() -> bytes:
    return frame(20, 0, tagged({}))


# -- batches and files ---------------------------------------------------------------------------------


def data_batch(base_offset: int, values: Iterable[bytes], *, compression: str = "none", epoch: int = 1) -> bytes:
    b = RecordBatchBuilder(base_offset=base_offset, compression=compression, partition_leader_epoch=epoch)
    for v in values:
        b.append(None, v, timestamp=TS)
    return b.build()


def control_batch(base_offset: int, records: Sequence[Tuple[ControlRecordType, bytes]], *, epoch: int = 1) -> bytes:
    b = RecordBatchBuilder(base_offset=base_offset, is_control=True, partition_leader_epoch=epoch)
    for ctype, value in records:
        b.append_control(ctype, value, timestamp=TS)
    return b.build()


def snapshot_header(last_contained_ts: int = TS) -> bytes:
    # SnapshotHeaderRecord v0: Version int16, LastContainedLogTimestamp int64, tagged fields
    return struct.pack(">hq", 0, last_contained_ts) + tagged({})


def snapshot_footer() -> bytes:
    # SnapshotFooterRecord v0: Version int16, tagged fields
    return struct.pack(">h", 0) + tagged({})


def leader_change() -> bytes:
    # LeaderChangeMessage v0 (flexible): Version int16, LeaderId int32, Voters and GrantingVoters as compact
    # arrays of one Voter {VoterId int32, tagged fields}, then tagged fields
    voters = uvarint(2) + struct.pack(">i", 1) + tagged({})
    return struct.pack(">hi", 0, 1) + voters + voters + tagged({})


def log_batches(records: Sequence[bytes], *, start: int = 0, per_batch: int = 3,
                compression: str = "none") -> List[bytes]:
    """``records`` cut into batches of ``per_batch`` starting at offset ``start``."""
    out = []
    for i in range(0, len(records), per_batch):
        out.append(data_batch(start + i, records[i:i + per_batch], compression=compression))
    return out


def snapshot_file(records: Sequence[bytes], *, per_batch: int = 3, footer: bool = True) -> bytes:
    """A ``.checkpoint``: a SnapshotHeader control batch, the records, a SnapshotFooter control batch."""
    out = [control_batch(0, [(ControlRecordType.SNAPSHOT_HEADER, snapshot_header())])]
    out += log_batches(records, start=1, per_batch=per_batch)
    if footer:
        out.append(control_batch(1 + len(records), [(ControlRecordType.SNAPSHOT_FOOTER, snapshot_footer())]))
    return b"".join(out)


def write_segment(folder: Path, base_offset: int, batches: Sequence[bytes]) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{base_offset:020d}.log"
    path.write_bytes(b"".join(batches))
    return path


def write_snapshot(folder: Path, end_offset: int, epoch: int, data: bytes) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{end_offset:020d}-{epoch:010d}.checkpoint"
    path.write_bytes(data)
    return path
