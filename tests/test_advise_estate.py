"""``kcodec advise`` on an estate of many topics: the bounded summary, one setting where one will do,
grouped totals that add up, volumes that are not extrapolated, and a report that opens in a browser."""
from __future__ import annotations

import dataclasses
import json
import os
import re
from pathlib import Path

import pytest

from kcodec.advise.aggregate import TopicAggregate
from kcodec.advise.cost import MonthlyCost, TopicEconomics
from kcodec.advise.cpu import MODEL_ERROR, CpuCost
from kcodec.advise.estate import SharedSetting, acceptable, harmonise, plan_estate, shared_setting
from kcodec.advise.estate_text import estate_text
from kcodec.advise.grid import Setting
from kcodec.advise.race import Contender, tied
from kcodec.advise.recommend import Measured, Rule, TopicAdvice, pick, tie_margin
from kcodec.advise.topic_profile import Spread, TopicProfile
from kcodec.advise.volumes import MS_PER_DAY, daily_volume, given_volume, load_volumes, parse_volume
from kcodec.errors import KcodecError
from test_advise_recommend import row

ZSTD = Setting("zstd", None, 16384, 5)
ZSTD1 = Setting("zstd", 1, 1048576, 100)
LZ4 = Setting("lz4", None, 16384, 5)
FREE = Rule(min_compress_mbps=0, min_read_mbps=0)


def measured(setting, cost, ratio_std=0.0, chunks=1):
    m = Measured(setting, 1000, 100_000, 100_000, 10, 40_000, 0.01, 0.01, 2.5, ratio_std, chunks)
    m.cost = MonthlyCost(cost, 0.0, 0.0)
    m.stored_per_day = 1e9
    return m


def topic(name, costs, today=100.0, priced=True, **kw):
    """A topic whose settings cost ``costs`` (setting -> $/month); its best is the cheapest."""
    results = [measured(s, c, **kw) for s, c in sorted(costs.items())]
    best = min(results, key=lambda m: m.cost.total)
    prof = TopicProfile({"lz4": 1}, batch_records=Spread(p10=10.0, p50=10.0, p90=10.0, mean=10.0))
    return TopicAdvice(name, prof, measured(None, today), results, best, None, "rule", 1e9, "given", 1,
                       priced=priced, volume_source="given")


def test_topics_within_uncertainty_share_one_setting():
    # Two kinds of traffic: a's topics prefer zstd or zstd:1 by less than 2%, b's prefer lz4 by far.
    advice = [topic("a-1", {ZSTD: 50.0, ZSTD1: 50.5, LZ4: 70.0}), topic("a-2", {ZSTD: 50.6, ZSTD1: 50.0, LZ4: 70.0}),
              topic("a-3", {ZSTD: 50.0, ZSTD1: 50.9, LZ4: 70.0}), topic("b-1", {ZSTD: 80.0, ZSTD1: 81.0, LZ4: 60.0})]
    given = harmonise(advice, FREE, tolerance=0.02)
    assert {t: m.setting for t, m in given.items()} == {"a-1": ZSTD, "a-2": ZSTD, "a-3": ZSTD, "b-1": LZ4}
    # Differences past the tolerance are kept apart.
    apart = harmonise(advice, FREE, tolerance=0.005)
    assert apart["a-2"].setting == ZSTD1 and apart["a-1"].setting == ZSTD


def test_group_by_harmonises_within_each_group():
    advice = [topic("a-1", {ZSTD: 50.0, LZ4: 50.5}), topic("a-2", {ZSTD: 50.0, LZ4: 50.5}),
              topic("b-1", {ZSTD: 50.5, LZ4: 50.0})]
    assert {m.setting for m in harmonise(advice, FREE, 0.02).values()} == {ZSTD}
    apart = harmonise(advice, FREE, 0.02, group_by=r"^(\w)-")
    assert {t: m.setting for t, m in apart.items()} == {"a-1": ZSTD, "a-2": ZSTD, "b-1": LZ4}


def test_uncertainty_of_many_chunks_widens_the_tolerance():
    # A ratio spread of 0.5 on a ratio of 2.5 over 4 chunks: 10% standard error, two of them allowed.
    wide = [topic("a", {ZSTD: 50.0, ZSTD1: 58.0}, ratio_std=0.5, chunks=4),
            topic("b", {ZSTD: 58.0, ZSTD1: 50.0}, ratio_std=0.5, chunks=4)]
    assert {m.setting for m in harmonise(wide, FREE, 0.02).values()} == {ZSTD}
    narrow = [topic("a", {ZSTD: 50.0, ZSTD1: 58.0}), topic("b", {ZSTD: 58.0, ZSTD1: 50.0})]
    assert {t: m.setting for t, m in harmonise(narrow, FREE, 0.02).items()} == {"a": ZSTD, "b": ZSTD1}


def test_the_setting_acceptable_to_most_topics_goes_first():
    # zstd suits three topics, lz4 two saving more: zstd goes first and takes c, which lz4 would have had
    advice = [topic("a", {ZSTD: 60.0}), topic("b", {ZSTD: 60.0}), topic("c", {ZSTD: 60.0, LZ4: 60.0}),
              topic("d", {LZ4: 10.0})]
    given = harmonise(advice, FREE, 0.02)
    assert {t: m.setting for t, m in given.items()} == {"a": ZSTD, "b": ZSTD, "c": ZSTD, "d": LZ4}


@pytest.mark.parametrize("more", [4e-6, 4e-7])
def test_savings_are_told_apart_to_the_micro_dollar(more):
    """Two settings shared by as many topics: the larger saving goes first where it is larger by 4 millionths
    of a dollar; by 4 ten-millionths they are equal and the setting's order (lz4 before zstd) decides."""
    first = ZSTD if more > 1e-6 else LZ4
    # a takes zstd only, c lz4 only: which goes first decides b's
    advice = [topic("a", {ZSTD: 60.0 - more}), topic("b", {ZSTD: 60.0, LZ4: 60.0}), topic("c", {LZ4: 60.0})]
    assert harmonise(advice, FREE, 0.02)["b"].setting == first
    # two topics that both take either: the one setting that saves them most
    both = [topic("a", {ZSTD: 60.0 - more, LZ4: 60.0}), topic("b", {ZSTD: 60.0, LZ4: 60.0})]
    assert {m.setting for m in harmonise(both, FREE, 0.02).values()} == {first}


