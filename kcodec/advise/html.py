"""The HTML report: a page that opens at any estate size, and one page per topic.

``report.html`` holds the estate's totals, the settings to make, the estate table
(every topic, sorted by saving, sortable by any column with a few lines of plain
JavaScript) and the sections of the topics saving most.  Every topic also has its
own page, ``topics/<name>.html``.  Charts are PNG files beside the pages, loaded
lazily and scaled to their column, so the page fits a 1280 px window whatever the
number of topics, and no asset comes from elsewhere.
"""
from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

from kcodec.advise.assumptions import Assumption
from kcodec.advise.cpu import THROUGHPUT_NOTES
from kcodec.advise.estate import Estate
from kcodec.advise.estate_text import volume_tag
from kcodec.advise.grid import format_size
from kcodec.advise.notes import money
from kcodec.advise.recommend import TopicAdvice
from kcodec.advise.replay import LIMIT_ITEMS
from kcodec.advise.topic_profile import TopicProfile
from kcodec.advise.topic_text import codec_mix_text, cost_lines, headline, replay_lines, row_mark, rule_lines
from kcodec.escape import file_name, html_text

__all__ = ["report_html", "topic_html"]

_STYLE = """*{box-sizing:border-box}
body{font-family:sans-serif;margin:0 auto;padding:1em;max-width:1280px}
img{max-width:100%;height:auto}
table{border-collapse:collapse;margin:1em 0;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right}
td:first-child,th:first-child,td.l,th.l{text-align:left}
th{cursor:pointer;background:#f4f4f4}
tr.best{background:#dfd;font-weight:bold}
code{white-space:normal}
p.lead{font-size:1.1em}
ol.notes{font-size:.9em;margin-top:-.5em}
section{margin-top:2em;border-top:1px solid #ccc}
.np{color:#a40}
.nw{white-space:nowrap}
.wide{overflow-x:auto}"""

# Click a column's header to sort by it; again to reverse.  Cells with data-v sort by that number.
_SORT_JS = """<script>
document.querySelectorAll("table.sortable th").forEach(function (th, i) {
  th.addEventListener("click", function () {
    var body = th.closest("table").tBodies[0], rows = Array.prototype.slice.call(body.rows);
    var up = th.dataset.dir !== "up";
    th.dataset.dir = up ? "up" : "down";
    function key(row) { var c = row.cells[i]; return c.dataset.v !== undefined ? Number(c.dataset.v) : c.textContent; }
    rows.sort(function (x, y) {
      var a = key(x), b = key(y);
      var r = typeof a === "number" && typeof b === "number" ? a - b : String(a).localeCompare(String(b));
      return up ? r : -r;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
</script>"""


def breakable(text: str) -> str:
    """``text`` escaped for HTML, with a line-break opportunity (``<wbr>``) after each ``.``, ``_`` and ``=`` that
    a letter follows: long topic names and configuration strings wrap there (as they do after ``-`` and ``/``),
    never inside a word, and numbers (``36.27``) never at their point."""
    return "<wbr>".join(html_text(part) for part in re.split(r"(?<=[._=])(?=[^\s\d])", text))


def assumption_rows(items: Sequence[Assumption], escape: Callable[[str], str], notes: Dict[str, int]) -> str:
    """HTML table rows: what, value, source; a row with a detail points to its numbered note in ``notes``
    (detail -> number, filled here in order of first use), so a detail many rows share stands once."""
    rows = []
    for a in items:
        mark = ""
        if a.detail:
            n = notes.setdefault(a.detail, len(notes) + 1)
            mark = f" <sup>[{n}]</sup>"
        rows.append(f"<tr><td>{escape(a.name)}</td><td class=l>{escape(a.value)}</td>"
                    f"<td class=l>{escape(a.source)}{mark}</td></tr>")
    return "".join(rows)


def _page(title: str, body: str, script: bool = False) -> str:
    return (f'<!doctype html><html><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1"><title>{html_text(title)}</title>'
            f"<style>{_STYLE}</style></head><body>\n{body}\n{_SORT_JS if script else ''}</body></html>\n")


