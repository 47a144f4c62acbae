"""A topic's advice in words, for every rendering (terminal, estate summary, HTML, results.json): the rule,
the setting's configuration, its latency and memory, the saving at each linger.ms, why a row was left out."""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

from kcodec.advise.latency import percent
from kcodec.advise.notes import why_excluded
from kcodec.advise.race import dollars
from kcodec.advise.recommend import Measured, Rule, TopicAdvice

__all__ = ["codec_mix_text", "config_text", "headline", "replay_lines", "replay_text", "row_mark", "rule_lines",
           "rule_text", "cost_lines", "curve_doc"]


def codec_mix_text(a: TopicAdvice) -> str:
    return " ".join(f"{k} {percent(v)}" for k, v in sorted(a.codec_mix.items(), key=lambda kv: -kv[1]))


def replay_text(a: TopicAdvice) -> Optional[str]:
    """Whose batching rules the replay followed (or that no client was recognised), its producers and sender."""
    lines = replay_lines(a)
    return "; ".join(lines) if lines else None


def replay_lines(a: TopicAdvice) -> List[str]:
    """:func:`replay_text` as a list: whose rules, which producers, the sender delay; empty without a replay."""
    from kcodec.advise.replay import NOT_RECOGNISED

    r = a.profile.replay
    if r is None:
        return []
    if r.recognised:
        who = f"{r.client} batching rules"
    elif len(r.clients) > 1:
        who = f"{NOT_RECOGNISED} (chunks disagree: {', '.join(r.clients)})"
    else:
        who = NOT_RECOGNISED
    producers = (f"{r.producer_ids} producer id(s) seen per partition, each replayed on its own"
                 if r.producer_ids else
                 f"no producer ids: {r.producers_replayed} producer(s) per partition assumed (--producers)")
    share = r.calibrated_share
    if not share:
        return [who, producers, f"sender delay not calibrated (today's batches were cut by size, or too few): "
                                f"{r.sender_delay_ms:.3g} ms assumed"]
    part = "" if share == 1 else f", on {share * 100:.0f}% of chunks"
    return [who, producers, f"sender delay {r.sender_delay_ms:.3g} ms calibrated on today's batches "
                            f"(calibration error {r.calibration_error * 100:+.1f}% records/batch{part})"]


def headline(a: TopicAdvice, money: Callable[[float], str]) -> str:
    """The advice in one sentence: what to set, what it saves, what it adds to a send's latency; or why to keep
    today's settings."""
    if a.best is not None:
        linger = a.best.setting.linger_ms
        wait = (f"adds at most {linger} ms to a send" if linger else "adds no wait to a send (linger.ms=0)")
        if not a.priced:
            return f"Set {config_text(a)}: not priced, the volume is not known; it {wait}."
        share = a.saving / max(a.today.cost.total, 1e-12)
        return f"Set {config_text(a)}: saves {money(a.saving)}/month ({share * 100:.0f}%) and {wait}."
    today = a.today.cost.total
    allowed = [m for m in a.results if a.rule is None or a.rule.allows(m)]
    if not allowed:
        return ("Keep today's settings: no setting meets the rule's speeds (--min-compress-mbps, "
                "--min-read-mbps).")
    c = min(allowed, key=lambda m: (m.cost.total, m.setting))
    most = today - c.cost.total
    if most <= 0:
        return f"Keep today's settings: no setting within the rule costs less than today's {money(today)}/month."
    floor = f", under the {a.rule.min_saving * 100:g}% that --min-saving asks for" if a.rule is not None else ""
    return (f"Keep today's settings: the cheapest within the rule, {c.label}, would save "
            f"{money(most)}/month ({most / max(today, 1e-12) * 100:.0f}%){floor}.")


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


