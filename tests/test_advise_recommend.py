"""``kcodec.advise.recommend``: the stated rule, the costs per setting and the choice, on measurements
given by hand (no Spark, no replay), with every number checked against a value worked out here.

The rules here bill the CPU seconds given by hand (``cpu="measured"``), so that each figure can be
worked out; the CPU model that the default rule bills is tested in test_advise_measure.py."""
from __future__ import annotations

import dataclasses

import pytest

from kcodec.advise.aggregate import SettingLine, TopicAggregate
from kcodec.advise.cost import MonthlyCost, Prices, TopicEconomics, monthly_cost
from kcodec.advise.grid import Setting
from kcodec.advise.recommend import Measured, Rule, advise_topic
from kcodec.advise.replay import JAVA, client_config
from kcodec.advise.topic_profile import ReplayProfile, TopicProfile
from kcodec.advise.topic_text import rule_text

DAY = 86_400_000
ZSTD19 = Setting("zstd", 19, 16384, 5)     # the cheapest, at a level only clients 3.8+ can set
ZSTD = Setting("zstd", None, 16384, 5)     # the codec's default level
GZIP = Setting("gzip", None, 16384, 5)     # too slow to compress for the rule
LZ4 = Setting("lz4", None, 16384, 200)     # lingers too long for the rule


def row(setting, stored, compress_s, read_s, payload=1_000_000_000, partitions=3, **fields):
    """A topic's line of ``setting`` (None: today's batches) as summed over 4 chunks, ``fields`` changed."""
    if setting is None:
        name, codec, level, batch_size, linger_ms = "today", None, None, None, None
    else:
        name, codec, level, batch_size, linger_ms = (setting.label, setting.codec, setting.level, setting.batch_bytes,
                                                     setting.linger_ms)
    line = SettingLine("t", name, codec, level, batch_size, linger_ms, records=100_000, payload_bytes=payload,
                       plain_bytes=1_100_000_000, batches=1000, stored_bytes=stored, compress_seconds=compress_s,
                       compress_spread=0.0, read_seconds=read_s, read_spread=0.0, worst_stored_bytes=None,
                       ratio_mean=None, ratio_std=0.5, chunks=4, partitions=partitions)
    return dataclasses.replace(line, **fields)


def replayed(client, recognised=True, **fields):
    """What a replay followed, with ``client``'s rules (one chunk's figures unless given)."""
    given = dict(client=client, clients=(client,), recognised=recognised, sender_delay_ms=0.0, calibrated_share=1.0,
                 calibration_error=0.0, producer_ids=0, producers_replayed=1)
    given.update(fields)
    return ReplayProfile(**given)


def agg(rows=None, **profile):
    prof = {"codec_bytes": {"none": 10, "lz4": 0}, "min_ts": 0, "max_ts": 2 * DAY}
    prof.update(profile)
    rows = rows or [row(None, 1_000_000_000, 1.0, 2.0), row(ZSTD19, 250_000_000, 4.0, 1.0),
                    row(ZSTD, 260_000_000, 5.0, 1.0), row(GZIP, 200_000_000, 50.0, 1.0),
                    row(LZ4, 400_000_000, 1.0, 0.5, partitions=5)]
    return TopicAggregate(TopicProfile(**prof), tuple(rows))


def test_rule_allows_at_its_bounds():
    rule = Rule(cpu="measured", min_compress_mbps=40, min_read_mbps=80, max_linger_ms=20)

    def m(compress_s, read_s, linger, setting=True):
        s = Setting("zstd", None, 16384, linger) if setting else None
        return Measured(s, 1, 400_000_000, 1, 1, 1, compress_s, read_s, 0.0, 0.0, 1)

    assert rule.allows(m(10.0, 5.0, 20))          # exactly 40 MB/s, 80 MB/s, 20 ms
    assert not rule.allows(m(10.01, 5.0, 20))
    assert not rule.allows(m(10.0, 5.01, 20))
    assert not rule.allows(m(10.0, 5.0, 21))
    assert not rule.allows(m(1.0, 1.0, 0, setting=False))   # today's batches are no setting to choose