def _config_html(a: TopicAdvice) -> str:
    cfg = a.config()
    return " ".join(f"{html_text(k)}={html_text(v)}" for k, v in cfg.items()) or "keep today's settings"



def _assumption_table(items: Sequence[Assumption]) -> str:
    if not items:
        return ""
    notes: Dict[str, int] = {}
    rows = assumption_rows(items, breakable, notes)
    listed = "".join(f"<li>{html_text(detail)}</li>" for detail in notes)
    return ("<table><tr><th>the bill assumes</th><th class=l>value</th><th class=l>source</th></tr>" + rows + "</table>"
            + (f"<ol class=notes>{listed}</ol>" if notes else ""))


def _list(items: Iterable[str]) -> str:
    return "<ul>" + "".join(f"<li>{html_text(x)}</li>" for x in items) + "</ul>"


def _batches(p: TopicProfile) -> str:
    br, bb = p.batch_records, p.batch_bytes
    if br is None or bb is None:
        return "no batches"
    return (f"records per batch p10/median/p90 {br.p10:.0f}/{br.p50:.0f}/{br.p90:.0f};\n"
            f"bytes per batch {html_text(format_size(bb.p10))}/{html_text(format_size(bb.p50))}/"
            f"{html_text(format_size(bb.p90))}")


def _section(a: TopicAdvice, chart: Optional[str]) -> str:
    """One topic's section; ``chart`` is the PNG's URL relative to the page, None when not drawn."""
    e = html_text
    detail = "".join(
        f"<tr{' class=best' if m is a.best else ''}><td>{e(m.label)}</td><td>{m.ratio:.2f}&nbsp;&plusmn;&nbsp;"
        f"{m.ratio_std:.2f}</td><td>{m.records_per_batch:.1f}</td><td>{m.compress_mbps:.0f}</td>"
        f"<td>{m.read_mbps:.0f}</td><td>{_between_figures(m.measured_text())}</td><td>{money(m.cost.storage)}</td>"
        f"<td>{money(m.cost.network)}</td>"
        f"<td>{money(m.cost.cpu)}</td><td>{money(m.cost.total)}</td><td class=l>{e(row_mark(a, m))}</td></tr>"
        for m in [a.today] + sorted(a.results, key=lambda m: (m.cost.total, m.setting)))
    notes = "".join(f"<li>{e(n)}</li>" for n in a.notes)
    forced = "" if a.chosen_by == "rule" else f" (chosen by {e(a.chosen_by)}, not by the rule)"
    costs = "".join(f"<li>{e(label)}: {e(text)}</li>" for label, text in cost_lines(a, money))
    unpriced = "" if a.priced else " <b class=np>Not priced</b>: the volume is not known (see the notes)."
    replay = f"<p>Replay:</p>{_list(replay_lines(a))}" if replay_lines(a) else ""
    img = (f'<p><img loading="lazy" src="{e(chart)}" width="1240" height="420" alt="charts for {e(a.topic)}"></p>'
           if chart else "<p>Chart drawn for the topics of the summary only (--top N, or --all-topics).</p>")
    return f"""<section id="t-{e(file_name(a.topic))}"><h2>{breakable(a.topic)}</h2>
<p class=lead><b>{e(headline(a, money))}</b>{forced}</p>
<p>Today: {e(codec_mix_text(a))}; {_batches(a.profile)};
ratio {a.today.ratio:.2f}x; {e(format_size(a.stored_per_day))} a day ({e(a.per_day_source)}); timestamps
{e(a.timestamp_type)}.</p>{f"<p>Sample: {e(a.sample.text())}</p>" if a.sample is not None else ""}
{"".join(f"<p>Race: {e(line)}</p>" for line in a.race.text()) if a.race is not None else ""}
<p>Set (producer): <code>{_config_html(a)}</code> Topic: <code>compression.type=producer</code>.{unpriced}</p>{replay}
<ul>{costs}{notes}</ul>{_assumption_table(a.assumptions)}
{img}
<div class=wide><table><thead><tr><th>setting</th><th>ratio</th><th>records/<wbr>batch</th><th>compress MB/s</th>
<th>read MB/s</th><th>measured MB/s (this run)</th><th>storage $/month</th><th>network $/month</th>
<th>CPU $/month</th><th>total $/month</th><th class=l>rule</th></tr></thead>
<tbody>{detail}</tbody></table></div>
</section>"""


