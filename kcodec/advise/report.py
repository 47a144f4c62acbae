"""The advice as a terminal summary, HTML with a section per topic, PNG charts, JSON and CSV."""
from __future__ import annotations

import base64
import csv
import io
import os
import tempfile
from pathlib import Path
from typing import Dict, Optional, Sequence

from kcodec.advise.assumptions import Assumption, assumption_lines, assumption_rows
from kcodec.advise.cost import GB
from kcodec.advise.latency import cost_lines, curve_doc, percent
from kcodec.advise.notes import exclusions, money
from kcodec.advise.replay import LIMITS
from kcodec.advise.grid import format_size
from kcodec.advise.recommend import Measured, TopicAdvice
from kcodec.escape import csv_cell, file_name, html_text, json_text, terminal_text

__all__ = ["summary_text", "details_text", "write_reports"]


_money = money


def _mix(a: TopicAdvice) -> str:
    return " ".join(f"{k} {percent(v)}" for k, v in sorted(a.codec_mix.items(), key=lambda kv: -kv[1]))


def _client_config(a: TopicAdvice) -> Dict[str, str]:
    """The recommended setting in the configuration names of the client the replay followed."""
    from kcodec.advise.replay import client_config, client_rules

    if a.best is None:
        return {}
    java = a.config()
    s = a.best.setting
    rules = client_rules(a.profile.get("replay", {}).get("client") or "java")
    return client_config(rules, s.codec, s.level, f"compression.{s.codec}.level" not in java, s.batch_bytes,
                         s.linger_ms)


def _config_text(a: TopicAdvice) -> str:
    if a.best is None:
        return "keep today's settings"
    return " ".join(f"{k}={v}" for k, v in _client_config(a).items())


def _replay_text(a: TopicAdvice) -> Optional[str]:
    r = a.profile.get("replay") or {}
    if not r:
        return None
    who = r["client"] + ("" if len(r["clients"]) == 1 else f" (chunks disagree: {', '.join(r['clients'])})")
    producers = (f"{r['producer_ids']} producer id(s) seen per partition, each replayed on its own"
                 if r.get("producer_ids") else
                 f"no producer ids: {r.get('producers_replayed', 1)} producer(s) per partition assumed (--producers)")
    share = r["calibrated_share"]
    if not share:
        return (f"{who} batching rules; {producers}; sender delay not calibrated (today's batches were cut by "
                f"size, or too few): {r['sender_delay_ms']:.3g} ms assumed")
    part = "" if share == 1 else f", on {share * 100:.0f}% of chunks"
    return (f"{who} batching rules; {producers}; sender delay {r['sender_delay_ms']:.3g} ms calibrated on today's batches "
            f"(calibration error {r['calibration_error'] * 100:+.1f}% records/batch{part})")