def test_rule_text_states_its_numbers():
    assert rule_text(Rule(min_compress_mbps=40, min_read_mbps=80.5, max_linger_ms=20, min_saving=0.125, knee=1)) == (
        "the lowest $/month (storage + network + CPU) among settings that build at 40 MB/s of CPU per core or "
        "more (--min-compress-mbps), read at 80.5 MB/s or more (--min-read-mbps) and linger at most 20 ms "
        "(--max-linger-ms); costs within their uncertainty count as equal and then less CPU, smaller linger.ms, "
        "smaller batch.size, codec id and level decide; recommended when it saves at least 12.5% of today's "
        "$/month (--min-saving), else keep today's settings; CPU from kcodec's CPU model (--cpu-cost)")
    assert rule_text(Rule(cpu="measured")).endswith("CPU from this run's measurement (--cpu-cost)")
    default = Rule()
    # the command's defaults, which its options and flags take from here
    assert (default.min_compress_mbps, default.min_read_mbps, default.max_linger_ms, default.min_saving,
            default.cpu, default.knee) == (50.0, 100.0, 100.0, 0.05, "model", 0.9)


def test_measured_rates_and_ratios():
    m = Measured(ZSTD, 300, 6_000_000, 9_000_000, 4, 3_000_000, 2.0, 0.5, 2.9, 0.1, 2)
    assert (m.label, m.ratio, m.compress_mbps, m.read_mbps, m.records_per_batch) == \
        ("zstd@16KiB/5ms", 3.0, 3.0, 12.0, 75.0)
    # nothing stored, no batches: divided by 1, not by 0
    empty = Measured(None, 6, 2_000, 10, 0, 0, 0.0, 0.0, 0.0, 0.0, 0)
    assert (empty.label, empty.ratio, empty.records_per_batch) == ("today", 10.0, 6.0)
    assert empty.compress_mbps == empty.read_mbps == pytest.approx(2_000 / 1e6 / 1e-9)


def _java(s: Setting):
    return client_config(JAVA, s.codec, s.level, s.default_level, s.batch_bytes, s.linger_ms)


def test_the_config_names_a_level_only_when_it_is_not_the_default():
    assert _java(ZSTD19) == {"compression.type": "zstd", "compression.zstd.level": "19",
                             "batch.size": "16384", "linger.ms": "5"}
    assert _java(Setting("zstd", 3, 65536, 0)) == {"compression.type": "zstd", "batch.size": "65536",
                                                    "linger.ms": "0"}
    assert _java(GZIP) == {"compression.type": "gzip", "batch.size": "16384", "linger.ms": "5"}


def test_the_cheapest_allowed_setting_is_chosen():
    prices, econ = Prices(), TopicEconomics()
    a = advise_topic("orders", agg(), None, econ, prices, Rule(cpu="measured"))
    # 1 GB stored over a 2-day span: 0.5 GB a day; today's batches are uncompressed (no compress CPU)
    assert (a.stored_per_day, a.per_day_source) == (5e8, "the measured records over their timestamps' span of 2 days")
    assert (a.partitions, a.chosen_by) == (5, "rule")
    # gzip stores least but compresses at 20 MB/s: the note names it and why it was left out
    gzip_saving = a.today.cost.total - next(m for m in a.results if m.setting == GZIP).cost.total
    assert a.notes == [f"cheaper but excluded: {GZIP.label} would save ${gzip_saving:.2f}/month, but it compresses "
                       f"at 20 MB/s per core (< --min-compress-mbps 50)"]
    assert [m.label for m in a.results] == [GZIP.label, LZ4.label, ZSTD.label, ZSTD19.label]
    today = monthly_cost(5e8, 5e8, None, 500.0, prices, econ)
    assert (a.today.cost.storage, a.today.cost.network, a.today.cost.cpu) == \
        (pytest.approx(today.storage), pytest.approx(today.network), pytest.approx(today.cpu))
    assert a.best.setting == ZSTD19
    best = monthly_cost(1.25e8, 5e8, 250.0, 1000.0, prices, econ)
    assert a.best.stored_per_day == 1.25e8
    assert a.best.cost.total == pytest.approx(best.total) and a.best.cost.cpu == pytest.approx(best.cpu)
    assert a.saving == pytest.approx(today.total - best.total)
    assert a.best_without_level.setting == ZSTD      # for clients before 3.8
    assert a.config() == _java(ZSTD19)
    again = monthly_cost(1.25e8, 5e8, 250.0, 1000.0, prices, econ, broker_recompresses=True)
    assert a.recompress_cpu == pytest.approx(again.cpu - best.cpu)
    assert a.codec_mix == {"none": 1.0} and a.timestamp_type == "CreateTime"


