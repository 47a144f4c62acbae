"""``kcodec dump``: print Kafka segment and index files, as kafka-dump-log does."""
from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any, Dict, Optional, TextIO

from kcodec.errors import KcodecError
from kcodec.escape import terminal_text
from kcodec.log.index import OffsetIndex, TimeIndex
from kcodec.log.segment import LogSegment, offset_from_file_name

__all__ = ["run", "dump_log", "dump_index"]


def _text(data) -> str:
    if data is None:
        return "null"
    return bytes(data).decode("utf-8", errors="backslashreplace")


def _b64(data):
    return None if data is None else base64.b64encode(bytes(data)).decode("ascii")


def _batch_fields(batch) -> Dict[str, Any]:
    legacy = batch.magic < 2
    return {
        "baseOffset": batch.base_offset,
        "lastOffset": batch.last_offset,
        "count": None if legacy else batch.record_count,
        "baseSequence": batch.base_sequence,
        "lastSequence": batch.last_sequence,
        "producerId": batch.producer_id,
        "producerEpoch": batch.producer_epoch,
        "partitionLeaderEpoch": batch.partition_leader_epoch,
        "isTransactional": batch.is_transactional,
        "isControl": batch.is_control,
        "deleteHorizonMs": batch.delete_horizon_ms,
        "position": batch.position,
        "timestampType": batch.timestamp_type.kafka_name,
        "maxTimestamp": batch.max_timestamp,
        "size": batch.size_in_bytes,
        "magic": batch.magic,
        "compresscodec": batch.compression.kafka_name,
        "crc": batch.crc,
        "isvalid": True,  # read_batches raised for an invalid batch unless --skip-crc
    }


def _record_fields(rec, print_data: bool) -> Dict[str, Any]:
    out: Dict[str, Any] = {
        "offset": rec.offset,
        "timestamp": rec.timestamp,
        "keySize": -1 if rec.key is None else len(rec.key),
        "valueSize": -1 if rec.value is None else len(rec.value),
        "sequence": rec.sequence,
        "headerKeys": [k for k, _ in rec.headers],
    }
    if getattr(rec, "is_control", False) and getattr(rec, "control_type", None) is not None:
        ctype = rec.control_type
        out["endTxnMarker" if getattr(rec, "coordinator_epoch", None) is not None else "controlType"] = \
            getattr(ctype, "name", str(ctype))
        if getattr(rec, "coordinator_epoch", None) is not None:
            out["coordinatorEpoch"] = rec.coordinator_epoch
    elif print_data:
        out["key"] = rec.key
        out["payload"] = rec.value
        out["headers"] = list(rec.headers)
    return out


def _line(fields: Dict[str, Any]) -> str:
    parts = []
    for k, v in fields.items():
        if k == "timestampType":
            continue
        if k == "maxTimestamp":
            k = fields.get("timestampType", "CreateTime")
        if k == "timestamp":
            k = "CreateTime"
        if k in ("key", "payload"):
            v = _text(v)
        elif k == "headers":
            v = ",".join(f"{hk}:{_text(hv)}" for hk, hv in v)
        elif isinstance(v, bool):
            v = "true" if v else "false"
        elif v is None:
            v = "null"
        parts.append(f"{k}: {v}")
    # keys, values and header keys are data: no control character reaches the terminal
    return terminal_text(" ".join(parts))


def _json_ready(fields: Dict[str, Any]) -> Dict[str, Any]:
    out = dict(fields)
    for k in ("key", "payload"):
        if k in out:
            out[k] = _b64(out[k])
    if "headers" in out:
        out["headers"] = [[hk, _b64(hv)] for hk, hv in out["headers"]]
    return out


def dump_log(path: Path, *, deep: bool, print_data: bool, verify: bool, as_json: bool,
             out: Optional[TextIO] = None) -> None:
    out = sys.stdout if out is None else out
    with LogSegment(path) if path.suffix == ".log" else _RawFile(path) as seg:
        if not as_json:
            print(f"Dumping {terminal_text(path)}", file=out)
            if path.suffix == ".log":
                print(f"Log starting offset: {seg.base_offset}", file=out)
        from kcodec.records import read_batches
        try:
            # Verifying, the reader raises for a batch whose CRC is wrong (and for a
            # wrapper's inner messages when they are read), so what is printed is valid.
            for batch in read_batches(seg.data, validate=verify, strict=True):
                fields = _batch_fields(batch)
                records = []
                if deep:
                    records = [_record_fields(r, print_data) for r in batch]
                if as_json:
                    doc = _json_ready(fields)
                    if deep:
                        doc["records"] = [_json_ready(r) for r in records]
                    print(json.dumps(doc), file=out)
                else:
                    print(_line(fields), file=out)
                    for r in records:
                        print("| " + _line(r), file=out)
        except KcodecError as exc:
            raise exc.with_context(source=str(path))


class _RawFile:
    """Any file of batches (a fetch response dump, a golden vector)."""

    def __init__(self, path: Path) -> None:
        self.data = path.read_bytes()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def dump_index(path: Path, *, sanity_only: bool, as_json: bool, out: Optional[TextIO] = None) -> None:
    out = sys.stdout if out is None else out
    base = offset_from_file_name(path.name)
    if path.suffix == ".index":
        idx = OffsetIndex.open(path, base)
        idx.sanity_check()
        log = path.with_suffix(".log")
        if log.exists():
            with LogSegment(log) as seg:
                seg.sanity_check()
        if sanity_only:
            print(f"{terminal_text(path)} passed sanity check.", file=out)
            return
        for off, pos in zip(idx.offsets.tolist(), idx.positions.tolist()):
            print(json.dumps({"offset": off, "position": pos}) if as_json else f"offset: {off} position: {pos}",
                  file=out)
    else:
        idx = TimeIndex.open(path, base)
        idx.sanity_check()
        if sanity_only:
            print(f"{terminal_text(path)} passed sanity check.", file=out)
            return
        for ts, rel in zip(idx.entries["timestamp"].tolist(), idx.entries["relative_offset"].tolist()):
            off = base + int(rel)
            print(json.dumps({"timestamp": ts, "offset": off}) if as_json else f"timestamp: {ts} offset: {off}",
                  file=out)


def run(args) -> int:
    deep = args.deep_iteration or args.print_data_log
    for name in args.files:
        path = Path(name)
        if not path.exists():
            raise FileNotFoundError(f"no such file: {path}")
        if path.suffix in (".index", ".timeindex"):
            dump_index(path, sanity_only=args.index_sanity_check, as_json=args.json)
        else:
            dump_log(path, deep=deep, print_data=args.print_data_log, verify=not args.skip_crc,
                     as_json=args.json)
    return 0
