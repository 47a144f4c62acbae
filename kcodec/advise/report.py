"""The advice as a terminal summary, HTML with a section per topic, PNG charts, JSON and CSV."""
from __future__ import annotations

import csv
import io
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

from kcodec.advise.assumptions import CLUSTER, DEFAULT, FLAGS, MEASURED, PRICES_FILE, Assumption
from kcodec.advise.cost import GB
from kcodec.advise.grid import format_size
from kcodec.advise.notes import money
from kcodec.advise.recommend import Measured, TopicAdvice
from kcodec.advise.replay import LIMITS
from kcodec.advise.topic_profile import Spread, TopicProfile
from kcodec.advise.topic_text import codec_mix_text, config_text, cost_lines, curve_doc, replay_text, row_mark
from kcodec.escape import csv_cell, file_name, json_text, terminal_text
from kcodec.storage import atomic_write_bytes

__all__ = ["summary_text", "details_text", "write_reports", "assumption_lines"]


_money = money


def assumption_lines(items: Sequence[Assumption], indent: str = "  ") -> List[str]:
    """Terminal lines, one per assumption, grouped by source so what was guessed stands out."""
    order = [MEASURED, CLUSTER, FLAGS, PRICES_FILE, DEFAULT]
    by_source: Dict[str, List[Assumption]] = {}
    for a in items:
        by_source.setdefault(a.source, []).append(a)
    lines = []
    for source in order:
        group = by_source.get(source)
        if group:
            lines.append(f"{indent}{source + ':':<18} " + "; ".join(
                f"{a.name} {a.value}" + (f" ({a.detail})" if a.detail and (source in (CLUSTER, FLAGS)
                                                                         or a.detail.startswith("not billed"))
                                         else "")
                for a in group))
    return lines


def summary_text(advice: Sequence[TopicAdvice], current_bytes: Optional[int] = None,
                 current_size_text: Optional[str] = None, bill: Sequence[Assumption] = (),
                 storage_price: Optional[tuple] = None) -> str:
    """Per topic: today, what to set, $/month saved; then the total and the details."""
    lines = ["per topic: today -> what to set (producer configuration) and $/month saved", ""]
    total_today = total_best = 0.0
    for a in advice:
        t = a.today
        best = a.best or t
        if a.priced:  # a volume extrapolated from too short a span is in no total
            total_today += t.cost.total
            total_best += best.cost.total
        lines.append(f"{terminal_text(a.topic)}")
        lines.append(f"  today      {codec_mix_text(a)}; {_median_batch(a.profile.batch_records)}, "
                     f"{t.ratio:.2f}x; {format_size(a.stored_per_day)}/day; {_money(t.cost.total)}/month")
        lines.append(f"  set        {config_text(a)}")
        replay = replay_text(a)
        if replay:
            lines.append(f"  replay     {replay}")
        if a.sample is not None:
            lines.append(f"  sample     {a.sample.text()}")
        if a.race is not None:
            lines.extend(f"  race       {line}" for line in a.race.text())
        if a.best is not None:
            forced = "" if a.chosen_by == "rule" else f"chosen by {a.chosen_by}, not by the rule: "
            if a.saving < 0:
                forced += f"costs {_money(-a.saving)}/month more; "
            lines.append(f"  saves      {forced}{_money(a.saving)}/month ({_money(t.cost.total)} -> "
                         f"{_money(best.cost.total)}: "
                         f"storage {_money(t.cost.storage - best.cost.storage)}, network "
                         f"{_money(t.cost.network - best.cost.network)}, CPU {_money(t.cost.cpu - best.cost.cpu)}); "
                         f"{best.ratio:.2f}x +/- {best.ratio_std:.2f} over {best.chunks} chunks")
        for label, text in cost_lines(a, _money):
            lines.append(f"  {label:<10} {text}")
        if a.best is not None:
            since = a.client.levels_since
            if a.best_without_level is not None and since is not None:
                w = a.best_without_level
                lines.append(f"  {'pre-' + since:<10} compression.type={w.setting.codec} "
                             f"batch.size={w.setting.batch_bytes} linger.ms={w.setting.linger_ms} (clients/brokers "
                             f"older than {since} cannot set a level; saves "
                             f"{_money(t.cost.total - w.cost.total)}/month)")
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
        lines.append(f"{terminal_text(a.topic)}: {a.partitions} partition(s) measured, {a.today.records} records, "
                     f"timestamps {a.timestamp_type}; bytes/day from {a.per_day_source}")
        lines.append(f"  today: {_batch_spreads(p)}; "
                     f"magic {', '.join(f'v{k}: {v}' for k, v in p.magic_batches.items() if v)} "
                     f"batches; ratio {a.today.ratio:.2f}x +/- {a.today.ratio_std:.2f}; {_record_sizes(p)}")
        head = (f"  {'setting':<24} {'ratio':>12} {'rec/batch':>9} {'MB/s c/r':>11} {'measured c/r':>19} "
                f"{'$/month':>9} {'storage':>9} {'network':>9} {'cpu':>8}")
        lines.append(head)
        ranked = sorted(a.results, key=lambda m: m.cost.total)
        named = [m for m in (a.best, a.cheapest, a.best_without_level) if m is not None]
        rows = [m for m in ranked if m in ranked[:top] or any(m is n for n in named)]
        for m in [a.today] + rows:
            mark = row_mark(a, m)
            mark = "" if not mark else (" <- " if mark.startswith("set") else " ") + mark
            lines.append(f"  {m.label:<24} {m.ratio:>6.2f}+/-{m.ratio_std:<4.2f} {m.records_per_batch:>9.1f} "
                         f"{m.compress_mbps:>5.0f}/{m.read_mbps:<5.0f} {m.measured_text():>19} "
                         f"{_money(m.cost.total):>9} "
                         f"{_money(m.cost.storage):>9} {_money(m.cost.network):>9} {_money(m.cost.cpu):>8}{mark}")
    return "\n".join(lines)


