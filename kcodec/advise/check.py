"""``kcodec advise --check PREVIOUS/results.json``: what the broker stores since the producers were changed.

The same input is read as advise reads it.  Each topic's batches are split where the change was
made: at the previous run's time (``run_at_ms`` of its ``results.json``), at ``--since``, or, where
neither is known, at the first batch of each partition in the recommended codec whose record count
is within half and twice the predicted records per batch.  The batches after it are measured as
advise measures today's (stored bytes, records, batches, the records' bytes); the
setting in effect is detected from them: their codec, the level advised where the codec is the one
advised (a level is not written in a batch), and of the settings of that codec the previous run
measured, the one whose predicted records per batch is nearest.  A codec the previous run did not
measure is replayed now, at every batch.size and linger.ms it did, on the batches before the change.

Each topic gets one verdict: ``changed`` (compared with the prediction), ``not changed`` (the
batches after the change are in today's codec, not the advised one), ``some producers changed`` (some
producer ids write the advised codec, others not), or ``too little data`` (fewer than
:data:`MIN_BATCHES` batches of the predicted shape after the change, with the records that would be
enough).  The realised monthly saving takes the predicted bill and scales its storage and network by
the realised stored bytes per record against the predicted ones; CPU is taken as predicted.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

from kcodec.advise.grid import Setting
from kcodec.advise.notes import money
from kcodec.errors import KcodecError
from kcodec.escape import json_text, terminal_text
from kcodec.records.batch_header import COMPRESSION_MASK, CONTROL_MASK, HEADER
from kcodec.records.framing import iter_entries

__all__ = ["Previous", "TopicCheck", "read_previous", "parse_since", "split_chunks", "producer_codecs",
           "detect_setting", "judge", "check_text", "check_html", "check_doc", "run_check", "MIN_BATCHES", "AFTER"]

#: batches of the new shape needed to judge records per batch to 10% (one batch in ten) and a ratio
MIN_BATCHES = 10
#: appended to a topic's name for its batches after the change: "/" is not in any Kafka topic name
AFTER = "/after"
_CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
#: what the check's ratio is, said under its table
RATIO_TEXT = ("the records' keys, values and headers over the stored bytes, realised and predicted alike (an "
              "uncompressed batch's size holds its framing, which differs between the batches before the change "
              "and after it)")


@dataclass
class Previous:
    """One topic of the previous run's ``results.json``."""

    topic: str
    recommended: Optional[Setting]
    predicted: Optional[Dict[str, Any]]  #: the recommended setting's row
    today: Dict[str, Any]
    settings: Dict[str, Dict[str, Any]]  #: label -> row, every setting measured
    codec_mix: Dict[str, float]

    @property
    def today_codec(self) -> str:
        return max(self.codec_mix, key=lambda k: self.codec_mix[k]) if self.codec_mix else "none"


def _setting(row: Dict[str, Any]) -> Setting:
    return Setting(row["codec"], row["level"], int(row["batch_size"]), int(row["linger_ms"]))


