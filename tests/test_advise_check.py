"""``kcodec advise --check``'s verdicts, detection, split and errors, without Spark or a broker
(the end-to-end check through Tansu is tests/test_advise_emit_check.py)."""
from __future__ import annotations

import json

import pytest

from builders import batch, kv
from kcodec.advise.check import (
    AFTER,
    MIN_BATCHES,
    Previous,
    judge,
    parse_since,
    read_previous,
    split_chunks,
)
from kcodec.advise.grid import Setting
from kcodec.errors import KcodecError


# The records' bytes are 90% of a setting's plain bytes (an uncompressed batch holds its framing); the realised
# batches' plain bytes are 95%: the check's ratio reads the records' bytes, whose share does not change with
# the batching.
def _row(setting: Setting, records: int, batches: int, stored: int, plain: int, total: float = 50.0) -> dict:
    return {"setting": setting.label, "codec": setting.codec, "level": setting.level,
            "batch_size": setting.batch_bytes, "linger_ms": setting.linger_ms, "records": records,
            "batches": batches, "stored_bytes": stored, "plain_bytes": plain, "payload_bytes": plain * 9 // 10,
            "cost_month": {"storage": total * 0.6, "network": total * 0.4, "cpu": 0.0, "total": total}}


ADVISED = Setting("zstd", 3, 1 << 20, 100)
OTHER = Setting("zstd", 3, 16384, 5)


def _previous() -> Previous:
    rows = {s.label: r for s, r in ((ADVISED, _row(ADVISED, 4000, 20, 100_000, 1_000_000, 50.0)),
                                    (OTHER, _row(OTHER, 4000, 400, 160_000, 1_000_000, 80.0)))}
    today = {"cost_month": {"total": 200.0}, "records": 4000, "batches": 800}  # snappy, 5 records per batch
    return Previous("t", ADVISED, rows[ADVISED.label], today, rows, {"snappy": 1.0})


