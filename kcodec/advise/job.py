"""The Spark application behind ``kcodec advise``.

Every input becomes one DataFrame of raw chunks (``topic, partition, chunk, data``);
Spark tasks profile each chunk's batches and replay every setting on its records;
only per-topic aggregates come back to the driver.
"""
from __future__ import annotations

import json
import time
from dataclasses import replace
from pathlib import Path
from typing import Callable, Dict, List, Optional

from kcodec.advise.aggregate import TopicAggregate, aggregate_rows
from kcodec.advise.assumptions import topic_assumptions
from kcodec.advise.auto_sample import AutoSampler, SampleReach, nested_order
from kcodec.advise.cpu import THROUGHPUT_NOTES
from kcodec.advise.grid import CLUSTER_SAMPLE, Setting, parse_size
from kcodec.advise.inputs import RoundSampledSource, Sampling, Source
from kcodec.advise.latency import producer_memory
from kcodec.advise.options import Checked, Options, check_options
from kcodec.advise.racing import RangeBook, TopicRace, race_off_reason
from kcodec.advise.recommend import TopicAdvice, advise_topic
from kcodec.advise.replay import LIMITS
from kcodec.advise.task import CHUNK_ERROR, METRICS_DDL, TODAY, measure_batches
from kcodec.advise.topic_config import price_topic
from kcodec.advise.topic_text import rule_text
from kcodec.advise.volumes import given_volume
from kcodec.errors import KcodecError
from kcodec.spark.errors import kcodec_error_in
from kcodec.spark.interrupts import Interrupts, interrupted

__all__ = ["run_advise"]


def _sampling(o: Options, c: Checked, tasks: int) -> Sampling:
    """How much of the input the job reads, from the checked flags."""
    fixed = c.sample_bytes if c.sample_bytes is not None else parse_size(CLUSTER_SAMPLE)
    return Sampling(fixed, c.chunk_bytes, tasks, c.current, o.partitions, o.records, o.seed,
                    o.fetch_retry_s)


def run_advise(options: Optional[Options] = None, *, log: Callable[[str], None] = print, **kwargs) -> Dict:
    """Run the advisor; returns the per-topic advice and the report paths."""
    interrupts = Interrupts()
    try:
        return _run_advise(options, log, interrupts, **kwargs)
    finally:
        interrupts.restore()