def summary_text(advice: Sequence[TopicAdvice], current_bytes: Optional[int] = None,
                 current_size_text: Optional[str] = None, bill: Sequence[Assumption] = (),
                 storage_price: Optional[tuple] = None) -> str:
    """Per topic: today, what to set, $/month saved; then the total and the details."""
    lines = ["per topic: today -> what to set (producer configuration) and $/month saved", ""]
    total_today = total_best = 0.0
    for a in advice:
        t = a.today
        best = a.best or t
        total_today += t.cost.total
        total_best += best.cost.total
        lines.append(f"{terminal_text(a.topic)}")
        lines.append(f"  today      {_mix(a)}; {a.profile['batch_records']['p50']:.0f} records/batch (median), "
                     f"{t.ratio:.2f}x; {format_size(a.stored_per_day)}/day; {_money(t.cost.total)}/month")
        lines.append(f"  set        {_config_text(a)}")
        replay = _replay_text(a)
        if replay:
            lines.append(f"  replay     {replay}")
        if a.best is not None:
            forced = "" if a.chosen_by == "rule" else f"chosen by {a.chosen_by}, not by the rule: "
            if a.saving < 0:
                forced += f"costs {_money(-a.saving)}/month more; "
            lines.append(f"  saves      {forced}{_money(a.saving)}/month ({_money(t.cost.total)} -> {_money(best.cost.total)}: "
                         f"storage {_money(t.cost.storage - best.cost.storage)}, network "
                         f"{_money(t.cost.network - best.cost.network)}, CPU {_money(t.cost.cpu - best.cost.cpu)}); "
                         f"{best.ratio:.2f}x +/- {best.ratio_std:.2f} over {best.chunks} chunks")
        for label, text in cost_lines(a, _money):
            lines.append(f"  {label:<10} {text}")
        if a.best is not None:
            if a.best_without_level is not None and (a.profile.get("replay") or {}).get("client", "java") == "java":
                w = a.best_without_level
                lines.append(f"  pre-3.8    compression.type={w.setting.codec} batch.size={w.setting.batch_bytes} "
                             f"linger.ms={w.setting.linger_ms} (clients/brokers older than 3.8 cannot set a "
                             f"level; saves {_money(t.cost.total - w.cost.total)}/month)")
            lines.append(f"  topic      compression.type=producer (a topic codec that differs from the "
                         f"producer's makes brokers rebuild every batch: about "
                         f"{_money(a.recompress_cpu)}/month of CPU here)")
        for n in a.notes:
            lines.append(f"  note       {terminal_text(n)}")
        if a.assumptions:
            lines.append("  assumes")
            lines.extend(terminal_text(x) for x in assumption_lines(a.assumptions, "    "))
        lines.append("")
    saved = total_today - total_best
    lines.append(f"total: {_money(total_today)}/month today, {_money(total_best)}/month with the settings above: "
                 f"{_money(saved)}/month saved ({saved / max(total_today, 1e-9) * 100:.0f}%)")
    if bill:
        lines.append("the bill assumes")
        lines.extend(assumption_lines(bill))
    lines.append(f"replay: {LIMITS}")
    if current_bytes is not None:
        today_stored = sum(a.today.stored_bytes for a in advice)
        after = sum((a.best or a.today).stored_bytes for a in advice)
        became = current_bytes * after / max(1, today_stored)
        line = f"today's {current_size_text} would become {format_size(became)}"
        if storage_price is not None:  # ($/GB-month, replicas billed)
            price, replicas = storage_price
            line += (f": stored, {_money(current_bytes / GB * replicas * price)}/month -> "
                     f"{_money(became / GB * replicas * price)}/month ({replicas} replica(s) at ${price:g}/GB-month; "
                     f"apart from the totals above, which price bytes a day x retention)")
        lines.append(line)
    lines.append("")
    lines.append(details_text(advice))
    return "\n".join(lines)


def details_text(advice: Sequence[TopicAdvice], top: int = 8) -> str:
    lines = ["details"]
    for a in advice:
        p = a.profile
        br, bb = p["batch_records"], p["batch_bytes"]
        lines.append(f"{terminal_text(a.topic)}: {a.partitions} partition(s) measured, {a.today.records} records, "
                     f"timestamps {a.timestamp_type}; bytes/day from {a.per_day_source}")
        lines.append(f"  today: records/batch p10/p50/p90 {br['p10']:.0f}/{br['p50']:.0f}/{br['p90']:.0f} "
                     f"(mean {br['mean']:.1f}); bytes/batch {format_size(bb['p10'])}/{format_size(bb['p50'])}/"
                     f"{format_size(bb['p90'])}; magic {', '.join(f'v{k}: {v}' for k, v in p['magic_batches'].items() if v)} "
                     f"batches; ratio {a.today.ratio:.2f}x +/- {a.today.ratio_std:.2f}; {_record_sizes(p)}")
        head = (f"  {'setting':<24} {'ratio':>12} {'rec/batch':>9} {'MB/s c/r':>11} {'measured c/r':>19} "
                f"{'$/month':>9} {'storage':>9} {'network':>9} {'cpu':>8}")
        lines.append(head)
        ranked = sorted(a.results, key=lambda m: m.cost.total)
        named = [m for m in (a.best, a.cheapest, a.best_without_level) if m is not None]
        rows = [m for m in ranked if m in ranked[:top] or any(m is n for n in named)]
        for m in [a.today] + rows:
            mark = _row_mark(a, m)
            lines.append(f"  {m.label:<24} {m.ratio:>6.2f}+/-{m.ratio_std:<4.2f} {m.records_per_batch:>9.1f} "
                         f"{m.compress_mbps:>5.0f}/{m.read_mbps:<5.0f} {_measured_speeds(m):>19} {_money(m.cost.total):>9} "
                         f"{_money(m.cost.storage):>9} {_money(m.cost.network):>9} {_money(m.cost.cpu):>8}{mark}")
    return "\n".join(lines)


