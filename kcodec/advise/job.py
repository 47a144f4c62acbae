"""The Spark application behind ``kcodec advise``.

Every input becomes one DataFrame of raw chunks (``topic, partition, chunk, data``);
Spark tasks profile each chunk's batches and replay every setting on its records;
only per-topic aggregates come back to the driver.
"""
from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Set, Union

from kcodec.advise import cost as costs
from kcodec.advise.aggregate import aggregate_rows
from kcodec.advise.assumptions import bill_assumptions, flag_name, topic_assumptions
from kcodec.advise.auto_sample import DEFAULT_CAP, DEFAULT_PRECISION, AutoSampler, SampleTarget, nested_order
from kcodec.advise.cpu import REFERENCE
from kcodec.advise.grid import (
    CLUSTER_SAMPLE,
    DEFAULT_BATCH_SIZES,
    DEFAULT_CHUNK,
    DEFAULT_CODECS,
    DEFAULT_LINGERS,
    DEFAULT_SAMPLE,
    Setting,
    parse_batch_sizes,
    parse_codecs,
    parse_lingers,
    parse_share,
    parse_size,
)
from kcodec.advise.inputs import RoundSampledSource, Sampling, Source, open_inputs
from kcodec.advise.latency import DEFAULT_BUFFER_MEMORY, DEFAULT_KNEE, producer_memory
from kcodec.advise.platforms import DEFAULT_PLATFORM, platform
from kcodec.advise.racing import RangeBook, TopicRace, race_off_reason
from kcodec.advise.recommend import Rule, TopicAdvice, advise_topic
from kcodec.advise.replay import LIMITS
from kcodec.advise.task import CHUNK_ERROR, METRICS_DDL, TODAY, measure_batches
from kcodec.advise.topic_config import price_topic
from kcodec.errors import KcodecError
from kcodec.spark.errors import kcodec_error_in
from kcodec.storage import parse_storage_option

__all__ = ["run_advise", "Options", "check_options"]



@dataclass
class Options:
    """Every argument of ``kcodec advise``, checked by :func:`check_options` before Spark starts."""

    inputs: Sequence[str] = ()
    input_format: Optional[str] = None
    storage_option: Sequence[str] = ()  # KEY=VALUE file-system options for URL inputs
    bootstrap_server: Optional[str] = None
    command_config: Optional[str] = None  #: a client properties file: TLS and SASL for --bootstrap-server
    topic: Optional[str] = None
    master: Optional[str] = None
    codecs: str = DEFAULT_CODECS
    batch_sizes: str = DEFAULT_BATCH_SIZES
    lingers: str = DEFAULT_LINGERS
    records: int = 100_000
    seed: int = 7
    current_codec: str = "none"
    current_batch_size: str = "16k"
    current_linger_ms: str = "5"
    current_size: Optional[str] = None
    partitions: int = 1
    sample: str = DEFAULT_SAMPLE
    sample_precision: float = DEFAULT_PRECISION
    sample_cap: str = DEFAULT_CAP
    race: str = "on"
    chunk: str = DEFAULT_CHUNK
    prices: Optional[str] = None
    platform: str = "ec2"
    count_consumer_groups: bool = False
    metadata_log: Optional[str] = None
    price_overrides: Dict[str, Optional[float]] = field(default_factory=dict)
    out_dir: str = "advise-report"
    write_dir: Optional[str] = None
    choose: Optional[str] = None
    min_compress_mbps: float = 50.0
    min_read_mbps: float = 100.0
    max_linger_ms: float = 100.0
    min_saving: Union[float, str] = 0.05
    cpu_cost: str = "model"
    knee: Union[float, str] = DEFAULT_KNEE
    producer_partitions: Optional[int] = None
    buffer_memory: str = "32m"
    tasks: Optional[int] = None
    timeout_s: float = 10.0
    progress: bool = True
    producer_client: str = "auto"
    producers: int = 1
    fetch_retry_s: float = 30.0
    top: int = 20
    all_topics: bool = False
    group_by: Optional[str] = None
    same_setting_within: float = 0.02
    min_span_hours: float = 1.0
    bytes_per_day: Optional[str] = None
    volumes: Optional[str] = None
    timestamp_unit: Optional[str] = None