def rule_text(rule: Rule) -> str:
    """The rule in one sentence, with the figures it was given and the flags that set them."""
    source = "kcodec's CPU model" if rule.cpu == "model" else "this run's measurement"
    pick = ("the lowest $/month (storage + network + CPU)" if rule.knee >= 1 else
            f"the smallest linger.ms, then batch.size, saving at least {rule.knee * 100:g}% of what the "
            f"lowest $/month (storage + network + CPU) saves (--knee)")
    return (f"{pick} among settings that build at "
            f"{rule.min_compress_mbps:g} MB/s of CPU per core or more (--min-compress-mbps), read at "
            f"{rule.min_read_mbps:g} MB/s or more (--min-read-mbps) and linger at most "
            f"{rule.max_linger_ms:g} ms (--max-linger-ms); costs within their uncertainty count as equal and "
            f"then less CPU, smaller linger.ms, smaller batch.size, codec id and level decide; recommended "
            f"when it saves at least {rule.min_saving * 100:g}% of today's $/month (--min-saving), else keep "
            f"today's settings; CPU from {source} (--cpu-cost)")


def rule_lines(rule: Rule) -> List[str]:
    """:func:`rule_text` as a short list, one condition or tie-break a line, each with the flag that sets it."""
    source = "kcodec's CPU model" if rule.cpu == "model" else "this run's measurement"
    pick = ("pick the lowest $/month (storage + network + CPU)" if rule.knee >= 1 else
            f"pick the smallest linger.ms, then batch.size, saving at least {rule.knee * 100:g}% of what the "
            f"lowest $/month saves (--knee)")
    return [pick,
            f"build at {rule.min_compress_mbps:g} MB/s of CPU per core or more (--min-compress-mbps)",
            f"read at {rule.min_read_mbps:g} MB/s or more (--min-read-mbps)",
            f"linger at most {rule.max_linger_ms:g} ms (--max-linger-ms)",
            "costs within their uncertainty are equal: less CPU, smaller linger.ms, smaller batch.size, "
            "codec id and level decide",
            f"recommend only a saving of at least {rule.min_saving * 100:g}% of today's $/month (--min-saving)",
            f"CPU from {source} (--cpu-cost)"]


def cost_lines(a: TopicAdvice, money: Callable[[float], str]) -> List[Tuple[str, str]]:
    """(label, text) lines of a topic's advice (:class:`~kcodec.advise.recommend.TopicAdvice`): the latency and
    memory of what to set, how the knee chose it, and the saving at each linger.ms."""
    out: List[Tuple[str, str]] = []
    if a.best is not None:
        s = a.best.setting
        out.append(("latency", f"up to {s.linger_ms} ms added to each send (linger.ms={s.linger_ms}; a batch "
                               f"filled to batch.size leaves sooner)"))
        if a.memory is not None:
            out.append(("memory", a.memory.text()))
        if a.cheapest is not None:
            c = a.cheapest
            most = a.today.cost.total - c.cost.total
            kept = a.saving / max(most, 1e-12)
            out.append(("knee", f"the cheapest within the budget, {c.label}, saves {money(most)}/month at up to "
                                f"{c.setting.linger_ms} ms; this setting keeps {kept * 100:.0f}% of that saving"))
    if len(a.curve) > 1:
        points = []
        for p in a.curve:
            at: Any = p.best  # a LingerPoint's setting, a Measured
            best = f"{money(p.saving)} ({at.label})" if at is not None else "none meets the speed rule"
            points.append(f"{p.linger_ms} ms {best}" + ("" if p.in_budget else " over budget"))
        out.append(("by linger", "; ".join(points)))
        zero = next((p for p in a.curve if p.linger_ms == 0), None)
        if zero is not None and a.client.load_bound_at_zero_linger:
            text = (f"a {a.client.display_name} producer's batches at linger.ms=0 hold what arrives while its sender "
                    f"is busy, which varies with the CPU it gets and run to run; the 0 ms figures take a sender as "
                    f"late as today's batches show, and each 0 ms setting is priced at its worst case, every record "
                    f"sent alone (an idle sender)")
            m: Any = zero.best
            if m is not None and m.worst_ratio is not None:
                text += f"; {m.label}: {m.ratio:.2f}x as today's sender, {m.worst_ratio:.2f}x at worst"
            out.append(("at 0 ms", text))
    return out


def curve_doc(a: TopicAdvice) -> List[Dict[str, Any]]:
    """The saving at each linger.ms, for results.json."""
    return [{"linger_ms": p.linger_ms, "setting": _label(p.best), "saving_month": p.saving, "in_budget": p.in_budget}
            for p in a.curve]


def _label(m: Any) -> Optional[str]:
    return m.label if m is not None else None