def _row_mark(a: TopicAdvice, m: Measured) -> str:
    """What the rule did with a row: set, or left out and why (today's row has no mark)."""
    if m is a.today:
        return ""
    if a.best is not None and m is a.best:
        return " <- set" + ("" if a.chosen_by == "rule" else f" ({a.chosen_by})")
    why = exclusions(a.rule, m) if a.rule is not None else []
    return f" excluded: {'; '.join(why)}" if why else ""


def _measured_speeds(m: Measured) -> str:
    """This run's measured CPU speeds, build/read, with their spread over repetitions."""
    return (f"{m.measured_compress_mbps:.0f}+/-{m.compress_spread_share * 100:.0f}%/"
            f"{m.measured_read_mbps:.0f}+/-{m.read_spread_share * 100:.0f}%")


def _record_sizes(profile: Dict) -> str:
    """The median record's size class, from the power-of-two histogram of key+value+header bytes."""
    hist = profile["record_size_hist"]
    total = sum(hist)
    if not total:
        return "no records"
    run = 0
    for i, n in enumerate(hist):
        run += n
        if run * 2 >= total:
            lo = 0 if i == 0 else 2 ** (i - 1)
            return f"median record {format_size(lo)}-{format_size(2 ** i)}"
    return ""


def _doc(a: TopicAdvice) -> Dict:
    def m(x: Measured) -> Dict:
        return {"setting": x.label, "codec": x.setting.codec if x.setting else None,
                "level": x.setting.level if x.setting else None,
                "batch_size": x.setting.batch_bytes if x.setting else None,
                "linger_ms": x.setting.linger_ms if x.setting else None, "records": x.records,
                "batches": x.batches, "records_per_batch": x.records_per_batch, "stored_bytes": x.stored_bytes,
                "plain_bytes": x.plain_bytes, "payload_bytes": x.payload_bytes, "ratio": x.ratio,
                "ratio_mean": x.ratio_mean, "ratio_std": x.ratio_std, "chunks": x.chunks,
                "compress_mbps": x.compress_mbps, "read_mbps": x.read_mbps, "cpu_source": x.cpu.source,
                "cpu_uncertainty": x.cpu.uncertainty, "cost_uncertainty": x.cost_uncertainty,
                "measured_compress_mbps": x.measured_compress_mbps, "measured_compress_spread": x.compress_spread_share,
                "measured_read_mbps": x.measured_read_mbps, "measured_read_spread": x.read_spread_share,
                "stored_per_day": x.stored_per_day,
                "cost_month": {"storage": x.cost.storage, "network": x.cost.network, "cpu": x.cost.cpu,
                               "total": x.cost.total}}
    return {"topic": a.topic, "partitions": a.partitions, "timestamps": a.timestamp_type,
            "stored_per_day": a.stored_per_day, "per_day_source": a.per_day_source, "codec_mix": a.codec_mix,
            "profile": a.profile, "today": m(a.today), "recommended": m(a.best) if a.best else None,
            "config": _client_config(a), "without_level": m(a.best_without_level) if a.best_without_level else None,
            "saving_month": a.saving, "chosen_by": a.chosen_by, "notes": a.notes,
            "assumptions": [x.doc() for x in a.assumptions],
            "latency_ms": a.best.setting.linger_ms if a.best else None,
            "memory": ({"bytes": a.memory.needed, "batch_size": a.memory.batch_bytes, "partitions": a.memory.partitions,
                        "buffer_memory": a.memory.buffer_memory} if a.memory else None),
            "cheapest": m(a.cheapest) if a.cheapest else None, "by_linger": curve_doc(a),
            "settings": [m(x) for x in a.results]}


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_reports(out_dir: Path, advice: Sequence[TopicAdvice], context: Dict) -> Dict[str, Path]:
    from kcodec.advise.charts import overview_png, topic_png

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"png": out_dir / "report.png", "html": out_dir / "report.html", "json": out_dir / "results.json",
             "csv": out_dir / "results.csv"}
    _atomic_write(paths["png"], overview_png(advice))
    charts = {a.topic: topic_png(a) for a in advice}
    (out_dir / "topics").mkdir(exist_ok=True)
    for a in advice:
        _atomic_write(out_dir / "topics" / f"{file_name(a.topic)}.png", charts[a.topic])
    doc = {"context": context, "topics": [_doc(a) for a in advice],
           "total_month": {"today": sum(a.today.cost.total for a in advice),
                           "recommended": sum((a.best or a.today).cost.total for a in advice)}}
    _atomic_write(paths["json"], json_text(doc, indent=1, default=str).encode())
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["topic", "setting", "codec", "level", "batch_size", "linger_ms", "ratio", "ratio_std", "chunks",
                "records_per_batch", "compress_mbps", "read_mbps", "cpu_source", "measured_compress_mbps",
                "measured_compress_spread", "measured_read_mbps", "measured_read_spread", "stored_per_day", "storage_month",
                "network_month", "cpu_month", "total_month", "recommended"])
    for a in advice:
        for x in [a.today] + a.results:
            s = x.setting
            w.writerow([csv_cell(a.topic), x.label, s.codec if s else "", "" if not s or s.level is None else s.level,
                        s.batch_bytes if s else "", s.linger_ms if s else "", f"{x.ratio:.4f}", f"{x.ratio_std:.4f}",
                        x.chunks, f"{x.records_per_batch:.2f}", f"{x.compress_mbps:.1f}", f"{x.read_mbps:.1f}",
                        x.cpu.source, f"{x.measured_compress_mbps:.1f}", f"{x.compress_spread_share:.3f}",
                        f"{x.measured_read_mbps:.1f}", f"{x.read_spread_share:.3f}",
                        f"{x.stored_per_day:.0f}", f"{x.cost.storage:.2f}", f"{x.cost.network:.2f}",
                        f"{x.cost.cpu:.2f}", f"{x.cost.total:.2f}", "yes" if a.best is x else ""])
    _atomic_write(paths["csv"], buf.getvalue().encode())
    _atomic_write(paths["html"], _html(advice, context, paths["png"].read_bytes(), charts).encode())
    return paths


