"""``--emit DIR``: the recommended settings as files a fleet's configuration management takes.

One set of files per setting group, as the estate summary groups the topics (a single topic is
its own group): for each producer client the replay knows that can be configured with the
setting, its lines in its own names (:attr:`ClientRules.config_line`), and for the topics whose
``compression.type`` makes brokers rebuild the producers' batches, the ``kafka-configs.sh
--alter`` commands that set it to ``producer``.  Every file opens with comments saying which
topics it is for, what it saves and on which assumptions.  Nothing is applied: advise only reads.
"""
from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from kcodec.advise.assumptions import Assumption
from kcodec.advise.grid import Setting, format_size
from kcodec.advise.notes import money
from kcodec.advise.recommend import TopicAdvice
from kcodec.advise.replay import ClientRules, client_config
from kcodec.advise.replay.registry import CLIENTS
from kcodec.advise.report import assumption_lines
from kcodec.escape import terminal_text

__all__ = ["emit_configs", "topic_codec_changes", "TOPIC_CONFIG_SUFFIX"]

#: the file of a group's ``kafka-configs.sh`` commands
TOPIC_CONFIG_SUFFIX = "kafka-configs.sh"
_PLACEHOLDER_BOOTSTRAP = "BROKER:9092"


def _slug(s: Setting) -> str:
    return re.sub(r"[^A-Za-z0-9.]+", "-", s.label).strip("-")


def _groups(advice: Sequence[TopicAdvice], estate) -> List[Tuple[Setting, List[TopicAdvice]]]:
    """(setting, topics) per group given a setting, in the estate summary's order."""
    if estate is not None:
        return [(g.setting, list(g.topics)) for g in estate.groups if g.setting is not None]
    return [(a.best.setting, [a]) for a in advice if a.best is not None]


def topic_codec_changes(topics: Sequence[TopicAdvice], setting: Setting,
                        cluster: Mapping[str, object]) -> Tuple[Dict[str, str], List[str]]:
    """({topic: its compression.type} for those a broker would rebuild the new batches of, [topics whose
    compression.type was not read]).  ``producer`` keeps a producer's batches as they come, and a topic
    codec equal to the producer's has nothing to rebuild."""
    change: Dict[str, str] = {}
    unknown: List[str] = []
    for a in topics:
        s = cluster.get(a.topic)
        codec = s.get("compression.type") if s is not None else None  # type: ignore[attr-defined]
        if codec is None:
            unknown.append(a.topic)
        elif codec not in ("producer", setting.codec):
            change[a.topic] = codec
    return change, unknown


def _header(comment: str, setting: Setting, topics: Sequence[TopicAdvice], bill: Sequence[Assumption],
            what: str) -> List[str]:
    c = comment
    priced = [a for a in topics if a.priced]
    today = sum(a.today.cost.total for a in priced)
    after = sum((a.best or a.today).cost.total for a in priced)
    lines = [f"{c} kcodec advise --emit: {setting.label} for {len(topics)} topic(s); nothing here has been "
             f"applied (advise only reads)",
             f"{c} {what}",
             f"{c} topics: {', '.join(terminal_text(a.topic) for a in topics)}",
             f"{c} saves {money(today - after)}/month on the {len(priced)} priced topic(s) ({money(today)} -> "
             f"{money(after)}: storage, network and CPU)"]
    for a in topics:
        b = a.best
        if b is None:
            continue
        line = (f"{c}   {terminal_text(a.topic)}: {money(a.saving)}/month; {a.today.ratio:.2f}x -> {b.ratio:.2f}x, "
                f"{a.today.records_per_batch:.1f} -> {b.records_per_batch:.1f} records/batch, "
                f"{format_size(a.today.stored_per_day)}/day -> {format_size(b.stored_per_day)}/day stored; "
                f"replayed with {a.client.display_name}'s batching")
        lines.append(line if a.priced else line + f" (not priced: {terminal_text(a.volume_source)})")
        for x in a.assumptions:
            lines.append(f"{c}     assumes {terminal_text(x.text())}")
    if bill:
        lines.append(f"{c} the bill assumes")
        lines.extend(f"{c}{terminal_text(x)}" for x in assumption_lines(bill, "   "))
    return lines


