"""PNG charts of the advice (matplotlib, no display needed).

Points are not labelled one by one, which cannot stay readable where settings
cluster: colour says the codec, marker size the batch size, marker shape the
linger, a star marks today and a black ring the recommendation, all explained
in a legend outside the axes.
"""
from __future__ import annotations

import io
from typing import Sequence

from kcodec.advise.recommend import TopicAdvice
from kcodec.escape import chart_text

__all__ = ["overview_png", "topic_png"]

_LINGER_MARKERS = "osD^vP*X"


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _png(fig) -> bytes:
    plt = _plt()
    buf = io.BytesIO()
    fig.tight_layout()
    fig.savefig(buf, format="png", dpi=100)
    plt.close(fig)
    return buf.getvalue()


def overview_png(advice: Sequence[TopicAdvice], top: int = 25) -> bytes:
    """$/month per topic, today against the recommendation (the topics saving most)."""
    plt = _plt()
    shown = sorted(advice, key=lambda a: -a.saving)[:top]
    fig, ax = plt.subplots(figsize=(10, 1.2 + 0.45 * len(shown)))
    y = range(len(shown))
    ax.barh([i + 0.2 for i in y], [a.today.cost.total for a in shown], height=0.4, label="today", color="#c44")
    ax.barh([i - 0.2 for i in y], [(a.best or a.today).cost.total for a in shown], height=0.4,
            label="recommended", color="#4a4")
    ax.set_yticks(list(y), [chart_text(a.topic, 40) for a in shown])
    ax.invert_yaxis()
    ax.set_xlabel("$ per month (storage + network + CPU)")
    ax.legend(loc="lower right")
    ax.set_title("kcodec advise: cost per topic, today and with the recommended settings")
    return _png(fig)


def topic_png(a: TopicAdvice) -> bytes:
    """Ratio against compression throughput, the batch.size x linger.ms effect, and the cost breakdown."""
    plt = _plt()
    fig, axes = plt.subplots(1, 3, figsize=(17, 4.8), gridspec_kw={"width_ratios": [2.2, 1.6, 1]})
    ax = axes[0]
    codecs = sorted({m.setting.codec for m in a.results})
    colors = dict(zip(codecs, plt.cm.tab10.colors))
    sizes = sorted({m.setting.batch_bytes for m in a.results})
    lingers = sorted({m.setting.linger_ms for m in a.results})
    for m in a.results:
        ax.scatter(m.compress_mbps, m.ratio, color=colors[m.setting.codec],
                   s=25 + 55 * sizes.index(m.setting.batch_bytes),
                   marker=_LINGER_MARKERS[lingers.index(m.setting.linger_ms) % len(_LINGER_MARKERS)], alpha=0.75,
                   edgecolors="black" if m is a.best else "none", linewidths=2)
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
    codec = a.best.setting if a.best is not None else max(a.results, key=lambda m: m.ratio).setting
    for b in sizes:
        pts = sorted((m.setting.linger_ms, m.ratio) for m in a.results
                     if m.setting.codec == codec.codec and m.setting.level == codec.level
                     and m.setting.batch_bytes == b)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=f"batch.size {b}")
    ax.axhline(a.today.ratio, color="black", linestyle="--", linewidth=1, label="today")
    ax.set_xscale("symlog", linthresh=1)
    ax.set_xlabel("linger.ms")
    ax.set_ylabel("compression ratio")
    ax.set_title(f"batching effect ({codec.codec}{'' if codec.level is None else ':' + str(codec.level)})",
                 fontsize=10)
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
    return _png(fig)