@dataclass
class Checked:
    settings: List[Setting]
    current: Setting
    sample_bytes: Optional[int]  #: None: --sample auto
    chunk_bytes: int
    current_bytes: Optional[int]
    choose: Optional[Setting]
    prices: costs.Prices
    defaults: costs.TopicEconomics
    topics: Dict[str, costs.TopicEconomics]
    rule: Rule
    plan: Source  #: the input, listed once
    flagged: Set[str] = field(default_factory=set)  #: TopicEconomics fields given as flags
    metadata: Optional[object] = None  #: the --metadata-log read, a ClusterMetadata
    volumes: Dict[str, int] = field(default_factory=dict)  #: --volumes FILE
    bytes_per_day: Optional[int] = None  #: --bytes-per-day
    bill: List = field(default_factory=list)  #: the platform and prices, as Assumptions
    file_defaults: Set[str] = field(default_factory=set)  #: TopicEconomics fields the --prices defaults set
    topic_fields: Dict[str, Set[str]] = field(default_factory=dict)  #: fields each --prices topic sets
    cluster: Dict[str, object] = field(default_factory=dict)  #: topic -> TopicSettings from --bootstrap-server
    buffer_memory: int = DEFAULT_BUFFER_MEMORY
    target: SampleTarget = field(default_factory=SampleTarget)  #: --sample auto's


def _flag(name: str, fn, value):
    try:
        return fn(value)
    except (KcodecError, ValueError) as exc:
        msg = exc.message if isinstance(exc, KcodecError) else str(exc)
        raise KcodecError(f"{name} {value}: {msg}") from None