def test_set_harmonised_gives_the_shared_setting_and_says_what_it_costs():
    from kcodec.advise.cost import Prices, recompress_cpu
    from kcodec.advise.estate import set_harmonised

    a1, a2 = topic("a-1", {ZSTD: 50.0, ZSTD1: 50.5}), topic("a-2", {ZSTD: 50.6, ZSTD1: 50.0})
    a3 = topic("a-3", {ZSTD: 50.0, ZSTD1: 50.5})
    a3.best = a3.results[1]  # its own pick is zstd:1 (a knee's), which costs more than the shared zstd
    a4 = topic("a-4", {ZSTD: 50.0, ZSTD1: 50.0})
    a4.best = a4.results[1]  # zstd:1 at the shared setting's very cost
    none = topic("b-1", {ZSTD: 150.0})
    none.best = None  # keeps today's settings: not harmonised
    for a in (a1, a2, a3, a4, none):
        a.best_without_level = a.today
    assert [a.best.setting for a in (a1, a2, a3, a4)] == [ZSTD, ZSTD1, ZSTD1, ZSTD1]
    set_harmonised([a1, a2, a3, a4, none], FREE, Prices(), 0.02)
    assert [a.best.setting for a in (a1, a2, a3, a4)] == [ZSTD] * 4 and none.best is None
    assert (a1.notes, none.notes) == ([], [])
    assert a2.notes == ["set as topics like it: zstd@16KiB/5ms costs $0.60/month more than this topic's own pick, "
                        "zstd:1@1MiB/100ms, within the estimates' uncertainty (--same-setting-within 0.02)"]
    assert a3.notes[0].startswith("set as topics like it: zstd@16KiB/5ms costs $0.50/month less than")
    assert a4.notes[0].startswith("set as topics like it: zstd@16KiB/5ms costs $0.00/month more than")
    # the brokers' CPU to rebuild its batches: 1e9 stored bytes a day at today's 100,000 payload bytes per 40,000
    m = a2.best
    want = recompress_cpu(1e9, 2.5e9, m.compress_mbps, m.read_mbps, Prices())
    assert want > recompress_cpu(1e9, 1e9, m.compress_mbps, m.read_mbps, Prices()) > 0
    assert a2.recompress_cpu == pytest.approx(want, rel=1e-12) and a1.recompress_cpu == 0.0
    # zstd at its default level is settable by every client: no older clients' alternative is named
    assert (a1.best_without_level, a2.best_without_level, none.best_without_level) == (a1.today, None, none.today)


def billed(setting, storage, cpu, ratio_std=0.0, chunks=1, source="model"):
    """A setting billed ``storage`` + ``cpu`` $/month, its CPU from the model (49% uncertain) or measured."""
    m = Measured(setting, 1000, 100_000, 100_000, 10, 40_000, 0.01, 0.01, 2.5, ratio_std, chunks,
                 cpu=CpuCost(0.001, 0.001, source))
    m.cost = MonthlyCost(storage, 0.0, cpu)
    m.stored_per_day = 1e9
    return m


def one_topic(best, *others):
    return TopicAdvice("t", TopicProfile({"lz4": 1}), measured(None, 100.0), [best, *others], best, None, "rule",
                       1e9, "given", 1)


def test_acceptable_within_the_rules_tie_margin_cpu_model_error():
    # One chunk: no sampling error, only the CPU model's 49% of each CPU cost.
    best = billed(ZSTD, 30.0, 20.0)  # $50, +/- 0.49 x 20 = $9.80
    near = billed(ZSTD1, 30.0, 28.0)  # $58, +/- 0.49 x 28 = $13.72: $8 above, within 9.80 + 13.72 = $23.52
    far = billed(LZ4, 50.0, 25.0)  # $75, +/- 0.49 x 25 = $12.25: $25 above, past 9.80 + 12.25 = $22.05
    assert MODEL_ERROR == 0.49
    assert [m.cost_uncertainty for m in (best, near, far)] == pytest.approx([9.8, 13.72, 12.25])
    assert tie_margin(near, best) == pytest.approx(23.52) and tie_margin(far, best) == pytest.approx(22.05)
    assert [m.setting for m in acceptable(one_topic(best, near, far), FREE, 0.02)] == [ZSTD, ZSTD1]
    # the same margin as the rule's pick and the race's tie
    assert pick([best, near]) is best  # equal within the margin: less CPU decides
    assert pick([best, far]) is best and pick([far]) is far
    assert tied([Contender(m.label, (m.cost.total,), m.cost_uncertainty, (i,)) for i, m in enumerate((best, near))])
    assert not tied([Contender(m.label, (m.cost.total,), m.cost_uncertainty, (i,)) for i, m in enumerate((best, far))])


def test_acceptable_within_the_sampling_error_summed_not_two_standard_errors():
    # A ratio spread of 0.5 on a mean of 2.5 over 4 chunks: 0.5 / 2.5 / sqrt(4) = 10% of storage and network.
    best = billed(ZSTD, 50.0, 0.0, ratio_std=0.5, chunks=4, source="measured")  # +/- $5
    inside = billed(ZSTD1, 61.0, 0.0, ratio_std=0.5, chunks=4, source="measured")  # $11 above, within 5 + 6.10
    outside = billed(LZ4, 62.0, 0.0, ratio_std=0.5, chunks=4, source="measured")  # $12 above, past 5 + 6.20
    assert tie_margin(inside, best) == pytest.approx(11.1) and tie_margin(outside, best) == pytest.approx(11.2)
    # (two standard errors of the difference, 2 x hypot(5, 5) = $14.14, took both)
    assert [m.setting for m in acceptable(one_topic(best, inside, outside), FREE, 0.02)] == [ZSTD, ZSTD1]


