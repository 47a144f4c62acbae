"""PNG charts of the advice (matplotlib, no display needed).

Points are not labelled one by one, which cannot stay readable where settings
cluster: colour says the codec, marker size the batch size, marker shape the
linger, a star marks today and a black ring the recommendation, all explained
in a legend outside the axes.
"""
from __future__ import annotations

import io
from typing import Dict, Optional, Sequence, Tuple

from kcodec._extras import require
from kcodec.advise.recommend import TopicAdvice
from kcodec.escape import chart_text

__all__ = ["overview_png", "topic_png"]

_LINGER_MARKERS = "osD^vP*X"
#: The topic chart's layout: room on the left for the ratio axis, after the first axes for its legend.
_TOPIC_MARGINS = {"left": 0.062, "right": 0.985, "bottom": 0.12, "top": 0.93, "wspace": 1.02}


def _plt():
    matplotlib = require("matplotlib", "matplotlib", "The advice's charts")
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig, margins: Optional[dict] = None) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    if margins is None:
        fig.tight_layout()
    else:  # a layout fixed for the chart's shape: tight_layout draws the figure once more to measure it
        fig.subplots_adjust(**margins)
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def overview_png(advice: Sequence[TopicAdvice], top: int = 25,
                 groups: Optional[Sequence[Tuple[str, float, int]]] = None) -> bytes:
    """The saving by setting group (label, $/month, topics) and the topics ranked by saving."""
    plt = _plt()
    shown = sorted((a for a in advice if a.priced), key=lambda a: (-a.saving, a.topic))[:top]
    groups = list(groups or [])[:12]
    rows = max(len(shown), len(groups), 1)
    fig, axes = plt.subplots(1, 2, figsize=(12.4, 1.4 + 0.3 * rows), gridspec_kw={"width_ratios": [1, 1]})
    ax = axes[0]
    y = range(len(groups))
    ax.barh(list(y), [g[1] for g in groups], color="#4a4")
    ax.set_yticks(list(y), [chart_text(f"{g[0]} ({g[2]})", 34) for g in groups], fontsize=8)
    # both panels hold as many rows as the longer, top down: a bar is as thick in one as in the other,
    # where two settings' bars once filled the height of twenty topics'
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlabel("$ per month saved")
    ax.set_title("saving by setting (topics)", fontsize=10)
    ax = axes[1]
    y = range(len(shown))
    ax.barh(list(y), [a.saving for a in shown], color="#4a4")
    ax.set_yticks(list(y), [chart_text(a.topic, 34) for a in shown], fontsize=8)
    ax.set_ylim(rows - 0.5, -0.5)
    ax.set_xlabel("$ per month saved")
    ax.set_title(f"the {len(shown)} topics saving most", fontsize=10)
    return _png(fig)


def topic_png(a: TopicAdvice) -> bytes:
    """Ratio against compression throughput, the batch.size x linger.ms effect, and the cost breakdown."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(12.4, 4.2), gridspec_kw={"width_ratios": [2.2, 1.6, 1]})
    ax = axes[0]
    codecs = sorted({m.setting.codec for m in a.results})
    colors = dict(zip(codecs, plt.cm.tab10.colors))
    sizes = sorted({m.setting.batch_bytes for m in a.results})
    lingers = sorted({m.setting.linger_ms for m in a.results})
    # One collection per marker shape (a linger.ms), colours and sizes per point: a call per point
    # made a chart cost about a CPU-second.
    for i, g in enumerate(lingers):
        pts = [m for m in a.results if m.setting.linger_ms == g]
        ax.scatter([m.compress_mbps for m in pts], [m.ratio for m in pts],
                   c=[colors[m.setting.codec] for m in pts],
                   s=[25 + 55 * sizes.index(m.setting.batch_bytes) for m in pts],
                   marker=_LINGER_MARKERS[i % len(_LINGER_MARKERS)], alpha=0.75,
                   edgecolors="black", linewidths=[2 if m is a.best else 0 for m in pts])
    ax.scatter(a.today.compress_mbps, a.today.ratio, marker="*", s=260, color="black", zorder=5,
               label=f"today ({a.today.ratio:.2f}x)")
    if a.best is not None:
        ax.scatter([], [], marker="s", facecolors="none", edgecolors="black", linewidths=2, s=80,
                   label=f"set {a.best.label}")
    ax.set_xscale("log")
    ax.set_xlabel("compression MB/s per core (log)")
    ax.set_ylabel("compression ratio")
    ax.grid(True, alpha=0.3)
    for c in codecs:
        ax.scatter([], [], color=colors[c], label=c)
    for i, g in enumerate(lingers):
        ax.scatter([], [], color="gray", marker=_LINGER_MARKERS[i % len(_LINGER_MARKERS)], label=f"linger {g} ms")
    # The legend sits outside the axes, so it never hides a point.
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), title="size = batch.size",
              title_fontsize=7)
    ax.set_title(f"{chart_text(a.topic)}: ratio against speed", fontsize=10)

    ax = axes[1]
    # The curve: for each codec and level, the saving at each linger.ms (its best batch.size there).
    by_codec: Dict[str, Dict[int, float]] = {}
    for m in a.results:
        key = m.setting.codec_label
        at = by_codec.setdefault(key, {})
        g = m.setting.linger_ms
        at[g] = max(at.get(g, float("-inf")), a.today.cost.total - m.cost.total)
    for key in sorted(by_codec):
        curve = sorted(by_codec[key].items())
        ax.plot([p[0] for p in curve], [p[1] for p in curve], marker="o", label=chart_text(key, 20))
    ax.axhline(0, color="black", linestyle="--", linewidth=1, label="today")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlim(0, max(lingers) * 1.6 + 1)  # no negative lingers, and the last point off the edge
    ax.set_xlabel("linger.ms (added latency, ms)")
    ax.set_ylabel("$ per month saved")
    ax.set_title("saving against linger.ms, per codec", fontsize=10)
    ax.legend(fontsize=7)
    ax.grid(True, alpha=0.3)

    ax = axes[2]
    bars = [("today", a.today.cost)] + ([("set", a.best.cost)] if a.best is not None else [])
    bottom = [0.0] * len(bars)
    for part, color in (("storage", "#69c"), ("network", "#e96"), ("cpu", "#9b9")):
        vals = [getattr(c, part) for _, c in bars]
        ax.bar([n for n, _ in bars], vals, bottom=bottom, color=color, label=part)
        bottom = [x + v for x, v in zip(bottom, vals)]
    ax.set_ylabel("$ per month")
    ax.set_title("cost breakdown", fontsize=10)
    ax.legend(fontsize=7)
    return _png(fig, _TOPIC_MARGINS)