def check_options(o: Options) -> Checked:
    """Parse and check every flag and input; errors name the flag or file."""
    grid_codecs = _flag("--codecs", parse_codecs, o.codecs)
    sizes = _flag("--batch-sizes", parse_batch_sizes, o.batch_sizes)
    lingers = _flag("--linger-ms", parse_lingers, o.lingers)
    for s in sizes:
        if not 1 <= s <= 2 ** 31 - 1:
            raise KcodecError(f"--batch-sizes {o.batch_sizes}: batch.size must be between 1 byte and 2 GiB")
    cur_codec, cur_level = _flag("--current-codec", parse_codecs, o.current_codec)[0]
    current = Setting(cur_codec, cur_level, _flag("--current-batch-size", parse_size, o.current_batch_size),
                      _flag("--current-linger-ms", parse_lingers, o.current_linger_ms)[0])
    if not 1 <= current.batch_bytes <= 2 ** 31 - 1:
        raise KcodecError(f"--current-batch-size {o.current_batch_size}: batch.size must be between 1 byte and 2 GiB")
    sample_bytes = None if str(o.sample).strip().lower() == "auto" else _flag("--sample", _sample_size, o.sample)
    if sample_bytes is not None and sample_bytes < 1024:
        raise KcodecError(f"--sample {o.sample}: at least 1KiB, or auto")
    chunk_bytes = _flag("--chunk", parse_size, o.chunk)
    if chunk_bytes < 1024:
        raise KcodecError(f"--chunk {o.chunk}: at least 1KiB")
    cap_bytes = _flag("--sample-cap", parse_size, o.sample_cap)
    # --sample-cap bounds --sample auto alone: a fixed --sample reads its own size whatever the cap.
    if sample_bytes is None and cap_bytes < chunk_bytes:
        raise KcodecError(f"--sample-cap {o.sample_cap}: at least one --chunk ({o.chunk})")
    if not 0 < o.sample_precision < 1:
        raise KcodecError(f"--sample-precision {o.sample_precision:g}: a share above 0 and below 1, e.g. 0.01")
    current_bytes = _flag("--current-size", parse_size, o.current_size) if o.current_size is not None else None
    if current_bytes is not None and current_bytes < 1:
        raise KcodecError(f"--current-size {o.current_size}: more than 0 bytes")
    for flag, value, least in (("--records", o.records, 1), ("--tasks", o.tasks, 1), ("--seed", o.seed, 0)):
        if value is not None and value < least:
            raise KcodecError(f"{flag} {value}: {'at least 1' if least else '0 or more'}")
    if o.partitions < 1:
        raise KcodecError(f"--partitions {o.partitions}: at least 1")
    if not o.fetch_retry_s >= 0:
        raise KcodecError(f"--fetch-retry-s {o.fetch_retry_s}: seconds, 0 or more")
    if o.producers < 1:
        raise KcodecError(f"--producers {o.producers}: at least 1")
    if o.top < 0:
        raise KcodecError(f"--top {o.top}: 0 or more")
    if not 0 <= o.same_setting_within < 1:
        raise KcodecError(f"--same-setting-within {o.same_setting_within}: a share from 0 to below 1, e.g. 0.02")
    if not o.min_span_hours >= 0:
        raise KcodecError(f"--min-span-hours {o.min_span_hours}: hours, 0 or more")
    from kcodec.advise.estate import compile_group_by
    from kcodec.advise.volumes import load_volumes, parse_volume

    compile_group_by(o.group_by)
    volumes = load_volumes(o.volumes)
    bytes_per_day = parse_volume("--bytes-per-day", o.bytes_per_day) if o.bytes_per_day else None
    if o.producer_client != "auto":
        from kcodec.advise.replay import client_rules

        _flag("--producer-client", client_rules, o.producer_client)
    settings = sorted({Setting(c, lvl, b, g) for c, lvl in grid_codecs + [("none", None)]
                       for b in sizes for g in lingers})
    choose = None
    if o.choose:
        choose = _flag("--choose", lambda t: Setting.parse(t, current.batch_bytes, current.linger_ms), o.choose)
        if choose not in settings:
            raise KcodecError(f"--choose {o.choose}: {choose.label} is not among the measured settings "
                              f"(--codecs {o.codecs}, --batch-sizes {o.batch_sizes}, --linger-ms {o.lingers})")
    _check_master(o.master, o.timeout_s)
    overrides = {k: v for k, v in o.price_overrides.items() if v is not None}
    for name, value in overrides.items():
        problem = costs.value_problem(name, value)
        if problem:
            raise KcodecError(f"{flag_name(name)} {value:g}: {problem}")
    if o.count_consumer_groups and not o.bootstrap_server:
        raise KcodecError("--count-consumer-groups asks a live cluster: give --bootstrap-server")
    plat = platform(o.platform)
    prices, defaults, topics = costs.load_prices(o.prices, overrides, base=plat.prices)
    doc = costs.read_prices_file(o.prices)
    bill = bill_assumptions(plat, o.platform != DEFAULT_PLATFORM, prices, set(overrides),
                            set((doc.get("prices") or {})), o.prices)
    file_defaults = set(doc.get("defaults") or {})
    topic_fields = {t: set(spec or {}) for t, spec in (doc.get("topics") or {}).items()}
    for flag, value in (("--min-compress-mbps", o.min_compress_mbps), ("--min-read-mbps", o.min_read_mbps),
                        ("--max-linger-ms", o.max_linger_ms)):
        if not 0 <= value < float("inf"):
            raise KcodecError(f"{flag} {value:g}: a number, 0 or more")
    min_saving = _flag("--min-saving", parse_share, o.min_saving)
    if min_saving >= 1:
        raise KcodecError(f"--min-saving {o.min_saving}: a share below 1 (100%)")
    knee_share = _flag("--knee", parse_share, o.knee)
    if knee_share == 0:
        raise KcodecError(f"--knee {o.knee}: a share above 0, at most 1 (100%)")
    if o.producer_partitions is not None and o.producer_partitions < 1:
        raise KcodecError(f"--producer-partitions {o.producer_partitions}: at least 1")
    buffer_memory = _flag("--buffer-memory", parse_size, o.buffer_memory)
    if buffer_memory < 1:
        raise KcodecError(f"--buffer-memory {o.buffer_memory}: at least 1 byte")
    if o.race not in ("on", "off"):
        raise KcodecError(f"--race {o.race}: expected on or off")
    if o.cpu_cost not in ("model", "measured"):
        raise KcodecError(f"--cpu-cost {o.cpu_cost}: expected model or measured")
    rule = Rule(o.min_compress_mbps, o.min_read_mbps, o.max_linger_ms, min_saving, o.cpu_cost, knee_share)
    storage_options = None if o.bootstrap_server else \
        dict(_flag("--storage-option", parse_storage_option, t) for t in o.storage_option) or None
    plan = open_inputs(list(o.inputs), o.input_format, chunk_bytes, storage_options, o.bootstrap_server, o.topic,
                       o.timeout_s, o.command_config)
    plan.use_timestamp_unit(o.timestamp_unit)
    if o.write_dir:
        plan.check_write(o.write_dir)
    from kcodec.advise.topic_config import read_metadata

    metadata = read_metadata(o.metadata_log, dict(_flag("--storage-option", parse_storage_option, t)
                                                  for t in o.storage_option) or None)
    cluster = plan.topic_settings(o.count_consumer_groups)
    return Checked(settings, current, sample_bytes, chunk_bytes, current_bytes, choose, prices, defaults, topics,
                   rule, plan, set(overrides), metadata, volumes=volumes, bytes_per_day=bytes_per_day, bill=bill,
                   file_defaults=file_defaults, topic_fields=topic_fields, cluster=cluster, buffer_memory=buffer_memory,
                   target=SampleTarget(o.sample_precision, cap_bytes))



