"""The charts' layout: every label of the topic chart inside the picture, bars as thick in one panel as in the other."""
from __future__ import annotations

import pytest

from kcodec.advise import charts
from kcodec.advise.cost import MonthlyCost
from kcodec.advise.grid import Setting
from kcodec.advise.recommend import Measured, TopicAdvice

pytest.importorskip("matplotlib", reason="the charts need matplotlib (the spark extra)")


def _measured(setting, ratio, mbps, cost):
    # 1,000 records of 100 kB: stored bytes give the ratio, CPU seconds the MB/s
    m = Measured(setting, 1000, 100_000, 100_000, 10, int(100_000 / ratio), 0.1 / mbps, 0.01, ratio, 0.0, 1)
    m.cost = MonthlyCost(cost * 0.4, cost * 0.5, cost * 0.1)
    m.stored_per_day = 1e9
    return m


def _advice() -> TopicAdvice:
    codecs = (("lz4", None, 2.8, 360.0, 16.0), ("zstd", 3, 5.75, 170.0, 9.0), ("gzip", None, 5.7, 48.0, 9.5),
              ("none", None, 1.0, 2400.0, 44.0))
    results = [_measured(Setting(codec, level, size, linger), ratio, mbps, cost)
               for codec, level, ratio, mbps, cost in codecs for size in (16384, 1048576) for linger in (0, 5, 100)]
    best = min(results, key=lambda m: m.cost.total)
    return TopicAdvice("clicks", {"codec_bytes": {"none": 1}, "batch_records": {"p50": 10}},
                       _measured(None, 1.0, 2400.0, 44.0), results, best, None, "rule", 1e9, "given", 1,
                       volume_source="given")


def test_every_label_of_the_topic_chart_is_inside_the_picture(monkeypatch):
    seen = []
    draw = charts._png

    def measured_png(fig, margins=None):
        fig.subplots_adjust(**margins)
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        width, height = fig.bbox.width, fig.bbox.height
        for ax in fig.axes:
            # the axes with what it draws around it: tick labels, axis labels, title, legend
            box = ax.get_tightbbox(renderer)
            seen.append((ax.get_title(), box.x0 >= 0 and box.x1 <= width and box.y0 >= 0 and box.y1 <= height))
            label = ax.yaxis.label.get_window_extent(renderer)
            seen.append((ax.get_ylabel(), label.x0 >= 0))
        return draw(fig, margins)

    monkeypatch.setattr(charts, "_png", measured_png)
    png = charts.topic_png(_advice())
    assert png.startswith(b"\x89PNG")
    assert ("compression ratio", True) in seen and ("$ per month", True) in seen
    assert [text for text, inside in seen if not inside] == []


def test_the_overview_bars_are_as_thick_in_both_panels(monkeypatch):
    heights = []
    draw = charts._png

    def measured_png(fig, margins=None):
        fig.tight_layout()
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        heights.extend({round(bar.get_window_extent(renderer).height, 1) for bar in ax.patches} for ax in fig.axes)
        return draw(fig, margins)

    monkeypatch.setattr(charts, "_png", measured_png)
    topics = [_advice() for _ in range(20)]
    for n, a in enumerate(topics):
        a.topic = f"orders-{n:05d}"
    charts.overview_png(topics, groups=[("zstd:3@16KiB/5ms", 300.0, 12), ("zstd:1@16KiB/100ms", 200.0, 8)])
    groups, ranked = heights
    assert len(groups) == len(ranked) == 1 and groups == ranked
