"""``kcodec dump``: print Kafka segment and index files, as kafka-dump-log does."""
from __future__ import annotations

import base64
import json
import sys
from pathlib import Path, PurePosixPath
from typing import Any, Dict, Optional, TextIO

from kcodec.errors import KcodecError
from kcodec.escape import terminal_text
from kcodec.log.index import OffsetIndex, TimeIndex
from kcodec.log.segment import LogSegment, offset_from_file_name
from kcodec.storage import LOCAL, Storage, resolve

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


def _base_offset(name: str) -> Optional[int]:
    """The base offset a segment file name carries, or None for any other name."""
    try:
        return offset_from_file_name(name)
    except ValueError:
        return None


def dump_log(path, *, deep: bool, print_data: bool, verify: bool, as_json: bool,
             out: Optional[TextIO] = None, storage: Optional[Storage] = None) -> None:
    """Print the batches of a file of batches; a ``.log`` named by its base offset also gets that offset."""
    out = sys.stdout if out is None else out
    storage = storage or LOCAL
    name = storage.basename(str(path))
    base = _base_offset(name) if name.endswith(".log") else None
    shown = storage.url(str(path))
    with LogSegment(path, storage, base_offset=base) if base is not None else _RawFile(path, storage) as seg:
        if not as_json:
            print(f"Dumping {terminal_text(shown)}", file=out)
            if base is not None:
                print(f"Log starting offset: {base}", file=out)
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
            raise exc.with_context(source=shown)


class _RawFile:
    """Any file of batches (a fetch response dump, a golden vector)."""

    def __init__(self, path, storage: Storage) -> None:
        self.data = storage.read_bytes(str(path))

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return None


def dump_index(path, *, sanity_only: bool, as_json: bool, out: Optional[TextIO] = None,
               storage: Optional[Storage] = None) -> None:
    out = sys.stdout if out is None else out
    storage = storage or LOCAL
    path = PurePosixPath(str(path)) if storage.remote else Path(path)
    base = _base_offset(path.name)
    if base is None:
        raise KcodecError("an index file is named by its segment's base offset (00000000000000000000.index)",
                          source=storage.url(str(path)))
    data = storage.read_bytes(str(path))
    if path.suffix == ".index":
        idx = OffsetIndex.open(storage.url(str(path)), base, data)
        idx.sanity_check()
        log = path.with_suffix(".log")
        if storage.exists(str(log)):
            with LogSegment(log, storage, base_offset=base) as seg:
                seg.sanity_check()
        if sanity_only:
            print(f"{terminal_text(path)} passed sanity check.", file=out)
            return
        for off, pos in zip(idx.offsets.tolist(), idx.positions.tolist()):
            print(json.dumps({"offset": off, "position": pos}) if as_json else f"offset: {off} position: {pos}",
                  file=out)
    else:
        tidx = TimeIndex.open(storage.url(str(path)), base, data)
        tidx.sanity_check()
        if sanity_only:
            print(f"{terminal_text(path)} passed sanity check.", file=out)
            return
        for ts, rel in zip(tidx.entries["timestamp"].tolist(), tidx.entries["relative_offset"].tolist()):
            off = base + int(rel)
            print(json.dumps({"timestamp": ts, "offset": off}) if as_json else f"timestamp: {ts} offset: {off}",
                  file=out)


def run(args) -> int:
    from kcodec.log.arguments import storage_options
    deep = args.deep_iteration or args.print_data_log
    opts = storage_options(args)
    for name in args.files:
        storage, path = resolve(name, opts)
        if not storage.isfile(path):
            raise FileNotFoundError(f"no such file: {storage.url(path)}")
        if path.endswith((".index", ".timeindex")):
            dump_index(path, sanity_only=args.index_sanity_check, as_json=args.json, storage=storage)
        else:
            dump_log(path, deep=deep, print_data=args.print_data_log, verify=not args.skip_crc,
                     as_json=args.json, storage=storage)
    return 0
