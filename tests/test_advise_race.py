"""The race over a topic's grid (kcodec.advise.race): the quantile, the paired interval, and rounds on figures
whose answer is worked out by hand: a planted loser goes in round 1, a near tie stays for the tie rule, and the
same figures in any order drop the same settings in the same rounds."""
from __future__ import annotations

import math
import random

import pytest

from kcodec.advise.race import (
    ALPHA,
    Contender,
    Limit,
    Race,
    dollars,
    eliminate,
    group_names,
    leader,
    paired_gap,
    ratio_bound,
    round_alpha,
    t_upper,
    tied,
)


def test_t_upper_matches_the_tables():
    # Student's t tables, one-sided 1 - alpha
    assert t_upper(1, 0.025) == pytest.approx(12.706, abs=5e-4)
    assert t_upper(3, 0.025) == pytest.approx(3.182, abs=5e-4)
    assert t_upper(3, 0.01) == pytest.approx(4.541, abs=5e-4)
    assert t_upper(4, 0.005) == pytest.approx(4.604, abs=5e-4)
    assert t_upper(10, 0.01) == pytest.approx(2.764, abs=5e-4)
    assert t_upper(30, 0.025) == pytest.approx(2.042, abs=5e-4)
    assert t_upper(120, 0.025) == pytest.approx(1.980, abs=5e-4)
    assert t_upper(10 ** 6, 0.025) == pytest.approx(1.960, abs=5e-4)
    # a smaller chance of error asks for a larger quantile
    assert t_upper(3, 0.0125) > t_upper(3, 0.025)
    with pytest.raises(ValueError):
        t_upper(0, 0.05)
    with pytest.raises(ValueError):
        t_upper(3, 0.7)


def test_round_alpha_adds_up_to_less_than_a_third_of_the_target():
    assert round_alpha(1, 1) == pytest.approx(0.05 / 6)
    assert round_alpha(2, 10) == pytest.approx(0.05 / 3 / 4 / 10)
    # however many rounds, one setting's tests against every leader stay within a third of alpha
    assert sum(round_alpha(k, 55) * 55 for k in range(1, 30)) < ALPHA / 3
    with pytest.raises(ValueError):
        round_alpha(0, 3)


def test_paired_gap_by_hand():
    # differences 10, 11, 9, 10 on equal ranges: total 40, residuals 0, 1, -1, 0 (variance 2/3), 4 of 16 ranges
    gap = paired_gap([20, 22, 18, 20], [10, 11, 9, 10], [1, 1, 1, 1], 16)
    assert gap.estimate == 40
    assert gap.se == pytest.approx(math.sqrt(4 * (1 - 4 / 16) * 2 / 3))  # sqrt(2)
    assert gap.df == 3
    assert gap.lower(0.025) == pytest.approx(40 - 3.182 * math.sqrt(2), abs=1e-3)
    # the same two settings on their own would vary 9..11 and 18..22; paired, only the gap's spread counts
    assert paired_gap([1, 2], [1, 2], [1, 1], 10).se == 0
    # every range of the topic measured: no sampling error at all
    whole = paired_gap([3, 4], [1, 1], [1, 1], 2)
    assert (whole.estimate, whole.se, whole.lower(0.001)) == (5, 0.0, 5)
    # one range tells no spread
    assert paired_gap([3], [1], [1], 8).lower(0.05) == -math.inf
    with pytest.raises(ValueError):
        paired_gap([1, 2], [1], [1, 1], 4)


def test_ratio_bound_by_hand():
    # 2, 4, 6, 8 s on ranges of 1, 2, 3, 4: exactly 2 s per unit, so the bound is 2 whatever the confidence
    assert ratio_bound([2, 4, 6, 8], [1, 2, 3, 4], 100, 0.01) == pytest.approx(2.0)
    # spread out, the bound is below the estimate
    assert ratio_bound([2, 5, 5, 8], [1, 2, 3, 4], 100, 0.01) < 2.0
    assert ratio_bound([2], [1], 100, 0.01) == 0.0


def _c(name, costs, margin=1.0, order=None, **kw):
    return Contender(name, tuple(costs), margin, order if order is not None else (name,), **kw)