def _median_batch(br: Optional[Spread]) -> str:
    return "no batches" if br is None else f"{br.p50:.0f} records/batch (median)"


def _batch_spreads(p: TopicProfile) -> str:
    """Records and bytes per batch, p10/p50/p90."""
    br, bb = p.batch_records, p.batch_bytes
    if br is None or bb is None:
        return "no batches"
    return (f"records/batch p10/p50/p90 {br.p10:.0f}/{br.p50:.0f}/{br.p90:.0f} (mean {br.mean:.1f}); "
            f"bytes/batch {format_size(bb.p10)}/{format_size(bb.p50)}/{format_size(bb.p90)}")


def _record_sizes(profile: TopicProfile) -> str:
    """The median record's size class, from the power-of-two histogram of key+value+header bytes."""
    hist = profile.record_size_hist
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
                "compress_mbps": x.compress_mbps, "read_mbps": x.read_mbps, "cpu_source": x.cpu_source,
                "cpu_uncertainty": x.cpu.uncertainty if x.cpu is not None else None,
                "cost_uncertainty": x.cost_uncertainty,
                "measured_compress_mbps": x.measured_compress_mbps, "measured_compress_spread": x.compress_spread_share,
                "measured_read_mbps": x.measured_read_mbps, "measured_read_spread": x.read_spread_share,
                "stored_per_day": x.stored_per_day,
                "worst_stored_bytes": x.worst_stored_bytes,
                "dropped": x.dropped.doc() if x.dropped is not None else None,
                "cost_month": {"storage": x.cost.storage, "network": x.cost.network, "cpu": x.cost.cpu,
                               "total": x.cost.total}}
    return {"topic": a.topic, "partitions": a.partitions, "timestamps": a.timestamp_type,
            "stored_per_day": a.stored_per_day, "per_day_source": a.per_day_source, "priced": a.priced,
            "volume_source": a.volume_source, "codec_mix": a.codec_mix,
            "sample": a.sample.doc() if a.sample is not None else None,
            "race": a.race.doc() if a.race is not None else None,
            "profile": a.profile.doc(), "today": m(a.today), "recommended": m(a.best) if a.best else None,
            "config": a.config(), "without_level": m(a.best_without_level) if a.best_without_level else None,
            "saving_month": a.saving, "chosen_by": a.chosen_by, "notes": a.notes,
            "assumptions": [x.doc() for x in a.assumptions],
            "latency_ms": a.best.setting.linger_ms if a.best else None,
            "memory": ({"bytes": a.memory.needed, "batch_size": a.memory.batch_bytes, "partitions": a.memory.partitions,
                        "buffer_memory": a.memory.buffer_memory} if a.memory else None),
            "cheapest": m(a.cheapest) if a.cheapest else None, "by_linger": curve_doc(a),
            "settings": [m(x) for x in a.results]}


