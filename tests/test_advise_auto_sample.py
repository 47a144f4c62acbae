"""``--sample auto``: chunks in a nested order, the ratio's interval, rounds that stop when the answer is
known, and, on log directories whose right answer is known, a steady topic that stops early and a
drifting one that reads on."""
from __future__ import annotations

import dataclasses
import json
import math
import random
from collections import namedtuple
from pathlib import Path

import pytest

from kcodec.advise.aggregate import aggregate_rows, sample_std
from kcodec.advise.auto_sample import (
    AutoSampler,
    SampleTarget,
    _spread_order,
    nested_order,
    ratio_interval,
    t_quantile,
)
from kcodec.errors import KcodecError

Unit = namedtuple("Unit", "topic partition chunk size")


# -- the interval -------------------------------------------------------------------------------------
def test_t_quantile_table_and_expansion():
    assert t_quantile(1) == 12.706
    assert t_quantile(3) == 3.182
    assert t_quantile(30) == 2.042
    # past the table, Cornish-Fisher's expansion: 2.021 at 40, 2.000 at 60, 1.980 at 120 (the tables' values)
    assert t_quantile(40) == pytest.approx(2.021, abs=0.001)
    assert t_quantile(60) == pytest.approx(2.000, abs=0.001)
    assert t_quantile(120) == pytest.approx(1.980, abs=0.001)
    assert t_quantile(10 ** 9) == pytest.approx(1.96, abs=0.001)
    with pytest.raises(ValueError):
        t_quantile(0)


def test_t_quantile_past_the_table_is_the_two_term_expansion():
    # Student's t at 97.5%, from the tables, to within the expansion's truncation error
    for df, t, within in ((31, 2.039513, 1e-4), (40, 2.021075, 5e-5), (60, 2.000298, 2e-5), (120, 1.979930, 3e-6)):
        assert t_quantile(df) == pytest.approx(t, abs=within), df
    # the published coefficients: z + (z^3 + z) / 4 / df + (5 z^5 + 16 z^3 + 3 z) / 96 / df^2, exactly
    z = 1.959964
    for df in (31, 40, 100, 1000):
        g1, g2 = (z ** 3 + z) / 4, (5 * z ** 5 + 16 * z ** 3 + 3 * z) / 96
        assert t_quantile(df) == pytest.approx(z + g1 / df + g2 / df ** 2, rel=1e-14), df


def test_ratio_interval_by_hand():
    # Four chunks, plain 100/200/300/400, stored 50/100/150/210: R = 1000/510.
    plain, stored = [100, 200, 300, 400], [50, 100, 150, 210]
    r = 1000 / 510
    residual = sum((y - r * x) ** 2 for y, x in zip(plain, stored)) / 3
    mean_x = 510 / 4
    expected = 3.182 * math.sqrt((1 - 4 / 40) * residual / (4 * mean_x ** 2)) / r
    assert ratio_interval(plain, stored, 40) == pytest.approx(expected, rel=1e-12)
    # drawn from more chunks, the interval is wider (less of the topic is known)
    assert ratio_interval(plain, stored, 10 ** 9) > ratio_interval(plain, stored, 40)


def test_ratio_interval_edges():
    assert ratio_interval([10, 20], [5, 10], 2) == 0.0  # every chunk: no sampling error
    assert ratio_interval([10], [5], 1) == 0.0  # a topic of one chunk, read
    # two chunks are the fewest that tell a spread: Student's t of one degree of freedom
    r, residual = 30 / 12, (10 - 30 / 12 * 5) ** 2 + (20 - 30 / 12 * 7) ** 2
    want = 12.706 * math.sqrt((1 - 2 / 8) * residual / (2 * 6.0 ** 2)) / r
    assert ratio_interval([10, 20], [5, 7], 8) == pytest.approx(want, rel=1e-12)
    assert ratio_interval([10], [5], 8) == math.inf  # one chunk tells no spread
    assert ratio_interval([], [], 8) == math.inf
    assert ratio_interval([10, 20, 30], [5, 10, 15], 9) == 0.0  # one ratio in every chunk
    assert ratio_interval([0, 0], [5, 10], 9) == math.inf
    assert ratio_interval([10, 20], [0, 0], 9) == math.inf  # nothing stored: no ratio to know
    # one byte in all is still a ratio
    for plain, stored in (([1, 0], [3, 3]), ([2, 3], [1, 0])):
        r = sum(plain) / sum(stored)
        residual = sum((y - r * x) ** 2 for y, x in zip(plain, stored))
        want = 12.706 * math.sqrt((1 - 2 / 10) * residual / (2 * (sum(stored) / 2) ** 2)) / r
        assert ratio_interval(plain, stored, 10) == pytest.approx(want, rel=1e-12)
    with pytest.raises(ValueError):
        ratio_interval([1, 2], [1], 5)