def test_acceptable_never_narrower_than_the_tolerance():
    # A measured CPU cost over one chunk carries no uncertainty: --same-setting-within's 2% of $50 = $1 is the floor.
    best = billed(ZSTD, 50.0, 0.0, source="measured")
    inside = billed(ZSTD1, 50.9, 0.0, source="measured")
    outside = billed(LZ4, 51.1, 0.0, source="measured")
    assert tie_margin(inside, best) == 0.0
    assert [m.setting for m in acceptable(one_topic(best, inside, outside), FREE, 0.02)] == [ZSTD, ZSTD1]
    assert [m.setting for m in acceptable(one_topic(best, inside, outside), FREE, 0.025)] == [ZSTD, ZSTD1, LZ4]
    # the rule's limits still apply: a setting it leaves out is not acceptable however close
    slow = Rule(min_compress_mbps=0, min_read_mbps=0, max_linger_ms=50)
    assert [m.setting for m in acceptable(one_topic(best, inside, outside), slow, 0.025)] == [ZSTD, LZ4]


def test_one_setting_against_each_topics_best():
    advice = [topic("a", {ZSTD: 50.0, LZ4: 70.0}), topic("b", {ZSTD: 80.0, LZ4: 65.0})]
    one = shared_setting("all topics", advice, FREE)
    assert one.setting == ZSTD  # $130 for both topics against lz4's $135
    assert one.saving == pytest.approx(200 - 130) and one.per_topic_saving == pytest.approx(50 + 35)
    assert one.cost == pytest.approx(85 - 70)
    # A topic without a known volume is in no dollar figure.
    left = shared_setting("all topics", advice + [topic("c", {ZSTD: 1.0, LZ4: 2.0}, priced=False)], FREE)
    assert (left.saving, left.per_topic_saving) == (one.saving, one.per_topic_saving)


def test_a_shared_setting_is_within_the_rules_speeds_over_the_group():
    def group(zstd_compress_s, zstd_read_s):
        out = [topic(t, {ZSTD: 50.0, LZ4: 70.0}) for t in ("a", "b")]
        for a in out:
            fast, zstd = a.results  # lz4 first: the settings' order
            fast.compress_seconds = fast.read_seconds = 0.001  # 100 MB/s over 100 KB of payload
            zstd.compress_seconds, zstd.read_seconds = zstd_compress_s, zstd_read_s
        return out

    def shared(advice, **rule):
        return shared_setting("all topics", advice, Rule(**{"min_compress_mbps": 0, "min_read_mbps": 0, **rule}))

    # zstd builds 200 KB in 0.01 s over the two topics: 20 MB/s, just enough for 20
    assert shared(group(0.005, 0.001), min_compress_mbps=20).setting == ZSTD
    assert shared(group(0.005, 0.001), min_compress_mbps=21).setting == LZ4
    assert shared(group(0.001, 0.005), min_read_mbps=20).setting == ZSTD
    assert shared(group(0.001, 0.005), min_read_mbps=21).setting == LZ4
    assert shared(group(0.001, 0.001), max_linger_ms=5).setting == ZSTD  # a linger.ms of exactly the limit
    one = shared(group(0.001, 0.001), max_linger_ms=4)
    assert (one.setting, one.saving, one.per_topic_saving) == (None, 0.0, 0.0)
    # a setting measured for one topic of the group is no setting for the group
    advice = group(0.001, 0.001)
    advice[1].results.pop()
    assert shared(advice).setting == LZ4
    # one that costs more than today is not a fleet default
    dear = [topic(t, {ZSTD: 120.0}) for t in ("a", "b")]
    assert (shared(dear).setting, shared(dear).saving) == (None, 0.0)


def test_group_by_keys():
    from kcodec.advise.estate import OTHER_GROUP, compile_group_by, group_of

    assert compile_group_by(None) is None and compile_group_by("") is None
    grouped = compile_group_by(r"^(\w+)-|^x")
    assert [group_of(t, grouped) for t in ("orders-eu", "xray", "clicks")] == ["orders", "x", OTHER_GROUP]
    assert OTHER_GROUP == "(no match)"
    whole = compile_group_by(r"eu|us")
    assert [group_of(t, whole) for t in ("orders-eu", "us-clicks", "logs")] == ["eu", "us", "(no match)"]
    with pytest.raises(KcodecError, match=r"^--group-by \(a: not a regular expression \(missing \), "):
        compile_group_by("(a")
    # a topic the pattern does not match is in a group of that name; groups by per-topic saving, largest first
    advice = [topic("orders-1", {ZSTD: 50.0, LZ4: 70.0}), topic("logs", {ZSTD: 80.0, LZ4: 60.0})]
    assert [(g.name, g.per_topic_saving) for g in plan_estate(advice, FREE, group_by=r"^(\w+)-").by_group] == \
        [("orders", 50.0), ("(no match)", 40.0)]


@pytest.mark.parametrize("more", [4e-6, 4e-7])
def test_an_estates_orders_tell_savings_apart_to_the_micro_dollar(more):
    """Savings larger by 4 millionths of a dollar come first; by 4 ten-millionths they are equal, and the
    next key decides: the group of more topics, the topic's name, the group's name."""
    advice = [topic("a", {ZSTD: 50.0 - more}), topic("b", {LZ4: 75.0}), topic("c", {LZ4: 75.0})]
    estate = plan_estate(advice, FREE, group_by=r"^(\w)")
    by_saving = more > 1e-6
    assert [g.setting for g in estate.groups] == ([ZSTD, LZ4] if by_saving else [LZ4, ZSTD])
    assert [round(g.saving, 5) for g in estate.groups] == ([50.0, 50.0])
    alone = [topic("b", {ZSTD: 50.0 - more}), topic("a", {LZ4: 50.0})]
    assert [a.topic for a in plan_estate(alone, FREE).ranked] == (["b", "a"] if by_saving else ["a", "b"])
    assert [g.name for g in plan_estate(alone, FREE, group_by=r"^(\w)").by_group] == \
        (["b", "a"] if by_saving else ["a", "b"])
    # the shared setting: the cheaper by 4 millionths, else the first in the settings' order (lz4)
    both = [topic("a", {ZSTD: 50.0 - more, LZ4: 50.0})]
    assert shared_setting("all topics", both, FREE).setting == (ZSTD if by_saving else LZ4)