def _estate_doc(estate) -> Dict:
    def shared(s) -> Dict:
        return {"group": s.name, "topics": s.topics, "setting": s.setting.label if s.setting else None,
                "saving_month": s.saving, "per_topic_saving_month": s.per_topic_saving,
                "simplification_cost_month": s.cost, "stored_per_day": s.bytes_per_day}

    return {"settings": [{"setting": g.setting.label if g.setting else None, "topics": [a.topic for a in g.topics],
                          "stored_per_day": g.bytes_per_day, "saving_month": g.saving} for g in estate.groups],
            "one_setting": shared(estate.whole), "group_by": estate.group_by,
            "per_group": [shared(s) for s in estate.by_group], "same_setting_within": estate.tolerance,
            "not_priced": [a.topic for a in estate.unpriced]}


def _draw(chart):
    """One chart's PNG: ``("overview", (advice, groups))`` or ``("topic", (advice,))``."""
    from kcodec.advise.charts import overview_png, topic_png

    kind, args = chart
    return overview_png(args[0], groups=args[1]) if kind == "overview" else topic_png(*args)


def _start_charts(charts: List[Tuple[Path, tuple]]) -> Dict[int, List[Tuple[Path, tuple]]]:
    """Draw ``charts`` in forked processes, each writing its share of the files; pid -> its share.

    A chart costs matplotlib about half a CPU-second however small the topic, and the cores
    that measured the topics are idle by the time the report is written: drawn beside the
    pages' writing, twenty charts take the time of ten on two cores.  A forked child inherits
    the advice and matplotlib as they are, so nothing is sent to it; it only draws, writes
    and leaves with ``os._exit``.  Nothing is forked where the platform does not fork
    cheaply or there is one core (or one chart): then the writer draws them all.
    """
    import sys
    import warnings

    workers = min(os.cpu_count() or 1, len(charts))
    if workers < 2 or not sys.platform.startswith("linux"):
        return {}
    from kcodec.advise.charts import _plt

    _plt()  # imported once, before the fork
    children: Dict[int, List[Tuple[Path, tuple]]] = {}
    for k in range(workers):
        share = charts[k::workers]
        with warnings.catch_warnings():
            # Python 3.12 warns of fork() beside other threads (Spark's gateway): the child takes
            # none of their locks, only draws and writes its files.
            warnings.simplefilter("ignore", DeprecationWarning)
            pid = os.fork()
        if pid == 0:
            code = 1
            try:
                for path, chart in share:
                    atomic_write_bytes(path, _draw(chart))
                code = 0
            finally:
                os._exit(code)
        children[pid] = share
    return children


def _finish_charts(children: Dict[int, List[Tuple[Path, tuple]]], redraw: bool = True) -> None:
    """Wait for the chart processes; the charts of one that failed are drawn here (raising its error),
    unless the report is being abandoned (an error, Ctrl-C)."""
    failed = []
    for pid, share in children.items():
        _, status = os.waitpid(pid, 0)
        if status != 0:
            failed.extend(share)
    for path, chart in failed if redraw else ():
        atomic_write_bytes(path, _draw(chart))