def test_the_interval_covers_the_whole_ratio_about_95_times_in_100():
    # 2,000 chunks whose ratios vary: samples of 12 chunks, drawn without replacement
    rng = random.Random(3)
    stored = [rng.randint(3_000, 5_000) for _ in range(2000)]
    plain = [int(x * rng.uniform(2.0, 4.0)) for x in stored]
    whole = sum(plain) / sum(stored)
    covered = 0
    for _ in range(1000):
        idx = rng.sample(range(2000), 12)
        p, s = [plain[i] for i in idx], [stored[i] for i in idx]
        if abs(sum(p) / sum(s) / whole - 1) <= ratio_interval(p, s, 2000):
            covered += 1
    assert 930 <= covered <= 975


# -- the order ----------------------------------------------------------------------------------------
def test_spread_order_is_a_permutation_middle_first():
    for n in range(0, 40):
        order = _spread_order(n)
        assert sorted(order) == list(range(n))
    assert _spread_order(9)[:3] == [4, 0, 8]
    assert _spread_order(1) == [0]
    # of an even count the lower middle first, then the far end
    assert _spread_order(4) == [1, 3, 0, 2] and _spread_order(6) == [2, 5, 0, 1, 3, 4]


def test_every_prefix_is_spread_over_time():
    order = _spread_order(64)
    for k in (2, 4, 8, 16, 32):
        taken = sorted(order[:k])
        # no stretch of the partition longer than about two of k equal stretches is left unread
        gaps = [b - a for a, b in zip([-1] + taken, taken + [64])]
        assert max(gaps) <= 2 * 64 / k + 1, (k, taken)


def test_nested_order_takes_from_partitions_in_proportion():
    units = [Unit("t", p, c, 100) for p, n in ((0, 30), (1, 10), (2, 20)) for c in range(n)]
    random.Random(1).shuffle(units)
    order = nested_order(units, lambda u: u.partition, lambda u: u.chunk)
    assert sorted(order) == sorted(units)
    for k in (6, 12, 30, 60):
        counts = [sum(1 for u in order[:k] if u.partition == p) for p in range(3)]
        for have, share in zip(counts, (0.5, 1 / 6, 1 / 3)):
            assert abs(have - share * k) <= 1, (k, counts)
    # the same units in any order give the same order
    assert nested_order(list(reversed(units)), lambda u: u.partition, lambda u: u.chunk) == order
    # the j-th of a partition's n chunks at (j + 1/2) / n: the first is at 1/60, 1/40 and 1/20 of the way
    assert [(u.partition, u.chunk) for u in order[:6]] == [(0, 14), (2, 9), (0, 29), (1, 4), (2, 19), (0, 0)]


def test_nested_order_puts_the_lower_partition_first_on_a_tie():
    from kcodec.advise.inputs.logs import ChunkRange

    # the planner's ranges, which have no order of their own: two partitions of eight chunks tie at every step
    units = [ChunkRange("t", p, c, f"t-{p}/0.log", c * 100, c * 100 + 100) for p in (0, 1) for c in range(8)]
    for given in (units, units[::-1], units[8:] + units[:8]):
        order = nested_order(given, lambda u: u.partition, lambda u: u.chunk)
        assert [(u.partition, u.chunk) for u in order] == [(p, c) for c in (3, 7, 0, 5, 1, 2, 4, 6) for p in (0, 1)]


# -- the rounds ---------------------------------------------------------------------------------------
def _sampler(sizes, population=None, **target):
    cands = {t: [Unit(t, 0, i, 10) for i in range(n)] for t, n in sizes.items()}
    return AutoSampler(cands, population or {t: n for t, n in sizes.items()}, lambda u: u.size,
                       SampleTarget(**target))


