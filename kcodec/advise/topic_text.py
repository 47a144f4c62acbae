"""A topic's advice in a few words, for every rendering (terminal, estate summary, HTML)."""
from __future__ import annotations

from typing import Dict

from kcodec.advise.latency import percent
from kcodec.advise.notes import exclusions
from kcodec.advise.recommend import Measured, TopicAdvice

__all__ = ["codec_mix_text", "client_config_of", "config_text", "row_mark"]


def codec_mix_text(a: TopicAdvice) -> str:
    return " ".join(f"{k} {percent(v)}" for k, v in sorted(a.codec_mix.items(), key=lambda kv: -kv[1]))


def client_config_of(a: TopicAdvice) -> Dict[str, str]:
    """The recommended setting in the configuration names of the client the replay followed."""
    from kcodec.advise.replay import client_config, client_rules

    if a.best is None:
        return {}
    java = a.config()
    s = a.best.setting
    rules = client_rules(a.profile.get("replay", {}).get("client") or "java")
    return client_config(rules, s.codec, s.level, f"compression.{s.codec}.level" not in java, s.batch_bytes,
                         s.linger_ms)


def config_text(a: TopicAdvice) -> str:
    if a.best is None:
        return "keep today's settings"
    return " ".join(f"{k}={v}" for k, v in client_config_of(a).items())


def row_mark(a: TopicAdvice, m: Measured) -> str:
    """What the rule did with a row: "set", or "excluded: why"; empty for today's row and rows it kept."""
    if m is a.today:
        return ""
    if a.best is not None and m is a.best:
        return "set" + ("" if a.chosen_by == "rule" else f" ({a.chosen_by})")
    why = exclusions(a.rule, m) if a.rule is not None else []
    return f"excluded: {'; '.join(why)}" if why else ""
