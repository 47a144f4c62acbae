"""``kcodec advise`` on data whose topic names are hostile: escaped reports, refused writes."""
from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

SCRIPT = "<script>alert(1)</script>"
ESCAPES = "\x1b[2J\x1b]0;owned\x07"


# Spark in a process of its own (the whole command's output is checked): a Spark test all the same
@pytest.mark.spark
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
             "--min-read-mbps", "0", "--all-topics", *args], capture_output=True, text=True, env=env, timeout=600)

    proc = advise()
    assert proc.returncode == 0, proc.stderr[-3000:]

    # the terminal never receives a control character from the data; the topics are there, escaped
    out = proc.stdout + proc.stderr
    assert not any(c in out for c in "\x1b\x07")
    assert "per topic: " in proc.stdout and "total: " in proc.stdout
    for line in (SCRIPT, "\\x1b[2J\\x1b]0;owned\\x07", "orders"):
        assert line in proc.stdout.splitlines(), line  # each topic heads its own summary block

    # HTML read as text: the topic is there, escaped; its markup and control characters are not
    page = (report / "report.html").read_text()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page and "\\x1b[2J" in page
    # the report's one script is its own table sorter, the same bytes whatever the topics are called
    from kcodec.advise.html import _SORT_JS

    assert page.count(_SORT_JS) == 1
    page = page.replace(_SORT_JS, "")
    assert "<script" not in page.lower() and "\x1b" not in page and "\x07" not in page
    assert set(re.findall(r"<\s*/?\s*([a-zA-Z][a-zA-Z0-9]*)", page)) <= {
        "html", "head", "meta", "title", "style", "body", "section", "h1", "h2", "p", "b", "a", "code", "br",
        "ul", "li", "table", "tr", "th", "td", "img", "thead", "tbody", "span", "div", "small", "i", "nav", "wbr", "ol",
        "sup"}
    # no attribute value opened by the template is closed by data
    assert not re.search(r"=\s*['\"][^'\"]*<", page)

    # JSON stays well-formed, inert in a page, and gives the names back exactly
    text = (report / "results.json").read_text()
    assert "<" not in text and ">" not in text and text.isascii()
    doc = json.loads(text)
    assert {t["topic"] for t in doc["topics"]} == set(topics)

    # CSV stays well-formed (a header and one row per topic and setting) and gives the names back exactly
    rows = list(csv.reader(io.StringIO((report / "results.csv").read_text(), newline="")))
    assert all(len(r) == len(rows[0]) for r in rows)
    assert {r[0] for r in rows[1:]} == set(topics)

    # per topic a chart and a page, named safely, none overwriting another
    files = sorted(p.name for p in (report / "topics").iterdir())
    assert len(files) == 6 and all(re.fullmatch(r"[A-Za-z0-9._-]+\.(png|html)", n) for n in files)
    assert {n.rsplit(".", 1)[0] for n in files if n.endswith(".png")} == \
        {n.rsplit(".", 1)[0] for n in files if n.endswith(".html")}

    # --write refuses the data's topic names before measuring: a one-line kcodec error, nothing written
    shutil.rmtree(report)
    proc = advise("--write", str(write))
    assert proc.returncode == 1, proc.stderr[-3000:]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("kcodec advise:")]
    assert len(errors) == 1 and "invalid Kafka topic name" in errors[0], proc.stderr[-3000:]
    assert proc.stderr.strip().splitlines()[-1] == errors[0]  # the command ends on it, not on a traceback
    assert not any(c in proc.stdout + proc.stderr for c in "\x1b\x07")
    assert "per topic:" not in proc.stdout  # refused before the measuring job, not after it
    assert not write.exists() and not report.exists()
