"""Helpers shared by tests that compare kcodec with the Kafka Java client.

The golden vectors in ``tests/fixtures/oracle`` were written by
``../shared/oracle/oracle.py gen`` (kafka-clients 3.9.1).  Small cases keep
Java's full JSON; the multi-megabyte ones keep ``NAME.digest.json``, the same
document with every key, value and header value replaced by its SHA-256.
"""
from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import canonical
from kcodec import RecordBatchBuilder, TimestampType, get_codec
from kcodec.records import ControlRecordType

FIXTURES = Path(__file__).parent / "fixtures" / "oracle"


def _oracle_dir() -> Path:
    """The directory KCODEC_ORACLE_DIR names when present, else ../shared/oracle beside
    the checkout, or one level further up from a git worktree."""
    named = os.environ.get("KCODEC_ORACLE_DIR")
    if named and Path(named).exists():
        return Path(named)
    here = Path(__file__).resolve()
    for up in (2, 3):
        if (here.parents[up] / "shared" / "oracle").exists():
            return here.parents[up] / "shared" / "oracle"
    return here.parents[2] / "shared" / "oracle"


ORACLE_DIR = _oracle_dir()


def _digest_b64(v: Optional[str]) -> Optional[str]:
    if v is None:
        return None
    return "sha256:" + hashlib.sha256(base64.b64decode(v)).hexdigest()


def digest(doc: Dict[str, Any]) -> Dict[str, Any]:
    """Replace byte strings in an oracle document by their SHA-256 (idempotent)."""
    out = json.loads(json.dumps(doc))
    for batch in out.get("batches", []):
        for rec in batch["records"]:
            for k in ("key", "value"):
                if rec[k] is not None and not rec[k].startswith("sha256:"):
                    rec[k] = _digest_b64(rec[k])
            rec["headers"] = [[hk, hv if hv is None or hv.startswith("sha256:") else _digest_b64(hv)]
                              for hk, hv in rec["headers"]]
    return out


def manifest() -> Dict[str, Any]:
    return json.loads((FIXTURES / "manifest.json").read_text())


def cases() -> List[str]:
    return sorted(p.name[:-4] for p in FIXTURES.glob("*.bin"))


def load_case(name: str) -> Tuple[bytes, Dict[str, Any], bool]:
    """(bytes, expected document, is_digest)."""
    data = (FIXTURES / f"{name}.bin").read_bytes()
    full = FIXTURES / f"{name}.json"
    if full.exists():
        return data, json.loads(full.read_text()), False
    return data, json.loads((FIXTURES / f"{name}.digest.json").read_text()), True


def oracle_available() -> bool:
    return (ORACLE_DIR / "oracle.py").exists() and shutil.which("java") is not None


def oracle_verify(data: bytes, strict: bool = False) -> Tuple[int, Dict[str, Any]]:
    """Decode ``data`` with the Kafka Java client; (exit status, document)."""
    sys.path.insert(0, str(ORACLE_DIR))
    try:
        import oracle  # type: ignore
    finally:
        sys.path.pop(0)
    if strict:
        import tempfile
        with tempfile.NamedTemporaryFile(suffix=".bin", delete=False) as f:
            f.write(data)
        try:
            p = subprocess.run([sys.executable, str(ORACLE_DIR / "oracle.py"), "verify", "--strict", f.name],
                               capture_output=True, text=True)
            return p.returncode, json.loads(p.stdout) if p.stdout.strip() else {}
        finally:
            os.unlink(f.name)
    return oracle.verify_bytes(data)


def assert_java_reads_as_kcodec(data: bytes) -> Dict[str, Any]:
    """The Kafka Java client reads ``data`` with every check on (``verify --strict``) and finds
    what kcodec finds (tests/canonical.py's document); returns that document."""
    status, doc = oracle_verify(data, strict=True)
    assert status == 0, doc
    assert doc == canonical.render(data)
    return doc


