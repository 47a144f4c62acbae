"""Render kcodec's view of a buffer in the oracle's canonical JSON form (kafka-records-oracle/1)."""
from __future__ import annotations

import base64
from typing import Any, Dict, Optional

from kcodec import read_batches
from kcodec.records import ControlRecordType
from kcodec.records.framing import valid_bytes


def _b64(data: Optional[bytes]) -> Optional[str]:
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def render_batch(batch) -> Dict[str, Any]:
    records = list(batch)
    legacy = batch.magic < 2
    comp = batch.compression
    out = {
        "position": batch.position,
        "sizeInBytes": batch.size_in_bytes,
        "magic": batch.magic,
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "compression": comp.kafka_name,
        "compressionId": int(comp),
        "timestampType": batch.timestamp_type.name,
        "baseTimestamp": None if legacy else batch.base_timestamp,
        "maxTimestamp": batch.max_timestamp,
        "deleteHorizonMs": batch.delete_horizon_ms,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "baseSequence": batch.base_sequence,
        "lastSequence": batch.last_sequence,
        "isTransactional": batch.is_transactional,
        "isControlBatch": batch.is_control,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "recordCount": len(records),
        "checksum": batch.crc,
        "records": [],
    }
    for r in records:
        rec = {"offset": r.offset, "timestamp": r.timestamp, "key": _b64(r.key), "value": _b64(r.value),
               "headers": [[k, _b64(v)] for k, v in r.headers]}
        if batch.is_control:
            ctype = r.control_type
            type_id = int.from_bytes(bytes(r.key[2:4]), "big", signed=True)
            ctl = {"type": ctype.name, "typeId": type_id}
            if ctype in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                ctl["coordinatorEpoch"] = r.coordinator_epoch
            rec["control"] = ctl
        out["records"].append(rec)
    return out


def render(data, validate: bool = True) -> Dict[str, Any]:
    batches = [render_batch(b) for b in read_batches(data, validate=validate)]
    return {
        "format": "kafka-records-oracle/1",
        "sizeInBytes": len(data),
        "validBytes": valid_bytes(data),
        "batchCount": len(batches),
        "recordCount": sum(b["recordCount"] for b in batches),
        "batches": batches,
    }
