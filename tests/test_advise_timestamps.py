"""Timestamps of record inputs (JSON, Parquet) in every shape, read in the unit they are in: detected
before Spark starts when unambiguous, else ``--timestamp-unit``; and ``--topic`` on record inputs."""
from __future__ import annotations

import datetime as dt
import json
import subprocess
import sys

import pytest

from kcodec.advise.inputs.files.timestamps import TimestampPlan, detect_timestamps
from kcodec.advise.options import Options, check_options
from kcodec.errors import KcodecError

T0_MS = 1_700_000_000_000  # 2023-11-14
STEP_MS = 50  # one record each 50 ms: at linger.ms=5 every record is a batch of its own


def _stamps(n: int):
    return [T0_MS + i * STEP_MS for i in range(n)]


def _json(path, values, topic=True):
    with open(path, "w") as f:
        for i, ts in enumerate(values):
            doc = {"key": f"k{i % 7}", "value": json.dumps({"i": i, "pad": "x" * (i % 40)}), "timestamp": ts}
            if topic:
                doc["topic"] = "orders" if i % 2 else "audit"
            f.write(json.dumps(doc) + "\n")
    return str(path)


def _iso(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, dt.timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


@pytest.mark.parametrize("values, plan", [
    ([_iso(t) for t in _stamps(50)], TimestampPlan("iso")),
    ([t / 1000 for t in _stamps(50)], TimestampPlan("epoch", "s")),
    (_stamps(50), TimestampPlan("epoch", "ms")),
    ([t * 1000 for t in _stamps(50)], TimestampPlan("epoch", "us")),
    ([t * 1_000_000 for t in _stamps(50)], TimestampPlan("epoch", "ns")),
    ([None, T0_MS], TimestampPlan("epoch", "ms")),
])
def test_json_units_are_detected(tmp_path, values, plan):
    got = detect_timestamps([_json(tmp_path / "r.json", values)], "json")
    assert (got.kind, got.unit) == (plan.kind, plan.unit)
    if plan.kind == "epoch":
        name = {"s": "seconds", "ms": "milliseconds", "us": "microseconds", "ns": "nanoseconds"}[plan.unit]
        assert got.text().startswith(f"epoch {name} (detected from")


def test_ambiguous_numbers_need_the_unit(tmp_path):
    path = _json(tmp_path / "r.json", list(range(0, 5000, 50)))  # offsets from a start, no date in any unit
    with pytest.raises(KcodecError, match=r"the timestamp numbers \(0 to 4950\) are not dates between 1990 and "
                                          r"2100 in one unit: give --timestamp-unit s, ms, us or ns$"):
        detect_timestamps([path], "json")
    assert detect_timestamps([path], "json", "ms") == TimestampPlan("epoch", "ms", "--timestamp-unit")
    mixed = _json(tmp_path / "m.json", [T0_MS, T0_MS * 1000])  # milliseconds and microseconds together
    with pytest.raises(KcodecError, match="--timestamp-unit"):
        detect_timestamps([mixed], "json")


def test_bad_timestamps_are_named_before_spark(tmp_path):
    bad = _json(tmp_path / "b.json", ["2024-05-01T12:00:00Z", "yesterday"])
    with pytest.raises(KcodecError, match=r"b.json: timestamp 'yesterday' is not an ISO-8601 date and time"):
        detect_timestamps([bad], "json")
    iso = _json(tmp_path / "i.json", ["2024-05-01T12:00:00Z"])
    with pytest.raises(KcodecError, match="--timestamp-unit ms: .* holds ISO-8601 strings"):
        detect_timestamps([iso], "json", "ms")
    (tmp_path / "n.json").write_text('{"value": "a", "timestamp": 1}\n[1, 2]\n')
    with pytest.raises(KcodecError, match="n.json: line 2 is not a JSON object"):
        detect_timestamps([str(tmp_path / "n.json")], "json")
    # the command line says it in one line, with no Spark started
    proc = subprocess.run([sys.executable, "-m", "kcodec.cli", "advise", str(tmp_path / "b.json"), "--no-progress"],
                          capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "timestamp 'yesterday' is not an ISO-8601" in proc.stderr and "starting Spark" not in proc.stdout


def test_parquet_kinds(tmp_path):
    pa = pytest.importorskip("pyarrow")
    pq = pytest.importorskip("pyarrow.parquet")

    def write(name, column):
        pq.write_table(pa.table({"value": [b"v"] * len(column), "timestamp": column}), tmp_path / name)
        return str(tmp_path / name)

    arrow = write("a.parquet", pa.array([t * 1000 for t in _stamps(10)], pa.timestamp("us", tz="UTC")))
    assert detect_timestamps([arrow], "parquet").kind == "timestamp"
    with pytest.raises(KcodecError, match="carry their own unit"):
        detect_timestamps([arrow], "parquet", "ms")
    nanos = write("n.parquet", pa.array([t * 1_000_000 for t in _stamps(10)], pa.int64()))
    assert (detect_timestamps([nanos], "parquet").unit) == "ns"
    iso = write("i.parquet", pa.array([_iso(t) for t in _stamps(10)]))
    assert detect_timestamps([iso], "parquet").kind == "iso"
    none = str(tmp_path / "x.parquet")
    pq.write_table(pa.table({"value": [b"v"]}), none)
    assert detect_timestamps([none], "parquet").kind == "none"
    # a folder of Parquet files: its first file decides
    (tmp_path / "dir").mkdir()
    pq.write_table(pa.table({"value": [b"v"], "timestamp": pa.array([T0_MS], pa.int64())}),
                   tmp_path / "dir" / "part-0.parquet")
    assert detect_timestamps([str(tmp_path / "dir")], "parquet").unit == "ms"


def test_the_unit_used_is_in_the_description(tmp_path):
    c = check_options(Options(inputs=[_json(tmp_path / "r.json", _stamps(20))]))
    assert c.plan.description.endswith("; timestamps: epoch milliseconds (detected from 20 values of "
                                       f"{tmp_path}/r.json: all dates between 1990 and 2100 in milliseconds)")


def _advise(spark, tmp_path, path, **kwargs):
    from kcodec.advise.job import run_advise

    lines = []
    out = run_advise(Options(inputs=[path], codecs="lz4", batch_sizes="16k", lingers="5", current_linger_ms="5",
                             min_compress_mbps=0, min_read_mbps=0, progress=False, out_dir=str(tmp_path / "r"),
                             **kwargs), log=lines.append)
    return {a.topic: a for a in out["advice"]}, "\n".join(lines)


@pytest.mark.parametrize("shape", ["iso", "ms", "s", "parquet-timestamp"])
def test_today_is_batched_in_the_records_own_time(spark, tmp_path, shape):
    """Records 50 ms apart at linger.ms=5: one record a batch, whatever the timestamps' shape."""
    n = 400
    if shape == "parquet-timestamp":
        import pyarrow as pa
        import pyarrow.parquet as pq

        path = str(tmp_path / "r.parquet")
        pq.write_table(pa.table({"key": [b"k%d" % (i % 7) for i in range(n)],
                                 "value": [b'{"i": %d}' % i for i in range(n)],
                                 "timestamp": pa.array(_stamps(n), pa.timestamp("ms", tz="UTC")),
                                 "topic": ["orders" if i % 2 else "audit" for i in range(n)]}), path)
    else:
        values = {"iso": [_iso(t) for t in _stamps(n)], "ms": _stamps(n), "s": [t / 1000 for t in _stamps(n)]}
        path = _json(tmp_path / "r.json", values[shape])
    advice, text = _advise(spark, tmp_path, path, topic="orders")
    assert sorted(advice) == ["orders"]  # --topic on a record input
    a = advice["orders"]
    assert a.today.records == n // 2
    assert a.profile.batch_records.p50 == 1, shape
    # 200 records 100 ms apart in "orders": the span is 19.9 s
    assert a.profile.max_ts - a.profile.min_ts == (n - 2) * STEP_MS
    assert "timestamps: " in text and "orders" in text


def test_topic_and_partial_tail_on_log_directories(spark, tmp_path):
    """--topic on a log directory keeps the topics it matches whole; a last segment cut mid-batch is
    noted as dump and recompress report it."""
    import os

    from builders import batch, kv, make_log

    logs = tmp_path / "logs"
    for name in ("orders-0", "orders-1", "audit-0"):
        make_log(logs / name, [[batch(0, [kv(b"a"), kv(b"b")]), batch(2, [kv(b"c")])]])
    log = os.path.join(logs, "orders-1", "00000000000000000000.log")
    whole = os.path.getsize(log)
    with open(log, "ab") as f:
        f.write(batch(3, [kv(b"d")])[:30])
    c = check_options(Options(inputs=[str(logs)], topic="ord.*"))
    assert sorted(c.plan.topic_partitions) == ["orders"] and {r.topic for r in c.plan.ranges} == {"orders"}
    assert c.plan.description.endswith("topics /ord.*/")
    from kcodec.advise.inputs.logs.tails import partial_tails

    assert [t[:2] for t in c.plan.tails] == [("orders", 0), ("orders", 1)]
    assert partial_tails(spark, c.plan.tails) == {"orders": [
        f"{log}: the segment ends in 30 bytes that are not a complete batch (a partial write a broker truncates "
        f"when it recovers the log) at byte {whole}; they are not measured"]}
    with pytest.raises(KcodecError, match=r"--topic ord: matches none of the topics of log directory .* "
                                          r"\(audit, orders\)"):
        check_options(Options(inputs=[str(logs)], topic="ord"))
