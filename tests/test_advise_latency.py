"""``kcodec.advise.latency``: the knee, the saving at each linger.ms, and the producer memory of a setting,
on measurements given by hand."""
from __future__ import annotations

import dataclasses

import pytest

from kcodec.advise.cost import Prices, TopicEconomics
from kcodec.advise.grid import Setting, parse_share
from kcodec.advise.latency import DEFAULT_BUFFER_MEMORY, producer_memory
from kcodec.advise.options import Options, check_options
from kcodec.advise.recommend import Rule, advise_topic
from kcodec.advise.topic_text import cost_lines
from kcodec.errors import KcodecError
from test_advise_recommend import agg, replayed, row

FREE_CPU = Prices(vcpu_hour=0.0)  # the choice rests on bytes alone
TODAY = 1_000_000_000
# stored bytes per setting: the saving grows with linger.ms and batch.size, and flattens
GRID = {Setting("lz4", None, 16384, 0): 700_000_000, Setting("lz4", None, 16384, 5): 420_000_000,
        Setting("lz4", None, 1 << 20, 5): 410_000_000, Setting("lz4", None, 16384, 20): 390_000_000,
        Setting("lz4", None, 1 << 20, 20): 385_000_000, Setting("lz4", None, 1 << 20, 100): 380_000_000,
        Setting("lz4", None, 1 << 20, 500): 300_000_000}


def _advice(rule: Rule):
    rows = [row(None, TODAY, 1.0, 2.0)] + [row(s, stored, 1.0, 1.0) for s, stored in GRID.items()]
    return advise_topic("t", agg(rows), None, TopicEconomics(), FREE_CPU, rule)


def test_the_knee_is_the_smallest_linger_then_batch_near_the_best_in_budget():
    # within 100 ms the best stores 380 MB (saves 620 of 1000); 90% of that is 558: 5 ms at 16 KiB saves 580
    a = _advice(Rule(max_linger_ms=100, knee=0.9))
    assert a.best.setting == Setting("lz4", None, 16384, 5)
    assert a.cheapest.setting == Setting("lz4", None, 1 << 20, 100)
    # a stricter share needs 20 ms: 97% of 620 is 601.4; 16 KiB at 20 ms saves 610
    assert _advice(Rule(max_linger_ms=100, knee=0.97)).best.setting == Setting("lz4", None, 16384, 20)
    # share 1 is the cheapest itself, and then no knee line
    one = _advice(Rule(max_linger_ms=100, knee=1.0))
    assert one.best.setting == Setting("lz4", None, 1 << 20, 100) and one.cheapest is None
    # a budget of 1000 ms takes in the 500 ms setting, which saves 700: only it keeps 90% (630) of that
    assert _advice(Rule(max_linger_ms=1000, knee=0.9)).best.setting == Setting("lz4", None, 1 << 20, 500)


def test_the_saving_at_each_linger():
    a = _advice(Rule(max_linger_ms=100, knee=0.9))
    today = a.today.cost.total
    curve = {p.linger_ms: p for p in a.curve}
    assert sorted(curve) == [0, 5, 20, 100, 500]
    assert curve[5].best.setting == Setting("lz4", None, 1 << 20, 5)
    assert curve[100].saving == pytest.approx(today - a.cheapest.cost.total)
    assert [p.in_budget for p in a.curve] == [True, True, True, True, False]
    lines = dict(cost_lines(a, lambda x: f"${x:.2f}"))
    assert lines["latency"].startswith("up to 5 ms added to each send (linger.ms=5")
    assert "500 ms $" in lines["by linger"] and lines["by linger"].endswith("over budget")
    assert lines["knee"].startswith("the cheapest within the budget, lz4@1MiB/100ms, saves $")
    # the 0 ms point of a Java producer says how far a linger.ms=0 prediction holds; librdkafka's idle
    # native sender sends records alone, and its 0 ms point needs no such line
    assert a.profile.replay is None  # no client told: Java's rules, as the replay follows
    assert lines["at 0 ms"].startswith("a Java producer's batches at linger.ms=0")
    a.profile = dataclasses.replace(a.profile, replay=replayed("librdkafka"))
    assert "at 0 ms" not in dict(cost_lines(a, lambda x: f"${x:.2f}"))


