"""Aggregating measurements into the advice: table, projection, recommendation, chart, HTML."""
from __future__ import annotations

import base64
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from kcodec.advise.grid import Setting, format_size
from kcodec.escape import html_text, json_text

__all__ = ["Result", "aggregate", "recommend", "format_table", "write_report", "RULE"]

RULE = ("smallest storage among the settings whose compression speed is at least {min_compress:.0f} MB/s "
        "per core and whose read speed is at least {min_read:.0f} MB/s per core")


@dataclass
class Result:
    setting: Setting
    records: int
    payload_bytes: int
    batches: int
    stored_bytes: int
    compress_seconds: float
    read_seconds: float
    ratio: float = 1.0  # stored bytes of codec none at the same batch size / stored bytes
    projected_bytes: float = 0.0
    saving: float = 0.0  # fraction saved against the current setting

    @property
    def compress_mbps(self) -> float:
        return self.payload_bytes / 1e6 / max(self.compress_seconds, 1e-9)

    @property
    def read_mbps(self) -> float:
        return self.payload_bytes / 1e6 / max(self.read_seconds, 1e-9)


def aggregate(rows: Sequence[Dict], current: Setting, current_bytes: Optional[float]) -> List[Result]:
    """Sum task rows per setting and fill ratio, projected size and saving."""
    acc: Dict[Setting, Result] = {}
    for r in rows:
        s = Setting(r["codec"], r["level"], int(r["batch_bytes"]))
        res = acc.get(s)
        if res is None:
            res = acc[s] = Result(s, 0, 0, 0, 0, 0.0, 0.0)
        res.records += r["records"]
        res.payload_bytes += r["payload_bytes"]
        res.batches += r["batches"]
        res.stored_bytes += r["stored_bytes"]
        res.compress_seconds += r["compress_seconds"]
        res.read_seconds += r["read_seconds"]
    results = sorted(acc.values(), key=lambda x: x.setting)
    none_at = {r.setting.batch_bytes: r.stored_bytes for r in results if r.setting.codec == "none"}
    base = acc.get(current)
    for r in results:
        plain = none_at.get(r.setting.batch_bytes, r.payload_bytes)
        r.ratio = plain / max(r.stored_bytes, 1)
        if base is not None:
            scale = (current_bytes if current_bytes else base.stored_bytes) / max(base.stored_bytes, 1)
            r.projected_bytes = r.stored_bytes * scale
            r.saving = 1 - r.stored_bytes / max(base.stored_bytes, 1)
    return results


def recommend(results: Sequence[Result], min_compress_mbps: float = 50.0,
              min_read_mbps: float = 100.0) -> Optional[Result]:
    """Apply :data:`RULE`; ties go to the faster compressor."""
    ok = [r for r in results if r.compress_mbps >= min_compress_mbps and r.read_mbps >= min_read_mbps]
    if not ok:
        return None
    return min(ok, key=lambda r: (r.stored_bytes, -r.compress_mbps))


def format_table(results: Sequence[Result], best: Optional[Result], current: Setting) -> str:
    head = (f"{'setting':<20} {'ratio':>6} {'stored':>10} {'projected':>10} {'saving':>7} "
            f"{'compress MB/s':>13} {'read MB/s':>10}")
    lines = [head, "-" * len(head)]
    for r in results:
        mark = " <- recommended" if best is not None and r.setting == best.setting else ""
        if r.setting == current:
            mark += " (current)"
        lines.append(f"{r.setting.label:<20} {r.ratio:>6.2f} {format_size(r.stored_bytes):>10} "
                     f"{format_size(r.projected_bytes):>10} {r.saving * 100:>6.1f}% "
                     f"{r.compress_mbps:>13.0f} {r.read_mbps:>10.0f}{mark}")
    return "\n".join(lines)


def _chart(results: Sequence[Result], best: Optional[Result], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 5), sharey=True)
    codecs = sorted({r.setting.codec for r in results})
    colors = dict(zip(codecs, plt.cm.tab10.colors))
    sizes = sorted({r.setting.batch_bytes for r in results})
    for ax, attr, title in ((axes[0], "compress_mbps", "compression"), (axes[1], "read_mbps", "read")):
        for r in results:
            ax.scatter(getattr(r, attr), r.ratio, color=colors[r.setting.codec],
                       s=30 + 60 * sizes.index(r.setting.batch_bytes), alpha=0.8,
                       edgecolors="black" if best is not None and r.setting == best.setting else "none",
                       linewidths=2)
            ax.annotate(r.setting.label, (getattr(r, attr), r.ratio), fontsize=7,
                        xytext=(3, 3), textcoords="offset points")
        ax.set_xscale("log")
        ax.set_xlabel(f"{title} throughput (MB/s per core, log scale)")
        ax.grid(True, alpha=0.3)
    axes[0].set_ylabel("compression ratio (vs. uncompressed batches)")
    for c in codecs:
        axes[1].scatter([], [], color=colors[c], label=c)
    axes[1].legend(title="codec (marker size = batch size)", fontsize=8)
    fig.suptitle("kcodec advise: compression ratio against throughput")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_report(out_dir: Path, results: Sequence[Result], best: Optional[Result], current: Setting,
                 context: Dict) -> Dict[str, Path]:
    out_dir.mkdir(parents=True, exist_ok=True)
    png = out_dir / "report.png"
    _chart(results, best, png)
    doc = {
        "context": context,
        "current": current.label,
        "recommended": best.setting.label if best else None,
        "results": [dict(asdict(r), setting=r.setting.label, codec=r.setting.codec, level=r.setting.level,
                         batch_bytes=r.setting.batch_bytes, compress_mbps=r.compress_mbps,
                         read_mbps=r.read_mbps) for r in results],
    }
    (out_dir / "results.json").write_text(json_text(doc, indent=1, default=str))
    rows = "".join(
        f"<tr{' class=best' if best is not None and r.setting == best.setting else ''}>"
        f"<td>{html_text(r.setting.label)}</td><td>{r.ratio:.2f}</td><td>{format_size(r.stored_bytes)}</td>"
        f"<td>{format_size(r.projected_bytes)}</td><td>{r.saving * 100:.1f}%</td>"
        f"<td>{r.compress_mbps:.0f}</td><td>{r.read_mbps:.0f}</td></tr>" for r in results)
    img = base64.b64encode(png.read_bytes()).decode("ascii")
    ctx = "".join(f"<li>{html_text(str(k))}: {html_text(str(v))}</li>" for k, v in context.items())
    page = f"""<!doctype html><html><head><meta charset="utf-8"><title>kcodec advise</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}
tr.best{{background:#dfd;font-weight:bold}}</style></head><body>
<h1>kcodec advise</h1>
<p>Recommended: <b>{html_text(best.setting.label) if best else "none meets the rule"}</b>
(current: {html_text(current.label)}). Rule: {html_text(context.get("rule", ""))}.</p>
<ul>{ctx}</ul>
<table><tr><th>setting</th><th>ratio</th><th>stored</th><th>projected</th><th>saving</th>
<th>compress MB/s</th><th>read MB/s</th></tr>{rows}</table>
<p><img src="data:image/png;base64,{img}" alt="ratio against throughput"></p>
</body></html>"""
    (out_dir / "report.html").write_text(page)
    return {"png": png, "html": out_dir / "report.html", "json": out_dir / "results.json"}