def _run_advise(options: Optional[Options], log: Callable[[str], None], interrupts: Interrupts, **kwargs) -> Dict:
    from kcodec.advise.report import summary_text, write_reports
    from kcodec.spark.session import get_session

    o = options or Options(**kwargs)
    started = time.perf_counter()
    run_at_ms = int(time.time() * 1000)  # a later --check takes the batches stamped after it
    c = check_options(o)
    doing = f"checking against {o.check}" if o.check else f"{len(c.settings)} settings per chunk"
    log(f"kcodec advise: {c.plan.description}; {doing}; starting Spark ...")
    interrupts.starting()
    try:
        with interrupts.keeping():
            spark = get_session(o.master, "kcodec-advise")
    except Exception as exc:
        interrupts.started(exc)
    interrupts.started()
    # A task's error reaches the driver and is reported in one line; Spark's own log of it would
    # print the same error again as pages of stack traces.
    spark.sparkContext.setLogLevel("OFF")
    tasks = o.tasks or spark.sparkContext.defaultParallelism
    if o.write_dir:
        from kcodec.advise.write import check_topics

        check_topics(spark, c.plan, _sampling(o, c, tasks), o.write_dir)
    sampling = _sampling(o, c, tasks)
    if o.check:
        from kcodec.advise.check import run_check

        checked = run_check(spark, c.plan, sampling, o.check, o.since, o.out_dir, o.producer_client, o.producers,
                            o.cpu_cost, log)
        log(f"done in {time.perf_counter() - started:.0f}s")
        return {"advice": [], "checks": checked["checks"], "paths": checked["paths"],
                "seconds": time.perf_counter() - started}
    settings = list(c.settings)
    client = o.producer_client
    # Record inputs were batched here at --current-linger-ms; logs and clusters do not record theirs.
    today = c.current if c.plan.replays_today else None
    today_linger = today.linger_ms if today is not None else None
    producers = o.producers
    cpu = o.cpu_cost

    def measure(frame, label: str, grid=settings):
        rows = frame.mapInArrow(lambda it: measure_batches(it, grid, client, today_linger, producers, cpu),
                                METRICS_DDL)
        return _collect(rows, label, spark, c.plan, o.progress)

    reach: Dict[str, SampleReach] = {}
    races: Dict[str, TopicRace] = {}
    n_chunks: Optional[int]  # None: the input knows its chunks only once Spark has read them
    if c.sample_bytes is None and isinstance(c.plan, RoundSampledSource):
        table, reach, races = _measure_in_rounds(spark, c.plan, c, o, sampling, measure, today)
        n_chunks = sum(r.chunks for r in reach.values())
    else:
        chunks, n_chunks = c.plan.chunks(spark, sampling)
        table = measure(chunks, "measuring chunks")
    if table.num_rows == 0:
        raise KcodecError(f"{c.plan.description}: no records to measure")
    import pyarrow.compute as pc

    measured = int(pc.sum(pc.equal(table["setting"], TODAY)).as_py() or 0)
    aggregates = aggregate_rows(table)
    tails = c.plan.tail_notes(spark, sorted(aggregates))
    advice: List[TopicAdvice] = []
    for topic in sorted(aggregates):
        race = races.get(topic)
        a = _advise_one(topic, race.keep(aggregates[topic]) if race else aggregates[topic], c, o, today)
        if race is not None:
            race.finish(a)
        a.notes.extend(tails.get(topic, []))
        a.sample = reach.get(topic)
        if a.best is not None:
            writes_to = o.producer_partitions or c.plan.topic_partitions.get(topic) or (
                o.partitions if c.plan.replays_today else a.partitions)
            a.memory = producer_memory(a.best.setting.batch_bytes, writes_to, c.buffer_memory)
        advice.append(a)
    estate = None
    if len(advice) > 1:
        from kcodec.advise.estate import plan_estate, set_harmonised

        if c.choose is None:
            set_harmonised(advice, c.rule, c.prices, o.same_setting_within, o.group_by)
        estate = plan_estate(advice, c.rule, o.group_by, o.same_setting_within)
    context = {"input": c.plan.description, "chunks measured": measured, "settings": len(settings),
               "sample per topic": _sample_text(c, o),
               "rule": rule_text(c.rule), "assumptions": [a.doc() for a in c.bill],
               "throughput": "; ".join(THROUGHPUT_NOTES),
               "replay": LIMITS, "run_at_ms": run_at_ms}
    if c.metadata is not None:
        context["metadata log"] = f"{o.metadata_log}: each topic's retention.ms and replication factor"
    if c.cluster:
        context["cluster settings"] = (f"{o.bootstrap_server}: each topic's settings (DescribeConfigs) and replicas "
                                       f"(Metadata)" + ("; consumer groups counted (ListGroups, OffsetFetch)"
                                                        if o.count_consumer_groups else ""))
    if c.current_bytes is not None:
        context["current size"] = o.current_size
    log("")
    if estate is None or o.all_topics:
        log(summary_text(advice, c.current_bytes, o.current_size, c.bill,
                         (c.prices.block_gb_month,
                          c.defaults.replication_factor if c.prices.storage_per_replica else 1)))
    if estate is not None:
        from kcodec.advise.estate_text import estate_text

        if o.all_topics:
            log("")
        log(estate_text(estate, o.top, o.out_dir, c.current_bytes, o.current_size))
    paths = write_reports(Path(o.out_dir), advice, context, estate, o.top, o.all_topics)
    log(f"reports: {paths['html']}, {paths['png']}, {paths['json']}, {paths['csv']}")
    if o.emit_dir:
        from kcodec.advise.emit import emit_configs

        emitted = emit_configs(Path(o.emit_dir), advice, estate, c.cluster, c.bill, o.bootstrap_server,
                               o.command_config)
        log(f"configuration to apply: {len(emitted)} file(s) in {o.emit_dir} (nothing was applied)")
    written = None
    if o.write_dir:
        from kcodec.advise.write import write_topics

        written = write_topics(spark, c.plan, _sampling(o, c, tasks), advice, o.write_dir, log)
    elapsed = time.perf_counter() - started
    log(f"done in {elapsed:.0f}s")
    return {"advice": advice, "paths": paths, "written": written, "seconds": elapsed, "chunks": n_chunks}


def _advise_one(topic: str, agg: TopicAggregate, c: Checked, o: Options, today: Optional[Setting]) -> TopicAdvice:
    """One topic's advice from its aggregate, priced from every source of its economics."""
    priced = price_topic(topic, c.defaults, c.topics, c.flagged, c.metadata, c.cluster.get(topic),
                         c.file_defaults, c.topic_fields, o.prices)
    econ, given = given_volume(topic, priced.economics, c.volumes, o.volumes, c.topics, c.bytes_per_day)
    if topic in c.plan.topic_span_ms:  # the whole log's time, not only the sample's
        min_ts, max_ts = c.plan.topic_span_ms[topic]
        agg = replace(agg, profile=replace(agg.profile, min_ts=min_ts, max_ts=max_ts))
    min_span_ms = o.min_span_hours * 3_600_000 if c.plan.real_time else 0.0
    a = advise_topic(topic, agg, c.plan.topic_bytes.get(topic), econ, c.prices, c.rule, today, c.choose,
                     c.plan.rate_partitions(topic), min_span_ms=min_span_ms, topic_offsets=_offsets(c.plan, topic),
                     given=given)
    a.notes.extend(priced.notes)
    a.assumptions = topic_assumptions(econ, priced.sources, a.stored_per_day, a.per_day_source, c.prices)
    return a