def test_what_an_estate_leaves_out_of_each_figure():
    from kcodec.advise.race import Drop

    # a setting the race dropped is not acceptable however close, nor anything of a topic that keeps today's
    a = topic("a", {ZSTD: 50.0, ZSTD1: 50.1, LZ4: 50.2})
    a.results[2].dropped = Drop(ZSTD1.label, 1, "cost", ZSTD.label, 0.05, "")
    assert [m.setting for m in acceptable(a, FREE, 0.02)] == [LZ4, ZSTD]
    keep = topic("k", {ZSTD: 120.0})
    keep.best = None
    assert acceptable(keep, FREE, 0.02) == [] and set(harmonise([a, keep], FREE, 0.02)) == {"a"}
    # a topic whose every setting costs more than today saves nothing of its own, and is priced at today's
    estate = plan_estate([a, keep], FREE)
    assert estate.whole.per_topic_saving == pytest.approx(50.0)
    assert (estate.today, estate.after) == (200.0, pytest.approx(150.0))
    # groups: by saving, then the more topics, with "keep today's" last whatever it holds
    b, c = topic("b", {LZ4: 75.0}), topic("c", {LZ4: 75.0})
    d, e = topic("d", {ZSTD: 50.0}), topic("e", {ZSTD1: 50.0})
    groups = plan_estate([keep, d, b, c, e], FREE).groups
    assert [(g.setting, len(g.topics), g.saving) for g in groups] == [
        (LZ4, 2, 50.0), (ZSTD, 1, 50.0), (ZSTD1, 1, 50.0), (None, 1, 0.0)]
    assert [g.bytes_per_day for g in groups] == [2e9, 1e9, 1e9, 1e9]
    # topics without a known daily volume: no setting for the group, no dollars
    unpriced = [topic("u", {ZSTD: 50.0}, priced=False)]
    assert shared_setting("all topics", unpriced, FREE) == SharedSetting("all topics", 1, None, 0.0, 0.0, 0.0)
    alone = plan_estate(unpriced, FREE)
    assert (alone.priced, [x.topic for x in alone.unpriced], alone.today, alone.groups[0].saving) == ([], ["u"], 0, 0)


def _metrics_row(setting, stored, compress_s, read_s):
    """One aggregate line: 100 MB of payload in 100,000 records and 1000 batches, its CPU as measured."""
    return row(setting, stored, compress_s, read_s, payload=100_000_000, partitions=1, plain_bytes=110_000_000,
               ratio_std=0.0, chunks=1)


def test_one_setting_for_many_topics_is_the_same_whatever_the_cpu_measured():
    from kcodec.advise.cost import Prices, TopicEconomics
    from kcodec.advise.recommend import advise_topic

    rule = Rule()  # the CPU model's bill, --min-compress-mbps 50, --min-read-mbps 100

    def run(zstd_seconds):
        """Two topics advised from the same bytes, zstd's build and read taking ``zstd_seconds`` CPU seconds."""
        out = []
        for name, (zstd, lz4) in {"a": (30_000_000, 45_000_000), "b": (35_000_000, 40_000_000)}.items():
            rows = [_metrics_row(None, 100_000_000, 0.1, 0.2), _metrics_row(ZSTD, zstd, zstd_seconds, zstd_seconds),
                    _metrics_row(LZ4, lz4, 0.1, 0.1)]
            agg = TopicAggregate(TopicProfile({"none": 1}, min_ts=0, max_ts=86_400_000), tuple(rows))
            out.append(advise_topic(name, agg, None, TopicEconomics(bytes_per_day=1e9), Prices(), rule))
        return out

    idle, loaded = run(0.1), run(10.0)  # zstd measured at 1000 MB/s, then at 10 MB/s: below the rule's 50
    assert [m.measured_compress_mbps for a in idle for m in a.results if m.setting == ZSTD] == [1000.0, 1000.0]
    assert [m.measured_compress_mbps for a in loaded for m in a.results if m.setting == ZSTD] == [10.0, 10.0]
    # the model's speeds, which the rule takes, are the same in both runs and within the limits
    speeds = [(m.compress_mbps, m.read_mbps) for a in idle for m in a.results]
    assert speeds == [(m.compress_mbps, m.read_mbps) for a in loaded for m in a.results]
    assert all(c >= 50 and r >= 100 for c, r in speeds)
    one, other = shared_setting("all topics", idle, rule), shared_setting("all topics", loaded, rule)
    assert one == other and one.setting == ZSTD
    assert [a.best.setting for a in idle] == [a.best.setting for a in loaded] == [ZSTD, ZSTD]
    assert one.saving == pytest.approx(sum(a.saving for a in idle)) and one.cost == pytest.approx(0.0)


def test_estate_summary_is_bounded_and_adds_up():
    kinds = {"orders": {ZSTD: 50.0, ZSTD1: 55.0, LZ4: 70.0}, "clicks": {ZSTD: 65.0, ZSTD1: 60.0, LZ4: 70.0},
             "logs": {ZSTD: 90.0, ZSTD1: 95.0, LZ4: 60.0}}
    advice = [topic(f"{k}-{i:04d}", costs) for i in range(3000) for k, costs in kinds.items()]
    advice.append(topic("burst-0", {ZSTD: 50.0, LZ4: 70.0}, priced=False))
    estate = plan_estate(advice, FREE, group_by=r"^([a-z]+)-")
    text = estate_text(estate, top=20, out_dir="rep")
    lines = text.splitlines()
    assert len(lines) <= 60, text
    assert len(estate.groups) == 3
    assert sum(g.saving for g in estate.groups) == pytest.approx(estate.today - estate.after)
    assert sum(a.saving for a in estate.priced) == pytest.approx(estate.today - estate.after)
    assert sum(len(g.topics) for g in estate.groups) == len(advice)
    assert estate.today == pytest.approx(100.0 * 9000)
    assert "not priced (1 topics" in text and "burst-0" in text
    assert "9001 topics" in text and "left out: 8981 more topics, and every" in text
    per_group = {s.name: s for s in estate.by_group}
    assert set(per_group) == {"orders", "clicks", "logs", "burst"}
    assert per_group["orders"].setting == ZSTD and per_group["orders"].cost == pytest.approx(0)
    assert sum(s.per_topic_saving for s in estate.by_group) == pytest.approx(estate.whole.per_topic_saving)