def _client_file(rules: ClientRules, setting: Setting, topics: Sequence[TopicAdvice],
                 bill: Sequence[Assumption], cannot: Sequence[str] = ()) -> str:
    replayed = sorted({a.client.name for a in topics})
    what = f"{rules.display_name} producer configuration, in its own names"
    if replayed != [rules.name]:
        # the saving is the replayed client's: another client fills and cuts batches by its own rules
        what += (f"; the figures below are for the batching of {', '.join(CLIENTS[n].display_name for n in replayed)}"
                 f", which wrote these topics: {rules.display_name}'s batches at these values differ")
    lines = _header(rules.config_comment, setting, topics, bill, what)
    if cannot:
        lines.append(f"{rules.config_comment} no file for {', '.join(cannot)}: the level {setting.level} cannot be "
                     f"set there")
    names = client_config(rules, setting.codec, setting.level, setting.default_level, setting.batch_bytes,
                          setting.linger_ms)
    lines.extend(rules.config_line.format(key=k, value=v) for k, v in names.items())
    return "\n".join(lines) + "\n"


def _topic_file(setting: Setting, topics: Sequence[TopicAdvice], bill: Sequence[Assumption],
                cluster: Mapping[str, object], bootstrap: Optional[str],
                command_config: Optional[str]) -> Optional[str]:
    change, unknown = topic_codec_changes(topics, setting, cluster)
    if not change and not unknown:
        return None
    server = bootstrap or _PLACEHOLDER_BOOTSTRAP
    # the file advise read a secured cluster with, in Java's names, is what kafka-configs.sh takes too
    secured = f" --command-config {shlex.quote(command_config)}" if command_config else ""

    def command(topic: str) -> str:
        return (f"kafka-configs.sh --bootstrap-server {shlex.quote(server)}{secured} --alter --entity-type topics "
                f"--entity-name {shlex.quote(topic)} --add-config compression.type=producer")

    lines = ["#!/bin/sh"]
    lines += _header("#", setting, topics, bill,
                     "topic settings: a topic compression.type other than producer (or the producers' codec) "
                     "makes brokers rebuild every batch in it, and the batch shape above is lost")
    for topic, codec in sorted(change.items()):
        lines.append(f"# {terminal_text(topic)}: compression.type={codec} (from the cluster)")
        lines.append(command(topic))
    if unknown:
        lines.append(f"# compression.type not read for {len(unknown)} topic(s) (advise read no cluster): where "
                     f"kafka-configs.sh --describe shows one other than producer or {setting.codec}, run:")
        lines.extend(f"# {command(t)}" for t in sorted(unknown))
    return "\n".join(lines) + "\n"


def emit_configs(out: Path, advice: Sequence[TopicAdvice], estate, cluster: Mapping[str, object],
                 bill: Sequence[Assumption] = (), bootstrap: Optional[str] = None,
                 command_config: Optional[str] = None) -> List[Path]:
    """Write every group's files under ``out`` (created); the paths written, group by group.

    ``cluster``: topic -> its :class:`~kcodec.advise.inputs.cluster.settings.TopicSettings`, where the
    cluster was read; ``bill``: the run's bill assumptions; ``bootstrap``: the address the commands name, with
    ``command_config`` (``--command-config``) where the cluster is secured.
    """
    out.mkdir(parents=True, exist_ok=True)
    written: List[Path] = []
    for n, (setting, topics) in enumerate(_groups(advice, estate), 1):
        stem = f"{n:02d}-{_slug(setting)}"
        cannot = [r.display_name for r in CLIENTS.values() if not r.expresses(setting.codec, setting.level)]
        for rules in CLIENTS.values():
            if not rules.expresses(setting.codec, setting.level):
                continue
            path = out / f"{stem}.{rules.name}.{rules.config_suffix}"
            path.write_text(_client_file(rules, setting, topics, bill, cannot), encoding="utf-8")
            written.append(path)
        text = _topic_file(setting, topics, bill, cluster, bootstrap, command_config)
        if text is not None:
            path = out / f"{stem}.{TOPIC_CONFIG_SUFFIX}"
            path.write_text(text, encoding="utf-8")
            written.append(path)
    return written