def _collect(rows, label: str, spark, plan: Source, progress: bool):
    """Every metrics row of a measuring job, on the driver as one Arrow table; a task's kcodec error in one line."""
    from kcodec.advise.progress import SparkProgress

    with SparkProgress(spark, label, enabled=progress):
        try:
            return rows.toArrow()
        except Exception as exc:  # Spark's wrapper of a task's error: a kcodec error is said in one line
            if interrupted(exc):
                raise KeyboardInterrupt from None
            err = kcodec_error_in(exc)
            if err is None:
                raise
            if err.message.startswith(CHUNK_ERROR):
                raise _chunk_error(err.message[len(CHUNK_ERROR):], plan) from None
            raise err from None  # e.g. a cluster's partition that could not be fetched


def _measure_in_rounds(spark, plan: RoundSampledSource, c: Checked, o: Options, sampling: Sampling, measure,
                       today: Optional[Setting]):
    """``--sample auto``: rounds of chunks until each topic's recommended setting's ratio is known
    (:mod:`kcodec.advise.auto_sample`); every measured row, and each topic's reach."""
    import pyarrow as pa

    candidates, population = plan.sample_candidates(c.target.cap_bytes)
    ordered = {t: nested_order(us, lambda u: u.partition, lambda u: u.chunk) for t, us in candidates.items()}
    sampler = AutoSampler(ordered, population, lambda u: u.size, c.target)
    racing = race_off_reason(o.race, o.cpu_cost, c.choose) is None
    races = {t: TopicRace(c.settings, c.rule.knee, c.rule) for t in ordered} if racing else {}
    book = RangeBook()
    tables = []
    while True:
        chunks = sampler.next_round()
        if not chunks:
            break
        label = "measuring chunks" + (f", round {sampler.rounds}" if sampler.rounds > 1 else "")
        grid = {t: r.running for t, r in races.items()} if racing else c.settings
        tables.append(measure(plan.read_sampled(spark, sampling, chunks), label, grid))
        if racing:
            book.add(tables[-1])
        table = pa.concat_tables(tables)
        aggregates = aggregate_rows(table)
        for topic in sampler.open_topics:
            setting, race = "", races.get(topic)
            if topic in aggregates:
                a = _advise_one(topic, race.keep(aggregates[topic]) if race else aggregates[topic], c, o, today)
                pick = a.best or min(a.results, key=lambda m: (m.cost.total, m.setting))
                setting = pick.label
                if race is not None:
                    total = len(ordered[topic])
                    race.round(a, book, max(total, population.get(topic, total)), c.rule)
            plain, stored = _chunk_sizes(table, topic, setting)
            sampler.settle(topic, setting, plain, stored, race.race.decided if race is not None else True)
    return pa.concat_tables(tables), sampler.reach, races


def _chunk_sizes(table, topic: str, setting: str):
    """Plain and stored bytes of each measured chunk of ``topic`` under ``setting``, in (partition, chunk) order."""
    import pyarrow.compute as pc

    if not setting:
        return [], []
    mine = table.filter(pc.and_(pc.equal(table["topic"], topic), pc.equal(table["setting"], setting)))
    rows = sorted(zip(mine["partition"].to_pylist(), mine["chunk"].to_pylist(), mine["plain_bytes"].to_pylist(),
                      mine["stored_bytes"].to_pylist()))
    return [r[2] for r in rows], [r[3] for r in rows]


def _sample_text(c: Checked, o: Options) -> str:
    if c.plan.reads_every_record:
        return "all records"
    if c.sample_bytes is not None:
        return o.sample
    if not isinstance(c.plan, RoundSampledSource):
        return (f"{CLUSTER_SAMPLE} (--sample auto reads a live cluster at a fixed size: its topics' sizes are not "
                f"known before a fetch; give --sample SIZE to change it)")
    return (f"auto: chunks spread over partitions and time until the recommended setting's ratio is known to "
            f"+/-{c.target.precision * 100:g}% (95% interval), at most {o.sample_cap} per topic (--sample-cap)")


def _offsets(plan: Source, topic: str) -> Optional[int]:
    """A cluster topic's offsets, where the span they cover is known too."""
    return plan.topic_offsets.get(topic) if topic in plan.topic_span_ms else None


def _chunk_error(line: str, plan: Source) -> KcodecError:
    """A measuring task's error, located in the file it came from where the input was read from files."""
    topic, partition, chunk, pos, batch_offset, message = json.loads(line)
    where = plan.chunk_place(topic, partition, chunk)
    if where is None:
        at = f" at byte {pos} of the range" if pos is not None else ""
        return KcodecError(f"{topic}-{partition}, sampled range {chunk}{at}: {message}", batch_offset=batch_offset)
    path, start = where
    position = start + pos if pos is not None else None
    return KcodecError(f"{topic}-{partition}: {message}", position=position, batch_offset=batch_offset,
                       source=path)