def test_a_setting_planted_clearly_worse_is_dropped_in_round_1():
    a = _c("zstd:3@1MiB/5ms", [10, 11, 9, 10])
    b = _c("gzip@1MiB/5ms", [20, 22, 18, 20])
    race = Race([a.name, b.name])
    log = race.round([b, a], [1, 1, 1, 1], 16)
    # round 1's test: alpha / 3 x 1/2 over one rival = 0.00833; t(3, 1 - 0.00833) = 4.8567;
    # 40 - 4.8567 x sqrt(2) = 33.13, far past the tie margin of 1 + 1
    assert t_upper(3, 0.05 / 6) == pytest.approx(4.8567, abs=1e-3)
    assert log.leader == a.name
    assert [(d.name, d.round, d.reason) for d in log.drops] == [(b.name, 1, "cost")]
    assert log.drops[0].bound == pytest.approx(40 - 4.8567 * math.sqrt(2), abs=5e-3)
    assert race.running == [a.name]
    assert race.decided
    assert race.text() == [f"dropped after round 1 (1 of 2, 4 ranges): {b.name}, their cost at least "
                           f"${log.drops[0].bound:,.2f}/month above {a.name}'s beyond the tie margin"]
    assert log.drops[0].detail == (f"cost at least ${log.drops[0].bound:,.2f}/month above {a.name}'s, past the tie "
                                   f"margin of $2.00")


def test_a_worse_setting_with_a_noisy_gap_waits_for_more_ranges():
    # 10 more on average, but the gap swings from -5 to 25: too wide to drop on four ranges
    a = _c("a", [10, 10, 10, 10])
    b = _c("b", [5, 35, 10, 30])
    best, drops = eliminate([a, b], [1, 1, 1, 1], 1000, 1, 2)
    assert best is a and drops == []
    # the whole topic measured, the gap of 40 is exact, and past the margin
    best, drops = eliminate([a, b], [1, 1, 1, 1], 4, 1, 2)
    assert [d.name for d in drops] == ["b"]
    assert drops[0].bound == 40


def test_a_near_tie_goes_to_the_tie_rule():
    # b costs 0.8 more over the ranges, less than the two margins of 0.5: neither is dropped, even with
    # the gap known exactly, and the race is decided: the rule's tie order picks between them
    a = _c("a", [10, 10, 10, 10], margin=0.5, order=(2,))
    b = _c("b", [10.2, 10.1, 10.3, 10.2], margin=0.5, order=(1,))
    race = Race(["a", "b"])
    log = race.round([a, b], [1, 1, 1, 1], 4)
    assert log.drops == [] and race.running == ["a", "b"]
    assert race.decided
    # with equal costs the leader is the first in the tie order
    assert leader([_c("x", [5, 5], order=(2,)), _c("y", [5, 5], order=(1,))]).name == "y"
    # a third setting clearly worse goes, the tie stays
    c = _c("c", [30, 31, 29, 30], margin=0.5, order=(3,))
    race = Race(["a", "b", "c"])
    log = race.round([a, b, c], [1, 1, 1, 1], 40)
    assert [d.name for d in log.drops] == ["c"] and race.running == ["a", "b"] and race.decided


def test_not_decided_while_an_untied_rival_runs():
    a = _c("a", [10, 10, 10, 10], margin=0.1)
    b = _c("b", [10, 14, 8, 13], margin=0.1)  # 5 more, but too noisy to drop on 4 of 1000 ranges
    assert not tied([a, b])
    race = Race(["a", "b"])
    race.round([a, b], [1, 1, 1, 1], 1000)
    assert race.running == ["a", "b"] and not race.decided


