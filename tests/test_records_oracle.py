"""Every golden vector written by the Kafka Java client decodes to exactly its JSON;
every v2 case rebuilt by kcodec is byte-identical where Java's bytes are deterministic
and is read back by Java with identical records."""
from __future__ import annotations

import pytest

from canonical import render
from oracle_util import cases, digest, identical_expected, load_case, manifest, oracle_available, oracle_verify, rebuild

ALL = cases()
V2 = [c for c in ALL if c.startswith("v2_")]
LEVELS = {c["name"]: c["level"] for c in manifest()["cases"]}


def _legacy_available() -> bool:
    try:
        import kcodec.records.legacy_batch  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("case", ALL)
def test_decodes_to_java_json(case):
    data, expected, is_digest = load_case(case)
    if any(b["magic"] < 2 for b in expected["batches"]) and not _legacy_available():
        pytest.skip("magic v0/v1 reader not installed")
    got = render(data)
    if is_digest:
        got = digest(got)
    assert got == expected


def _rebuildable(case):
    data, doc, is_digest = load_case(case)
    if is_digest or not doc["batches"] or any(b["recordCount"] == 0 for b in doc["batches"]):
        return None
    return data, doc


@pytest.mark.parametrize("case", V2)
def test_rebuild_matches_java(case):
    got = _rebuildable(case)
    if got is None:
        pytest.skip("no records to rebuild, or a digest-only fixture")
    data, doc = got
    built = rebuild(doc, LEVELS.get(case))
    if identical_expected(doc, LEVELS.get(case), data):
        assert built == data
    back = render(built)
    for b_java, b_ours in zip(doc["batches"], back["batches"]):
        assert b_ours["records"] == b_java["records"]
        for k in ("baseOffset", "lastOffset", "compression", "timestampType", "maxTimestamp", "producerId",
                  "producerEpoch", "baseSequence", "lastSequence", "isTransactional", "isControlBatch",
                  "partitionLeaderEpoch", "deleteHorizonMs"):
            assert b_ours[k] == b_java[k], k


@pytest.mark.skipif(not oracle_available(), reason="Java oracle not available")
@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_java_reads_rebuilt_batches(codec):
    blobs, expected = [], []
    for case in V2:
        if f"_{codec}_" not in case:
            continue
        got = _rebuildable(case)
        if got is None:
            continue
        data, doc = got
        blobs.append(rebuild(doc, LEVELS.get(case)))
        expected.extend(doc["batches"])
    rc, java = oracle_verify(b"".join(blobs))
    assert rc == 0, java
    assert len(java["batches"]) == len(expected)
    for jb, eb in zip(java["batches"], expected):
        assert jb["records"] == eb["records"]