def _after(records: int, batches: int, stored: int, plain: int) -> dict:
    return {"records": records, "batches": batches, "stored_bytes": stored, "plain_bytes": plain * 95 // 100,
            "payload_bytes": plain * 9 // 10}


def test_a_change_to_the_advised_setting_is_compared_with_its_prediction():
    c = judge(_previous(), "split", _after(4000, 20, 103_000, 1_000_000),
              [{"producer_id": 7, "codec": 4, "batches": 20, "records": 4000, "bytes": 103_000}])
    assert c.verdict == "changed" and c.detected == ADVISED
    assert c.errors()["stored_bytes_per_record"] == pytest.approx(0.03)
    assert c.errors()["records_per_batch"] == pytest.approx(0.0)
    assert c.ratio == pytest.approx(900_000 / 103_000)
    assert c.errors()["ratio"] == pytest.approx(1 / 1.03 - 1)
    # predicted 200 - 50; realised: storage and network 3% above the prediction
    assert (c.saving_predicted, c.saving_realised) == (pytest.approx(150.0), pytest.approx(200 - 50 * 1.03))
    assert c.text.startswith("changed to zstd:3@1MiB/100ms; stored bytes per record +3.0%")


def test_the_measured_setting_nearest_in_records_per_batch_is_detected():
    # zstd batches of ten records: OTHER (ten per batch predicted), not the advised shape
    c = judge(_previous(), "split", _after(4000, 400, 170_000, 1_000_000),
              [{"producer_id": 7, "codec": 4, "batches": 400, "records": 4000, "bytes": 170_000}])
    assert c.verdict == "changed" and c.detected == OTHER
    assert c.predicted["setting"] == OTHER.label and "(advised: zstd:3@1MiB/100ms)" in c.text
    assert c.saving_predicted == pytest.approx(120.0)


def test_a_codec_the_previous_run_did_not_measure_is_predicted_from_this_run_s_replay():
    lz4 = Setting("lz4", None, 1 << 20, 100)
    replayed = {lz4.label: {k: v for k, v in _row(lz4, 4000, 20, 150_000, 1_000_000).items() if k != "cost_month"}}
    c = judge(_previous(), "split", _after(4000, 20, 150_000, 1_000_000),
              [{"producer_id": 7, "codec": 3, "batches": 20, "records": 4000, "bytes": 150_000}], replayed)
    assert c.verdict == "changed" and c.detected == lz4 and c.predicted_now
    assert "replayed now on the batches before the change" in c.detected_how
    # the advised bill, its storage and network at 1.5 times the bytes
    assert c.saving_predicted == pytest.approx(200 - 50 * 1.5)


def test_producers_left_at_today_s_codec_are_not_changed():
    c = judge(_previous(), "split", _after(4000, 800, 400_000, 1_000_000),
              [{"producer_id": 7, "codec": 2, "batches": 800, "records": 4000, "bytes": 400_000}])
    assert c.verdict == "not changed" and c.detected is None and c.saving_realised is None
    assert c.text == ("not changed: the 800 batches after the change are snappy at 5.0 records per batch, as today's "
                      "(5.0), not the advised zstd:3@1MiB/100ms (200.0)")


def test_some_producer_ids_changed_are_named():
    counts = [{"producer_id": 7, "codec": 4, "batches": 10, "records": 2000, "bytes": 50_000},
              {"producer_id": 9, "codec": 2, "batches": 400, "records": 2000, "bytes": 200_000}]
    c = judge(_previous(), "split", _after(4000, 410, 250_000, 1_000_000), counts)
    assert c.verdict == "some producers changed"
    assert c.text == "some producers changed: producer ids 7 write zstd, 9 do not"
    anonymous = [dict(r, producer_id=-1) for r in counts]
    c = judge(_previous(), "split", _after(4000, 410, 250_000, 1_000_000), anonymous)
    assert c.verdict == "some producers changed" and "20% of the bytes after the change are zstd" in c.text


def test_too_little_data_after_the_change_says_what_would_be_enough():
    c = judge(_previous(), "split", _after(600, 3, 15_000, 150_000),
              [{"producer_id": 7, "codec": 4, "batches": 3, "records": 600, "bytes": 15_000}])
    assert c.verdict == "too little data" and c.needed_records == MIN_BATCHES * 200
    assert c.text == ("too little data after the change: 600 records in 3 batches; 2,000 records (10 batches at "
                      "the predicted 200.0 records per batch) would be enough")
    c = judge(_previous(), "split", None, [])
    assert c.verdict == "too little data" and c.text.startswith("no batches after the change; 2,000 records")


def test_a_topic_advised_to_keep_today_s_settings_has_nothing_to_check():
    p = _previous()
    p.recommended, p.predicted = None, None
    assert judge(p, "split", None, []).verdict == "no recommendation"


def _batch(ts: int, codec: str, n: int) -> bytes:
    return batch(0, [kv(None, "x" * 50)] * n, ts=ts, codec=codec)


def test_chunks_split_at_the_time_or_at_the_first_batch_of_the_advised_codec_and_shape():
    import pyarrow as pa

    data = _batch(1000, "snappy", 5) + _batch(2000, "snappy", 5) + _batch(3000, "zstd", 20) + _batch(4000, "zstd", 20)
    rows = pa.RecordBatch.from_arrays([pa.array(["t"]), pa.array([0], pa.int32()), pa.array([0], pa.int32()),
                                       pa.array([data], pa.binary())], names=["topic", "partition", "chunk", "data"])
    first = len(_batch(1000, "snappy", 5))
    at_time = next(split_chunks(iter([rows]), {"t": 2000}, {"t": None}, {}))
    assert at_time.column(0).to_pylist() == ["t", "t" + AFTER]
    assert at_time.column(3)[0].as_py() == data[:first] and at_time.column(3)[1].as_py() == data[first:]
    by_codec = next(split_chunks(iter([rows]), {"t": None}, {"t": 4}, {"t": 20.0}))
    assert [len(x) for x in by_codec.column(3).to_pylist()] == [2 * first, len(data) - 2 * first]
    # a zstd batch of the wrong shape (20 records against 100 predicted) is not the change
    assert next(split_chunks(iter([rows]), {"t": None}, {"t": 4}, {"t": 100.0})).column(0).to_pylist() == ["t"]


def test_a_bad_previous_file_or_since_is_one_line(tmp_path):
    with pytest.raises(KcodecError, match=r"--check .*missing.json: no such file"):
        read_previous(str(tmp_path / "missing.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(KcodecError, match=r"--check .*bad.json: not JSON \(line 1, column 2"):
        read_previous(str(bad))
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"rows": []}))
    with pytest.raises(KcodecError, match=r"not the results.json of kcodec advise \(missing or bad 'topics'\)"):
        read_previous(str(other))
    with pytest.raises(KcodecError, match=r"--since yesterday: expected a date and time"):
        parse_since("yesterday")
    assert parse_since("2026-05-01T12:00:00Z") == parse_since("2026-05-01T12:00:00") == 1777636800000
    assert parse_since("1777636800000") == 1777636800000


def test_the_flags_errors_are_one_line_before_spark(tmp_path):
    import subprocess
    import sys

    def run(*argv):
        return subprocess.run([sys.executable, "-m", "kcodec.cli", "advise", "--records", "100", *argv],
                              capture_output=True, text=True, cwd=tmp_path, timeout=120)

    not_dir = tmp_path / "file"
    not_dir.write_text("x")
    for argv, line in ((("--check", "missing.json"), "kcodec advise: --check missing.json: no such file"),
                       (("--since", "1"), "kcodec advise: --since 1: only with --check"),
                       (("--emit", str(not_dir)), f"kcodec advise: --emit {not_dir}: not a directory")):
        proc = run(*argv)
        assert proc.returncode == 1 and proc.stderr.strip().splitlines() == [line]
        assert "starting Spark" not in proc.stdout


def test_the_previous_run_s_topics_the_input_does_not_hold_are_named_in_every_output():
    from kcodec.advise.check import check_doc, check_html, check_text

    checks = [judge(_previous(), "split", None, [])]
    assert "not in this input, so not checked: gone-1, gone-2" in check_text(checks, "p.json", ["gone-1", "gone-2"])
    assert "<p>Not in this input, so not checked: gone-1, gone-2.</p>" in check_html(checks, "p.json",
                                                                                      ["gone-1", "gone-2"])
    assert json.loads(check_doc(checks, "p.json", 0, ["gone-1"]))["check"]["not_in_input"] == ["gone-1"]
    assert "not in this input" not in check_text(checks, "p.json")


def test_a_log_directory_s_check_reads_the_ranges_from_the_change_on_whatever_the_sample(tmp_path):
    from pathlib import Path

    from kcodec.advise.inputs import open_inputs
    from kcodec.advise.inputs.logs import plan_sample
    from kcodec.log import LogWriter

    change = 10 ** 6
    batches = [batch(i * 10, [kv(None, "x" * 50)] * 10, ts=1000 + i) for i in range(60)]
    batches += [batch(600 + i * 10, [kv(None, "x" * 50)] * 10, ts=change + i) for i in range(6)]
    with LogWriter.in_log_dir(str(tmp_path / "logs"), "t", 0, segment_bytes=16_000, index_interval_bytes=1) as w:
        for b in batches:
            w.append(b)
    source = open_inputs([str(tmp_path / "logs")], None, 1024)
    paths = list(dict.fromkeys(r.path for r in source.ranges))
    sizes = {p: sum(r.size for r in source.ranges if r.path == p) for p in paths}
    assert len(paths) == 3
    # segments rolled before the change hold none of it; in the last, the indexed batch holding the largest
    # timestamp before the change (the 60th), then the batches after it
    first_in_last = int(Path(paths[2]).stem) // 10  # ten offsets a batch
    assert first_in_last < 59
    last_start = sum(map(len, batches[:first_in_last]))
    positions = source._change_positions(change)
    assert positions == {paths[0]: sizes[paths[0]], paths[1]: sizes[paths[1]],
                         paths[2]: sum(map(len, batches[:59])) - last_start}
    after = [r for r in source.ranges if r.path == paths[2] and r.end > sum(map(len, batches[:60])) - last_start]
    assert sum(r.size for r in after) == sum(map(len, batches[60:]))
    # 4 KiB of a 43 KB log spread over its time reaches some of the batches after the change, at most
    spread = plan_sample(source.ranges, 4096)
    assert not set(after) <= set(spread)
    picked = source.check_ranges(change, 4096)
    assert set(after) <= set(picked)
    assert 0 < sum(r.size for r in picked if r.end <= positions[r.path]) <= 4096 + 1400
    # without a time index, the whole segment may hold the change
    Path(paths[2]).with_suffix(".timeindex").unlink()
    assert open_inputs([str(tmp_path / "logs")], None, 1024)._change_positions(change)[paths[2]] == 0