def test_rule_drops_slow_and_out_of_budget_settings_in_round_1():
    sizes = [1e6, 1e6, 1e6, 1e6]  # 1 MB of payload per range
    fast = _c("lz4", [10, 10, 10, 10], limits=(Limit("build", (0.001,) * 4, 50.0),))
    # 0.1 s per MB: 10 MB/s for sure, below 50
    slow = _c("zstd:19", [1, 1, 1, 1], limits=(Limit("build", (0.1, 0.1, 0.1, 0.1), 50.0),))
    late = _c("zstd:3@1MiB/500ms", [1, 1, 1, 1], out_of_rule="linger.ms 500 past --max-linger-ms 100")
    race = Race(["lz4", "zstd:19", "zstd:3@1MiB/500ms"])
    log = race.round([fast, slow, late], sizes, 100)
    assert {(d.name, d.reason) for d in log.drops} == {("zstd:19", "rule"), ("zstd:3@1MiB/500ms", "rule")}
    # the cheaper settings the rule leaves out never lead
    assert log.leader == "lz4"
    slow_drop = race.dropped["zstd:19"]
    assert slow_drop.bound == pytest.approx(10.0)
    assert slow_drop.detail == "builds at most 10 MB/s, below 50"
    assert race.running == ["lz4"]


def _grid(seed: int, n_ranges: int):
    """Three rounds' figures of eight settings over nested ranges: costs proportional to each range's size,
    setting i costing 1 + 0.15 i per byte, with noise."""
    rng = random.Random(seed)
    sizes = [rng.randint(500, 1500) for _ in range(n_ranges)]
    rows = {}
    for i in range(8):
        rows[f"s{i}@1MiB/5ms"] = [z * (1 + 0.15 * i) * rng.uniform(0.97, 1.03) for z in sizes]
    return sizes, rows


def _run(sizes, rows, order_seed):
    rng = random.Random(order_seed)
    race = Race(sorted(rows))
    for n in (4, 8, 16):
        idx = list(range(n))
        rng.shuffle(idx)  # the ranges in another order, the same for every setting
        contenders = [_c(name, [rows[name][i] for i in idx], margin=5.0, order=(name,)) for name in race.running]
        rng.shuffle(contenders)
        race.round(contenders, [sizes[i] for i in idx], 64)
    return [(d.name, d.round, d.reason, d.bound) for d in sorted(race.dropped.values(), key=lambda d: d.name)]


def test_two_runs_drop_the_same_settings_in_the_same_rounds():
    sizes, rows = _grid(7, 16)
    first = _run(sizes, rows, 1)
    second = _run(sizes, rows, 2)
    assert first == second
    # and the race did something: s0 leads, the most expensive settings went in round 1, and a rival close to
    # s0 outlasted them
    rounds = {name: r for name, r, _, _ in first}
    assert "s0@1MiB/5ms" not in rounds
    assert rounds["s7@1MiB/5ms"] == 1
    assert max(rounds.values()) >= rounds["s7@1MiB/5ms"]


def test_group_names_folds_a_whole_codec():
    every = ["gzip@16KiB/0ms", "gzip@1MiB/0ms", "lz4@16KiB/0ms", "lz4@1MiB/0ms", "zstd:3@1MiB/0ms"]
    assert group_names(["gzip@1MiB/0ms", "gzip@16KiB/0ms", "lz4@1MiB/0ms"], every) == [
        "gzip@*", "lz4@1MiB/0ms"]
    assert group_names(["zstd:3@1MiB/0ms"], every) == ["zstd:3@1MiB/0ms"]


def test_dollars():
    assert (dollars(1234.5), dollars(0.0123456), dollars(0), dollars(-2.5)) == ("$1,234.50", "$0.0123", "$0.00",
                                                                                "$-2.50")


def test_a_round_takes_exactly_the_running_settings():
    race = Race(["a", "b"])
    with pytest.raises(ValueError):
        race.round([_c("a", [1, 1])], [1, 1], 4)


def test_groups_race_apart():
    # two groups (say two linger.ms values): each keeps its own best, however much cheaper the other's is
    a1, b1 = _c("a@1", [10, 10, 10, 10]), _c("b@1", [30, 30, 30, 30])
    a2, b2 = _c("a@2", [50, 50, 50, 50]), _c("b@2", [90, 91, 89, 90])
    race = Race(["a@1", "b@1", "a@2", "b@2"], groups=[1, 1, 2, 2])
    log = race.round([b2, a1, a2, b1], [1, 1, 1, 1], 4)
    assert sorted(d.name for d in log.drops) == ["b@1", "b@2"]
    assert {d.name: d.leader for d in log.drops} == {"b@1": "a@1", "b@2": "a@2"}
    assert race.running == ["a@1", "a@2"] and race.decided
    assert "their group's leader's (a@*)" in race.text()[0]
    with pytest.raises(ValueError):
        Race(["a", "b"], groups=[1])