def assert_java_refuses(data: bytes, message: str) -> None:
    """The Kafka Java client refuses ``data``, with ``message`` in its error."""
    status, doc = oracle_verify(data)
    assert status == 1 and message in str(doc["error"]), doc


def _b(v: Optional[str]) -> Optional[bytes]:
    return None if v is None else base64.b64decode(v)


def rebuild(doc: Dict[str, Any], level: Optional[int]) -> bytes:
    """Every v2 batch of an oracle document built again with RecordBatchBuilder.

    ``level`` is the case's level from its manifest (None: the codec's default).
    """
    out = []
    for b in doc["batches"]:
        codec = b["compression"]
        lat = b["timestampType"] == "LOG_APPEND_TIME"
        builder = RecordBatchBuilder(
            compression=codec, level=level if codec in ("gzip", "lz4", "zstd") else None,
            base_offset=b["baseOffset"],
            timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
            log_append_time=b["maxTimestamp"] if lat else None,
            producer_id=b["producerId"], producer_epoch=b["producerEpoch"], base_sequence=b["baseSequence"],
            is_transactional=b["isTransactional"], is_control=b["isControlBatch"],
            partition_leader_epoch=b["partitionLeaderEpoch"], delete_horizon_ms=b["deleteHorizonMs"])
        for r in b["records"]:
            if b["isControlBatch"]:
                builder.append_control(ControlRecordType.of_id(r["control"]["typeId"]), _b(r["value"]),
                                       timestamp=r["timestamp"], offset=r["offset"])
            else:
                builder.append(_b(r["key"]), _b(r["value"]), r["timestamp"],
                               [(k, _b(v)) for k, v in r["headers"]], offset=r["offset"])
        if b["records"] and b["lastOffset"] != b["records"][-1]["offset"]:
            builder.override_last_offset(b["lastOffset"])
        out.append(bytes(builder.build()))
    return b"".join(out)


def _largest_region(data: bytes) -> int:
    """The largest records region (decompressed) among the v2 batches in ``data``."""
    largest, pos = 0, 0
    while len(data) - pos >= 61:
        size = struct.unpack_from(">i", data, pos + 8)[0] + 12
        codec = struct.unpack_from(">h", data, pos + 21)[0] & 7
        payload = data[pos + 61:pos + size]
        largest = max(largest, len(get_codec(codec).decompress(payload) if codec else payload))
        pos += size
    return largest


def zstd_matches_java(level: Optional[int], size: int) -> bool:
    """Whether kcodec's zstd frame of ``size`` bytes at ``level`` is zstd-jni 1.5.6-4's, byte for byte.

    libzstd 1.5.6 is zstd-jni's own.  1.5.7 changed level 3's compressor, and
    its block pre-splitting, which only the direct calls turn off, changes
    frames of more than 128 KiB.
    """
    import zstandard
    version = zstandard.ZSTD_VERSION
    if version == (1, 5, 6):
        return True
    if version != (1, 5, 7) or level == 3:
        return False
    return size <= 131072 or get_codec("zstd").native


def identical_expected(doc: Dict[str, Any], level: Optional[int], data: bytes) -> bool:
    """Whether kcodec rebuilds Java's v2 batches ``data`` (described by ``doc``) byte for byte."""
    if any(b["timestampType"] == "LOG_APPEND_TIME" for b in doc["batches"]):
        # Java's builder writes records with their own timestamps in LogAppendTime batches; the
        # JSON only has the batch time, so those rebuild with other deltas (records, not bytes).
        return False
    codec = doc["batches"][0]["compression"]
    if codec == "none" or codec == "gzip":
        return True
    if codec == "zstd":
        return zstd_matches_java(level, _largest_region(data))
    if codec == "lz4":
        # the fast compressor (level 9) is Java's function only on the native path
        return level != 9 or get_codec("lz4").native
    return codec == "snappy"  # kcodec's encoder chooses snappy-java's matches