def _sample_size(text: str) -> int:
    try:
        return parse_size(text)
    except (KcodecError, ValueError):
        raise KcodecError("not auto or a size (examples: auto, 16MiB, 1GB)") from None


def _check_master(master: Optional[str], timeout_s: float) -> None:
    """A ``spark://`` master that accepts no connection is said at once: Spark itself would retry
    for a minute and then print its stack traces."""
    import re
    import socket

    if not master or not master.startswith("spark://"):
        return
    problems = []
    for part in master[len("spark://"):].split(","):
        host, sep, port = part.rpartition(":")
        if (not sep or not port.isdigit() or not 0 < int(port) < 65536
                or not re.fullmatch(r"[\w.\-\[\]:]+", host)):
            raise KcodecError(f"--master {master}: {part!r} is not HOST:PORT")
        try:
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return
        except OSError as exc:
            problems.append(f"{host}:{port}: {exc.strerror or exc}")
    raise KcodecError(f"--master {master}: no Spark master answers ({'; '.join(problems)})")


def _sampling(o: Options, c: Checked, tasks: int) -> Sampling:
    """How much of the input the job reads, from the checked flags."""
    fixed = c.sample_bytes if c.sample_bytes is not None else parse_size(CLUSTER_SAMPLE)
    return Sampling(fixed, c.chunk_bytes, tasks, c.current, o.partitions, o.records, o.seed,
                    o.fetch_retry_s)


def run_advise(options: Optional[Options] = None, *, log: Callable[[str], None] = print, **kwargs) -> Dict:
    """Run the advisor; returns the per-topic advice and the report paths."""
    interrupts = _Interrupts()
    try:
        return _run_advise(options, log, interrupts, **kwargs)
    finally:
        interrupts.restore()