TODAY_25 = [25.0, 25.0, 25.0, 25.0]  # today's $/month over four ranges: $100


def test_a_group_the_knee_cannot_pick_is_dropped_whole_in_round_1():
    # today $100; the 5 ms group's best saves $80, so the knee (0.9) needs a 0 ms setting saving $72 at least.
    # The 0 ms group's best costs $60, saves $40: every setting of it goes, its own leader too.
    z5, g5 = _c("zstd:3@1MiB/5ms", [5, 5, 5, 5]), _c("gzip@1MiB/5ms", [5.5, 5.5, 5.5, 5.5])
    z0, g0 = _c("zstd:3@1MiB/0ms", [14, 16, 15, 15]), _c("gzip@1MiB/0ms", [16, 16, 15, 17])
    names = [z0.name, g0.name, z5.name, g5.name]
    race = Race(names, groups=[0, 0, 5, 5], knee=0.9)
    log = race.round([z0, g0, z5, g5], [1, 1, 1, 1], 16, TODAY_25)
    assert sorted((d.name, d.reason, d.leader) for d in log.drops) == [
        (g0.name, "knee", z5.name), (z0.name, "knee", z5.name)]
    # zstd:3@0ms: differences 14 - 2.5 - 4.5 ... = 7, 9, 8, 8 (total 32, standard error sqrt(2)); its test runs
    # at alpha / 3 x 1/2 over 3 rivals, halved between the knee's pick and the rule's = 0.05 / 36;
    # less the knee's share of the widest tie span (0.9 x 2 x 1)
    t = t_upper(3, 0.05 / 36)
    assert {d.name: d.bound for d in log.drops}[z0.name] == pytest.approx(32 - t * math.sqrt(2) - 1.8)
    assert race.running == [z5.name, g5.name] and race.decided and log.leader == z5.name
    assert race.dropped[z0.name].detail.startswith("saves at least $")
    assert race.text() == [
        f"dropped after round 1 (2 of 4, 4 ranges): zstd:3@1MiB/0ms, gzip@1MiB/0ms, every setting of their linger.ms "
        f"and batch.size saving at least ${min(d.bound for d in log.drops):,.2f}/month less than --knee 0.9 of what "
        f"{z5.name} saves, beyond the tie span"]
    assert race.doc()["knee"] == 0.9
    # without today's costs, or with no knee, every group keeps its own best
    for knee, today in ((0.9, None), (1.0, TODAY_25)):
        race = Race(names, groups=[0, 0, 5, 5], knee=knee)
        log = race.round([z0, g0, z5, g5], [1, 1, 1, 1], 16, today)
        assert "knee" not in {d.reason for d in log.drops} and z0.name in race.running


