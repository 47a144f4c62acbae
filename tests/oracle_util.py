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
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

FIXTURES = Path(__file__).parent / "fixtures" / "oracle"
ORACLE_DIR = Path(__file__).resolve().parents[2] / "shared" / "oracle"
if not ORACLE_DIR.exists():
    ORACLE_DIR = Path(__file__).resolve().parents[1] / ".." / "shared" / "oracle"


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
