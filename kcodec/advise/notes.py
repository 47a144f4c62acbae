"""Notes that say exactly what the rule did: why a setting was excluded, why today's settings are kept,
and the cheapest setting the rule left out; and the one way dollars are written."""
from __future__ import annotations

from typing import List, Sequence

__all__ = ["money", "exclusions", "best_excluded", "keep_note", "excluded_note"]


def money(x: float) -> str:
    """Dollars, always to the cent, so figures side by side read alike; one that rounds to zero has no sign."""
    shown = round(abs(x), 2)
    sign = "-" if x < 0 and shown else ""
    return f"{sign}${shown:,.2f}"


def exclusions(rule, m) -> List[str]:
    """Why the rule (:class:`~kcodec.advise.recommend.Rule`) leaves setting ``m`` out; empty when it does not."""
    out = []
    if m.compress_mbps < rule.min_compress_mbps:
        out.append(f"compresses at {m.compress_mbps:.0f} MB/s per core (< --min-compress-mbps "
                   f"{rule.min_compress_mbps:g})")
    if m.read_mbps < rule.min_read_mbps:
        out.append(f"reads at {m.read_mbps:.0f} MB/s per core (< --min-read-mbps {rule.min_read_mbps:g})")
    if m.setting.linger_ms > rule.max_linger_ms:
        out.append(f"lingers {m.setting.linger_ms} ms (> --max-linger-ms {rule.max_linger_ms:g})")
    return out


def best_excluded(results: Sequence, rule, below: float):
    """The cheapest setting the rule leaves out that costs less than ``below`` $/month, or None."""
    out = [m for m in results if exclusions(rule, m) and m.cost.total < below]
    return min(out, key=lambda m: m.cost.total) if out else None


def excluded_note(m, today_total: float, rule) -> str:
    return (f"cheaper but excluded: {m.label} would save {money(today_total - m.cost.total)}/month, but it "
            f"{' and '.join(exclusions(rule, m))}")


def keep_note(best, today_total: float, rule) -> str:
    """Why the rule's best setting is not recommended: it saves too little, or costs more than today."""
    saving = today_total - best.cost.total
    if saving <= 0:
        return (f"no setting within the rule costs less than today: the cheapest, {best.label}, costs "
                f"{money(-saving)}/month more ({-saving / max(today_total, 1e-12) * 100:.0f}%); keep today's "
                f"settings")
    return (f"the best setting within the rule, {best.label}, saves {money(saving)}/month "
            f"({saving / max(today_total, 1e-12) * 100:.1f}%), less than --min-saving {rule.min_saving * 100:g}%: "
            f"keep today's settings")
