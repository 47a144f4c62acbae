"""``kcodec advise``: the producer replay, the cost model, argument checks, sampling, and a Spark run
on a six-topic estate whose batches are known."""
from __future__ import annotations

import csv
import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from kcodec.advise.cost import GB, Prices, TopicEconomics, load_prices, monthly_cost
from kcodec.advise.grid import Setting, parse_lingers, parse_size
from kcodec.advise.inputs import ChunkRange, plan_sample
from kcodec.advise.options import Options, check_options
from kcodec.advise.replay import assign_partitions, form_batches, record_sizes, update_estimate
from kcodec.errors import KcodecError

BIG = 10 ** 9  # a batch.size no test reaches


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``kcodec`` in a fresh interpreter importing the kcodec these tests import (installed or in place)."""
    import os

    import kcodec

    env = dict(os.environ, PYTHONPATH=str(Path(kcodec.__file__).resolve().parents[1]))
    return subprocess.run([sys.executable, "-m", "kcodec.cli", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=60)


def kcodec_id(name: str) -> int:
    from kcodec import CompressionType

    return int(CompressionType.of(name))


def _cut(ts, sizes, batch_size, linger, upper=None, **kw):
    sizes = np.asarray(sizes)
    upper = np.asarray(upper if upper is not None else sizes + 61)
    return form_batches(np.asarray(ts), sizes, upper, batch_size, linger, **kw).tolist()


# --- producer replay, by hand ---------------------------------------------------------------------

def test_bursts_share_a_batch_within_linger():
    # three records at t=0, two at t=50, one at t=200; linger 10 ms
    assert _cut([0, 0, 0, 50, 50, 200], [100] * 6, BIG, 10) == [0, 3, 5, 6]


def test_gap_longer_than_linger_closes_the_batch():
    assert _cut([0, 5, 20, 21], [100] * 4, BIG, 10) == [0, 2, 4]
    # Java takes the batch during millisecond first + linger, half a millisecond into it by default: of
    # that millisecond's three records (at 10.08, 10.41, 10.75) the first two join, the last starts the next
    assert _cut([0, 10, 10, 10, 11], [100] * 5, BIG, 10) == [0, 3, 5]


def test_batch_size_counts_header_and_records():
    # record k joins while 61 + 100*k + 100 <= 361: three records per batch
    assert _cut([0] * 7, [100] * 7, 361, 1000) == [0, 3, 6, 7]


def test_record_larger_than_batch_size_gets_its_own_batch():
    sizes = [100, 5000, 100, 100]
    upper = [182, 5072, 182, 182]  # 61 + 21 + key/value bytes
    assert _cut([0] * 4, sizes, 361, 1000, upper=upper) == [0, 1, 2, 4]


def test_compressed_cut_follows_the_ratio_estimate():
    # 1.05 x estimate per byte; every batch compresses to half, so the estimate falls 0.005 per batch:
    # two records per batch until it reaches 0.95 (ten batches), then three.
    seen = []

    def close(a, b):
        seen.append((a, b))
        return 0.5

    starts = _cut([0] * 40, [100] * 40, 361, 1000, compressed=True, close=close)
    assert starts == list(range(0, 22, 2)) + [23, 26, 29, 32, 35, 38, 40]
    assert seen[0] == (0, 2) and len(seen) == len(starts) - 1


def test_estimate_update_is_kafkas():
    assert update_estimate(1.0, 0.5) == pytest.approx(0.995)
    assert update_estimate(0.5, 0.8) == pytest.approx(0.8)  # much worse: jump to the observed ratio
    assert update_estimate(0.5, 0.52) == pytest.approx(0.55)  # a little worse: at least +0.05
    assert update_estimate(0.5, 0.5) == 0.5
    assert update_estimate(0.5, 0.498) == pytest.approx(0.498)  # a little better: never below the observed


def test_keyless_records_stick_to_a_partition_then_move_round_robin():
    keyed = np.array([-1, 1, -1, -1, -1, -1, -1])
    # keyless records 0, 2, 3 bring partition 0 to 300 >= 250 bytes; 4, 5, 6 go to partition 1
    assert assign_partitions(np.full(7, 100), keyed, 250, 3).tolist() == [0, 1, 0, 0, 1, 1, 1]
    assert assign_partitions(np.full(9, 100), np.full(9, -1), 100, 2).tolist() == [0, 1, 0, 1, 0, 1, 0, 1, 0]


def test_record_sizes_are_default_record_sizes():
    from kcodec.records import RecordBatchBuilder

    # a record at offset delta 0 and timestamp delta 0, as Kafka sizes it
    b = RecordBatchBuilder(compression="none")
    b.append(b"k" * 10, b"v" * 300, timestamp=0)
    body = len(b.build()) - 61
    assert record_sizes(np.array([10]), np.array([300])).tolist() == [body]
    assert record_sizes(np.array([-1]), np.array([5])).tolist() == [1 + 1 + 1 + 1 + 1 + 5 + 1 + 1]


# --- money, by hand -------------------------------------------------------------------------------

def test_monthly_cost_by_hand():
    prices = Prices(block_gb_month=0.08, object_gb_month=0.023, cross_zone_gb=0.02, vcpu_hour=0.048)
    topic = TopicEconomics(retention_days=7, replication_factor=3, consumer_groups=1,
                           producer_cross_zone=2 / 3, replication_cross_zone=1.0, consumer_cross_zone=2 / 3)
    c = monthly_cost(10 * GB, 10e9, 100.0, 200.0, prices, topic)
    assert c.storage == pytest.approx(70 * 3 * 0.08)  # 16.80
    assert c.network == pytest.approx(300 * (2 / 3 + 2 + 2 / 3) * 0.02)  # 20.00
    assert c.cpu == pytest.approx((300_000 / 100 + 300_000 / 200) / 3600 * 0.048)  # 0.06
    assert c.total == pytest.approx(16.8 + 20.0 + 0.06)
    tiered = monthly_cost(10 * GB, 10e9, None, None, prices, TopicEconomics(local_retention_days=1))
    assert tiered.storage == pytest.approx(10 * 3 * 0.08 + 60 * 0.023)  # 2.40 + 1.38
    assert tiered.cpu == 0
    recompress = monthly_cost(10 * GB, 10e9, 100.0, 200.0, prices, topic, broker_recompresses=True)
    assert recompress.cpu == pytest.approx((300_000 / 100 * 2 + 300_000 / 200 * 2) / 3600 * 0.048)


def test_prices_file_and_flags(tmp_path):
    f = tmp_path / "prices.json"
    f.write_text(json.dumps({"prices": {"block_gb_month": 0.1}, "defaults": {"retention_days": 3},
                             "topics": {"audit": {"retention_days": 365, "replication_factor": 2}}}))
    prices, defaults, topics = load_prices(str(f), {"cross_zone_gb": 0.0, "consumer_groups": 4})
    assert prices == Prices(block_gb_month=0.1, cross_zone_gb=0.0)
    assert defaults.retention_days == 3 and defaults.consumer_groups == 4
    assert topics["audit"].retention_days == 365 and topics["audit"].consumer_groups == 4
    f.write_text(json.dumps({"prices": {"block_gb": 1}}))
    with pytest.raises(KcodecError, match="unknown field.*block_gb"):
        load_prices(str(f), {})
    with pytest.raises(KcodecError, match="no such file"):
        load_prices(str(tmp_path / "missing.json"), {})


# --- arguments and inputs, checked before Spark -------------------------------------------------------

def test_sizes_in_both_unit_families():
    assert parse_size("16k") == parse_size("16KiB") == 16384
    assert parse_size("40TB") == 40 * 10 ** 12
    assert parse_size("40TiB") == 40 * 2 ** 40
    assert parse_size("1MB") == 10 ** 6
    with pytest.raises(ValueError):
        parse_size("40XB")
    assert parse_lingers("100,0,5") == [0, 5, 100]
    assert Setting.parse("zstd:3@256k/5ms", 16384, 0) == Setting("zstd", 3, 262144, 5)
    assert Setting.parse("lz4", 16384, 7) == Setting("lz4", None, 16384, 7)


@pytest.mark.parametrize("kwargs, message", [
    ({"batch_sizes": "16q"}, "--batch-sizes 16q"),
    ({"current_size": "40XB"}, "--current-size 40XB"),
    ({"codecs": "zstd:99"}, "--codecs zstd:99"),
    ({"lingers": "5ms"}, "--linger-ms 5ms"),
    ({"sample": "lots"}, "--sample lots"),
    ({"choose": "zstd:9@1m"}, "--choose zstd:9@1m: zstd:9@1MiB/0ms is not among the measured settings"),
    ({"topic": "x"}, "--topic x: matches none of the topics of generated sample (app-logs, clicks, telemetry)"),
    ({"topic": "("}, "--topic (: not a regular expression"),
    ({"sample": "0"}, "--sample 0: at least 1KiB"),
    ({"records": 0}, "--records 0: at least 1"),
    ({"tasks": 0}, "--tasks 0: at least 1"),
    ({"seed": -1}, "--seed -1: 0 or more"),
    ({"current_size": "0"}, "--current-size 0: more than 0 bytes"),
    ({"current_batch_size": "0"}, "--current-batch-size 0: batch.size must be between 1 byte and 2 GiB"),
    ({"timestamp_unit": "ms"}, "--timestamp-unit ms: only for Parquet or JSON record inputs"),
])
def test_bad_flags_are_named(kwargs, message):
    o = Options(**{"codecs": "zstd:3,lz4", "batch_sizes": "16k", "lingers": "0", "current_linger_ms": "0",
                   **kwargs})
    with pytest.raises(KcodecError) as err:
        check_options(o)
    assert message in str(err.value)


def test_bad_inputs_are_named(tmp_path):
    with pytest.raises(KcodecError, match=f"{tmp_path}/nope: no such file or directory"):
        check_options(Options(inputs=[str(tmp_path / "nope")]))
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "readme.txt").write_text("hello")
    with pytest.raises(KcodecError, match="notes: not a Kafka log directory"):
        check_options(Options(inputs=[str(tmp_path / "notes")]))
    seg = tmp_path / "logs" / "t-0" / "00000000000000000000.log"
    seg.parent.mkdir(parents=True)
    seg.write_bytes(b"")
    with pytest.raises(KcodecError, match="00000000000000000000.log: a segment file; give the log directory"):
        check_options(Options(inputs=[str(seg)]))
    with pytest.raises(KcodecError, match="holds no records"):  # only a 0-byte segment
        check_options(Options(inputs=[str(tmp_path / "logs")]))


def test_cli_error_is_one_line_before_spark(tmp_path):
    proc = _cli("advise", str(tmp_path / "nope"), cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip() == f"kcodec advise: {tmp_path}/nope: no such file or directory"
    proc = _cli("advise", "--batch-sizes", "16q", cwd=tmp_path)
    assert proc.returncode == 1 and "--batch-sizes 16q: not a size" in proc.stderr
    assert "Traceback" not in proc.stderr and "Spark" not in proc.stdout


def test_sample_spreads_over_partitions_and_time():
    ranges = [ChunkRange("t", p, i, f"/x/{p}", i * 100, (i + 1) * 100) for p in range(3) for i in range(10)]
    picked = plan_sample(ranges, 900)  # 9 of 30 chunks: 3 per partition, the middle of each third of it
    assert sorted((r.partition, r.chunk) for r in picked) == [(p, i) for p in range(3) for i in (1, 5, 8)]
    one = plan_sample(ranges, 100)  # fewer chunks than partitions: the middle partition's middle chunk
    assert [(r.partition, r.chunk) for r in one] == [(1, 5)]
    assert len(plan_sample(ranges, None)) == 30
    assert len(plan_sample(ranges, 10 ** 9)) == 30


# --- the whole job on a known estate ------------------------------------------------------------------

@pytest.fixture(scope="module")
def estate(tmp_path_factory):
    sys.path.insert(0, str(Path(__file__).parent))
    from advise_estate import build_estate

    root = tmp_path_factory.mktemp("estate")
    expected = build_estate(root)
    (root / "events-json-0" / "00000000000000004000.log").write_bytes(b"")  # a freshly rolled segment
    return root, expected


def test_java_written_topic_is_what_java_reads(estate):
    from oracle_util import oracle_available, oracle_verify

    if not oracle_available():
        pytest.skip("the Kafka Java client is not available")
    data = (estate[0] / "java-json-0" / "00000000000000000000.log").read_bytes()
    rc, doc = oracle_verify(data)
    assert rc == 0, doc
    assert [b["compression"] for b in doc["batches"]] == ["snappy", "zstd"] * 5
    assert [b["baseOffset"] for b in doc["batches"]] == list(range(0, 1000, 100))


def test_advise_reports_each_topic_as_written(spark, estate, tmp_path):
    from kcodec.advise.job import run_advise

    root, expected = estate
    lines = []
    out = run_advise(Options(inputs=[str(root)], codecs="zstd:1,lz4", batch_sizes="16k,256k", lingers="0,100",
                             out_dir=str(tmp_path / "rep"), progress=False, sample="1MiB",
                             write_dir=str(tmp_path / "written")), log=lines.append)
    advice = {a.topic: a for a in out["advice"]}
    assert sorted(advice) == sorted(expected)
    for topic, exp in expected.items():
        a = advice[topic]
        total = sum(exp["codec_bytes"].values())
        assert a.codec_mix == pytest.approx({k: v / total for k, v in exp["codec_bytes"].items()}), topic
        assert a.today.batches == exp["batches"], topic
        if exp["records_per_batch"] is None:
            continue
        br = a.profile.batch_records
        assert (br.p10, br.p50, br.p90, br.mean) == (exp["records_per_batch"],) * 4, topic
        assert a.timestamp_type == "CreateTime"
        assert a.profile.magic_batches == {0: 0, 1: 0, 2: exp["batches"]}
        assert a.today.cost.total > 0 and all(m.cost.total > 0 for m in a.results)
    legacy = advice["legacy-mixed"]
    assert legacy.profile.magic_batches == expected["legacy-mixed"]["magic"]
    assert legacy.timestamp_type == "CreateTime and LogAppendTime"
    assert legacy.today.records == 588  # 593 records less 5 transaction markers
    assert advice["events-json"].partitions == 2
    assert advice["binary"].today.ratio == pytest.approx(1.0, abs=0.01)  # random bytes
    assert advice["precompressed"].today.ratio == pytest.approx(1.0)  # stored without a codec
    assert advice["logs-text"].today.ratio > 4  # gzip on repetitive lines
    text = "\n".join(lines)
    # six topics: the estate's summary, and each topic's detail in the files; their timestamps span
    # seconds, so none is priced
    assert text.index("estate: 6 topics") < text.index("what to set") < text.index("top 6 topics by saving")
    assert "not priced (6 topics" in text and "details" not in text
    doc = json.loads(Path(out["paths"]["json"]).read_text())
    assert [t["topic"] for t in doc["topics"]] == sorted(expected)
    with open(out["paths"]["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == 6 * (1 + 2 * 2 * 3)  # today + every setting (none always measured)
    page = Path(out["paths"]["html"]).read_text()
    assert page.count("<section") == 6 and "data:image" not in page and page.count('loading="lazy"') == 7
    from kcodec.log import open_log_dir
    from kcodec.records.framing import iter_entries

    written = open_log_dir(tmp_path / "written")
    assert set(out["written"]) == {a.topic for a in out["advice"] if a.best is not None}
    for a in out["advice"]:
        if a.best is not None:
            parts = [p for (t, _), p in written.items() if t == a.topic]
            data = b"".join(seg.path.read_bytes() for p in parts for seg in p.segments)
            codecs = {data[e.position + 22] & 7 for e in iter_entries(data)}
            assert codecs == {kcodec_id(a.best.setting.codec)}, a.topic
            assert a.best.setting.linger_ms <= 100 and a.saving > 0
            assert set(a.config()) >= {"compression.type", "batch.size", "linger.ms"}
            assert math.isfinite(a.best.ratio_std)


def test_parquet_topics_escaped_and_written(spark, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from kcodec.advise.job import run_advise

    n = 3000
    hostile = "<b>$x$\x1b[31m"
    values = [b'{"n":%d,"text":"the same words again and again"}' % i for i in range(n)]
    pq.write_table(pa.table({
        "key": pa.array([None if i % 3 else b"k%d" % (i % 7) for i in range(n)], pa.binary()),
        "value": pa.array(values, pa.binary()),
        "timestamp": pa.array((1_700_000_000_000 + np.arange(n)) * 1000, pa.timestamp("us", tz="UTC")),
        "topic": pa.array(["plain-topic" if i % 2 else hostile for i in range(n)])}), tmp_path / "in.parquet")
    lines = []
    opts = Options(inputs=[str(tmp_path / "in.parquet")], codecs="lz4", batch_sizes="16k", lingers="0,20",
                   current_codec="none", current_batch_size="16k", current_linger_ms="0", partitions=2,
                   out_dir=str(tmp_path / "rep"), progress=False, min_compress_mbps=0, min_read_mbps=0)
    out = run_advise(opts, log=lines.append)
    advice = {a.topic: a for a in out["advice"]}
    assert set(advice) == {"plain-topic", hostile}
    a = advice["plain-topic"]
    assert a.codec_mix == {"none": 1.0} and a.partitions == 2
    assert a.best is not None and a.best.setting.codec == "lz4" and a.saving > 0
    text = "\n".join(lines)
    assert "\x1b" not in text and "\\x1b[31m" in text
    page = Path(out["paths"]["html"]).read_text()
    assert "<b>$x$" not in page and "&lt;b&gt;$x$" in page
    with open(out["paths"]["csv"]) as f:
        assert {r["topic"] for r in csv.DictReader(f)} == {"plain-topic", hostile}
    refused = []
    with pytest.raises(KcodecError, match="--write .*: invalid Kafka topic name"):
        run_advise(Options(**{**vars(opts), "write_dir": str(tmp_path / "w"), "out_dir": str(tmp_path / "rep2")}),
                   log=refused.append)
    assert not (tmp_path / "w").exists() and not (tmp_path / "rep2").exists()  # refused before measuring


def test_corrupt_batch_is_named_by_file_and_byte(spark, tmp_path):
    import pyarrow as pa

    import kcodec
    from kcodec.advise.job import run_advise
    from kcodec.log import write_partition

    table = pa.table({"value": pa.array([b"value %d" % i for i in range(200)], pa.binary())})
    batches = kcodec.from_arrow(table, compression="lz4", max_batch_bytes=1024)
    write_partition(tmp_path / "logs" / "t-0", [b"".join(batches)])
    seg = tmp_path / "logs" / "t-0" / "00000000000000000000.log"
    data = bytearray(seg.read_bytes())
    bad = len(batches[0]) + 70  # inside the second batch's records
    data[bad] ^= 0xFF
    seg.write_bytes(bytes(data))
    with pytest.raises(KcodecError) as err:
        run_advise(Options(inputs=[str(tmp_path / "logs")], codecs="lz4", batch_sizes="16k", lingers="5",
                           out_dir=str(tmp_path / "rep"), progress=False), log=lambda s: None)
    assert err.value.source == str(seg)
    assert err.value.position == len(batches[0])  # the batch whose CRC fails
    assert "t-0: Record is corrupt" in str(err.value)
