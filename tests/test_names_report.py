"""``kcodec advise`` on data whose topic names are hostile: escaped reports, refused writes."""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

SCRIPT = "<script>alert(1)</script>"
ESCAPES = "\x1b[2J\x1b]0;owned\x07"


@pytest.mark.skipif(shutil.which("java") is None, reason="Spark needs Java")
def test_advise_with_hostile_topics(tmp_path):
    pytest.importorskip("pyspark")
    import pyarrow as pa
    import pyarrow.parquet as pq

    topics = [SCRIPT, ESCAPES, "orders"]
    table = pa.table({"key": [f"k{i % 7}" for i in range(600)],
                      "value": [f'{{"n": {i}}}' for i in range(600)],
                      "topic": [topics[i % 3] for i in range(600)],
                      "partition": pa.array([i % 2 for i in range(600)], pa.int32())})
    pq.write_table(table, tmp_path / "events.parquet")
    report, write = tmp_path / "report", tmp_path / "logs"
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)

    def advise(*args):
        return subprocess.run(
            [sys.executable, "-m", "kcodec.cli", "advise", str(tmp_path / "events.parquet"), "--master", "local[2]",
             "--codecs", "lz4", "--batch-sizes", "16k", "--out", str(report), "--min-compress-mbps", "0",
             "--min-read-mbps", "0", *args], capture_output=True, text=True, env=env, timeout=600)

    proc = advise()
    assert proc.returncode == 0, proc.stderr[-3000:]

    # the terminal never receives a control character from the data
    assert not any(c in proc.stdout + proc.stderr for c in "\x1b\x07")
    assert "topics: " in proc.stdout and SCRIPT in proc.stdout and "\\x1b[2J" in proc.stdout

    # HTML read as text: the topic is there, escaped; its markup is not
    page = (report / "report.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script" not in page.lower() and "\x1b" not in page
    assert set(re.findall(r"<\s*/?\s*([a-zA-Z][a-zA-Z0-9]*)", page)) <= {
        "html", "head", "meta", "title", "style", "body", "h1", "p", "b", "ul", "li", "table", "tr", "th",
        "td", "img"}

    # JSON stays well-formed and gives the names back exactly
    text = (report / "results.json").read_text()
    assert "<" not in text and text.isascii()
    doc = json.loads(text)
    assert set(doc["context"]["topics"].split(", ")) == set(topics)

    # --write refuses the data's topic names before measuring: a one-line kcodec error, nothing written
    shutil.rmtree(report)
    proc = advise("--write", str(write))
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kcodec advise:")]
    assert len(errors) == 1 and "invalid Kafka topic name" in errors[0], proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == errors[0]  # the command ends on it, not on a traceback
    assert not any(c in proc.stdout + proc.stderr for c in "\x1b\x07")
    assert "[ 1/" not in proc.stdout and not write.exists() and not report.exists()
