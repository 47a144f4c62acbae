"""Every case the Java oracle generates today, checked against kcodec.

The fixtures in ``tests/fixtures/oracle`` are a copy: the multi-megabyte cases
are kept as digests or left out, and a newer oracle may write cases the copy
lacks.  When ``../shared/oracle`` and Java are here, ``oracle.py gen`` writes
its golden vectors into a temporary directory once per session, and each of
them must decode to exactly Java's JSON; each v2 case kcodec builds again from
the same records must be Java's bytes wherever the compressor is the same
(Java's records in any case), and Java must read those batches back.  Without
Java this module is skipped; the fixtures are checked by the other modules.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

from canonical import render
from oracle_util import ORACLE_DIR, identical_expected, oracle_available, oracle_verify, rebuild

pytestmark = pytest.mark.skipif(not oracle_available(), reason="Java oracle not available")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
# One group per magic and codec (zstd needs magic 2), and one for the files
# that mix them (segments), as the manifest describes each case.
GROUPS = [f"v{m}_{c}" for m in (0, 1, 2) for c in CODECS if m == 2 or c != "zstd"] + ["mixed"]
BATCH_FIELDS = ("baseOffset", "lastOffset", "compression", "timestampType", "maxTimestamp", "producerId",
                "producerEpoch", "baseSequence", "lastSequence", "isTransactional", "isControlBatch",
                "partitionLeaderEpoch", "deleteHorizonMs")


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Tuple[Path, List[Dict[str, Any]]]:
    out = tmp_path_factory.mktemp("oracle-gen")
    run = subprocess.run([sys.executable, str(ORACLE_DIR / "oracle.py"), "gen", str(out)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    cases = json.loads((out / "manifest.json").read_text())["cases"]
    assert cases and len(cases) == len(list(out.glob("*.bin")))
    return out, cases


def _group_of(case: Dict[str, Any]) -> str:
    if "mixed" in (case["magic"], case["compression"]):
        return "mixed"
    return f"v{case['magic']}_{case['compression']}"


def _group(generated, group: str):
    out, cases = generated
    for case in cases:
        if _group_of(case) == group:
            yield case, (out / case["bin"]).read_bytes(), json.loads((out / case["json"]).read_text())


def test_every_case_is_in_a_group(generated):
    groups = [_group_of(c) for c in generated[1]]
    assert set(groups) == set(GROUPS)


@pytest.mark.parametrize("group", GROUPS)
def test_generated_cases_decode_to_java_json(generated, group):
    wrong = [case["name"] for case, data, doc in _group(generated, group) if render(data) != doc]
    assert not wrong


@pytest.fixture(scope="module", params=CODECS)
def rebuilt(request, generated) -> Tuple[str, List[Tuple[Dict[str, Any], bytes, Dict[str, Any], bytes]]]:
    """(codec, [(manifest entry, Java's bytes, Java's JSON, kcodec's rebuild) of each v2 case with records]).

    Built once for both tests of a codec; pytest runs them together and lets
    the codec's cases go before the next codec's are built.
    """
    codec = request.param
    return codec, [(case, data, doc, rebuild(doc, case["level"]))
                   for case, data, doc in _group(generated, f"v2_{codec}")
                   if doc["batches"] and all(b["recordCount"] for b in doc["batches"])]


def test_generated_v2_cases_rebuild_as_java_wrote_them(rebuilt):
    codec, cases = rebuilt
    identical, wrong = 0, []
    for case, data, doc, built in cases:
        if identical_expected(doc, case["level"], data):
            identical += 1
            if built != data:
                wrong.append(f"{case['name']}: other bytes")
                continue
        back = render(built)
        if len(back["batches"]) != len(doc["batches"]):
            wrong.append(f"{case['name']}: {len(back['batches'])} batches")
            continue
        for b_java, b_ours in zip(doc["batches"], back["batches"]):
            if b_ours["records"] != b_java["records"]:
                wrong.append(f"{case['name']}: other records")
            wrong.extend(f"{case['name']}: {k}" for k in BATCH_FIELDS if b_ours[k] != b_java[k])
    assert not wrong
    assert cases and (identical or codec == "snappy")


def test_java_reads_what_kcodec_rebuilt(rebuilt):
    _codec, cases = rebuilt
    rc, java = oracle_verify(b"".join(built for _case, _data, _doc, built in cases))
    assert rc == 0, java
    assert [b["records"] for b in java["batches"]] == [
        b["records"] for _case, _data, doc, _built in cases for b in doc["batches"]]