def test_an_estate_of_no_priced_topic_says_so():
    advice = [topic(f"burst-{i}", {ZSTD: 50.0, LZ4: 70.0}, priced=False) for i in range(2)]
    first = estate_text(plan_estate(advice, FREE)).splitlines()[0]
    assert first.startswith("estate: 2 topics, 0B/day stored today (no topic priced); $0.00/month today"), first
    advice.append(topic("orders", {ZSTD: 50.0, LZ4: 70.0}))
    assert "stored today (the 1 priced)" in estate_text(plan_estate(advice, FREE))


def test_volumes_file(tmp_path):
    f = tmp_path / "v.csv"
    f.write_text("# topic, bytes per day\norders,120GB\nclicks 2GiB\n\n")
    assert load_volumes(str(f)) == {"orders": 120 * 10 ** 9, "clicks": 2 * 2 ** 30}
    # a line's own white space around it is not a field
    f.write_text("  orders,120GB  \n\t# a comment\n")
    assert load_volumes(str(f)) == {"orders": 120 * 10 ** 9}
    refused = [("orders,120GB\norders,1GB\n", r"line 2: topic orders given twice"),
               ("orders\n", r"v.csv: line 1: expected 'topic,bytes per day'"),
               ("orders,lots\n", r"line 1:.*not a size"),
               (",120GB\n", r"v.csv: line 1: expected 'topic,bytes per day'"),  # a line without a topic
               ("orders,0\n", r"line 1: 0: bytes per day must be more than 0")]
    for text, message in refused:
        f.write_text(text)
        with pytest.raises(KcodecError, match=message):
            load_volumes(str(f))
    assert load_volumes(None) == {} and load_volumes("") == {}
    with pytest.raises(KcodecError, match=r"^--volumes .*nothing.csv: no such file$"):
        load_volumes(str(tmp_path / "nothing.csv"))
    with pytest.raises(KcodecError, match=rf"^--volumes {re.escape(str(tmp_path))}: no such file$"):
        load_volumes(str(tmp_path))  # a folder is no volumes file
    f.write_bytes(b"orders,1GB\nclicks\xff,2GB\n")
    with pytest.raises(KcodecError, match=r"^--volumes .*v.csv: not UTF-8 text \(byte 17\)$"):
        load_volumes(str(f))


def test_a_volume_is_a_whole_positive_size():
    assert parse_volume("--bytes-per-day", "1") == 1 and parse_volume("--bytes-per-day", "2k") == 2048
    for text in ("0", "0.5"):  # half a byte is none
        with pytest.raises(KcodecError, match=rf"^--bytes-per-day {text}: bytes per day must be more than 0$"):
            parse_volume("--bytes-per-day", text)
    with pytest.raises(KcodecError, match=r"^--bytes-per-day -1: not a size"):
        parse_volume("--bytes-per-day", "-1")


def test_a_given_volume_comes_from_the_volumes_file_then_prices_then_the_flag():
    econ = TopicEconomics(retention_days=3.0)
    priced = {"p": TopicEconomics(bytes_per_day=5e8), "q": TopicEconomics()}
    volumes = {"v": 7}
    got = given_volume("v", econ, volumes, "v.csv", priced, 9)
    assert got == (TopicEconomics(retention_days=3.0, bytes_per_day=7.0), "--volumes v.csv")
    assert isinstance(got[0].bytes_per_day, float)
    # a --prices entry with its own bytes per day keeps the economics given, over --bytes-per-day
    assert given_volume("p", econ, volumes, "v.csv", priced, 9) == (econ, "--prices")
    # one without them, or no entry, takes --bytes-per-day
    for t in ("q", "none"):
        assert given_volume(t, econ, volumes, "v.csv", priced, 9) == \
            (TopicEconomics(retention_days=3.0, bytes_per_day=9.0), "--bytes-per-day")
    assert given_volume("none", econ, {}, None, priced, None) == (econ, "--prices")


def test_a_daily_volume_is_a_value():
    v = daily_volume(1000, 10, None, None, None, None, 2 * MS_PER_DAY, None, "", 0)
    assert (v.per_day, v.tag, v.priced, v.notes) == (500.0, "records over 2 days", True, ())
    assert hash(v) == hash(dataclasses.replace(v))
    with pytest.raises(dataclasses.FrozenInstanceError):
        v.priced = False  # type: ignore[misc]


# --- the whole job on many small topics of three distributions ----------------------------------------

KINDS_RE = r"^([a-z]+)-"


@pytest.fixture(scope="module")
def many(tmp_path_factory):
    from advise_many_topics import build_many_topics

    root = tmp_path_factory.mktemp("many")
    kinds = build_many_topics(root, 24, records=600)
    burst = build_many_topics(root, 1, records=300, span_hours=0.0001, kinds=("logs",), seed=9,
                              name_format="burst-{i}")
    return root, kinds, burst