def _between_figures(text: str) -> str:
    """A measured-speeds cell (``148+/-12%/240+/-9%``) escaped, with a line-break opportunity between its two
    figures: a browser breaks after no hyphen a digit follows, so the pair was one word as wide as a column."""
    return "%/<wbr>".join(html_text(part) for part in text.split("%/"))


def topic_html(a: TopicAdvice, charted: bool) -> str:
    """A topic's own page, ``topics/<name>.html``, its chart beside it."""
    chart = f"{file_name(a.topic)}.png" if charted else None
    return _page(f"kcodec advise: {a.topic}", f'<p><a href="../report.html">the estate</a></p>{_section(a, chart)}')


def _estate_rows(ranked: Sequence[TopicAdvice], inline: Set[str]) -> Iterable[str]:
    e = html_text
    for a in ranked:
        name = file_name(a.topic)
        href = f"#t-{name}" if a.topic in inline else f"topics/{name}.html"
        setting = a.best.setting.label if a.best is not None else "keep today's"
        if a.priced:
            money_cells = (f"<td data-v='{a.today.cost.total:.6f}'>{money(a.today.cost.total)}</td>"
                           f"<td data-v='{(a.best or a.today).cost.total:.6f}'>{money((a.best or a.today).cost.total)}"
                           f"</td><td data-v='{a.saving:.6f}'>{money(a.saving)}</td>")
        else:
            money_cells = "<td data-v='-1' class=np>not priced</td><td data-v='-1'></td><td data-v='-1'></td>"
        volume = volume_tag(a)
        topic_class = " class=nw" if _one_line(a.topic) else ""
        volume_class = "'l nw'" if _one_line(volume) else "l"
        yield (f"<tr><td{topic_class}><a href='{e(href)}'>{breakable(a.topic)}</a></td><td class=l>{e(setting)}</td>"
               f"<td class=l>{e(codec_mix_text(a))}</td><td data-v='{a.today.ratio:.4f}'>{a.today.ratio:.2f}x</td>"
               f"<td data-v='{a.stored_per_day:.0f}'>{e(format_size(a.stored_per_day))}</td>"
               f"<td class={volume_class}>{e(volume)}</td>{money_cells}</tr>")


#: a cell's text up to this long stays on one line: a short name such as orders-00204, or a source such as
#: "given, --bytes-per-day", is not split at its hyphens where the table has room; a longer one wraps there
_ONE_LINE_CHARS = 32


def _one_line(text: str) -> bool:
    return len(text) <= _ONE_LINE_CHARS


