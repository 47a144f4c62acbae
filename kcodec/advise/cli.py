"""Command-line face of ``kcodec advise`` (also ``python -m kcodec.advise`` for spark-submit)."""
from __future__ import annotations

import argparse

from kcodec.advise.grid import DEFAULT_BATCH_SIZES, DEFAULT_CODECS

__all__ = ["add_parser", "run"]


def _arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", nargs="?", help="a Kafka log directory, or Parquet/JSON with key/value columns "
                                            "(default: generate a realistic sample)")
    p.add_argument("--format", dest="input_format", help="input format: kafka-log, parquet or json")
    p.add_argument("--master", help="Spark master (default local[*]; spark-submit's when run under it)")
    p.add_argument("--codecs", default=DEFAULT_CODECS,
                   help=f"codecs and levels to measure (default {DEFAULT_CODECS})")
    p.add_argument("--batch-sizes", default=DEFAULT_BATCH_SIZES,
                   help=f"batch sizes (Kafka batch.size) to measure (default {DEFAULT_BATCH_SIZES})")
    p.add_argument("--records", type=int, default=200_000, help="sample size when generating (default 200000)")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--current-codec", default="none", help="what the data uses today (default none)")
    p.add_argument("--current-batch-size", default="16k", help="batch.size used today (default 16k)")
    p.add_argument("--current-size", help="today's storage for the whole data set, e.g. 40TB, to project savings")
    p.add_argument("--out", dest="out_dir", default="advise-report", help="report folder (default advise-report)")
    p.add_argument("--write", dest="write_dir", help="write the data recompressed with the chosen setting here")
    p.add_argument("--choose", help="setting to write instead of the recommended one, e.g. zstd:3@256k")
    p.add_argument("--partitions", type=int, default=1, help="Kafka partitions for --write (murmur2 of the key)")
    p.add_argument("--min-compress-mbps", type=float, default=50.0)
    p.add_argument("--min-read-mbps", type=float, default=100.0)
    p.add_argument("--tasks", type=int, help="Spark tasks (default: default parallelism)")


def add_parser(sub) -> argparse.ArgumentParser:
    p = sub.add_parser("advise", help="measure codecs, levels and batch sizes on your data with Spark",
                       description="Build real Kafka batches for every codec x level x batch size and "
                                   "report size, speed, projected storage and a recommendation.")
    _arguments(p)
    return p


def run(args) -> int:
    from kcodec.advise.job import run_advise

    opts = {k: v for k, v in vars(args).items() if k not in ("func", "command")}
    input_path = opts.pop("input")
    run_advise(input_path=input_path, **opts)
    return 0