class _Interrupts:
    """Ctrl-C while Spark runs ends in one KeyboardInterrupt, said in one line by the CLI.

    PySpark's own SIGINT handler asks the JVM to cancel every job through the very
    connection the interrupted call is waiting on, and py4j logs each broken call with
    its traceback; the JVM, in the same process group, got the signal too and is ending.
    """

    def __init__(self) -> None:
        self._handler = None
        self._quiet = None
        self.pending = False

    def starting(self) -> None:
        """While the JVM starts, a Ctrl-C is noted, not raised: the launch it would break (the JVM got the
        signal too) fails with Spark's own error, which :meth:`started` turns back into the interrupt."""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return

        def noted(signum, frame):
            self.pending = True

        previous = signal.signal(signal.SIGINT, noted)
        if self._handler is None:
            self._handler = previous

    @contextlib.contextmanager
    def keeping(self):
        """Keep the handler of :meth:`starting` while the session is made: SparkContext's constructor
        installs PySpark's own, which only :meth:`started` may replace."""
        import signal

        real = signal.signal

        def keep(signum, handler):
            return signal.getsignal(signum) if signum == signal.SIGINT else real(signum, handler)

        signal.signal = keep
        try:
            yield
        finally:
            signal.signal = real

    def started(self, failure: Optional[BaseException] = None) -> None:
        """After the session is made (or failed with ``failure``): raise the Ctrl-C noted meanwhile, else
        let the next one raise."""
        import logging
        import signal
        import threading

        if self.pending:
            raise KeyboardInterrupt
        if failure is not None:
            raise failure
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupted(signum, frame):
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGINT, interrupted)
        if self._handler is None:
            self._handler = previous
        root = logging.getLogger()
        if not root.handlers:  # py4j logs broken calls on the root logger, which would print them
            self._quiet = logging.NullHandler()
            root.addHandler(self._quiet)

    def restore(self) -> None:
        import logging
        import signal

        if self._handler is not None:
            signal.signal(signal.SIGINT, self._handler)
            self._handler = None
        if self._quiet is not None:
            logging.getLogger().removeHandler(self._quiet)
            self._quiet = None


def _run_advise(options: Optional[Options], log: Callable[[str], None], interrupts: _Interrupts, **kwargs) -> Dict:
    from kcodec.advise.report import summary_text, write_reports
    from kcodec.spark.session import get_session

    o = options or Options(**kwargs)
    started = time.perf_counter()
    c = check_options(o)
    log(f"kcodec advise: {c.plan.description}; {len(c.settings)} settings per chunk; starting Spark ...")
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

    reach: Dict[str, object] = {}
    races: Dict[str, TopicRace] = {}
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
        from kcodec.advise.estate import plan_estate

        if c.choose is None:
            _harmonise(advice, c, o)
        estate = plan_estate(advice, c.rule, o.group_by, o.same_setting_within)
    context = {"input": c.plan.description, "chunks measured": measured, "settings": len(settings),
               "sample per topic": _sample_text(c, o),
               "rule": c.rule.text(), "assumptions": [a.doc() for a in c.bill],
               "throughput": ("MB/s of key, value and header bytes per CPU second of one core: the bill's from "
                              f"kcodec's CPU model ({REFERENCE}), this run's measured thread CPU time beside it"),
               "replay": LIMITS}
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
    written = None
    if o.write_dir:
        from kcodec.advise.write import write_topics

        written = write_topics(spark, c.plan, _sampling(o, c, tasks), advice, o.write_dir, log)
    elapsed = time.perf_counter() - started
    log(f"done in {elapsed:.0f}s")
    return {"advice": advice, "paths": paths, "written": written, "seconds": elapsed, "chunks": n_chunks}