def test_a_group_near_the_knee_stays():
    # the 0 ms group's best saves $71, within the tie span of the bar ($72): it may be the knee's pick
    z5 = _c("zstd:3@1MiB/5ms", [5, 5, 5, 5])
    z0 = _c("zstd:3@1MiB/0ms", [7, 7.5, 7.25, 7.25])
    race = Race([z0.name, z5.name], groups=[0, 5], knee=0.9)
    log = race.round([z0, z5], [1, 1, 1, 1], 4, TODAY_25)
    assert log.drops == [] and race.running == [z0.name, z5.name]
    # one 0 ms setting near the bar keeps its whole group, however far the others are
    far = _c("none@1MiB/0ms", [24, 24, 24, 24])
    race = Race([far.name, z0.name, z5.name], groups=[0, 0, 5], knee=0.9)
    log = race.round([far, z0, z5], [1, 1, 1, 1], 4, TODAY_25)
    assert [(d.name, d.reason) for d in log.drops] == [(far.name, "cost")]
    # nothing goes on the knee while the leader saves no more than the tie span: the pick may then save nothing
    race = Race([z0.name, z5.name], groups=[0, 5], knee=0.9)
    log = race.round([_c(z0.name, [25, 25, 25, 25]), _c(z5.name, [24.6, 24.6, 24.6, 24.6])], [1, 1, 1, 1], 4,
                     TODAY_25)
    assert log.drops == []
    # nor while it saves exactly the span ($2 = 2 x the margin of 1), however far the other group is
    for leader_cost, gone in ((98.5, []), (98.0, []), (97.75, [z0.name])):
        race = Race([z0.name, z5.name], groups=[0, 5], knee=0.9)
        log = race.round([_c(z0.name, [32.5, 32.5, 32.5, 32.5]), _c(z5.name, [leader_cost / 4] * 4)], [1, 1, 1, 1],
                         4, TODAY_25)
        assert [d.name for d in log.drops] == gone
    with pytest.raises(ValueError, match="same ranges"):
        Race([z0.name, z5.name], groups=[0, 5], knee=0.9).round([z0, z5], [1, 1, 1, 1], 4, [25.0])


def test_the_knee_test_at_its_bar():
    # knee 0.5, today $100, the leader $20, margins of 1 (a span of 2): the bar is 0.5 x 100 + 0.5 x 20 + 0.5 x 2
    # = $61. Every range measured, the bound is exact: at $61 the group stays, at $61.50 it goes by $0.50.
    z5 = _c("zstd:3@1MiB/5ms", [5, 5, 5, 5])
    for per_range, bound in ((15.25, None), (15.375, 0.5)):
        race = Race(["x@0", z5.name], groups=[0, 5], knee=0.5)
        log = race.round([_c("x@0", [per_range] * 4), z5], [1, 1, 1, 1], 4, TODAY_25)
        assert [d.bound for d in log.drops] == ([] if bound is None else [bound])


def test_the_knee_test_counts_the_settings_left_after_those_left_out():
    # four settings, one left out before round 1: the knee's test meets one of 3 - 1 possible leaders
    z5, g5 = _c("zstd:3@1MiB/5ms", [5, 5, 5, 5]), _c("gzip@1MiB/5ms", [5.5, 5.5, 5.5, 5.5])
    z0 = _c("zstd:3@1MiB/0ms", [14, 16, 15, 15])
    race = Race([z0.name, "gzip@1MiB/0ms", z5.name, g5.name], groups=[0, 0, 5, 5], knee=0.9)
    race.exclude({"gzip@1MiB/0ms": ("builds too slow", 40.0)})
    log = race.round([z0, z5, g5], [1, 1, 1, 1], 16, TODAY_25)
    t = t_upper(3, 0.05 / 3 / 2 / 2 / 2)
    assert {d.name: d.bound for d in log.drops}[z0.name] == pytest.approx(32 - t * math.sqrt(2) - 1.8)


# -- in the measuring loop, on log directories ------------------------------------------------------------
RACE_GRID = dict(codecs="none,lz4,zstd:1,3", batch_sizes="16k", lingers="100", chunk="16KiB", sample_cap="1MiB",
                 min_span_hours=0, progress=False)


@pytest.fixture(scope="module")
def drift(tmp_path_factory):
    from advise_drift import build_drift_topics

    return build_drift_topics(tmp_path_factory.mktemp("drift"))


def _advise(root, out, **kw):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    lines: list = []
    result = run_advise(Options(inputs=[str(root)], out_dir=str(out), **{**RACE_GRID, **kw}), log=lines.append)
    return {a.topic: a for a in result["advice"]}, "\n".join(lines)