def _context_item(key: str, value: object, advice: Sequence[TopicAdvice]) -> str:
    """One line of the run's context; the rule, the throughput and the replay's limits as short lists."""
    rule = next((a.rule for a in advice if a.rule is not None), None)
    lists: Dict[str, List[str]] = {"replay": list(LIMIT_ITEMS), "throughput": list(THROUGHPUT_NOTES)}
    if rule is not None:
        lists["rule"] = rule_lines(rule)
    if key in lists:
        return f"<li>{html_text(key)}:{_list(lists[key])}</li>"
    if key == "run_at_ms" and isinstance(value, int):  # for --check, in results.json; people read a time
        at = datetime.fromtimestamp(value / 1000, timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")
        return f"<li>run at: {at}</li>"
    return f"<li>{html_text(key)}: {breakable(str(value))}</li>"


def report_html(advice: Sequence[TopicAdvice], context: Dict, estate: Optional[Estate], inline: Sequence[str],
                charted: Set[str]) -> str:
    """``report.html``; ``inline`` are the topics whose sections it holds, ``charted`` those with a chart."""
    e = html_text
    priced = [a for a in advice if a.priced]
    today = sum(a.today.cost.total for a in priced)
    after = sum((a.best or a.today).cost.total for a in priced)
    parts = [f"<h1>kcodec advise</h1><p>{len(advice)} topic{'s' if len(advice) != 1 else ''}: "
             f"{money(today)}/month today, {money(after)}/month with the recommended settings, "
             f"<b>{money(today - after)}/month saved</b>.</p>"]
    unpriced = [a for a in advice if not a.priced]
    if unpriced:
        parts.append(f"<p class=np>{len(unpriced)} topics not priced (their timestamps span too short a time to "
                     f"know a daily volume) are left out of these dollars: give --bytes-per-day or a --volumes "
                     f"file.</p>")
    if estate is not None:
        rows = "".join(
            f"<tr><td data-v='{len(g.topics)}'>{len(g.topics)}</td><td data-v='{g.bytes_per_day:.0f}'>"
            f"{e(format_size(g.bytes_per_day))}</td><td data-v='{g.saving:.6f}'>{money(g.saving)}</td>"
            f"<td class=l><code>{_config_html(g.topics[0]) if g.setting else 'keep today&#39;s settings'}</code>"
            f"</td></tr>" for g in estate.groups)
        parts.append(f"<h2>What to set</h2><p>One row per setting: topics whose best settings differ by less than "
                     f"their estimates' uncertainty (at least {estate.tolerance * 100:g}% of their $/month) share "
                     f"one.</p><table class=sortable><thead><tr><th>topics</th><th>bytes/day</th>"
                     f"<th>saved $/month</th><th class=l>set (producer)</th></tr></thead><tbody>{rows}</tbody></table>")
        shared = [estate.whole] + list(estate.by_group)
        items = "".join(
            f"<li>{e(s.name)} ({s.topics} topics): "
            + (f"{e(s.setting.label)} saves {money(s.saving)}/month; "
               f"each topic's own cheapest setting (before --min-saving) saves "
               f"{money(s.per_topic_saving)} ({money(s.cost)} more)" if s.setting else
               f"no one setting saves for all of them; per-topic settings save {money(s.per_topic_saving)}/month")
            + "</li>" for s in shared)
        by = f" and per --group-by {e(estate.group_by)} group" if estate.group_by else ""
        parts.append(f"<h2>One setting for many topics</h2><p>For the whole estate{by}, against each topic's "
                     f"own setting:</p><ul>{items}</ul>")
    parts.append('<p><img loading="lazy" src="report.png" alt="saving by setting and by topic"></p>')
    ranked = sorted(advice, key=lambda a: (not a.priced, -round(a.saving, 6), a.topic))
    inline_set = set(inline)
    parts.append(f"<h2>Topics</h2><p>By saving; click a column's header to sort by it.</p>"
                 f"<table class=sortable id=estate><thead><tr><th>topic</th><th class=l>set</th>"
                 f"<th class=l>today's codecs</th><th>ratio today</th><th>bytes/day</th><th class=l>bytes/day from</th>"
                 f"<th>$/month today</th>"
                 f"<th>$/month after</th><th>saved $/month</th></tr></thead><tbody>"
                 f"{''.join(_estate_rows(ranked, inline_set))}</tbody></table>")
    bill = _assumption_table([Assumption(**d) for d in context.get("assumptions", ())])
    run = "".join(_context_item(k, v, advice) for k, v in context.items() if k != "assumptions")
    parts.append(f"<h2>Assumptions</h2>{bill}<ul>{run}</ul>")
    by_name = {a.topic: a for a in advice}
    for t in inline:
        a = by_name[t]
        parts.append(_section(a, f"topics/{file_name(t)}.png" if t in charted else None))
    if len(inline) < len(advice):
        parts.append(f"<p>{len(advice) - len(inline)} more topics: each has its own page under topics/, "
                     f"linked from the table.</p>")
    return _page("kcodec advise", "\n".join(parts), script=True)