def test_many_topics_summary(spark, many, tmp_path):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    root, kinds, burst = many
    old = os.umask(0o027)
    try:
        lines = []
        out = run_advise(Options(inputs=[str(root)], codecs="lz4,zstd:1,3", batch_sizes="16k,1m", lingers="5,100",
                                 out_dir=str(tmp_path / "rep"), progress=False, min_compress_mbps=0,
                                 min_read_mbps=0, group_by=KINDS_RE, top=5, same_setting_within=0.1,
                                 volumes=_volumes(tmp_path, kinds), price_overrides={"vcpu_hour": 0.0}),
                         log=lines.append)
    finally:
        os.umask(old)
    text = "\n".join(lines)
    summary = text[text.index("estate:"):text.index("reports:")].splitlines()
    assert len(summary) <= 60, text
    advice = {a.topic: a for a in out["advice"]}
    for kind in set(kinds.values()):
        got = {advice[t].best.setting for t, k in kinds.items() if k == kind and advice[t].best is not None}
        assert len(got) == 1, (kind, got)
    (b,) = burst
    assert not advice[b].priced and advice[b].volume_source.startswith("not priced")
    priced = [a for a in advice.values() if a.priced]
    doc = json.loads(Path(out["paths"]["json"]).read_text())
    est = doc["estate"]
    assert sum(g["saving_month"] for g in est["settings"]) == pytest.approx(sum(a.saving for a in priced))
    assert sum(len(g["topics"]) for g in est["settings"]) == len(advice)
    assert est["not_priced"] == [b]
    assert sum(g["per_topic_saving_month"] for g in est["per_group"]) == \
        pytest.approx(est["one_setting"]["per_topic_saving_month"])
    assert f"not priced ({1} topics" in text and "given, --volumes" in text
    # the report: charts as files, none inlined, and the user's umask
    rep = tmp_path / "rep"
    page = (rep / "report.html").read_text()
    assert "data:image" not in page and page.count('loading="lazy"') == 1 + 5
    assert len(list((rep / "topics").glob("*.png"))) == 5 and len(list((rep / "topics").glob("*.html"))) == 25
    for f in [rep / "report.html", rep / "results.json", next((rep / "topics").glob("*.png"))]:
        assert f.stat().st_mode & 0o777 == 0o640, f
    order = re.findall(r"<tr><td(?: class=nw)?><a href='[^']*'>([^<]*)</a>", page)
    assert order[:len(priced)] == [a.topic for a in sorted(priced, key=lambda a: (-round(a.saving, 6), a.topic))]


def _volumes(tmp_path: Path, kinds) -> str:
    f = tmp_path / "volumes.csv"
    f.write_text("".join(f"{t},{10 + i}GB\n" for i, t in enumerate(sorted(kinds))))
    return str(f)


# --- the report of 500 topics in a real browser ---------------------------------------------------------

def _profiled(a: TopicAdvice) -> TopicAdvice:
    a.profile = dataclasses.replace(
        a.profile, batch_records=Spread(p10=8.0, p50=10.0, p90=12.0, mean=10.0),
        batch_bytes=Spread(p10=8000.0, p50=10000.0, p90=12000.0, mean=10000.0), magic_batches={0: 0, 1: 0, 2: 10},
        record_size_hist=(0,) * 8 + (1000,) + (0,) * 23, log_append_batches=0, replay=None)
    return a


def test_report_of_500_topics_opens_at_1280px(tmp_path):
    pytest.importorskip("matplotlib")
    from browser import chromium, measure_page, screenshot
    from kcodec.advise.assumptions import CLUSTER, bill_assumptions, topic_assumptions
    from kcodec.advise.cost import Prices, TopicEconomics
    from kcodec.advise.platforms import platform
    from kcodec.advise.report import write_reports
    from kcodec.advise.topic_text import rule_text
    from kcodec.escape import file_name

    grid = [Setting(c, lvl, b, g) for c, lvl in (("lz4", None), ("zstd", 1), ("zstd", None), ("gzip", None))
            for b in (16384, 1048576) for g in (5, 100)]
    # Long names with and without hyphens (underscores and dots only), as estates name their topics, and
    # short ones, which stay on one line rather than break at their hyphens.
    names = [f"team-{i % 7}.o-{i:05d}" if i % 10 == 0 else
             f"team-{i % 7}.a-rather-long-topic-name-for-wrapping-{i:05d}" if i % 2 else
             f"team-{i % 7}.orders_enriched_with_customer_profile_and_region.v2_{i:05d}" for i in range(500)]
    advice = [_profiled(topic(name, {s: 40.0 + (i * 7 + j * 13) % 30 for j, s in enumerate(grid)},
                              today=100.0 + i % 50)) for i, name in enumerate(names)]
    for a in advice:
        a.rule = FREE
        a.assumptions = topic_assumptions(TopicEconomics(), {"retention_days": (CLUSTER, "DescribeConfigs")},
                                          a.stored_per_day, "given in volumes.csv")
    bill = bill_assumptions(platform("ec2"), False, Prices(), set(), set(), None)
    context = {"input": "hand-built", "assumptions": [b.doc() for b in bill], "rule": rule_text(FREE)}
    estate = plan_estate(advice, FREE, group_by=r"^(team-\d)\.")
    paths = write_reports(tmp_path / "rep", advice, context, estate, top=20)
    page = paths["html"]
    assert page.stat().st_size < 2_000_000
    text = page.read_text()
    assert "data:image" not in text and "<script>" in text and "src=\"http" not in text
    assert text.count("<tr><td><a href=") == 450 and text.count("<tr><td class=nw><a href=") == 50
    assert "<tr><td class=nw><a href='topics/team-0.o-00000.html'>team-0.<wbr>o-00000</a>" in text
    assert text.count("<td class='l nw'>given</td>") == 500
    if chromium() is None:
        pytest.skip("chromium is not installed (Debian: apt-get install chromium): the page was not rendered")
    got = measure_page(page)
    assert got["scroll"] <= got["client"] == 1280, got
    # Every cell at least as wide as its longest word: 500 rows of 9, the groups', the bill's and 20 sections'.
    assert got["cells"] > 4500 and got["narrow_count"] == 0, got["narrow"]
    assert screenshot(page, tmp_path / "shot.png") == (1280, 900)
    for name in names[:2]:  # a page with its settings table and its assumptions table
        topic_page = tmp_path / "rep" / "topics" / f"{file_name(name)}.html"
        assert "<th>setting</th>" in topic_page.read_text() and "the bill assumes" in topic_page.read_text()
        got = measure_page(topic_page)
        assert got["scroll"] <= got["client"], got
        assert got["cells"] > 40 and got["narrow_count"] == 0, got["narrow"]


# --- a live cluster's daily volume, from each partition's whole span ----------------------------------