def write_reports(out_dir: Path, advice: Sequence[TopicAdvice], context: Dict, estate=None,
                  top: int = 20, all_topics: bool = False) -> Dict[str, Path]:
    """Every report file under ``out_dir``: charts (for the ``top`` topics by saving, or all with
    ``all_topics``) and pages as files beside ``report.html``, never inlined."""
    from kcodec.advise.html import report_html, topic_html

    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {"png": out_dir / "report.png", "html": out_dir / "report.html", "json": out_dir / "results.json",
             "csv": out_dir / "results.csv"}
    ranked = sorted(advice, key=lambda a: (not a.priced, -round(a.saving, 6), a.topic))
    head = [a.topic for a in (ranked if all_topics or len(advice) == 1 else ranked[:top])]
    groups = None
    if estate is not None:
        groups = [(g.setting.label if g.setting else "keep today's", g.saving, len(g.topics)) for g in estate.groups]
    (out_dir / "topics").mkdir(exist_ok=True)
    charted = set(head)
    charts: List[Tuple[Path, tuple]] = [(paths["png"], ("overview", (advice, groups)))]
    charts += [(out_dir / "topics" / f"{file_name(a.topic)}.png", ("topic", (a,))) for a in advice
               if a.topic in charted]
    children = _start_charts(charts)
    try:
        for a in advice:
            page = topic_html(a, a.topic in charted).encode()
            atomic_write_bytes(out_dir / "topics" / f"{file_name(a.topic)}.html", page)
        doc = {"context": context, "topics": [_doc(a) for a in advice],
               "total_month": {"today": sum(a.today.cost.total for a in advice if a.priced),
                               "recommended": sum((a.best or a.today).cost.total for a in advice if a.priced)}}
        if estate is not None:
            doc["estate"] = _estate_doc(estate)
        # No indent: Python encodes indented JSON in Python, seconds for an estate of hundreds of topics.
        atomic_write_bytes(paths["json"], json_text(doc, default=str).encode())
        atomic_write_bytes(paths["csv"], _csv(advice).encode())
        if not children:
            for path, chart in charts:
                atomic_write_bytes(path, _draw(chart))
    except BaseException:
        _finish_charts(children, redraw=False)
        raise
    _finish_charts(children)
    atomic_write_bytes(paths["html"], report_html(advice, context, estate, head, charted).encode())
    return paths


def _csv(advice: Sequence[TopicAdvice]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(["topic", "setting", "codec", "level", "batch_size", "linger_ms", "ratio", "ratio_std", "chunks",
                "records_per_batch", "compress_mbps", "read_mbps", "cpu_source", "measured_compress_mbps",
                "measured_compress_spread", "measured_read_mbps", "measured_read_spread", "stored_per_day",
                "storage_month", "network_month", "cpu_month", "total_month", "recommended"])
    for a in advice:
        for x in [a.today] + a.results:
            s = x.setting
            w.writerow([csv_cell(a.topic), x.label, s.codec if s else "", "" if not s or s.level is None else s.level,
                        s.batch_bytes if s else "", s.linger_ms if s else "", f"{x.ratio:.4f}", f"{x.ratio_std:.4f}",
                        x.chunks, f"{x.records_per_batch:.2f}", f"{x.compress_mbps:.1f}", f"{x.read_mbps:.1f}",
                        x.cpu_source, f"{x.measured_compress_mbps:.1f}", f"{x.compress_spread_share:.3f}",
                        f"{x.measured_read_mbps:.1f}", f"{x.read_spread_share:.3f}",
                        f"{x.stored_per_day:.0f}", f"{x.cost.storage:.2f}", f"{x.cost.network:.2f}",
                        f"{x.cost.cpu:.2f}", f"{x.cost.total:.2f}", "yes" if a.best is x else ""])
    return buf.getvalue()