def read_previous(path: str) -> Tuple[Optional[int], Dict[str, Previous]]:
    """(the previous run's time in ms or None, topic -> :class:`Previous`); a one-line error on a bad file."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
        run_at = (doc.get("context") or {}).get("run_at_ms")
        out: Dict[str, Previous] = {}
        for t in doc["topics"]:
            rec = t.get("recommended")
            rows = {r["setting"]: r for r in t.get("settings") or [] if r.get("codec") is not None}
            out[t["topic"]] = Previous(t["topic"], _setting(rec) if rec else None, rec, t["today"], rows,
                                       dict(t.get("codec_mix") or {}))
    except FileNotFoundError:
        raise KcodecError(f"--check {path}: no such file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise KcodecError(f"--check {path}: cannot be read ({exc})") from None
    except json.JSONDecodeError as exc:
        raise KcodecError(f"--check {path}: not JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})") from None
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise KcodecError(f"--check {path}: not the results.json of kcodec advise (missing or bad {exc})") from None
    return (int(run_at) if run_at is not None else None), out


def parse_since(text: str) -> int:
    """``--since``: ISO-8601 (UTC where no zone is given) or milliseconds since the epoch."""
    try:
        if text.strip().isdigit():
            return int(text)
        when = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        return int(when.timestamp() * 1000)
    except ValueError:
        raise KcodecError(f"--since {text}: expected a date and time (2026-05-01T12:00:00Z) or "
                          f"milliseconds since the epoch") from None


def _data_batches(data) -> Iterator[Tuple[int, int, Tuple[Any, ...]]]:
    """(position, size, header fields) of each v2 data batch, through the one batch walk (control batches
    are the broker's)."""
    view = memoryview(data)
    for e in iter_entries(view):
        if e.magic == 2 and e.size >= HEADER.size:
            fields = HEADER.unpack_from(view, e.position)
            if not fields[5] & CONTROL_MASK:
                yield e.position, e.size, fields


def _after_at(data: bytes, cutoff: Optional[int], codec: Optional[int], rpb: float) -> int:
    """The byte where the batches after the change start (len(data): none are)."""
    for pos, _, (_, _, _, _, _, attributes, _, base_ts, _, _, _, _, count) in _data_batches(data):
        if cutoff is not None:
            if base_ts >= cutoff:
                return pos
        elif codec is not None and attributes & COMPRESSION_MASK == codec and rpb / 2 <= count <= rpb * 2:
            return pos
    return len(data)


def split_chunks(batches: Iterator, cutoffs: Dict[str, Optional[int]], codecs: Dict[str, Optional[int]],
                 rpb: Dict[str, float]) -> Iterator:
    """mapInArrow body: each chunk row as its part before the change (the topic's name) and its part after
    (the name + :data:`AFTER`), split at a batch boundary; parts without batches are left out."""
    import pyarrow as pa

    for b in batches:
        topics, parts, chunks, datas = [], [], [], []
        for i in range(b.num_rows):
            topic = b.column(0)[i].as_py()
            data = b.column(3)[i].as_py()
            at = _after_at(data, cutoffs.get(topic), codecs.get(topic), rpb.get(topic, 0.0))
            for name, part in ((topic, data[:at]), (topic + AFTER, data[at:])):
                if part:
                    topics.append(name)
                    parts.append(b.column(1)[i].as_py())
                    chunks.append(b.column(2)[i].as_py())
                    datas.append(part)
        yield pa.RecordBatch.from_arrays([pa.array(topics, pa.string()), pa.array(parts, pa.int32()),
                                          pa.array(chunks, pa.int32()), pa.array(datas, pa.binary())],
                                         names=["topic", "partition", "chunk", "data"])


#: mapInArrow schema of :func:`producer_codecs`
PRODUCER_DDL = "topic string, producer_id long, codec int, batches long, records long, bytes long"


def producer_codecs(batches: Iterator) -> Iterator:
    """mapInArrow body over split chunks: per part after the change, (producer id, codec) -> batches, records,
    bytes."""
    import pyarrow as pa

    for b in batches:
        acc: Dict[Tuple[str, int, int], List[int]] = {}
        for i in range(b.num_rows):
            topic = b.column(0)[i].as_py()
            if not topic.endswith(AFTER):
                continue
            for _, size, (_, _, _, _, _, attributes, _, _, _, pid, _, _, count) in _data_batches(
                    b.column(3)[i].as_py()):
                a = acc.setdefault((topic[: -len(AFTER)], pid, attributes & COMPRESSION_MASK), [0, 0, 0])
                a[0] += 1
                a[1] += count
                a[2] += size
        keys = list(acc)
        yield pa.RecordBatch.from_arrays(
            [pa.array([k[0] for k in keys], pa.string()), pa.array([k[1] for k in keys], pa.int64()),
             pa.array([k[2] for k in keys], pa.int32()), pa.array([acc[k][0] for k in keys], pa.int64()),
             pa.array([acc[k][1] for k in keys], pa.int64()), pa.array([acc[k][2] for k in keys], pa.int64())],
            names=["topic", "producer_id", "codec", "batches", "records", "bytes"])


@dataclass
class TopicCheck:
    """One topic's check: the verdict, the setting detected and the realised figures against the predicted."""

    topic: str
    verdict: str  #: changed, not changed, some producers changed, too little data, no recommendation
    text: str  #: the verdict in a sentence
    split: str  #: where the batches after the change start
    detected: Optional[Setting] = None
    detected_how: str = ""
    records: int = 0  #: after the change
    batches: int = 0
    stored_bytes: int = 0
    plain_bytes: int = 0
    payload_bytes: int = 0  #: the records' keys, values and headers: the same however they are batched
    predicted: Optional[Dict[str, Any]] = None  #: the detected setting's row (previous run's, or replayed now)
    predicted_now: bool = False  #: the detected setting was not in the previous grid: replayed on this run
    saving_predicted: Optional[float] = None
    saving_realised: Optional[float] = None
    needed_records: Optional[int] = None
    producers: List[Dict[str, Any]] = field(default_factory=list)

    @property
    def bytes_per_record(self) -> float:
        return self.stored_bytes / max(1, self.records)

    @property
    def ratio(self) -> float:
        """The records' bytes over the stored bytes.  Not advise's ratio (today's batches uncompressed over the
        stored): an uncompressed batch's size holds its framing, and the batches before the change, whose framing
        that numerator counts, are not the ones after it (at 3 records per batch, 18 of a 300-byte record's)."""
        return self.payload_bytes / max(1, self.stored_bytes)

    @property
    def records_per_batch(self) -> float:
        return self.records / max(1, self.batches)

    def predicted_bytes_per_record(self) -> Optional[float]:
        p = self.predicted
        return None if p is None else p["stored_bytes"] / max(1, p["records"])

    def predicted_rpb(self) -> Optional[float]:
        p = self.predicted
        return None if p is None else p["records"] / max(1, p["batches"])

    def predicted_ratio(self) -> Optional[float]:
        p = self.predicted
        return None if p is None else p["payload_bytes"] / max(1, p["stored_bytes"])

    def errors(self) -> Dict[str, Optional[float]]:
        """Realised against predicted, as shares (+0.02: 2% above the prediction)."""
        def err(real: float, pred: Optional[float]) -> Optional[float]:
            return None if pred is None or pred == 0 or self.records == 0 else real / pred - 1
        return {"stored_bytes_per_record": err(self.bytes_per_record, self.predicted_bytes_per_record()),
                "ratio": err(self.ratio, self.predicted_ratio()),
                "records_per_batch": err(self.records_per_batch, self.predicted_rpb())}

    def doc(self) -> Dict[str, Any]:
        return {"topic": self.topic, "verdict": self.verdict, "text": self.text, "split": self.split,
                "detected": self.detected.label if self.detected else None, "detected_how": self.detected_how,
                "after": {"records": self.records, "batches": self.batches, "stored_bytes": self.stored_bytes,
                          "plain_bytes": self.plain_bytes, "payload_bytes": self.payload_bytes,
                          "stored_bytes_per_record": self.bytes_per_record,
                          "ratio": self.ratio, "records_per_batch": self.records_per_batch},
                "predicted": (None if self.predicted is None else
                              {"setting": self.predicted.get("setting"),
                               "stored_bytes_per_record": self.predicted_bytes_per_record(),
                               "ratio": self.predicted_ratio(), "records_per_batch": self.predicted_rpb(),
                               "replayed_now": self.predicted_now}),
                "errors": self.errors(), "saving_month": {"predicted": self.saving_predicted,
                                                          "realised": self.saving_realised},
                "records_enough": self.needed_records, "producers": self.producers}


def detect_setting(prev: Previous, codec: str, rpb: float,
                   replayed: Optional[Dict[str, Dict[str, Any]]] = None) -> Tuple[Optional[Setting], str, bool]:
    """(the setting in effect, how it was told, whether its prediction is this run's replay) from the codec of
    the batches after the change and their records per batch."""
    level = prev.recommended.level if prev.recommended is not None and prev.recommended.codec == codec else None
    rows = {k: r for k, r in prev.settings.items() if r["codec"] == codec and r["level"] == level}
    now = False
    if not rows and replayed:
        rows, now = {k: r for k, r in replayed.items() if r["codec"] == codec}, True
    if not rows:
        return None, f"{codec}: no setting of this codec was measured", False

    def distance(r: Dict[str, Any]) -> float:
        return abs(math.log(max(rpb, 1e-9) / max(r["records"] / max(1, r["batches"]), 1e-9)))

    best = min(rows.values(), key=lambda r: (distance(r), r["setting"]))
    how = (f"codec {codec} from the batches; of the {len(rows)} {codec} setting(s) "
           f"{'replayed now on the batches before the change' if now else 'the previous run measured'}, the one "
           f"whose records per batch ({best['records'] / max(1, best['batches']):.1f}) is nearest the "
           f"{rpb:.1f} stored")
    if level is not None:
        how += f"; level {level} as advised (a batch does not record its level)"
    return _setting(best), how, now


def _saving(prev: Previous, row: Dict[str, Any], bytes_per_record: Optional[float]) -> Tuple[float, Optional[float]]:
    """(predicted, realised) $/month saved.  A bill is the advised setting's predicted bill with its storage and
    network scaled by stored bytes per record against the advised setting's predicted ones (CPU as predicted):
    the predicted bill of a setting replayed now, and the realised bill of what is stored."""
    today = prev.today["cost_month"]["total"]
    base = prev.predicted if prev.predicted is not None else row
    cost = base["cost_month"]
    base_bpr = max(base["stored_bytes"] / max(1, base["records"]), 1e-12)

    def bill(bpr: float) -> float:
        return cost["cpu"] + (cost["storage"] + cost["network"]) * bpr / base_bpr

    predicted = today - (row["cost_month"]["total"] if "cost_month" in row else
                         bill(row["stored_bytes"] / max(1, row["records"])))
    return predicted, None if bytes_per_record is None else today - bill(bytes_per_record)


def judge(prev: Previous, split: str, after: Optional[Dict[str, Any]], producers: Sequence[Dict[str, Any]],
          replayed: Optional[Dict[str, Dict[str, Any]]] = None) -> TopicCheck:
    """One topic's verdict from the previous run's figures, the measured part after the change (its
    aggregate's line of today's batches, or None) and its (producer id, codec) counts."""
    if prev.recommended is None or prev.predicted is None:
        return TopicCheck(prev.topic, "no recommendation", "the previous run recommended keeping today's "
                          "settings: nothing to check", split)
    rpb = prev.predicted["records"] / max(1, prev.predicted["batches"])
    needed = int(math.ceil(MIN_BATCHES * rpb))
    if after is None or not producers:
        return TopicCheck(prev.topic, "too little data", f"no batches after the change; {needed:,} records "
                          f"({MIN_BATCHES} batches at the predicted {rpb:.1f} records per batch) would be enough",
                          split, needed_records=needed)
    t = after
    by_codec: Dict[str, int] = {}
    for p in producers:
        name = _CODECS[p["codec"]] if p["codec"] < len(_CODECS) else str(p["codec"])
        by_codec[name] = by_codec.get(name, 0) + p["bytes"]
    codec = max(by_codec, key=lambda k: by_codec[k])
    new = prev.recommended.codec
    check = TopicCheck(prev.topic, "", "", split, records=int(t["records"]), batches=int(t["batches"]),
                       stored_bytes=int(t["stored_bytes"]), plain_bytes=int(t["plain_bytes"]),
                       payload_bytes=int(t["payload_bytes"]),
                       needed_records=needed, producers=[dict(p) for p in producers])
    ids = sorted({p["producer_id"] for p in producers})
    changed_ids = sorted({p["producer_id"] for p in producers if _CODECS[p["codec"]] == new})
    left_ids = [i for i in ids if i not in changed_ids]
    if len(by_codec) > 1 and new in by_codec:
        check.verdict = "some producers changed"
        if left_ids and -1 not in ids:
            check.text = (f"some producers changed: producer ids {', '.join(map(str, changed_ids))} write {new}, "
                          f"{', '.join(map(str, left_ids))} do not")
        else:  # no producer ids, or ids that write both: only the bytes tell
            check.text = (f"some producers changed: {by_codec[new] / sum(by_codec.values()):.0%} of the bytes "
                          f"after the change are {new}, the rest {', '.join(k for k in by_codec if k != new)}"
                          + ("; the producers write no producer id, so which did is not known" if ids == [-1]
                             else ""))
        return check
    today_rpb = prev.today["records"] / max(1, prev.today["batches"])
    # today's codec, and where it is also the advised one, batches nearer today's shape than the advised
    if codec == prev.today_codec and (codec != new or abs(math.log(check.records_per_batch / today_rpb))
                                      < abs(math.log(check.records_per_batch / rpb))):
        check.verdict = "not changed"
        check.text = (f"not changed: the {check.batches} batches after the change are {codec} at "
                      f"{check.records_per_batch:.1f} records per batch, as today's ({today_rpb:.1f}), not the "
                      f"advised {prev.recommended.label} ({rpb:.1f})")
        return check
    detected, how, now = detect_setting(prev, codec, check.records_per_batch, replayed)
    check.detected, check.detected_how, check.predicted_now = detected, how, now
    if detected is not None:
        check.predicted = (replayed or {}).get(detected.label) if now else prev.settings.get(detected.label)
    if check.batches < MIN_BATCHES:
        check.verdict = "too little data"
        check.text = (f"too little data after the change: {check.records:,} records in {check.batches} batches; "
                      f"{needed:,} records ({MIN_BATCHES} batches at the predicted {rpb:.1f} records per batch) "
                      f"would be enough")
        return check
    check.verdict = "changed"
    if check.predicted is not None:
        pred, real = _saving(prev, check.predicted, check.bytes_per_record)
        check.saving_predicted, check.saving_realised = pred, real
    e = check.errors()
    if detected is None:
        check.text = f"changed to {codec}, which no setting measured or replayed here describes"
    else:
        check.text = (f"changed to {detected.label}" + ("" if detected == prev.recommended else
                                                         f" (advised: {prev.recommended.label})") +
                      f"; stored bytes per record {_pct(e['stored_bytes_per_record'])}, records per batch "
                      f"{_pct(e['records_per_batch'])} against the prediction")
    return check


def _pct(x: Optional[float]) -> str:
    return "-" if x is None else f"{x:+.1%}"


def _num(x: Optional[float], fmt: str = ".1f") -> str:
    return "-" if x is None else format(x, fmt)


def _row_cells(c: TopicCheck) -> List[str]:
    e = c.errors()
    return [c.topic, c.verdict, c.detected.label if c.detected else "-", f"{c.records:,}",
            f"{_num(c.bytes_per_record if c.records else None)} / {_num(c.predicted_bytes_per_record())}",
            _pct(e["stored_bytes_per_record"]),
            f"{_num(c.ratio if c.records else None, '.2f')} / {_num(c.predicted_ratio(), '.2f')}",
            f"{_num(c.records_per_batch if c.batches else None)} / {_num(c.predicted_rpb())}",
            _pct(e["records_per_batch"]),
            f"{money(c.saving_realised) if c.saving_realised is not None else '-'} / "
            f"{money(c.saving_predicted) if c.saving_predicted is not None else '-'}"]


_HEAD = ["topic", "verdict", "setting in effect", "records after", "bytes/record real / predicted", "error",
         "ratio (record bytes) real / predicted", "records/batch real / predicted", "error",
         "$/month saved real / predicted"]


def check_text(checks: Sequence[TopicCheck], previous: str, absent: Sequence[str] = ()) -> str:
    """The terminal table, then each topic's verdict and how it was told, and the previous run's topics this
    input does not hold."""
    rows = [_HEAD] + [[terminal_text(x) for x in _row_cells(c)] for c in checks]
    widths = [max(len(r[i]) for r in rows) for i in range(len(_HEAD))]
    lines = [f"check against {terminal_text(previous)}: what the broker stores since the change", ""]
    lines += ["  ".join(cell.ljust(w) for cell, w in zip(r, widths)).rstrip() for r in rows]
    lines.append("")
    for c in checks:
        lines.append(f"{terminal_text(c.topic)}: {terminal_text(c.text)}")
        lines.append(f"  after      {terminal_text(c.split)}")
        if c.detected_how:
            lines.append(f"  detected   {terminal_text(c.detected_how)}")
    if absent:
        lines.append(f"not in this input, so not checked: {terminal_text(', '.join(absent))}")
    lines.append(f"ratio: {RATIO_TEXT}")
    lines.append("realised $/month saved: the predicted bill with its storage and network scaled by the realised "
                 "stored bytes per record against the predicted; CPU as predicted")
    return "\n".join(lines)


def check_html(checks: Sequence[TopicCheck], previous: str, absent: Sequence[str] = ()) -> str:
    from html import escape

    head = "".join(f"<th>{escape(h)}</th>" for h in _HEAD)
    body = "".join("<tr>" + "".join(f"<td>{escape(x)}</td>" for x in _row_cells(c)) + "</tr>" for c in checks)
    notes = "".join(f"<li><b>{escape(c.topic)}</b>: {escape(c.text)}<br>after: {escape(c.split)}"
                    + (f"<br>detected: {escape(c.detected_how)}" if c.detected_how else "") + "</li>"
                    for c in checks)
    missing = f"<p>Not in this input, so not checked: {escape(', '.join(absent))}.</p>" if absent else ""
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>kcodec advise --check</title></head><body>"
            f"<h1>Check against {escape(previous)}</h1><table border='1'><tr>{head}</tr>{body}</table>"
            f"<ul>{notes}</ul>{missing}<p>Ratio: {escape(RATIO_TEXT)}.</p><p>Realised $/month saved: the predicted "
            f"bill with its storage and network scaled by the realised stored bytes per record against the "
            f"predicted; CPU as predicted.</p></body></html>")


