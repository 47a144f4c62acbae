"""A topic's advice in a few words, for every rendering (terminal, estate summary, HTML)."""
from __future__ import annotations

from typing import Optional

from kcodec.advise.latency import percent
from kcodec.advise.notes import why_excluded
from kcodec.advise.race import dollars
from kcodec.advise.recommend import Measured, TopicAdvice

__all__ = ["codec_mix_text", "config_text", "replay_text", "row_mark"]


def codec_mix_text(a: TopicAdvice) -> str:
    return " ".join(f"{k} {percent(v)}" for k, v in sorted(a.codec_mix.items(), key=lambda kv: -kv[1]))


def replay_text(a: TopicAdvice) -> Optional[str]:
    """Whose batching rules the replay followed (or that no client was recognised), its producers and sender."""
    from kcodec.advise.replay import NOT_RECOGNISED

    r = a.profile.get("replay") or {}
    if not r:
        return None
    if r.get("recognised", True):
        who = f"{r['client']} batching rules"
    elif len(r["clients"]) > 1:
        who = f"{NOT_RECOGNISED} (chunks disagree: {', '.join(r['clients'])})"
    else:
        who = NOT_RECOGNISED
    producers = (f"{r['producer_ids']} producer id(s) seen per partition, each replayed on its own"
                 if r.get("producer_ids") else
                 f"no producer ids: {r.get('producers_replayed', 1)} producer(s) per partition assumed (--producers)")
    share = r["calibrated_share"]
    if not share:
        return (f"{who}; {producers}; sender delay not calibrated (today's batches were cut by "
                f"size, or too few): {r['sender_delay_ms']:.3g} ms assumed")
    part = "" if share == 1 else f", on {share * 100:.0f}% of chunks"
    return (f"{who}; {producers}; sender delay {r['sender_delay_ms']:.3g} ms "
            f"calibrated on today's batches "
            f"(calibration error {r['calibration_error'] * 100:+.1f}% records/batch{part})")


def config_text(a: TopicAdvice) -> str:
    if a.best is None:
        return "keep today's settings"
    return " ".join(f"{k}={v}" for k, v in a.config().items())


def row_mark(a: TopicAdvice, m: Measured) -> str:
    """What the rule did with a row: "set", or "excluded: why"; empty for today's row and rows it kept."""
    if m is a.today:
        return ""
    worst = (f"priced at its worst case, every record alone: {m.worst_ratio:.2f}x"
             if m.worst_ratio is not None else "")
    if a.best is not None and m is a.best:
        return "; ".join(x for x in ("set" + ("" if a.chosen_by == "rule" else f" ({a.chosen_by})"), worst) if x)
    if m.dropped is not None:
        return f"dropped after round {m.dropped.round}: {m.dropped.detail} (+/-{dollars(m.cost_uncertainty)} then)"
    why = why_excluded(a.rule, m) if a.rule is not None else []
    return "; ".join(x for x in (f"excluded: {'; '.join(why)}" if why else "", worst) if x)