def test_producer_memory_against_buffer_memory():
    m = producer_memory(1 << 20, 48)
    assert (m.needed, m.buffer_memory, DEFAULT_BUFFER_MEMORY) == (48 << 20, 32 << 20, 32 << 20)
    assert m.text() == ("batch.size 1MiB x 48 partition(s) = 48MiB of buffer.memory 32MiB (150%): exceeds it: "
                        "send() blocks up to max.block.ms once it is full; raise buffer.memory or lower batch.size")
    assert producer_memory(16384, 4).text().endswith("(<1%): fits")
    assert producer_memory(1 << 20, 0).partitions == 1


def test_shares_take_percentages():
    assert parse_share("5%") == parse_share("0.05") == 0.05
    assert parse_share(".9") == 0.9 and parse_share("100%") == 1.0
    for bad in ("x", "-1", "150%", "1.5"):
        with pytest.raises(ValueError):
            parse_share(bad)
    c = check_options(Options(min_saving="5%", knee="80%", buffer_memory="64m"))
    assert (c.rule.min_saving, c.rule.knee, c.buffer_memory) == (0.05, 0.8, 64 << 20)
    assert Options().knee == 0.9 and check_options(Options()).rule.knee == 0.9


@pytest.mark.parametrize("kwargs, message", [
    ({"min_saving": "100%"}, "^--min-saving 100%: a share below 1"),
    ({"min_saving": "-5%"}, "^--min-saving -5%: not a share"),
    ({"knee": "0"}, "^--knee 0: a share above 0"),
    ({"knee": "1.2"}, "^--knee 1.2: a share is at most 1"),
    ({"max_linger_ms": -1.0}, "^--max-linger-ms -1: a number, 0 or more$"),
    ({"min_compress_mbps": float("nan")}, "^--min-compress-mbps nan: a number, 0 or more$"),
    ({"producer_partitions": 0}, "^--producer-partitions 0: at least 1$"),
    ({"buffer_memory": "lots"}, "^--buffer-memory lots: not a size"),
])
def test_rule_flags_are_range_checked(kwargs, message):
    with pytest.raises(KcodecError, match=message):
        check_options(Options(**kwargs))


def test_java_linger_0_is_priced_at_its_worst_case():
    # The calibrated 0 ms figure (600 MB) would be the cheapest; with every record alone it stores 900 MB,
    # more than 5 ms (650 MB): the rule must not pick 0 ms on a figure the next sender's load may not give.
    zero, five = Setting("lz4", None, 16384, 0), Setting("lz4", None, 16384, 5)

    def advice(worst, client="java"):
        rows = [row(None, TODAY, 1.0, 2.0), row(zero, 600_000_000, 1.0, 1.0, worst_stored_bytes=worst),
                row(five, 650_000_000, 1.0, 1.0)]
        return advise_topic("t", agg(rows, replay=replayed(client)), None, TopicEconomics(),
                            FREE_CPU, Rule(max_linger_ms=100))

    a = advice(None)  # no worst case (librdkafka's native sender, or before this rule): the 0 ms figure stands
    assert a.best.setting == zero
    a = advice(900_000_000)
    assert a.best.setting == five
    m0 = next(m for m in a.results if m.setting == zero)
    assert m0.stored_bytes == 600_000_000 and m0.priced_bytes == 900_000_000
    assert m0.worst_ratio == pytest.approx(1_100_000_000 / 900_000_000)
    assert m0.stored_per_day == pytest.approx(a.today.stored_per_day * 0.9)  # priced at the worst case
    lines = dict(cost_lines(a, lambda x: f"${x:.2f}"))
    assert lines["at 0 ms"].endswith("lz4@16KiB/0ms: 1.83x as today's sender, 1.22x at worst")
    from kcodec.advise.topic_text import row_mark
    assert row_mark(a, m0).endswith("priced at its worst case, every record alone: 1.22x")
    # where even the worst case pays most, 0 ms is still the pick
    assert advice(620_000_000).best.setting == zero