def test_the_race_keeps_the_exhaustive_answer_and_says_what_it_dropped(spark, drift, tmp_path):
    import json

    raced, text = _advise(drift, tmp_path / "on", all_topics=True)
    again, _ = _advise(drift, tmp_path / "again")
    full, _ = _advise(drift, tmp_path / "off", race="off")
    for topic, a in raced.items():
        # the same pick as every setting on every range, and the same saving within 1%
        assert a.best.label == full[topic].best.label
        assert a.saving == pytest.approx(full[topic].saving, rel=0.01)
        # the same settings dropped in the same rounds on a second run
        assert a.race.doc() == again[topic].race.doc()
        assert full[topic].race is None
        dropped = {m.label: m for m in a.results if m.dropped is not None}
        # keeping the records uncompressed costs far more than any codec: gone once a round tells it
        assert dropped["none@16KiB/100ms"].dropped.reason == "cost"
        # the rows of every setting are in the table, the dropped ones with their figures of the round dropped
        assert {m.label for m in a.results} == {m.label for m in full[topic].results}
        assert a.best.dropped is None
    drifting = raced["drifting"]
    assert drifting.sample.rounds >= 2
    gone = drifting.results[[m.label for m in drifting.results].index("none@16KiB/100ms")]
    # measured on the chunks of the rounds up to the one it was dropped in (4, then 8), while the pick ran on
    assert gone.chunks == 4 * 2 ** (gone.dropped.round - 1) < drifting.best.chunks
    assert f"race       dropped after round {gone.dropped.round}" in text
    assert f"dropped after round {gone.dropped.round}: cost at least $" in text
    doc = json.loads((tmp_path / "on" / "results.json").read_text())
    topic = next(t for t in doc["topics"] if t["topic"] == "drifting")
    assert "none@16KiB/100ms" in {d["setting"] for r in topic["race"]["rounds"] for d in r["dropped"]}
    row = next(s for s in topic["settings"] if s["setting"] == "none@16KiB/100ms")
    assert row["dropped"]["reason"] == "cost" and row["chunks"] == gone.chunks
    assert next(t for t in json.loads((tmp_path / "off" / "results.json").read_text())["topics"])["race"] is None


def test_race_flag_is_checked(tmp_path):
    from kcodec.advise.options import Options, check_options
    from kcodec.errors import KcodecError

    with pytest.raises(KcodecError, match="--race maybe: expected on or off"):
        check_options(Options(inputs=[str(tmp_path)], race="maybe"))


def test_codec_level_ranges():
    from kcodec.advise.grid import parse_codecs
    from kcodec.errors import UnsupportedCodecError

    assert parse_codecs("zstd:1-19") == [("zstd", v) for v in range(1, 20)]
    assert parse_codecs("none,gzip:1-3,zstd:3,5-6") == [("none", None), ("gzip", 1), ("gzip", 2), ("gzip", 3),
                                                         ("zstd", 3), ("zstd", 5), ("zstd", 6)]
    assert parse_codecs("zstd:3-3,3") == [("zstd", 3)]
    with pytest.raises(UnsupportedCodecError, match="runs from low to high"):
        parse_codecs("zstd:9-1")
    with pytest.raises(UnsupportedCodecError, match="level 23"):
        parse_codecs("zstd:1-23")
    with pytest.raises(UnsupportedCodecError, match="without a codec"):
        parse_codecs("1-3")


def _measured(setting, stored, storage):
    from kcodec.advise.cost import MonthlyCost
    from kcodec.advise.cpu import cpu_cost
    from kcodec.advise.recommend import Measured

    m = Measured(setting, 4000, 400_000, 410_000, 40, stored, 0.01, 0.01, 1.0, 0.0, 4)
    m.cpu = cpu_cost(setting.codec, setting.level, 400_000, stored, 40, 4000, 0.01, 0.01)
    m.cost = MonthlyCost(storage, storage / 2, 0.5)
    return m


