"""Command-line face of ``kcodec advise`` (also ``python -m kcodec.advise`` for spark-submit)."""
from __future__ import annotations

import argparse

from kcodec.advise.grid import CLUSTER_SAMPLE
from kcodec.advise.replay.registry import CLIENTS, DEFAULT_CLIENT, clients_help

__all__ = ["add_parser", "run"]

# flag -> field of kcodec.advise.cost.Prices or TopicEconomics
_PRICE_FLAGS = {
    "--block-gb-month": ("block_gb_month", "storage $ per GB-month (default: the platform's; ec2 0.08, EBS gp3; "
                                           "msk 0.10; confluent-cloud 0.08)"),
    "--object-gb-month": ("object_gb_month", "object storage $ per GB-month for tiered storage (default 0.023, S3)"),
    "--cross-zone-gb": ("cross_zone_gb", "$ per GB crossing availability zones (default 0.02: 0.01 out + 0.01 in; "
                                         "confluent-cloud 0)"),
    "--vcpu-hour": ("vcpu_hour", "$ per vCPU-hour (default 0.048, m5.large)"),
    "--retention-days": ("retention_days", "topic retention in days (default 7)"),
    "--replication-factor": ("replication_factor", "replication factor (default 3)"),
    "--consumer-groups": ("consumer_groups", "consumer groups reading each topic (default 1)"),
    "--ingress-gb": ("ingress_gb", "$ per GB producers write, on platforms billing it (confluent-cloud: 0.05)"),
    "--egress-gb": ("egress_gb", "$ per GB consumers read, on platforms billing it (confluent-cloud: 0.05)"),
    "--producer-cross-zone": ("producer_cross_zone", "share of producer traffic crossing zones (default 0.67)"),
    "--replication-cross-zone": ("replication_cross_zone",
                                 "share of replication traffic crossing zones, 0 to 1 (default 1: every follower "
                                 "in another zone); not billed on msk and confluent-cloud"),
    "--consumer-cross-zone": ("consumer_cross_zone", "share of consumer traffic crossing zones (default 0.67)"),
    "--local-retention-days": ("local_retention_days", "tiered storage: days kept on broker disks"),
}


