"""The estate's terminal summary: about 60 lines for any number of topics.

The estate total first, then the settings to make (one line each, with its topics,
bytes per day and saving), the one setting the estate or each group could share,
the topics saving most, and what was left out and where to find it.
"""
from __future__ import annotations

from typing import List, Optional, Sequence

from kcodec.advise.estate import Estate, SharedSetting
from kcodec.advise.grid import format_size
from kcodec.advise.notes import money
from kcodec.advise.recommend import TopicAdvice
from kcodec.advise.topic_text import config_text
from kcodec.escape import terminal_text

__all__ = ["DEFAULT_TOP", "estate_text", "sample_line", "volume_tag"]

DEFAULT_TOP = 20
_SETTINGS_SHOWN = 12
_GROUPS_SHOWN = 10
_NAMES_SHOWN = 5


def volume_tag(a: TopicAdvice) -> str:
    """Where the topic's bytes per day came from, short enough for a table column."""
    return a.volume_source



def _names(topics: List[TopicAdvice]) -> str:
    names = ", ".join(terminal_text(a.topic) for a in topics[:_NAMES_SHOWN])
    return names + (f", ... ({len(topics)} in all)" if len(topics) > _NAMES_SHOWN else "")


def _shared_line(s: SharedSetting, indent: str) -> str:
    if s.setting is None:
        return (f"{indent}{terminal_text(s.name)} ({s.topics} topics): no one setting saves for all of them; "
                f"per-topic settings save {money(s.per_topic_saving)}/month")
    return (f"{indent}{terminal_text(s.name)} ({s.topics} topics, {format_size(s.bytes_per_day)}/day): "
            f"{s.setting.label} saves {money(s.saving)}/month; "
            f"each topic's own cheapest setting (before --min-saving) saves "
            f"{money(s.per_topic_saving)} ({money(s.cost)} more)")


def _topics(n: int) -> str:
    return f"{n} topic{'' if n == 1 else 's'}"


def sample_line(topics: Sequence[TopicAdvice]) -> Optional[str]:
    """How far --sample auto read, over the estate, in one line; None where it did not sample."""
    reach = [(a.topic, a.sample) for a in topics if a.sample is not None]
    if not reach:
        return None
    whole = sum(1 for _, r in reach if r.stop == "whole")
    within = [r for _, r in reach if r.stop == "precision"]
    capped = [(t, r) for t, r in reach if r.stop == "cap"]
    parts = [f"{_topics(whole)} measured whole"]
    if within:
        lo, hi = min(r.chunks for r in within), max(r.chunks for r in within)
        parts.append(f"{_topics(len(within))} within the target after {lo if lo == hi else f'{lo}-{hi}'} chunks")
    if capped:
        topic, widest = max(capped, key=lambda x: (x[1].half_width, x[0]))
        parts.append(f"{_topics(len(capped))} stopped by --sample-cap (widest +/-{widest.half_width * 100:.2f}%: "
                     f"{terminal_text(topic)})")
    return f"  sampled (--sample auto, +/-{reach[0][1].target * 100:g}% at 95%): {'; '.join(parts)}"


def _priced_part(priced, unpriced) -> str:
    """Which topics the estate's bytes and dollars count, where some are not priced."""
    if not unpriced:
        return ""
    return " (no topic priced)" if not priced else f" (the {len(priced)} priced)"


def estate_text(estate: Estate, top: int = DEFAULT_TOP, out_dir: Optional[str] = None,
                current_bytes: Optional[int] = None, current_size_text: Optional[str] = None) -> str:
    """The bounded summary of an estate of two or more topics."""
    priced, unpriced = estate.priced, estate.unpriced
    today, after = estate.today, estate.after
    saved = today - after
    lines = [f"estate: {len(estate.topics)} topics, {format_size(sum(a.stored_per_day for a in priced))}/day "
             f"stored today{_priced_part(priced, unpriced)}; {money(today)}/month today, "
             f"{money(after)}/month with the settings below: {money(saved)}/month saved "
             f"({saved / max(today, 1e-9) * 100:.0f}%)"]
    if unpriced:
        lines.append(f"  not priced ({len(unpriced)} topics, left out of every dollar figure): their timestamps "
                     f"span too short a time to know a daily volume; give --bytes-per-day or a per-topic "
                     f"--volumes file: {_names(unpriced)}")
    if current_bytes is not None:
        today_stored = sum(a.today.stored_bytes for a in priced)
        after_stored = sum((a.best or a.today).stored_bytes for a in priced)
        lines.append(f"  today's {current_size_text} would become "
                     f"{format_size(current_bytes * after_stored / max(1, today_stored))}")
    sampled = sample_line(estate.topics)
    if sampled:
        lines.append(sampled)
    lines.append("")
    within = " of one --group-by group" if estate.group_by else ""
    lines.append(f"what to set: one line per setting (topics{within} whose best settings differ by less than their "
                 f"estimates' uncertainty, at least {estate.tolerance * 100:g}% of their $/month, share one)")
    lines.append(f"  {'topics':>6} {'bytes/day':>10} {'saved/month':>12}  set (producer configuration)")
    shown = estate.groups[:_SETTINGS_SHOWN]
    for g in shown:
        if g.setting is None:
            text = "keep today's settings"
        else:
            text = config_text(g.topics[0])
        lines.append(f"  {len(g.topics):>6} {format_size(g.bytes_per_day):>10} {money(g.saving):>12}  {text}")
    if len(estate.groups) > len(shown):
        rest = estate.groups[len(shown):]
        lines.append(f"  {sum(len(g.topics) for g in rest):>6} {format_size(sum(g.bytes_per_day for g in rest)):>10} "
                     f"{money(sum(g.saving for g in rest)):>12}  in {len(rest)} more settings (results.json)")
    lines.append("")
    lines.append("one setting for many topics, against each topic's own:")
    lines.append(_shared_line(estate.whole, "  "))
    if estate.group_by:
        lines.append(f"  per --group-by {terminal_text(estate.group_by)} group:")
        for s in estate.by_group[:_GROUPS_SHOWN]:
            lines.append(_shared_line(s, "    "))
        if len(estate.by_group) > _GROUPS_SHOWN:
            lines.append(f"    ... {len(estate.by_group) - _GROUPS_SHOWN} more groups (results.json)")
    lines.append("")
    ranked = estate.ranked
    head = ranked[:top]
    lines.append(f"top {len(head)} topics by saving:")
    width = min(40, max([len(terminal_text(a.topic)) for a in head] + [5]))
    lines.append(f"  {'topic':<{width}} {'$/month today':>13} {'saved':>9}  {'set':<22} bytes/day from")
    for a in head:
        name = terminal_text(a.topic)
        name = name if len(name) <= width else name[:width - 3] + "..."
        setting = a.best.setting.label if a.best is not None else "keep today's"
        if not a.priced:
            lines.append(f"  {name:<{width}} {'not priced':>13} {'':>9}  {setting:<22} {volume_tag(a)}")
            continue
        lines.append(f"  {name:<{width}} {money(a.today.cost.total):>13} {money(a.saving):>9}  {setting:<22} "
                     f"{format_size(a.stored_per_day)} ({volume_tag(a)})")
    lines.append("")
    where = f"{out_dir}/" if out_dir else ""
    left = len(ranked) - len(head)
    more = f"{left} more topics, and " if left else ""
    lines.append(f"left out: {more}every topic's profile, replay, notes and settings table; see {where}report.html, "
                 f"{where}results.json and {where}results.csv, or run with --all-topics (--top N for a longer list)")
    return "\n".join(lines)