def _advise_one(topic: str, agg: Dict, c: Checked, o: Options, today: Optional[Setting]) -> TopicAdvice:
    """One topic's advice from its aggregate, priced from every source of its economics."""
    priced = price_topic(topic, c.defaults, c.topics, c.flagged, c.metadata, c.cluster.get(topic),
                         c.file_defaults, c.topic_fields, o.prices)
    econ, given = _volume(topic, priced.economics, c, o)
    if topic in c.plan.topic_span_ms:  # the whole log's time, not only the sample's
        agg["profile"]["min_ts"], agg["profile"]["max_ts"] = c.plan.topic_span_ms[topic]
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
            if _interrupted(exc):
                raise KeyboardInterrupt from None
            err = kcodec_error_in(exc)
            if err is None:
                raise
            if err.message.startswith(CHUNK_ERROR):
                raise _chunk_error(err.message[len(CHUNK_ERROR):], plan) from None
            raise err from None  # e.g. a cluster's partition that could not be fetched


def _interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling a Ctrl-C: PySpark's Arrow collect ends its stream in a
    ``finally`` that asks the JVM, already ending, for its result, and that error replaces the interrupt."""
    seen = set()
    at: Optional[BaseException] = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False


def _measure_in_rounds(spark, plan: RoundSampledSource, c: Checked, o: Options, sampling: Sampling, measure,
                       today: Optional[Setting]):
    """``--sample auto``: rounds of chunks until each topic's recommended setting's ratio is known
    (:mod:`kcodec.advise.auto_sample`); every measured row, and each topic's reach."""
    import pyarrow as pa

    candidates, population = plan.sample_candidates(c.target.cap_bytes)
    ordered = {t: nested_order(us, lambda u: u.partition, lambda u: u.chunk) for t, us in candidates.items()}
    sampler = AutoSampler(ordered, population, lambda u: u.size, c.target)
    racing = race_off_reason(o.race, o.cpu_cost, c.choose) is None
    races = {t: TopicRace(c.settings, c.rule.knee) for t in ordered} if racing else {}
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


def _volume(topic: str, econ: costs.TopicEconomics, c: Checked, o: Options):
    """The topic's economics with the bytes per day the user gave, and which flag or file gave it."""
    from dataclasses import replace

    if topic in c.volumes:
        return replace(econ, bytes_per_day=float(c.volumes[topic])), f"--volumes {o.volumes}"
    if topic in c.topics and c.topics[topic].bytes_per_day is not None:
        return econ, "--prices"
    if c.bytes_per_day is not None:
        return replace(econ, bytes_per_day=float(c.bytes_per_day)), "--bytes-per-day"
    return econ, "--prices"


def _harmonise(advice: List[TopicAdvice], c: Checked, o: Options) -> None:
    """Topics whose best settings differ by less than their estimates' uncertainty get one setting."""
    from kcodec.advise.estate import harmonise

    given = harmonise(advice, c.rule, o.same_setting_within, o.group_by)
    for a in advice:
        m = given.get(a.topic)
        if m is None or m is a.best:
            continue
        own = a.best
        diff = m.cost.total - own.cost.total
        # The topic's own pick can be the knee's, not its cheapest: the shared setting may then cost less.
        a.notes.append(f"set as topics like it: {m.label} costs {_money(abs(diff))}/month "
                       f"{'more' if diff >= 0 else 'less'} than this topic's own pick, {own.label}, within the "
                       f"estimates' uncertainty "
                       f"(--same-setting-within {o.same_setting_within:g})")
        a.best = m
        # The CPU of brokers rebuilding batches does not depend on the topic's economics: only on its bytes,
        # the codec's speeds and the vCPU price.
        raw_per_day = a.stored_per_day * a.today.payload_bytes / max(1, a.today.stored_bytes)
        plain = costs.TopicEconomics()
        a.recompress_cpu = (costs.monthly_cost(m.stored_per_day, raw_per_day, m.compress_mbps, m.read_mbps, c.prices,
                                               plain, broker_recompresses=True).cpu
                            - costs.monthly_cost(m.stored_per_day, raw_per_day, m.compress_mbps, m.read_mbps,
                                                 c.prices, plain).cpu)
        if m.setting.default_level:  # settable by every client: no older clients' alternative to name
            a.best_without_level = None


def _money(x: float) -> str:
    from kcodec.advise.notes import money

    return money(x)


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