def check_doc(checks: Sequence[TopicCheck], previous: str, run_at_ms: int, absent: Sequence[str] = ()) -> str:
    """The check's results.json: each topic's verdict and figures, and the previous run's topics not in this input."""
    return json_text({"check": {"previous": previous, "run_at_ms": run_at_ms,
                                "topics": [c.doc() for c in checks], "not_in_input": list(absent)}}, default=str)


def run_check(spark, plan, sampling, previous_path: str, since: Optional[str], out_dir: str, client: str,
              producers_per_partition: int, cpu: str, log) -> Dict[str, Any]:
    """The check of ``previous_path`` on ``plan``'s input: the table printed, ``report.html`` and ``results.json``
    written under ``out_dir``; the :class:`TopicCheck` of each topic the previous run advised and the input holds."""
    import time

    from kcodec.advise.aggregate import aggregate_rows
    from kcodec.advise.inputs.chunks import CHUNK_DDL
    from kcodec.advise.task import METRICS_DDL, TODAY, measure_batches
    from kcodec.storage import atomic_write_bytes

    run_at = int(time.time() * 1000)
    prev_at, previous = read_previous(previous_path)
    cutoff = parse_since(since) if since else prev_at
    cutoffs = {t: cutoff for t in previous}
    codecs = {t: (_CODECS.index(p.recommended.codec) if p.recommended and p.recommended.codec in _CODECS else None)
              for t, p in previous.items()}
    rpb = {t: (p.predicted["records"] / max(1, p.predicted["batches"]) if p.predicted else 0.0)
           for t, p in previous.items()}
    if cutoff is not None:
        how = f"batches first stamped at or after {datetime.fromtimestamp(cutoff / 1000, timezone.utc).isoformat()}"
        how += " (--since)" if since else " (the previous run's time)"
    else:
        how = ("each partition's first batch in the advised codec holding half to twice the predicted records per "
               "batch (the previous results.json has no run time and no --since was given)")
    chunks, _ = plan.check_chunks(spark, sampling, cutoff)
    split = chunks.mapInArrow(lambda it: split_chunks(it, cutoffs, codecs, rpb), CHUNK_DDL).persist()
    try:
        counts = split.mapInArrow(producer_codecs, PRODUCER_DDL).toArrow().to_pylist()
        after_parts = split.filter(split.topic.endswith(AFTER))
        table = after_parts.mapInArrow(lambda it: measure_batches(it, [], client, None, producers_per_partition, cpu),
                                       METRICS_DDL).toArrow()
        # a new measurement's lines are read beside the previous results.json's settings, by the same names
        after = {t: agg.today.doc()
                 for t, agg in (aggregate_rows(table) if table.num_rows else {}).items()}
        by_topic: Dict[str, List[Dict[str, Any]]] = {}
        for r in counts:
            by_topic.setdefault(r["topic"], []).append(r)
        # a codec the previous run measured no setting of is replayed now, on the batches before the change
        replay: Dict[str, List[Setting]] = {}
        for t, p in previous.items():
            rows = by_topic.get(t) or []
            if not rows or p.recommended is None:
                continue
            totals: Dict[int, int] = {}
            for r in rows:
                totals[r["codec"]] = totals.get(r["codec"], 0) + r["bytes"]
            codec = _CODECS[max(totals, key=lambda k: totals[k])]
            if not any(r["codec"] == codec for r in p.settings.values()):
                shapes = sorted({(r["batch_size"], r["linger_ms"]) for r in p.settings.values()})
                replay[t] = [Setting(codec, None, int(b), int(lg)) for b, lg in shapes]
        replayed: Dict[str, Dict[str, Dict[str, Any]]] = {}
        if replay:
            before = split.filter(split.topic.isin(sorted(replay)))
            rows = before.mapInArrow(lambda it: measure_batches(it, replay, client, None, producers_per_partition,
                                                                cpu), METRICS_DDL).toArrow()
            for t, agg in aggregate_rows(rows).items():
                replayed[t] = {s.setting: s.doc() for s in agg.settings if s.setting != TODAY}
    finally:
        split.unpersist()
    # a topic of the previous run this input does not hold (another --topic) is not judged
    held = set(plan.topic_partitions) or set(previous)
    checks = [judge(p, how, after.get(t + AFTER), by_topic.get(t, []), replayed.get(t))
              for t, p in sorted(previous.items()) if t in held]
    absent = sorted(t for t in previous if t not in held)
    log(check_text(checks, previous_path, absent))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"html": out / "report.html", "json": out / "results.json"}
    atomic_write_bytes(paths["html"], check_html(checks, previous_path, absent).encode())
    atomic_write_bytes(paths["json"], check_doc(checks, previous_path, run_at, absent).encode())
    log(f"reports: {paths['html']}, {paths['json']}")
    return {"checks": checks, "paths": paths}