def _produce(bootstrap: str, topic: str, stamps) -> None:
    from kafka import KafkaAdminClient, KafkaProducer
    from kafka.admin import NewTopic

    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(topic, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=bootstrap, compression_type="lz4", linger_ms=5, acks=1)
    try:
        for i, ts in enumerate(stamps):
            producer.send(topic, value=b'{"n":%d,"text":"the same words again and again"}' % i, partition=0,
                          timestamp_ms=int(ts))
            if i % 50 == 49:  # one batch per flush, each with its own timestamps
                producer.flush()
        producer.flush()
    finally:
        producer.close()


def test_cluster_volume_from_the_whole_span(spark, kafka_broker, tmp_path):
    pytest.importorskip("kafka")
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    day = 86_400_000
    start = 1_700_000_000_000
    _produce(kafka_broker.bootstrap, "vol-steady", [start + i * 2 * day / 999 for i in range(1000)])  # two days
    _produce(kafka_broker.bootstrap, "vol-burst", [start + i for i in range(1000)])  # one second
    lines = []
    out = run_advise(Options(bootstrap_server=kafka_broker.bootstrap, topic="vol-.*", codecs="lz4,zstd",
                             batch_sizes="16k", lingers="5", sample="64k", chunk="16k", progress=False,
                             min_compress_mbps=0, min_read_mbps=0, out_dir=str(tmp_path / "rep")),
                     log=lines.append)
    advice = {a.topic: a for a in out["advice"]}
    steady, burst = advice["vol-steady"], advice["vol-burst"]
    text = "\n".join(lines)
    # steady: every offset at the sample's bytes per record, over the first to the last timestamp
    # (Tansu's ListOffsets(LATEST) falls short of the last batch; its Fetch's high watermark does not)
    assert steady.priced and "1000 offsets" in steady.per_day_source and "ListOffsets" in steady.per_day_source
    per_record = steady.today.stored_bytes / steady.today.records
    assert steady.stored_per_day == pytest.approx(1000 * per_record / 2, rel=1e-9)
    assert "offsets over 2 days" in steady.volume_source and "offsets over 2 days" in text
    # burst: not priced, said so, and out of the estate's dollars
    assert not burst.priced and any("not priced" in n and "--bytes-per-day" in n for n in burst.notes)
    assert "not priced (1 topics" in text and "vol-burst" in text
    doc = json.loads(Path(out["paths"]["json"]).read_text())
    assert doc["estate"]["not_priced"] == ["vol-burst"]
    assert doc["total_month"]["today"] == pytest.approx(steady.today.cost.total)
    # the user's volume prices it
    out = run_advise(Options(bootstrap_server=kafka_broker.bootstrap, topic="vol-burst", codecs="lz4,zstd",
                             batch_sizes="16k", lingers="5", sample="64k", chunk="16k", progress=False,
                             min_compress_mbps=0, min_read_mbps=0, out_dir=str(tmp_path / "rep2"),
                             bytes_per_day="5GB"), log=lambda s: None)
    (a,) = out["advice"]
    assert a.priced and a.stored_per_day == 5e9 and a.per_day_source == "given (--bytes-per-day)"


