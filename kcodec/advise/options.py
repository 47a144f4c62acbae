"""Every argument of ``kcodec advise``, with its default written once, and the check of them all before Spark starts.

:class:`Options` holds each flag's default (the command line's parser reads them from
:data:`DEFAULTS`; a rule's limit is the :class:`~kcodec.advise.recommend.Rule`'s own), and
:func:`check_options` turns them into :class:`Checked` values, or one error naming the flag or file.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Set, TypeVar, Union

from kcodec.advise import cost as costs
from kcodec.advise.assumptions import bill_assumptions, flag_name
from kcodec.advise.auto_sample import DEFAULT_CAP, DEFAULT_PRECISION, SampleTarget
from kcodec.advise.grid import (
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
from kcodec.advise.inputs import Source, open_inputs
from kcodec.advise.latency import DEFAULT_BUFFER_MEMORY
from kcodec.advise.platforms import DEFAULT_PLATFORM, platform
from kcodec.advise.recommend import Rule
from kcodec.errors import KcodecError
from kcodec.storage import parse_storage_option

__all__ = ["Options", "DEFAULTS", "Checked", "check_options"]

T = TypeVar("T")


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
    platform: str = DEFAULT_PLATFORM
    count_consumer_groups: bool = False
    metadata_log: Optional[str] = None
    price_overrides: Dict[str, Optional[float]] = field(default_factory=dict)
    out_dir: str = "advise-report"
    write_dir: Optional[str] = None
    emit_dir: Optional[str] = None
    check: Optional[str] = None  #: a previous run's results.json: check what is stored since its change
    since: Optional[str] = None  #: with check: when the producers were changed
    choose: Optional[str] = None
    min_compress_mbps: float = Rule.min_compress_mbps
    min_read_mbps: float = Rule.min_read_mbps
    max_linger_ms: float = Rule.max_linger_ms
    min_saving: Union[float, str] = Rule.min_saving
    cpu_cost: str = Rule.cpu
    knee: Union[float, str] = Rule.knee
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


#: every flag's default, which the command line's parser shows and takes
DEFAULTS = Options()


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


def _flag(name: str, fn: Callable[[Any], T], value: Any) -> T:
    try:
        return fn(value)
    except (KcodecError, ValueError) as exc:
        msg = exc.message if isinstance(exc, KcodecError) else str(exc)
        raise KcodecError(f"{name} {value}: {msg}") from None



def _check_out_dir(flag: str, path: str) -> None:
    """A report or configuration folder that is a file, or lies under one, refused before Spark runs."""
    p = Path(path)
    if p.exists() and not p.is_dir():
        raise KcodecError(f"{flag} {path}: not a directory")
    for parent in p.parents:
        if parent.exists():
            if not parent.is_dir():
                raise KcodecError(f"{flag} {path}: {parent} is not a directory")
            break

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
    for name, price in overrides.items():
        problem = costs.value_problem(name, price)
        if problem:
            raise KcodecError(f"{flag_name(name)} {price:g}: {problem}")
    if o.count_consumer_groups and not o.bootstrap_server:
        raise KcodecError("--count-consumer-groups asks a live cluster: give --bootstrap-server")
    plat = platform(o.platform)
    prices, defaults, topics = costs.load_prices(o.prices, overrides, base=plat.prices)
    doc = costs.read_prices_file(o.prices)
    bill = bill_assumptions(plat, o.platform != DEFAULT_PLATFORM, prices, set(overrides),
                            set((doc.get("prices") or {})), o.prices)
    file_defaults = set(doc.get("defaults") or {})
    topic_fields = {t: set(spec or {}) for t, spec in (doc.get("topics") or {}).items()}
    for flag, limit in (("--min-compress-mbps", o.min_compress_mbps), ("--min-read-mbps", o.min_read_mbps),
                        ("--max-linger-ms", o.max_linger_ms)):
        if not 0 <= limit < float("inf"):
            raise KcodecError(f"{flag} {limit:g}: a number, 0 or more")
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
    rule = Rule(min_compress_mbps=o.min_compress_mbps, min_read_mbps=o.min_read_mbps, max_linger_ms=o.max_linger_ms,
                min_saving=min_saving, cpu=o.cpu_cost, knee=knee_share)
    storage_options = None if o.bootstrap_server else \
        dict(_flag("--storage-option", parse_storage_option, t) for t in o.storage_option) or None
    plan = open_inputs(list(o.inputs), o.input_format, chunk_bytes, storage_options, o.bootstrap_server, o.topic,
                       o.timeout_s, o.command_config)
    plan.use_timestamp_unit(o.timestamp_unit)
    if o.write_dir:
        plan.check_write(o.write_dir)
    _check_out_dir("--out", o.out_dir)
    if o.emit_dir:
        # made now, so that a folder that cannot be made is said before Spark runs, not after
        _check_out_dir("--emit", o.emit_dir)
        try:
            Path(o.emit_dir).mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise KcodecError(f"--emit {o.emit_dir}: cannot make the folder: {exc.strerror or exc}") from None
    if o.since and not o.check:
        raise KcodecError(f"--since {o.since}: only with --check")
    if o.check:
        from kcodec.advise.check import parse_since, read_previous

        _, previous = read_previous(o.check)
        known = plan.known_topics()
        if known and not set(previous) & set(known):  # else an empty table, after Spark read the whole input
            raise KcodecError(f"--check {o.check}: {plan.description} holds none of its topics "
                              f"({', '.join(sorted(previous)) or 'it names none'})")
        if o.since:
            parse_since(o.since)
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