def test_topic_race_from_metrics_rows():
    from types import SimpleNamespace

    import pyarrow as pa

    from kcodec.advise.aggregate import TopicAggregate
    from kcodec.advise.grid import Setting
    from kcodec.advise.racing import RangeBook, TopicRace, race_off_reason
    from kcodec.advise.recommend import Rule
    from kcodec.advise.task import TODAY
    from kcodec.advise.topic_profile import TopicProfile
    from test_advise_recommend import row

    zstd, none = Setting("zstd", 3, 16384, 5), Setting("none", None, 16384, 5)
    rows = []
    for chunk in range(4):
        for name, stored in ((TODAY, 50_000), (zstd.label, 25_000), (none.label, 102_500)):
            rows.append({"topic": "t", "setting": name, "partition": 0, "chunk": chunk, "payload_bytes": 100_000,
                         "stored_bytes": stored, "batches": 10, "records": 1000, "compress_seconds": 0.001,
                         "read_seconds": 0.001})
    book = RangeBook()
    book.add(pa.Table.from_pylist(rows))
    race = TopicRace([none, zstd], knee=1.0)
    today = _measured(Setting("gzip", None, 16384, 5), 200_000, 20.0)
    today.setting = None
    profile = TopicProfile({"gzip": 200_000})
    advice = SimpleNamespace(topic="t", results=[_measured(zstd, 100_000, 10.0), _measured(none, 410_000, 41.0)],
                             today=today, profile=profile)
    # every range of the topic measured: the gap is exact, 62 - 15.5 (storage, network and CPU), far past the margins
    race.round(advice, book, 4, Rule())
    assert race.race.running == [zstd.label] and [s.label for s in race.running] == [zstd.label]
    gone = race.frozen[none.label]
    assert (gone.dropped.round, gone.dropped.reason) == (1, "cost")
    assert gone.dropped.bound == pytest.approx(62 - 15.5)
    agg = TopicAggregate(TopicProfile({}), (row(None, 50_000, 0.001, 0.001), row(zstd, 25_000, 0.001, 0.001),
                                            row(none, 102_500, 0.001, 0.001)))
    kept = race.keep(agg)
    assert [r.setting for r in kept.settings] == [TODAY, zstd.label] and kept.profile is agg.profile
    final = SimpleNamespace(topic="t", results=[advice.results[0]], race=None)
    race.finish(final)
    assert [m.label for m in final.results] == [none.label, zstd.label] and final.race is race
    assert race.text()[-1] == "1 of 2 settings ran to the end, 1 round(s); decided"
    # under the knee, a linger.ms and batch.size group that saves far less than the knee asks goes whole
    late = Setting("zstd", 3, 16384, 0)
    rows = [dict(r, setting=late.label, stored_bytes=45_000) for r in rows if r["setting"] == zstd.label]
    book.add(pa.Table.from_pylist(rows))
    grouped = TopicRace([none, zstd, late], knee=0.9)
    advice.results = [_measured(zstd, 100_000, 10.0), _measured(none, 410_000, 41.0), _measured(late, 180_000, 18.0)]
    grouped.round(advice, book, 4, Rule())
    assert {n: d.reason for n, d in grouped.race.dropped.items()} == {late.label: "knee", none.label: "cost"}
    assert grouped.race.running == [zstd.label]
    # the knee's test took today's $/month split over the ranges: 20 + 10 + 0.5, a quarter on each
    # (equal ranges), so 0.1 x 30.5 + 0.9 x 15.5 = 17 of the 0 ms setting's 27.5 is the bar: 10.5 past it,
    # less the knee's share of the widest tie span
    span = 2 * max(m.cost_uncertainty for m in advice.results)
    assert grouped.race.dropped[late.label].bound == pytest.approx(27.5 - 17 - 0.9 * span)
    # a round missing a range of a running setting is refused
    book.rows[("t", zstd.label)].pop((0, 3))
    with pytest.raises(ValueError, match="same ranges"):
        TopicRace([zstd], knee=1.0).round(SimpleNamespace(topic="t", results=[advice.results[0]]), book, 4, Rule())
    assert race_off_reason("off", "model", None).startswith("--race off")
    assert race_off_reason("on", "measured", None).startswith("--cpu-cost measured")
    assert race_off_reason("on", "model", None) is None