def test_a_sample_target_of_precision_and_cap_keeps_the_first_rounds_four_chunks():
    from kcodec.advise.auto_sample import DEFAULT_CAP, DEFAULT_PRECISION, FIRST_CHUNKS
    from kcodec.advise.grid import parse_size

    assert SampleTarget() == SampleTarget(DEFAULT_PRECISION, parse_size(DEFAULT_CAP), FIRST_CHUNKS)
    assert (DEFAULT_PRECISION, DEFAULT_CAP, FIRST_CHUNKS) == (0.01, "64MiB", 4)
    # as the flags give it: --sample-precision, then --sample-cap's bytes
    target = SampleTarget(0.02, 1 << 20)
    assert (target.precision, target.cap_bytes, target.first_chunks) == (0.02, 1 << 20, 4)
    assert len(_sampler({"t": 40}, precision=0.02, cap_bytes=1 << 20).next_round()) == 4


def test_rounds_double_the_chunks_of_open_topics():
    s = _sampler({"a": 40, "b": 40, "small": 3}, population={"a": 40, "b": 400, "small": 3}, precision=0.01)
    first = s.next_round()
    assert [(u.topic, u.chunk) for u in first] == [("a", i) for i in range(4)] + [("b", i) for i in range(4)] + \
        [("small", i) for i in range(3)]
    # small: every chunk it has was read: measured whole, no sampling error
    assert s.settle("small", "zstd", [10, 20, 30], [5, 9, 16]).stop == "whole"
    # a: a spread beyond the target: open; b: one ratio everywhere: done
    assert s.settle("a", "zstd", [10, 20, 30, 40], [5, 7, 16, 30]) is None
    reach = s.settle("b", "zstd", [10, 20, 30, 40], [5, 10, 15, 20])
    assert (reach.stop, reach.chunks, reach.candidates, reach.half_width, reach.sampled_bytes) == \
        ("precision", 4, 40, 0.0, 40)
    assert s.open_topics == ["a"]
    assert [u.chunk for u in s.next_round()] == [4, 5, 6, 7]
    assert s.settle("a", "zstd", [10, 20, 30, 40] * 2, [5, 7, 16, 30] * 2) is None
    assert len(s.next_round()) == 8
    assert s.settle("a", "zstd", [10, 20, 30, 40] * 4, [5, 7, 16, 30] * 4) is None
    assert len(s.next_round()) == 16
    assert s.settle("a", "zstd", [10, 20, 30, 40] * 8, [5, 7, 16, 30] * 8) is None
    assert len(s.next_round()) == 8  # the last of its 40 candidates
    reach = s.settle("a", "zstd", [10, 20, 30, 40] * 10, [5, 7, 16, 30] * 10)
    assert reach.stop == "whole" and reach.chunks == 40 and reach.half_width == 0.0 and reach.rounds == 5
    assert s.next_round() == [] and s.open_topics == []


def test_an_interval_of_exactly_the_target_reaches_it():
    plain, stored = [10, 20, 30, 40], [5, 7, 16, 30]
    half = ratio_interval(plain, stored, 400)
    s = _sampler({"t": 40}, population={"t": 400}, precision=half)
    s.next_round()
    reach = s.settle("t", "zstd", plain, stored)
    assert (reach.stop, reach.half_width, reach.chunks) == ("precision", half, 4)
    # not while the race over the grid is undecided
    s = _sampler({"t": 40}, population={"t": 400}, precision=half)
    s.next_round()
    assert s.settle("t", "zstd", plain, stored, decided=False) is None


def test_the_cap_stops_a_topic_larger_than_it():
    s = _sampler({"big": 6}, population={"big": 600}, precision=0.001)
    s.next_round()
    assert s.settle("big", "lz4", [10, 20, 30, 40], [5, 7, 16, 30]) is None
    assert len(s.next_round()) == 2
    reach = s.settle("big", "lz4", [10, 20, 30, 40, 50, 60], [5, 7, 16, 30, 20, 31])
    assert reach.stop == "cap" and 0 < reach.half_width < math.inf
    assert "--sample-cap reached" in reach.text() and "6 of 6 chunks" in reach.text()


def test_the_target_reached_on_the_caps_last_chunks_is_the_target():
    s = _sampler({"big": 4}, population={"big": 400}, precision=0.05)
    s.next_round()
    reach = s.settle("big", "lz4", [100, 101, 99, 100], [50, 50, 50, 50])
    assert (reach.stop, reach.chunks) == ("precision", 4)