def _assumption_table(items: Sequence[Assumption]) -> str:
    if not items:
        return ""
    return ("<table><tr><th>the bill assumes</th><th>value</th><th>source</th><th>detail</th></tr>"
            + assumption_rows(items, html_text) + "</table>")


def _html(advice: Sequence[TopicAdvice], context: Dict, overview: bytes, charts: Dict[str, bytes]) -> str:
    e = html_text
    total_today = sum(a.today.cost.total for a in advice)
    total_best = sum((a.best or a.today).cost.total for a in advice)
    rows = "".join(
        f"<tr><td><a href='#t-{e(file_name(a.topic))}'>{e(a.topic)}</a></td><td>{e(_mix(a))}</td>"
        f"<td>{a.today.ratio:.2f}x</td><td>{e(_config_text(a))}</td><td>{_money(a.today.cost.total)}</td>"
        f"<td>{_money((a.best or a.today).cost.total)}</td><td>{_money(a.saving)}</td></tr>" for a in advice)
    sections = []
    for a in advice:
        detail = "".join(
            f"<tr{' class=best' if m is a.best else ''}><td>{e(m.label)}</td><td>{m.ratio:.2f} &plusmn; "
            f"{m.ratio_std:.2f}</td><td>{m.records_per_batch:.1f}</td><td>{m.compress_mbps:.0f}</td>"
            f"<td>{m.read_mbps:.0f}</td><td>{e(_measured_speeds(m))}</td><td>{_money(m.cost.storage)}</td>"
            f"<td>{_money(m.cost.network)}</td>"
            f"<td>{_money(m.cost.cpu)}</td><td>{_money(m.cost.total)}</td><td>{e(_row_mark(a, m).strip())}</td></tr>"
            for m in [a.today] + sorted(a.results, key=lambda m: m.cost.total))
        br = a.profile["batch_records"]
        bb = a.profile["batch_bytes"]
        notes = "".join(f"<li>{e(n)}</li>" for n in a.notes)
        forced = "" if a.chosen_by == "rule" else f" (chosen by {e(a.chosen_by)}, not by the rule)"
        costs = "".join(f"<li>{e(label)}: {e(text)}</li>" for label, text in cost_lines(a, _money))
        cfg = "".join(f"{e(k)}={e(v)}<br>" for k, v in _client_config(a).items()) or "keep today's settings"
        sections.append(f"""<section id="t-{e(file_name(a.topic))}"><h2>{e(a.topic)}</h2>
<p>Today: {e(_mix(a))}; records per batch p10/median/p90 {br['p10']:.0f}/{br['p50']:.0f}/{br['p90']:.0f};
bytes per batch {e(format_size(bb['p10']))}/{e(format_size(bb['p50']))}/{e(format_size(bb['p90']))};
ratio {a.today.ratio:.2f}x; {e(format_size(a.stored_per_day))} a day ({e(a.per_day_source)}); timestamps
{e(a.timestamp_type)}.</p>
<p>Set (producer): <code>{cfg}</code> Topic: <code>compression.type=producer</code>.
Saves <b>{_money(a.saving)}</b>/month{forced}.</p><ul>{costs}{notes}</ul>{_assumption_table(a.assumptions)}
<p><img src="data:image/png;base64,{base64.b64encode(charts[a.topic]).decode()}" alt="charts for {e(a.topic)}"></p>
<table><tr><th>setting</th><th>ratio</th><th>records/batch</th><th>compress MB/s</th><th>read MB/s</th>
<th>measured MB/s (this run)</th><th>storage $/month</th><th>network $/month</th><th>CPU $/month</th>
<th>total $/month</th><th>rule</th></tr>{detail}</table>
</section>""")
    ctx = "".join(f"<li>{e(k)}: {e(v)}</li>" for k, v in context.items() if k != "assumptions")
    bill = _assumption_table([Assumption(**d) for d in context.get("assumptions", ())])
    return f"""<!doctype html><html><head><meta charset="utf-8"><title>kcodec advise</title>
<style>body{{font-family:sans-serif;margin:2em}}table{{border-collapse:collapse;margin:1em 0}}
td,th{{border:1px solid #ccc;padding:4px 8px;text-align:right}}td:first-child{{text-align:left}}
tr.best{{background:#dfd;font-weight:bold}}section{{margin-top:2em}}</style></head><body>
<h1>kcodec advise</h1>
<p>Total: {_money(total_today)}/month today, {_money(total_best)}/month with the recommended settings,
<b>{_money(total_today - total_best)}/month saved</b>.</p>
<table><tr><th>topic</th><th>today's codecs</th><th>ratio today</th><th>set</th><th>$/month today</th>
<th>$/month after</th><th>saved</th></tr>{rows}</table>
<p><img src="data:image/png;base64,{base64.b64encode(overview).decode()}" alt="cost per topic"></p>
<ul>{ctx}</ul>{bill}
{''.join(sections)}
</body></html>"""