def test_costs_of_every_setting():
    a = advise_topic("orders", agg(), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    by = {m.setting: m for m in a.results}
    assert by[GZIP].stored_per_day == 1e8
    assert by[GZIP].cost.cpu == pytest.approx(monthly_cost(1e8, 5e8, 20.0, 1000.0, Prices(), TopicEconomics()).cpu)
    none = Setting("none", None, 16384, 0)
    b = advise_topic("t", agg([row(None, 1_000_000_000, 1.0, 2.0), row(none, 900_000_000, 1.0, 1.0)]),
                     None, TopicEconomics(), Prices(), Rule(cpu="measured", min_saving=0))
    # the codec "none" compresses nothing: no compress CPU
    assert b.best.cost.cpu == pytest.approx(monthly_cost(4.5e8, 5e8, None, 1000.0, Prices(), TopicEconomics()).cpu)


def test_a_small_saving_keeps_todays_settings():
    econ = TopicEconomics()
    a = advise_topic("t", agg(), None, econ, Prices(), Rule(cpu="measured", min_saving=0.9))
    assert a.best is None and a.best_without_level is None and a.saving == 0.0 and a.config() == {}
    assert a.recompress_cpu == 0.0
    saving = a.today.cost.total - advise_topic("t", agg(), None, econ, Prices(), Rule(cpu="measured")).best.cost.total
    assert a.notes[0] == (f"the best setting within the rule, {ZSTD19.label}, saves ${saving:.2f}/month "
                          f"({saving / a.today.cost.total * 100:.1f}%), less than --min-saving 90%: keep today's "
                          f"settings")
    assert a.notes[1].startswith(f"cheaper but excluded: {GZIP.label}")
    # a saving of exactly the fraction is made
    today, best = (advise_topic("t", agg(), None, econ, Prices(), Rule(cpu="measured")).today.cost.total,
                   advise_topic("t", agg(), None, econ, Prices(), Rule(cpu="measured")).best.cost.total)
    exact = (today - best) / today
    assert advise_topic("t", agg(), None, econ, Prices(), Rule(cpu="measured", min_saving=exact)).best.setting == ZSTD19


def test_no_setting_meets_the_rule():
    a = advise_topic("t", agg(), None, TopicEconomics(), Prices(), Rule(cpu="measured", min_compress_mbps=10_000))
    assert a.best is None and a.chosen_by == "rule"
    assert a.notes[0] == "no setting meets the rule; lower --min-compress-mbps / --min-read-mbps"
    assert a.notes[1].startswith(f"cheaper but excluded: {GZIP.label}") and len(a.notes) == 2


def test_choose_overrides_the_rule_and_current_is_noted():
    current = Setting("lz4", None, 16384, 0)
    a = advise_topic("t", agg(), None, TopicEconomics(), Prices(), Rule(cpu="measured"), current=current, choose=LZ4)
    assert a.best.setting == LZ4 and a.chosen_by == f"--choose {LZ4.label}"
    assert a.best_without_level is None    # lz4's default level needs no newer client
    assert a.notes == ["today's batches were built from records with --current-codec/--current-batch-size/"
                       f"--current-linger-ms ({current.label})"]


def test_ties_go_to_the_shorter_linger_then_the_faster_compressor():
    slow, fast, lazy = Setting("zstd", None, 16384, 0), Setting("lz4", None, 16384, 0), Setting("gzip", None, 16384, 9)
    rows = [row(None, 1_000_000_000, 1.0, 2.0), row(lazy, 300_000_000, 4.0, 1.0),
            row(slow, 300_000_000, 4.0, 1.0), row(fast, 300_000_000, 2.0, 1.0)]
    free = Prices(vcpu_hour=0.0)
    assert advise_topic("t", agg(rows), None, TopicEconomics(), free, Rule(cpu="measured")).best.setting == fast
    rows = [row(None, 1_000_000_000, 1.0, 2.0), row(lazy, 300_000_000, 2.0, 1.0), row(slow, 300_000_000, 4.0, 1.0)]
    assert advise_topic("t", agg(rows), None, TopicEconomics(), free, Rule(cpu="measured")).best.setting == slow


def test_bytes_per_day_sources():
    econ = TopicEconomics()
    given = advise_topic("t", agg(), 9e9, TopicEconomics(bytes_per_day=7e8), Prices(), Rule(cpu="measured"))
    assert (given.stored_per_day, given.per_day_source) == (7e8, "given (--prices)")
    known = advise_topic("t", agg(), 9_000_000_000, econ, Prices(), Rule(cpu="measured"))
    assert (known.stored_per_day, known.per_day_source) == (4.5e9, "all segments over their timestamps' span of 2 days")
    sampled = advise_topic("t", agg(partition_rate=2.0), None, econ, Prices(), Rule(cpu="measured"),
                           sampled_partitions=6)
    assert sampled.stored_per_day == 2.0 * DAY * 6
    assert sampled.per_day_source == "the sampled chunks' mean rate x 6 partitions"
    # a rate without the partition count falls back to the span
    assert advise_topic("t", agg(partition_rate=2.0), None, econ, Prices(), Rule(cpu="measured")).stored_per_day == 5e8
    for profile in ({"min_ts": None}, {"max_ts": 0}):
        flat = advise_topic("t", agg(**profile), None, econ, Prices(), Rule(cpu="measured"))
        assert (flat.stored_per_day, flat.per_day_source) == \
            (1e9, "no timestamps: the data is taken as one day of traffic")
        assert flat.notes[0].startswith("no usable timestamps: linger.ms cannot be replayed")


def test_today_compressed_counts_its_compress_cpu():
    a = advise_topic("t", agg(codec_bytes={"none": 1, "lz4": 3}, log_append_batches=400), None,
                     TopicEconomics(), Prices(), Rule(cpu="measured"))
    assert a.today.cost.cpu == pytest.approx(monthly_cost(5e8, 5e8, 1000.0, 500.0, Prices(), TopicEconomics()).cpu)
    assert a.codec_mix == {"none": 0.25, "lz4": 0.75}
    assert a.timestamp_type == "CreateTime and LogAppendTime"
    b = advise_topic("t", agg(log_append_batches=1000), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    assert b.timestamp_type == "LogAppendTime"


def test_settings_sort_with_a_default_and_numbered_levels_of_one_codec():
    # kcodec advise --codecs zstd,zstd:19 measures both; sorting them once raised a TypeError
    grid = [Setting("zstd", 19, 16384, 5), Setting("zstd", None, 65536, 0), Setting("zstd", 3, 16384, 0),
            Setting("gzip", 1, 16384, 0), Setting("zstd", None, 16384, 5)]
    assert [s.label for s in sorted(grid)] == ["gzip:1@16KiB/0ms", "zstd@16KiB/5ms", "zstd@64KiB/0ms",
                                                "zstd:3@16KiB/0ms", "zstd:19@16KiB/5ms"]
    assert Setting("zstd", None, 1, 0) < Setting("zstd", 1, 1, 0)
    assert Setting("zstd", 2, 1, 0) > Setting("zstd", 1, 9, 0)


def test_rule_is_a_value_and_states_its_knee():
    import dataclasses
    rule = Rule(knee=0.8)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rule.knee = 1.0  # type: ignore[misc]
    assert {rule, Rule(knee=0.8)} == {rule}
    assert rule_text(rule).startswith(
        "the smallest linger.ms, then batch.size, saving at least 80% of what the lowest $/month (storage + network "
        "+ CPU) saves (--knee) among settings that build at 50 MB/s of CPU per core or more")
    assert rule_text(Rule(knee=0.125)).startswith("the smallest linger.ms, then batch.size, saving at least 12.5% of")
    assert rule_text(Rule(knee=1.0)).startswith("the lowest $/month (storage + network + CPU) among settings")


def test_measured_without_a_cost_and_its_spreads():
    m = Measured(ZSTD, 300, 6_000_000, 9_000_000, 4, 3_000_000, 2.0, 0.5, 2.9, 0.1, 2)
    assert (m.stored_per_day, m.cpu, m.compress_spread, m.read_spread) == (0.0, None, 0.0, 0.0)
    with pytest.raises(AttributeError, match=r"^zstd@16KiB/5ms is not priced yet$"):
        m.cost  # read before advise_topic prices it
    assert (m.cost_uncertainty, m.cpu_source) == (0.0, "measured")
    m.compress_spread, m.read_spread = 1.8, 0.35
    # the spreads relative to the medians: 1.8 of 2 s and 0.35 of 0.5 s
    assert (m.compress_spread_share, m.read_spread_share) == (pytest.approx(0.9), pytest.approx(0.7))
    assert m.measured_text() == "3+/-90%/12+/-70%"


def test_cost_uncertainty_of_the_cpu_model_and_of_the_sample():
    from kcodec.advise.cpu import MODEL_ERROR, CpuCost
    m = Measured(ZSTD, 300, 6_000_000, 9_000_000, 4, 3_000_000, 2.0, 0.5, 2.0, 0.4, 4)
    assert m.cost_uncertainty == 0.0  # no cost yet
    m.cost = MonthlyCost(storage=30.0, network=10.0, cpu=5.0)
    # measured CPU: no model error; the ratio's spread over 4 chunks: 0.4 / 2.0 / sqrt(4) = 0.1 of 40 $
    assert m.cost_uncertainty == pytest.approx(4.0)
    m.cpu = CpuCost(1.0, 1.0, "model")
    assert m.cpu_source == "model"
    assert m.cost_uncertainty == pytest.approx(5.0 * MODEL_ERROR + 4.0)
    m.cpu = CpuCost(1.0, 1.0, "measured")
    assert m.cost_uncertainty == pytest.approx(4.0)
    # one chunk, no mean ratio, or an infinite spread tell nothing about sampling
    for chunks, mean, std in ((1, 2.0, 0.4), (4, 0.0, 0.4), (4, 2.0, float("inf"))):
        m.chunks, m.ratio_mean, m.ratio_std = chunks, mean, std
        assert m.cost_uncertainty == 0.0
    m.chunks, m.ratio_mean, m.ratio_std = 2, 0.5, 0.5
    assert m.cost_uncertainty == pytest.approx(40.0 / 2 ** 0.5)


def test_topic_advice_built_by_hand_is_priced_and_keeps_today():
    from kcodec.advise.recommend import TopicAdvice
    today = Measured(None, 300, 6_000_000, 9_000_000, 4, 3_000_000, 2.0, 0.5, 2.9, 0.1, 2)
    a = TopicAdvice("t", TopicProfile({"none": 0, "lz4": 0}), today, [], None, None, "rule", 1e9, "given", 3)
    assert (a.priced, a.notes, a.recompress_cpu, a.volume_source, a.cheapest, a.rule) == (True, [], 0.0, "", None, None)
    assert (a.saving, a.config(), a.codec_mix, a.timestamp_type) == (0.0, {}, {}, "CreateTime")


def _costed(setting, total=10.0, cpu=1.0):
    m = Measured(setting, 1, 1, 1, 1, 1, 1.0, 1.0, 0.0, 0.0, 1)
    m.cost = MonthlyCost(total - cpu, 0.0, cpu)
    return m


def test_equal_costs_go_to_the_default_level_then_the_lowest():
    from kcodec.advise.recommend import pick

    def zstd(level):
        return _costed(Setting("zstd", level, 16384, 5))

    assert pick([]) is None
    assert pick([zstd(3), zstd(None), zstd(-5)]).setting.level is None
    assert pick([zstd(3), zstd(-5), zstd(1)]).setting.level == -5  # zstd's negative levels count too
    assert pick([zstd(1), zstd(0)]).setting.level == 0
    assert pick([zstd(0), zstd(-1)]).setting.level == -1
    # a plugin's codec comes after Kafka's five
    assert pick([_costed(Setting("brotli", None, 16384, 5)), zstd(None)]).setting.codec == "zstd"


def test_costs_within_both_uncertainties_are_equal():
    from kcodec.advise.recommend import pick

    def sampled(setting, storage, cpu, spread):
        # over 4 chunks at a mean ratio of 1: an uncertainty of storage x spread / 2
        m = Measured(setting, 1, 1, 1, 1, 1, 1.0, 1.0, 1.0, spread, 4)
        m.cost = MonthlyCost(storage, 0.0, cpu)
        return m

    cheap = sampled(ZSTD19, 9.0, 1.0, 0.1)    # $10.00 +/- 0.45
    lean = sampled(ZSTD, 10.0, 0.5, 0.02)     # $10.50 +/- 0.10, with less CPU
    assert pick([cheap, lean]) is lean        # 0.50 apart, within 0.45 + 0.10
    lean.cost = MonthlyCost(10.06, 0.0, 0.5)  # 0.56 apart: no longer equal
    assert pick([cheap, lean]) is cheap


def test_each_setting_keeps_its_row():
    rows = [row(None, 1_000_000_000, 1.0, 2.0),
            row(ZSTD, 250_000_000, 4.0, 1.0, ratio_mean=4.0, ratio_std=0.8, compress_spread=0.4, read_spread=0.1,
                chunks=9)]
    a = advise_topic("t", agg(rows), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    (m,) = a.results
    assert (m.setting, m.records, m.payload_bytes, m.plain_bytes, m.batches, m.stored_bytes) == \
        (ZSTD, 100_000, 1_000_000_000, 1_100_000_000, 1000, 250_000_000)
    assert (m.compress_seconds, m.read_seconds, m.ratio_mean, m.ratio_std, m.chunks, m.compress_spread,
            m.read_spread) == (4.0, 1.0, 4.0, 0.8, 9, 0.4, 0.1)
    assert (a.today.ratio_mean, a.today.ratio_std, a.today.compress_spread) == (0.0, 0.5, 0.0)


T0 = 1_700_000_000_000


def test_bytes_per_day_from_a_clusters_offsets():
    rule, econ = Rule(cpu="measured"), TopicEconomics()
    a = advise_topic("t", agg(min_ts=T0, max_ts=T0 + 2 * DAY), None, econ, Prices(), rule, topic_offsets=300_000)
    # 300,000 offsets at the sample's 1e9 / 100,000 = 10,000 stored bytes per record, over 2 days
    assert (a.stored_per_day, a.volume_source, a.priced) == (1.5e9, "offsets over 2 days", True)
    assert a.per_day_source == ("300000 offsets from each partition's earliest (ListOffsets) to its high watermark at "
                                "the sample's 10000 stored bytes per record, over their timestamps' span of 2 days")
    # without timestamps the offsets' bytes are one day's; without sampled records they tell no bytes
    flat = advise_topic("t", agg(min_ts=None), None, econ, Prices(), rule, topic_offsets=300_000)
    assert (flat.stored_per_day, flat.volume_source) == (3e9, "no timestamps")
    rows = [row(None, 1_000_000_000, 1.0, 2.0, records=0), row(ZSTD, 250_000_000, 4.0, 1.0)]
    empty = advise_topic("t", agg(rows, min_ts=T0, max_ts=T0 + 2 * DAY), None, econ, Prices(), rule,
                         topic_offsets=300_000)
    assert empty.stored_per_day == 5e8 and "at the sample's 1000000000 stored bytes per record" in empty.per_day_source
    instant = advise_topic("t", agg(min_ts=T0, max_ts=T0 + 1), None, econ, Prices(), rule, topic_offsets=300_000)
    assert (instant.stored_per_day, instant.volume_source) == (3e9 * DAY, "offsets over 1 ms")


def test_a_short_span_is_costed_but_not_priced():
    rule, econ = Rule(cpu="measured"), TopicEconomics()
    prof = {"min_ts": T0, "max_ts": T0 + 2 * DAY}
    a = advise_topic("t", agg(**prof), None, econ, Prices(), rule, min_span_ms=2 * DAY + 1)
    assert (a.priced, a.volume_source, a.stored_per_day) == (False, "not priced: span 2 days", 5e8)
    assert a.notes[0] == ("not priced: the timestamps span 2 days, too short to know a daily volume (--min-span-hours "
                          "48); the dollars shown extrapolate 953.7MiB to 476.8MiB/day and are left out of the "
                          "estate's total: give --bytes-per-day or a --volumes file")
    assert a.best.setting == ZSTD19  # ranked as at any volume
    exact = advise_topic("t", agg(**prof), None, econ, Prices(), rule, min_span_ms=2 * DAY)
    assert (exact.priced, exact.volume_source) == (True, "records over 2 days")
    flat = advise_topic("t", agg(min_ts=None), None, econ, Prices(), rule, min_span_ms=1)
    assert (flat.priced, flat.volume_source) == (False, "not priced: span 0 ms")
    for hours in (100.0005, 100.0015):  # --min-span-hours, noted to six significant figures
        note = advise_topic("t", agg(**prof), None, econ, Prices(), rule, min_span_ms=hours * 3_600_000).notes[0]
        assert "(--min-span-hours 100.001);" in note
    given = advise_topic("t", agg(**prof), None, TopicEconomics(bytes_per_day=7e8), Prices(), rule,
                         min_span_ms=3 * DAY)
    assert (given.priced, given.volume_source) == (True, "given, --prices")


def test_a_span_of_one_millisecond_is_a_span():
    a = advise_topic("t", agg(min_ts=T0, max_ts=T0 + 1), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    assert (a.stored_per_day, a.volume_source) == (1e9 * DAY, "records over 1 ms")


def test_span_text_units():
    from kcodec.advise.volumes import span_text as _span_text
    # each unit from exactly one of it: just below, the smaller unit rounds up to 60 (or 24 h, 1000 ms)
    spans = {2 * DAY: "2 days", DAY: "1 days", DAY - 1: "24 h", 3_600_000: "1 h", 3_599_999: "60 min",
             5_400_000: "1.5 h", 60_000: "1 min", 59_999: "60 s", 90_000: "1.5 min", 1000: "1 s", 1500: "1.5 s",
             999: "999 ms", 20: "20 ms"}
    assert {ms: _span_text(ms) for ms in spans} == spans


def test_a_sample_of_few_stored_bytes_scales_payload_by_them():
    """The payload per day is the stored bytes per day times the sample's payload over stored bytes."""
    econ, rule = TopicEconomics(bytes_per_day=7e8), Rule(cpu="measured")
    rows = [row(None, 1, 1.0, 2.0, payload=3), row(ZSTD, 1, 4.0, 1.0, payload=3)]
    a = advise_topic("t", agg(rows), None, econ, Prices(), rule)
    assert a.today.stored_per_day == a.stored_per_day == 7e8
    today = monthly_cost(7e8, 2.1e9, None, a.today.read_mbps, Prices(), econ)
    assert a.today.cost.cpu == pytest.approx(today.cpu) and a.today.cost.total == pytest.approx(today.total)
    (m,) = a.results
    assert m.stored_per_day == 7e8
    assert m.cost.total == pytest.approx(monthly_cost(7e8, 2.1e9, m.compress_mbps, m.read_mbps, Prices(), econ).total)


def test_a_sample_that_stored_nothing_costs_nothing():
    rows = [row(None, 0, 1.0, 2.0), row(ZSTD, 0, 4.0, 1.0)]
    a = advise_topic("t", agg(rows), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    assert (a.stored_per_day, a.today.stored_per_day, a.results[0].stored_per_day) == (0.0, 0.0, 0.0)
    assert a.today.cost.storage == a.results[0].cost.storage == 0.0


def test_settings_outside_the_cpu_model_are_named():
    # the model covers zstd 1-19 and gzip 1-9, not lz4's levels
    lz4_9 = Setting("lz4", 9, 16384, 5)
    rows = [row(None, 1_000_000_000, 1.0, 2.0), row(ZSTD19, 250_000_000, 4.0, 1.0), row(ZSTD, 260_000_000, 5.0, 1.0),
            row(GZIP, 200_000_000, 50.0, 1.0), row(LZ4, 400_000_000, 1.0, 0.5, partitions=5),
            row(lz4_9, 390_000_000, 2.0, 0.5)]
    a = advise_topic("t", agg(rows), None, TopicEconomics(), Prices(), Rule())
    assert a.rule == Rule() and {m.setting: m.cpu_source for m in a.results} == \
        {ZSTD19: "model", ZSTD: "model", GZIP: "model", LZ4: "model", lz4_9: "measured"}
    assert ("lz4:9: not in kcodec's CPU model; their CPU cost is this run's measurement, which moves with the "
            "machine's load") in a.notes
    assert not [n for n in advise_topic("t", agg(), None, TopicEconomics(), Prices(), Rule()).notes
                if "CPU model" in n]
    measured = advise_topic("t", agg(rows), None, TopicEconomics(), Prices(), Rule(cpu="measured"))
    assert not [n for n in measured.notes if "CPU model" in n]


def test_the_setting_for_older_clients_must_save_something():
    """Today's batches measured as zstd at its default level cost what that setting costs: no saving,
    so clients before 3.8 are told nothing."""
    rows = [row(None, 260_000_000, 5.0, 1.0), row(ZSTD19, 250_000_000, 4.0, 1.0), row(ZSTD, 260_000_000, 5.0, 1.0)]
    a = advise_topic("t", agg(rows, codec_bytes={"zstd": 1}), None, TopicEconomics(), Prices(),
                     Rule(cpu="measured", min_saving=0.01))
    zstd = next(m for m in a.results if m.setting == ZSTD)
    assert a.best.setting == ZSTD19 and zstd.cost.total == a.today.cost.total
    assert a.best_without_level is None