def test_a_cap_of_one_chunk_tells_no_interval():
    s = _sampler({"big": 1}, population={"big": 50})
    s.next_round()
    reach = s.settle("big", "lz4", [10], [5])
    assert reach.stop == "cap" and reach.half_width == math.inf
    assert "too few chunks to know lz4's ratio's interval" in reach.text()
    assert reach.doc()["half_width"] is None  # JSON has no infinity


def test_reach_text():
    s = _sampler({"t": 20}, precision=0.02)
    s.next_round()
    reach = s.settle("t", "zstd:3@1MiB/100ms", [100, 101, 99, 100], [50, 50, 50, 50])
    assert reach.text().startswith("4 of 20 chunks (40B) in 1 round(s): zstd:3@1MiB/100ms's ratio known to +/-")
    assert reach.text().endswith("inside the target of +/-2%")
    assert reach.doc()["stop"] == "precision"


def test_reach_text_of_each_stop():
    from kcodec.advise.auto_sample import SampleReach

    whole = SampleReach(4, 4, 40, 0.0, "zstd", "whole", 1, 0.01)
    assert whole.text() == "4 of 4 chunks (40B): the whole topic, no sampling error"
    cap = SampleReach(6, 6, 60, 0.01234, "lz4", "cap", 2, 0.005)
    assert cap.text() == ("6 of 6 chunks (60B): --sample-cap reached with lz4's ratio known to +/-1.23% (95%), wider "
                          "than the target of +/-0.5%; a larger --sample-cap reads more")
    done = SampleReach(8, 20, 80, 0.0042, "lz4", "precision", 2, 0.01)
    assert done.text() == "8 of 20 chunks (80B) in 2 round(s): lz4's ratio known to +/-0.42% (95%), inside the " \
        "target of +/-1%"


# -- the driver's sums ---------------------------------------------------------------------------------
def test_sample_std():
    assert sample_std([]) is None and sample_std([3.0]) is None
    assert sample_std([1.0, 3.0]) == pytest.approx(math.sqrt(2), rel=1e-15)
    assert sample_std([1.0, 2.0, 3.0, 4.0]) == pytest.approx(1.2909944487358056, rel=1e-15)


def test_a_times_spread_is_over_its_seconds_per_payload_byte():
    from kcodec.advise.aggregate import _spread

    # 1 and 3 ms per thousand bytes: a relative spread of sqrt(2)/2, times the 7 seconds summed
    assert _spread([1.0, 6.0], [1000, 2000]) == pytest.approx(math.sqrt(2) / 2 * 7, rel=1e-12)
    # a chunk of no payload tells no rate but its seconds still count; one of a single byte is a rate
    assert _spread([1.0, 6.0, 5.0], [1000, 2000, 0]) == pytest.approx(math.sqrt(2) / 2 * 12, rel=1e-12)
    per_byte = [1e-3, 1e-3, 3e-3]
    want = sample_std(per_byte) / (sum(per_byte) / 3) * 7.001
    assert _spread([0.001, 1.0, 6.0], [1, 1000, 2000]) == pytest.approx(want, rel=1e-12)
    # no spread from one chunk, nor from chunks that took no time
    assert _spread([1.0], [1000]) == 0.0
    assert _spread([0.0, 0.0], [1000, 2000]) == 0.0
    assert _spread([], []) == 0.0


