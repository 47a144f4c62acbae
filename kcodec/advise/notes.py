"""Notes that say exactly what the rule did, in words: why a setting was excluded (the limits it is past are
:meth:`~kcodec.advise.recommend.Rule.exclusions`), why today's settings are kept; and the one way dollars are
written."""
from __future__ import annotations

from typing import List

__all__ = ["money", "why_excluded", "keep_note", "excluded_note"]


def money(x: float) -> str:
    """Dollars, always to the cent, so figures side by side read alike; one that rounds to zero has no sign."""
    shown = round(abs(x), 2)
    sign = "-" if x < 0 and shown else ""
    return f"{sign}${shown:,.2f}"


def why_excluded(rule, m) -> List[str]:
    """Why the rule (:class:`~kcodec.advise.recommend.Rule`) leaves setting ``m`` out, in words; empty when it
    does not."""
    words = {"--min-compress-mbps": "compresses at {value:.0f} MB/s per core (< --min-compress-mbps {limit:g})",
             "--min-read-mbps": "reads at {value:.0f} MB/s per core (< --min-read-mbps {limit:g})",
             "--max-linger-ms": "lingers {value} ms (> --max-linger-ms {limit:g})"}
    return [words[x.flag].format(value=x.value, limit=x.limit) for x in rule.exclusions(m)]


def excluded_note(m, today_total: float, rule) -> str:
    return (f"cheaper but excluded: {m.label} would save {money(today_total - m.cost.total)}/month, but it "
            f"{' and '.join(why_excluded(rule, m))}")


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