def test_fastest_mbps_is_a_ceiling_of_every_batch_the_model_bills():
    from kcodec.advise.cpu import MODEL, cpu_cost, fastest_mbps

    # by hand: zstd:10's payload term alone is 26.73 ns a byte; gzip:9's least is at r = c1 / c4
    assert fastest_mbps("zstd", 10)[0] == pytest.approx(1e3 / 26.73)
    c1, c4 = 35.65, 11.83
    assert fastest_mbps("gzip", 9)[0] == pytest.approx(1e3 / (c4 + c4 * math.log(c1 / c4)))
    # zstd:8's spread term falls without bound as stored outgrows payload: only none's floor is left
    assert fastest_mbps("zstd", 8)[0] == pytest.approx(1e3 / 0.2296)
    assert fastest_mbps("zstd", 3)[1] == math.inf  # its read model has no payload or stored term's floor
    assert fastest_mbps("libdeflate", 6) is None
    rng = random.Random(7)
    for codec, level in MODEL:
        top_build, top_read = fastest_mbps(codec, level)
        for _ in range(300):
            payload = rng.choice([1, 10, 1000, 10 ** 6]) * rng.uniform(1, 10)
            stored = payload / math.exp(rng.uniform(-3, 6))  # ratios from 1/20 to 400
            batches, records = rng.choice([0, 1, 100]), rng.choice([0, 1, 10 ** 4])
            c = cpu_cost(codec, level, int(payload) + 1, int(stored) + 1, batches, records, 0.0, 0.0)
            assert (int(payload) + 1) / c.compress_seconds / 1e6 <= top_build * (1 + 1e-9), (codec, level)
            if c.read_seconds > 0:
                assert (int(payload) + 1) / c.read_seconds / 1e6 <= top_read * (1 + 1e-9), (codec, level)


def test_settings_the_rule_excludes_on_any_data_are_left_out_before_round_one():
    from kcodec.advise.grid import Setting
    from kcodec.advise.racing import TopicRace, outside_rule
    from kcodec.advise.recommend import Rule

    grid = [Setting(c, lv, 16384, 5) for c, lv in (("none", None), ("zstd", 3), ("zstd", 9), ("zstd", 19),
                                                    ("gzip", 9), ("zstd", 8))]
    slow = Setting("lz4", None, 16384, 500)
    race = TopicRace(grid + [slow], knee=1.0, rule=Rule())
    assert race.race.running == ["none@16KiB/5ms", "zstd:3@16KiB/5ms", "zstd:8@16KiB/5ms"]
    before = {d.name: d for d in race.race.before}
    assert sorted(before) == ["gzip:9@16KiB/5ms", "lz4@16KiB/500ms", "zstd:19@16KiB/5ms", "zstd:9@16KiB/5ms"]
    assert before["zstd:9@16KiB/5ms"].round == 0 and before["zstd:9@16KiB/5ms"].reason == "rule"
    assert before["zstd:9@16KiB/5ms"].bound == pytest.approx(1e3 / 21.39)
    assert before["zstd:9@16KiB/5ms"].detail == ("builds at most 46.8 MB/s by the CPU model on any data, below "
                                                 "--min-compress-mbps 50")
    assert before["lz4@16KiB/500ms"].detail == "linger.ms 500 past --max-linger-ms 100"
    # the Bonferroni count is the settings left to race
    assert race.race.sizes == {None: 3}
    line = race.text()[0]
    assert line.startswith("left out before round 1 (4 of 7, whatever the data): ")
    assert "builds at most 9.5-47 MB/s by the CPU model on any data, below --min-compress-mbps 50" in line
    assert "linger.ms 500 past --max-linger-ms 100" in line
    assert [d["setting"] for d in race.doc()["before"]] == [d.name for d in race.race.before]
    # a lower limit lets them race; a flag-only rule never needs the model
    assert outside_rule(grid, Rule(min_compress_mbps=0)) == {}
    assert set(outside_rule(grid, Rule(min_compress_mbps=0, min_read_mbps=700))) == {
        "gzip:9@16KiB/5ms"}
    # a group the rule would empty keeps its settings, so the rule says why none is allowed
    alone = TopicRace([Setting("zstd", 19, 16384, 5), Setting("zstd", 3, 65536, 5)], knee=0.9, rule=Rule())
    assert alone.race.running == ["zstd:19@16KiB/5ms", "zstd:3@64KiB/5ms"] and alone.race.before == []
    # only before the first round
    with pytest.raises(ValueError, match="before the first round"):
        race.race.exclude({})