def test_aggregate_rows_in_any_order_gives_the_same_figures():
    import pyarrow as pa

    from kcodec.advise.grid import Setting
    from kcodec.advise.profile import CODEC_NAMES, HIST_BINS
    from kcodec.advise.task import TODAY, metrics_schema

    def row(chunk, setting, plain, stored, seconds, partition=0):
        r = {f.name: None for f in metrics_schema()}
        r.update(topic="t", partition=partition, chunk=chunk, setting=setting, records=10, payload_bytes=1000,
                 plain_bytes=plain, batches=2, stored_bytes=stored, compress_seconds=seconds,
                 compress_spread=0.0, read_seconds=seconds / 2, read_spread=0.0)
        if setting == TODAY:
            r.update(min_ts=0, max_ts=10, log_append_batches=0,
                     codec_bytes=[stored] + [0] * (len(CODEC_NAMES) - 1),
                     magic_batches=[0, 0, 2], batch_records=[5, 5], batch_bytes=[stored // 2] * 2,
                     record_size_hist=[0] * HIST_BINS, client="java", sender_delay_ms=1.0, sender_calibrated=True,
                     replay_batches=2, producer_ids=0, producers_replayed=1)
        else:
            r.update(codec="zstd", level=None, batch_size=16384, linger_ms=5)
        return r

    rows = []
    for i, (p, s, t) in enumerate(((1100, 400, 0.1), (1200, 500, 0.3), (1000, 250, 0.2))):
        rows.append(row(i, TODAY, p, 1000, 0.05, partition=i % 2))
        rows.append(row(i, "zstd@16KiB/5ms", p, s, t, partition=i % 2))
    got = aggregate_rows(pa.Table.from_pylist(rows, schema=metrics_schema()))
    again = aggregate_rows(pa.Table.from_pylist(rows[::-1], schema=metrics_schema()))
    assert got == again
    line = next(x for x in got["t"].settings if x.setting != TODAY)
    ratios = [1100 / 400, 1200 / 500, 1000 / 250]
    assert line.plain_bytes == 3300 and line.stored_bytes == 1150 and line.chunks == 3
    assert line.partitions == 2
    assert line.ratio_mean == pytest.approx(sum(ratios) / 3, rel=1e-15)
    assert line.ratio_std == pytest.approx(sample_std(ratios), rel=1e-15)
    assert line.compress_seconds == pytest.approx(0.6, rel=1e-15)
    per_byte = [0.1 / 1000, 0.3 / 1000, 0.2 / 1000]
    assert line.compress_spread == pytest.approx(sample_std(per_byte) / (sum(per_byte) / 3) * 0.6, rel=1e-12)
    assert (line.setting, line.grid_setting) == ("zstd@16KiB/5ms", Setting("zstd", None, 16384, 5))
    today = got["t"].today
    assert (today.setting, today.grid_setting, today.stored_bytes, today.chunks) == (TODAY, None, 3000, 3)
    # a line's JSON form is the metrics schema's names, in the order the previous results.json's settings give
    # --check: the columns of the setting, the sums, the times, the ratio's mean and spread, what was measured
    assert list(line.doc()) == ["topic", "setting", "codec", "level", "batch_size", "linger_ms", "records",
                                "payload_bytes", "plain_bytes", "batches", "stored_bytes", "compress_seconds",
                                "compress_spread", "read_seconds", "read_spread", "worst_stored_bytes", "ratio_mean",
                                "ratio_std", "chunks", "partitions"]
    assert line.doc()["stored_bytes"] == 1150 and line.doc()["worst_stored_bytes"] is None
    # a line names a setting of the grid only with its codec, batch.size and linger.ms all known
    for missing in ("codec", "batch_size", "linger_ms"):
        assert dataclasses.replace(line, **{missing: None}).grid_setting is None
    with pytest.raises(dataclasses.FrozenInstanceError):
        got["t"].settings = ()  # type: ignore[misc]
    # lines are values: they hash, and one cannot be changed in place
    assert hash(line) == hash(dataclasses.replace(line)) and len({line, today, dataclasses.replace(line)}) == 2
    with pytest.raises(dataclasses.FrozenInstanceError):
        line.stored_bytes = 0  # type: ignore[misc]


# -- on log directories whose answer is known ------------------------------------------------------------
GRID = dict(codecs="zstd:1", batch_sizes="16k", lingers="100", chunk="16KiB", min_span_hours=0, progress=False)


@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    from advise_drift import build_drift_topics

    return build_drift_topics(tmp_path_factory.mktemp("drift"))


def _run(root: Path, out: Path, **kw):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    lines = []
    result = run_advise(Options(inputs=[str(root)], out_dir=str(out), **GRID, **kw), log=lines.append)
    return {a.topic: a for a in result["advice"]}, "\n".join(lines)


def _ratio(a) -> float:
    return next(m for m in a.results if m.label == a.sample.setting).ratio


def test_steady_topic_stops_early_and_drifting_one_reads_on(spark, drift, tmp_path):
    auto, text = _run(drift, tmp_path / "auto", sample_cap="4MiB")
    whole, _ = _run(drift, tmp_path / "whole", sample="1GiB")
    steady, drifting = auto["steady"], auto["drifting"]
    # steady: the first round's four chunks know its ratio within the target
    assert (steady.sample.stop, steady.sample.chunks, steady.sample.rounds) == ("precision", 4, 1)
    assert steady.sample.half_width <= 0.01
    assert steady.sample.candidates == whole["steady"].today.chunks
    # ... and the whole topic's ratio is inside it
    full = next(m for m in whole["steady"].results if m.label == steady.sample.setting).ratio
    assert abs(_ratio(steady) / full - 1) <= steady.sample.half_width
    # drifting: four chunks say little; it is read to its end, within the cap
    assert drifting.sample.stop == "whole" and drifting.sample.rounds >= 3
    assert drifting.sample.chunks == drifting.sample.candidates == whole["drifting"].today.chunks
    assert _ratio(drifting) == next(m for m in whole["drifting"].results if m.label == drifting.sample.setting).ratio
    assert "sampled (--sample auto, +/-1% at 95%): 1 topic measured whole; 1 topic within the target after 4 chunks" \
        in text
    doc = json.loads((tmp_path / "auto" / "results.json").read_text())
    assert {t["topic"]: t["sample"]["stop"] for t in doc["topics"]} == {"steady": "precision", "drifting": "whole"}


def test_the_cap_stops_the_drifting_topic(spark, drift, tmp_path):
    auto, text = _run(drift, tmp_path / "auto", sample_cap="512KiB", topic="drifting")
    reach = auto["drifting"].sample
    assert reach.stop == "cap" and reach.half_width > 0.01 and reach.chunks == reach.candidates
    # the cap's worth of chunks, spread over a topic of 3.6MB: no more than the cap and one chunk
    assert 256 << 10 < reach.sampled_bytes <= (512 + 16) << 10
    assert "--sample-cap reached" in text


def test_sample_flags_are_checked(tmp_path):
    from kcodec.advise.options import Options, check_options

    for kw, message in ((dict(sample="0.5KiB"), "--sample 0.5KiB: at least 1KiB, or auto"),
                        (dict(sample="lots"), "--sample lots: not auto or a size"),
                        (dict(sample_cap="1KiB", chunk="4MiB"), "--sample-cap 1KiB: at least one --chunk (4MiB)"),
                        (dict(sample_precision=0.0), "--sample-precision 0: a share above 0 and below 1"),
                        (dict(sample_precision=1.5), "--sample-precision 1.5: a share above 0 and below 1")):
        with pytest.raises(KcodecError, match=message.replace("(", r"\(").replace(")", r"\)")):
            check_options(Options(**kw))


def test_a_fixed_sample_takes_a_chunk_larger_than_the_auto_cap():
    # --sample-cap bounds --sample auto alone; a fixed --sample holding two 256MiB chunks is taken.
    from kcodec.advise.job import _sampling
    from kcodec.advise.options import Options, check_options

    o = Options(sample="512MiB", chunk="256MiB")
    c = check_options(o)
    assert (c.sample_bytes, c.chunk_bytes) == (512 << 20, 256 << 20)
    sampling = _sampling(o, c, 2)
    assert (sampling.sample_bytes, sampling.chunk_bytes) == (512 << 20, 256 << 20)
    with pytest.raises(KcodecError, match=r"--sample-cap 64MiB: at least one --chunk \(256MiB\)"):
        check_options(Options(sample="auto", chunk="256MiB"))


def test_the_estate_says_how_far_sampling_read_in_one_line():
    from kcodec.advise.auto_sample import SampleReach
    from kcodec.advise.estate_text import sample_line
    from kcodec.advise.recommend import TopicAdvice
    from kcodec.advise.topic_profile import TopicProfile

    def topic(name, reach):
        return TopicAdvice(name, TopicProfile({}), None, [], None, None, "rule", 0.0, "", 1, sample=reach)

    def reach(stop, chunks, half):
        return SampleReach(chunks, 64, chunks << 22, half, "zstd@16KiB/5ms", stop, 2, 0.01)

    topics = [topic("a", reach("whole", 3, 0.0)), topic("b", reach("precision", 4, 0.004)),
              topic("c", reach("precision", 16, 0.009)), topic("d", reach("cap", 64, 0.031)),
              topic("e", reach("cap", 64, 0.012)), topic("f", None)]
    assert sample_line(topics) == ("  sampled (--sample auto, +/-1% at 95%): 1 topic measured whole; 2 topics within "
                                   "the target after 4-16 chunks; 2 topics stopped by --sample-cap (widest +/-3.10%: "
                                   "d)")
    assert sample_line([topic("f", None)]) is None