def _arguments(p: argparse.ArgumentParser) -> None:
    # Grouped by what an operator decides with them, so that --help reads as the steps of a run.
    from kcodec.advise.options import DEFAULTS as D
    from kcodec.advise.platforms import PLATFORMS
    from kcodec.log.arguments import add_metadata_log_argument, add_storage_option_argument

    g = p.add_argument_group("what to read")
    g.add_argument("inputs", nargs="*", metavar="input",
                   help="broker log directories (log.dirs), or Parquet/JSON with key/value columns "
                        "(default: generate a realistic sample of three topics)")
    g.add_argument("--format", dest="input_format", help="input format: kafka-log, parquet or json")
    add_storage_option_argument(g)
    g.add_argument("--bootstrap-server", help="read a bounded sample from a live cluster, HOST:PORT")
    g.add_argument("--command-config", metavar="FILE",
                   help="with --bootstrap-server: a client properties file for TLS and SASL, as Kafka's own tools "
                        "take it (security.protocol, sasl.mechanism, sasl.jaas.config, ssl.truststore.location ...; "
                        "the operator's guide lists every name taken); a value may be ${env:NAME}")
    g.add_argument("--topic", help="only the topics this regular expression matches whole (every input kind)")
    g.add_argument("--timestamp-unit", choices=("s", "ms", "us", "ns"),
                   help="for Parquet/JSON records whose timestamp is a number: seconds, milliseconds, "
                        "microseconds or nanoseconds since the epoch (default: detected when every sampled value "
                        "is a date between 1990 and 2100 in one unit, else this flag is required)")
    g.add_argument("--sample", default=D.sample,
                   help="per topic, from logs or a cluster: 'auto' reads chunks spread over partitions and time "
                        "until the recommended setting's ratio is known to --sample-precision, at most "
                        "--sample-cap; or a fixed SIZE such as 64MiB "
                        f"(default {D.sample}; a live cluster under auto: {CLUSTER_SAMPLE})")
    g.add_argument("--sample-precision", type=float, default=D.sample_precision, metavar="SHARE",
                   help="--sample auto: the 95%% interval's half-width the ratio is known to, as a share "
                        f"(default {D.sample_precision:g}, i.e. +/-1%%)")
    g.add_argument("--sample-cap", default=D.sample_cap, metavar="SIZE",
                   help=f"--sample auto: the most bytes read per topic (default {D.sample_cap})")
    g.add_argument("--race", choices=("on", "off"), default=D.race,
                   help="--sample auto: after each round, stop measuring the settings that cannot be the pick "
                        "(95%% confidence, docs/race.md); off measures every setting on every range, for audits "
                        f"(default {D.race})")
    g.add_argument("--chunk", default=D.chunk, help=f"bytes per sampled range (default {D.chunk})")
    g.add_argument("--fetch-retry-s", type=float, default=D.fetch_retry_s,
                   help="with --bootstrap-server: seconds to keep asking a slow broker that answers a fetch "
                        "below the high watermark with no records, before calling the partition unreadable "
                        f"(default {D.fetch_retry_s:g})")
    add_metadata_log_argument(g)

    g = p.add_argument_group("the generated sample", "with no input: three topics of realistic records")
    g.add_argument("--records", type=int, default=D.records, help=f"sample size when generating (default {D.records})")
    g.add_argument("--seed", type=int, default=D.seed,
                   help=f"random seed of the generated sample; the same seed gives the same records (default {D.seed})")

    g = p.add_argument_group("today's settings, for record inputs",
                             "Parquet and JSON hold records, not batches: how they are produced today")
    g.add_argument("--current-codec", default=D.current_codec,
                   help=f"for record inputs (no batches): compression.type used today (default {D.current_codec})")
    g.add_argument("--current-batch-size", default=D.current_batch_size,
                   help=f"for record inputs: batch.size today (default {D.current_batch_size})")
    g.add_argument("--current-linger-ms", default=D.current_linger_ms,
                   help=f"for record inputs: linger.ms today (default {D.current_linger_ms})")
    g.add_argument("--partitions", type=int, default=D.partitions,
                   help=f"for record inputs: partitions per topic (default {D.partitions})")
    g.add_argument("--current-size", help="today's stored size of all the data, e.g. 40TB or 40TiB, to project")

    g = p.add_argument_group("the settings tried")
    g.add_argument("--codecs", default=D.codecs, help=f"codecs and levels (default {D.codecs})")
    g.add_argument("--batch-sizes", default=D.batch_sizes,
                   help=f"producer batch.size values (default {D.batch_sizes})")
    g.add_argument("--linger-ms", dest="lingers", default=D.lingers,
                   help=f"producer linger.ms values (default {D.lingers})")
    g.add_argument("--producer-client", choices=(*CLIENTS, "auto"), default=D.producer_client,
                   help="whose batching rules the replay follows and whose configuration names are printed: "
                        f"{clients_help()}; auto names the one client whose framing every batch shows, else follows "
                        f"{DEFAULT_CLIENT.name} and says the client was not recognised (default {D.producer_client})")
    g.add_argument("--producers", type=int, default=D.producers,
                   help="producers writing each partition, for batches without a producer id (non-idempotent "
                        f"producers write -1); idempotent producers' ids are counted from the batches (default "
                        f"{D.producers})")
    g.add_argument("--choose", help="setting to use instead of the recommended one, e.g. zstd:3@256k/5ms")

    g = p.add_argument_group("what a recommendation may cost",
                             "settings past these limits are left out; the rule picks among the rest")
    g.add_argument("--max-linger-ms", type=float, default=D.max_linger_ms,
                   help="the latency budget: the most linger.ms a recommendation may add to each send, in ms "
                        f"(default {D.max_linger_ms:g})")
    g.add_argument("--producer-partitions", type=int,
                   help="partitions one producer writes to, for the memory its batches hold (default: the "
                        "topic's partitions)")
    g.add_argument("--buffer-memory", default=D.buffer_memory,
                   help="the producers' buffer.memory, which holds a batch.size per partition (default "
                        f"{D.buffer_memory}, Kafka's default)")
    g.add_argument("--min-compress-mbps", type=float, default=D.min_compress_mbps,
                   help="leave out settings that build batches slower than this, in MB of key, value and header "
                        f"bytes per CPU second of one core (kcodec's CPU model; default {D.min_compress_mbps:g})")
    g.add_argument("--min-read-mbps", type=float, default=D.min_read_mbps,
                   help="leave out settings whose batches a consumer reads slower than this, in MB per CPU second "
                        f"of one core (kcodec's CPU model; default {D.min_read_mbps:g})")
    g.add_argument("--cpu-cost", choices=("model", "measured"), default=D.cpu_cost,
                   help="CPU in the bill and the speed limits: kcodec's CPU model of its builder and reader, the "
                        "same on every run (default), or this run's measured thread CPU time, which moves with "
                        "the machine's load")
    g.add_argument("--knee", default=D.knee,
                   help="the knee: recommend the smallest linger.ms, then batch.size, whose saving is at least "
                        f"this share of the best saving within the budget, e.g. 0.9 or 90%% (default {D.knee:g}; 1 "
                        f"picks the cheapest)")
    g.add_argument("--min-saving", default=D.min_saving,
                   help=f"share of today's $/month a change must save, e.g. 0.05 or 5%% (default {D.min_saving:g})")

    g = p.add_argument_group("the bill")
    g.add_argument("--platform", default=D.platform,
                   help="whose bill to price: " + "; ".join(f"{k}, {v.title}" for k, v in PLATFORMS.items())
                        + f" (default {D.platform}); every price is still a flag")
    g.add_argument("--prices", help="JSON file of prices and per-topic retention, replication, consumers")
    g.add_argument("--count-consumer-groups", action="store_true",
                   help="with --bootstrap-server: count the consumer groups with committed offsets on each topic "
                        "(ListGroups and OffsetFetch, read only) and price that many reads")
    for flag, (_, text) in _PRICE_FLAGS.items():
        g.add_argument(flag, type=float, help=text)
    g.add_argument("--bytes-per-day", metavar="SIZE",
                   help="bytes the producers of each topic send a day, e.g. 120GB, instead of the measured rate")
    g.add_argument("--volumes", metavar="FILE",
                   help="bytes per day per topic, one 'topic,SIZE' a line (wins over --bytes-per-day)")
    g.add_argument("--min-span-hours", type=float, default=D.min_span_hours,
                   help="a topic whose timestamps span less (a burst, a new topic) is not priced: give its "
                        f"volume (default {D.min_span_hours:g})")

    g = p.add_argument_group("estates of many topics")
    g.add_argument("--top", type=int, default=D.top,
                   help=f"estates of two or more topics: how many topics the summary lists by saving (default {D.top})")
    g.add_argument("--all-topics", action="store_true",
                   help="print every topic's detail before the estate summary (the summary alone by default)")
    g.add_argument("--group-by", metavar="REGEX",
                   help="also price one setting per group of topics: the regex's first group (else its match) "
                        "in the topic name is the group, e.g. '^([^.]+)\\.' for the prefix before a dot")
    g.add_argument("--same-setting-within", type=float, default=D.same_setting_within, metavar="SHARE",
                   help="topics whose best settings cost within their estimates' uncertainty of each other, and "
                        f"at least this share of their $/month, get one setting (default {D.same_setting_within:g})")

    g = p.add_argument_group("after the change",
                             "check what the broker stores since the producers took the advice (same input)")
    g.add_argument("--check", metavar="RESULTS_JSON",
                   help="a previous run's results.json: per topic, detect the setting in effect since the change "
                        "and compare stored bytes per record, ratio, records per batch and the monthly saving with "
                        "what was predicted; says where producers did not change or too little data came")
    g.add_argument("--since", metavar="TIME",
                   help="with --check: when the producers were changed, ISO-8601 (UTC unless a zone is given) or "
                        "ms since the epoch (default: the previous run's time)")

    g = p.add_argument_group("report and run")
    g.add_argument("--out", dest="out_dir", default=D.out_dir, help=f"report folder (default {D.out_dir})")
    g.add_argument("--emit", dest="emit_dir", metavar="DIR",
                   help="write the recommended settings here, one set of files per setting group: each "
                        "producer client's configuration lines in its own names and the kafka-configs.sh commands "
                        "for topics whose compression.type would rebuild the batches; nothing is applied")
    g.add_argument("--write", dest="write_dir", help="write each topic recompressed with its setting here")
    g.add_argument("--master", help="Spark master (default local[*]; spark-submit's when run under it)")
    g.add_argument("--tasks", type=int, help="Spark tasks (default: default parallelism)")
    g.add_argument("--no-progress", dest="progress", action="store_false", help="no progress bar")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("advise", help="per topic: which compression and batching to set, and what it saves",
                       description="Profile each topic's batches, replay the producer's batching for every "
                                   "codec x level x batch.size x linger.ms, and price storage and network.")
    _arguments(p)
    return p


def run(args) -> int:
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    opts = {k: v for k, v in vars(args).items() if k not in ("func", "command")}
    overrides = {field: opts.pop(flag.lstrip("-").replace("-", "_")) for flag, (field, _) in _PRICE_FLAGS.items()}
    run_advise(Options(price_overrides=overrides, **opts))
    return 0