def test_charts_drawn_by_forked_processes_are_the_charts_drawn_here(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import kcodec.advise.report as report

    grid = [Setting(c, None, b, 5) for c in ("lz4", "zstd") for b in (16384, 1048576)]
    advice = [_profiled(topic(f"t-{i}", {s: 40.0 + (i * 7 + j * 13) % 30 for j, s in enumerate(grid)}))
              for i in range(6)]
    estate = plan_estate(advice, FREE)

    def files(root: Path):
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    here, pooled, broken = tmp_path / "here", tmp_path / "pooled", tmp_path / "broken"
    with monkeypatch.context() as m:
        m.setattr(os, "cpu_count", lambda: 1)
        report.write_reports(here, advice, {"input": "hand-built"}, estate, top=4)
    forks, fork = [], os.fork
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    monkeypatch.setattr(os, "fork", lambda: forks.append(1) or fork())
    report.write_reports(pooled, advice, {"input": "hand-built"}, estate, top=4)
    assert len(forks) == 2
    # a worker that dies leaves its charts to the writer
    parent, draw = os.getpid(), report._draw
    monkeypatch.setattr(report, "_draw", lambda chart: os._exit(1) if os.getpid() != parent else draw(chart))
    report.write_reports(broken, advice, {"input": "hand-built"}, estate, top=4)
    want = files(here)
    assert sum(name.endswith(".png") for name in want) == 1 + 4
    assert files(pooled) == want and files(broken) == want


def test_report_files_follow_the_umask_and_leave_no_temporary_file(tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    import kcodec.advise.report as report

    grid = [Setting(c, None, 16384, 5) for c in ("lz4", "zstd")]
    advice = [_profiled(topic(f"t-{i}", {s: 40.0 + i + j for j, s in enumerate(grid)})) for i in range(3)]
    monkeypatch.setattr(os, "cpu_count", lambda: 2)  # charts drawn by forked processes
    old = os.umask(0o077)
    try:
        report.write_reports(tmp_path / "rep", advice, {"input": "hand-built"}, plan_estate(advice, FREE), top=2)
    finally:
        os.umask(old)
    files = sorted(p for p in (tmp_path / "rep").rglob("*") if p.is_file())
    assert len(files) == 4 + 2 + 3  # report.html/.png, results.json/.csv, 2 topics' charts, 3 topics' pages
    assert {p.stat().st_mode & 0o777 for p in files} == {0o600}
    assert [p.name for p in files if p.name.startswith(".")] == []
    # a page that cannot be written leaves neither a file nor a temporary one (charts drawn after the pages)
    monkeypatch.setattr(os, "cpu_count", lambda: 1)
    (tmp_path / "bad" / "topics" / "t-0.html").mkdir(parents=True)
    (tmp_path / "bad" / "topics" / "t-0.html" / "x").write_bytes(b"")
    with pytest.raises(OSError):
        report.write_reports(tmp_path / "bad", advice, {"input": "hand-built"}, None, top=2)
    assert sorted(str(p.relative_to(tmp_path / "bad")) for p in (tmp_path / "bad").rglob("*")) == \
        ["topics", "topics/t-0.html", "topics/t-0.html/x"]


# --- each topic's section opens with one sentence ------------------------------------------------------

def test_headline_says_what_to_set_what_it_saves_and_its_latency():
    from kcodec.advise.notes import money
    from kcodec.advise.topic_text import headline

    a = topic("t", {ZSTD: 40.0, LZ4: 70.0}, today=100.0)
    assert headline(a, money) == ("Set compression.type=zstd batch.size=16384 linger.ms=5: saves $60.00/month (60%) "
                                  "and adds at most 5 ms to a send.")
    a.priced = False
    assert headline(a, money) == ("Set compression.type=zstd batch.size=16384 linger.ms=5: not priced, the volume is "
                                  "not known; it adds at most 5 ms to a send.")
    at_zero = topic("z", {Setting("lz4", None, 16384, 0): 50.0}, today=100.0)
    assert headline(at_zero, money).endswith("saves $50.00/month (50%) and adds no wait to a send (linger.ms=0).")
    keep = topic("k", {LZ4: 98.0, ZSTD: 99.0}, today=100.0)
    keep.best, keep.rule = None, Rule(min_compress_mbps=0, min_read_mbps=0, min_saving=0.05)
    assert headline(keep, money) == ("Keep today's settings: the cheapest within the rule, lz4@16KiB/5ms, would save "
                                     "$2.00/month (2%), under the 5% that --min-saving asks for.")
    keep.rule = Rule(min_compress_mbps=1e9, min_read_mbps=0)
    assert headline(keep, money) == ("Keep today's settings: no setting meets the rule's speeds "
                                     "(--min-compress-mbps, --min-read-mbps).")
    dearer = topic("d", {LZ4: 120.0}, today=100.0)
    dearer.best, dearer.rule = None, FREE
    assert headline(dearer, money) == ("Keep today's settings: no setting within the rule costs less than today's "
                                       "$100.00/month.")


def test_rule_and_replay_limits_as_short_lists():
    from kcodec.advise.replay import LIMIT_ITEMS, LIMITS
    from kcodec.advise.topic_text import rule_lines

    lines = rule_lines(Rule(min_compress_mbps=40, min_read_mbps=80.5, max_linger_ms=20, min_saving=0.125, knee=1))
    assert lines == ["pick the lowest $/month (storage + network + CPU)",
                     "build at 40 MB/s of CPU per core or more (--min-compress-mbps)",
                     "read at 80.5 MB/s or more (--min-read-mbps)",
                     "linger at most 20 ms (--max-linger-ms)",
                     "costs within their uncertainty are equal: less CPU, smaller linger.ms, smaller batch.size, "
                     "codec id and level decide",
                     "recommend only a saving of at least 12.5% of today's $/month (--min-saving)",
                     "CPU from kcodec's CPU model (--cpu-cost)"]
    assert max(len(x.split()) for x in lines + list(LIMIT_ITEMS)) <= 20
    assert LIMITS == "; ".join(LIMIT_ITEMS)


def test_report_lists_the_run_context_briefly():
    from kcodec.advise.html import report_html
    from kcodec.advise.replay import LIMIT_ITEMS

    a = topic("t", {ZSTD: 40.0, LZ4: 70.0})
    a.rule = FREE
    page = report_html([a], {"input": "x", "rule": "r", "replay": "r", "run_at_ms": 1_764_389_525_000}, None, [], set())
    assert "<li>run at: 2025-11-29 04:12:05 UTC</li>" in page and "run_at_ms" not in page
    assert "<li>replay:<ul>" + "".join(f"<li>{x}</li>" for x in LIMIT_ITEMS).replace("'", "&#x27;") in page
    assert "<li>rule:<ul><li>pick the smallest linger.ms, then batch.size, saving at least 90% of" in page


def test_a_measured_speeds_cell_can_break_between_its_two_figures():
    # a browser breaks after no hyphen a digit follows: without the break the pair is one word as wide as its column
    from kcodec.advise.html import _between_figures

    assert _between_figures("148+/-12%/240+/-9%") == "148+/-12%/<wbr>240+/-9%"
    assert _between_figures("34+/-0%/163+/-0% <b>") == "34+/-0%/<wbr>163+/-0% &lt;b&gt;"


def test_savings_count_what_each_topic_saves_from_its_own_cost_today():
    # lz4 and zstd are each acceptable to two topics; b takes either. zstd saves 1 + 10 (on b and c), lz4
    # 9 + 1 (on a and b): zstd goes first and takes b, though a and b together cost less today than b and c
    advice = [topic("a", {LZ4: 1.0}, today=10.0), topic("b", {ZSTD: 49.0, LZ4: 49.0}, today=50.0),
              topic("c", {ZSTD: 90.0}, today=100.0)]
    assert {t: m.setting for t, m in harmonise(advice, FREE, 0.02).items()} == {"a": LZ4, "b": ZSTD, "c": ZSTD}


def test_a_setting_exactly_the_tolerance_above_the_best_is_acceptable():
    a = topic("a", {ZSTD: 100.0, LZ4: 150.0, ZSTD1: 150.5})
    assert tie_margin(a.results[0], a.best) < 50 and [m.setting for m in acceptable(a, FREE, 0.5)] == [LZ4, ZSTD]


def test_a_shared_setting_that_saves_cents_is_still_the_one_to_set():
    advice = [topic("a", {ZSTD: 99.75, LZ4: 100.6}), topic("b", {ZSTD: 99.75, LZ4: 99.0})]
    one = shared_setting("all topics", advice, FREE)
    assert (one.setting, one.saving, one.per_topic_saving) == (ZSTD, pytest.approx(0.5), pytest.approx(1.25))


def test_groups_of_equal_saving_and_size_are_in_the_settings_order():
    advice = [topic("a", {ZSTD: 50.0}), topic("b", {LZ4: 50.0}), topic("c", {ZSTD1: 50.0})]
    assert [g.setting for g in plan_estate(advice, FREE).groups] == [LZ4, ZSTD, ZSTD1]
