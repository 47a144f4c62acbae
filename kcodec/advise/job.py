"""The Spark application behind ``kcodec advise``."""
from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

from kcodec.advise.grid import (
    DEFAULT_BATCH_SIZES,
    DEFAULT_CODECS,
    Setting,
    format_size,
    parse_batch_sizes,
    parse_codecs,
)
from kcodec.advise.measure import METRICS_DDL, measure_table
from kcodec.advise.report import RULE, aggregate, format_table, recommend, write_report
from kcodec.escape import terminal_text

__all__ = ["run_advise", "load_input"]

_COLUMNS = ("key", "value", "timestamp", "headers")


def load_input(spark, path: Optional[str], fmt: Optional[str], records: int, seed: int):
    """A DataFrame with key/value (+timestamp, headers, and topic/partition from logs)."""
    if path is None:
        from kcodec.advise.sample import generate_sample

        table = generate_sample(records, seed=seed)
        try:
            return spark.createDataFrame(table), "generated sample"
        except (TypeError, ValueError):
            return spark.createDataFrame(table.to_pandas()), "generated sample"
    p = Path(path)
    if fmt is None:
        if p.is_dir():
            from kcodec.log import open_log_dir

            fmt = "kafka-log" if open_log_dir(p) else ("parquet" if list(p.glob("*.parquet")) else "json")
        else:
            fmt = {".parquet": "parquet", ".json": "json", ".jsonl": "json"}.get(p.suffix, "parquet")
    df = spark.read.format(fmt).load(str(p))
    if "value" not in df.columns:
        raise ValueError(f"{path}: the data needs a 'value' column (found {df.columns})")
    from pyspark.sql import functions as F
    for name in ("key", "value"):
        if name in df.columns and dict(df.dtypes)[name] == "string":
            df = df.withColumn(name, F.col(name).cast("binary"))
    return df, f"{fmt} {path}"


def run_advise(*, input_path: Optional[str] = None, input_format: Optional[str] = None,
               master: Optional[str] = None, codecs: str = DEFAULT_CODECS,
               batch_sizes: str = DEFAULT_BATCH_SIZES, records: int = 200_000, seed: int = 7,
               current_codec: str = "none", current_batch_size: str = "16k",
               current_size: Optional[str] = None, out_dir: str = "advise-report",
               write_dir: Optional[str] = None, choose: Optional[str] = None, partitions: int = 1,
               min_compress_mbps: float = 50.0, min_read_mbps: float = 100.0,
               tasks: Optional[int] = None, log: Callable[[str], None] = print) -> Dict:
    from kcodec.advise.grid import parse_size
    from kcodec.spark.session import get_session

    started = time.perf_counter()
    grid_codecs = parse_codecs(codecs)
    sizes = parse_batch_sizes(batch_sizes)
    cur_codec, cur_level = parse_codecs(current_codec)[0]
    current = Setting(cur_codec, cur_level, parse_size(current_batch_size))
    settings = sorted({Setting(c, l, b) for c, l in grid_codecs for b in sizes}
                      | {Setting("none", None, b) for b in sizes} | {current})

    log("kcodec advise: starting Spark ...")
    spark = get_session(master, "kcodec-advise")
    df, source = load_input(spark, input_path, input_format, records, seed)
    if write_dir and "topic" in df.columns:
        from kcodec.spark.transforms import check_topic_column

        check_topic_column(df)  # before measuring: --write would refuse these names at the end
    n_tasks = tasks or spark.sparkContext.defaultParallelism
    data = df.select(*[c for c in _COLUMNS if c in df.columns]).repartition(n_tasks).cache()
    total = data.count()
    topics = _topics(df)
    log(terminal_text(f"input: {source}, {total} records in {n_tasks} tasks; measuring {len(settings)} settings"))
    if topics:
        log(terminal_text(f"topics: {topics}"))

    rows: List[Dict] = []
    for i, setting in enumerate(settings, 1):
        def task(batches, setting=setting):
            import pyarrow as pa

            tables = [pa.Table.from_batches([b]) for b in batches if b.num_rows]
            if not tables:
                return
            for row in measure_table(pa.concat_tables(tables), [setting]):
                yield pa.RecordBatch.from_pylist([row], schema=_metrics_schema())

        t0 = time.perf_counter()
        got = [r.asDict() for r in data.mapInArrow(task, METRICS_DDL).collect()]
        rows.extend(got)
        stored = sum(r["stored_bytes"] for r in got)
        log(f"[{i:>2}/{len(settings)}] {setting.label:<20} stored {format_size(stored):>9}  "
            f"({time.perf_counter() - t0:.1f}s)")

    current_bytes = float(parse_size(current_size)) if current_size else None
    results = aggregate(rows, current, current_bytes)
    best = recommend(results, min_compress_mbps, min_read_mbps)
    if choose:
        c, l = parse_codecs(choose.split("@")[0])[0]
        b = parse_size(choose.split("@")[1]) if "@" in choose else current.batch_bytes
        best = next((r for r in results if r.setting == Setting(c, l, b)), None)
        if best is None:
            raise ValueError(f"--choose {choose}: not among the measured settings")
    rule = RULE.format(min_compress=min_compress_mbps, min_read=min_read_mbps)
    log("")
    log(format_table(results, best, current))
    log("")
    base = next(r for r in results if r.setting == current)
    if best is not None:
        log(f"recommended: {best.setting.label} -- {best.ratio:.2f}x smaller than uncompressed, "
            f"{best.saving * 100:.1f}% less storage than {current.label} "
            f"({format_size(base.projected_bytes)} -> {format_size(best.projected_bytes)})")
    else:
        log("no setting meets the rule; lower --min-compress-mbps / --min-read-mbps")
    log(f"rule: {rule}")
    context = {"input": source, **({"topics": topics} if topics else {}), "records": total, "tasks": n_tasks,
               "rule": rule,
               "throughput": "MB/s of key+value+header bytes per core (sum of task times)",
               "projected": f"scaled from {current.label}"
                            + (f" = {current_size}" if current_size else " on this data")}
    paths = write_report(Path(out_dir), results, best, current, context)
    log(f"report: {paths['html']} and {paths['png']}")
    written = None
    if write_dir and best is not None:
        written = _write(spark, df, best.setting, write_dir, partitions)
        log(f"wrote {best.setting.label} segments to {write_dir}")
    elapsed = time.perf_counter() - started
    log(f"done in {elapsed:.0f}s")
    return {"results": results, "recommended": best, "paths": paths, "written": written, "seconds": elapsed}


def _topics(df, shown: int = 20) -> str:
    """The input's topic names (from data: shown escaped by each output), the first ``shown`` of them."""
    if "topic" not in df.columns:
        return ""
    names = [r[0] for r in df.select("topic").distinct().orderBy("topic").limit(shown + 1).collect()]
    more = ", ..." if len(names) > shown else ""
    return ", ".join(str(n) for n in names[:shown]) + more


def _metrics_schema():
    import pyarrow as pa

    return pa.schema([("codec", pa.string()), ("level", pa.int32()), ("batch_bytes", pa.int64()),
                      ("records", pa.int64()), ("payload_bytes", pa.int64()), ("batches", pa.int64()),
                      ("stored_bytes", pa.int64()), ("compress_seconds", pa.float64()),
                      ("read_seconds", pa.float64())])


def _write(spark, df, setting: Setting, path: str, partitions: int) -> str:
    from pyspark.sql import functions as F

    from kcodec.spark.transforms import write_log

    if "topic" not in df.columns:
        df = df.withColumn("topic", F.lit("advise-sample"))
    options = {"compression": setting.codec, "batchBytes": setting.batch_bytes}
    if setting.level is not None:
        options["level"] = setting.level
    if "partition" in df.columns:
        write_log(df, path, mode="overwrite", **options)
    else:
        write_log(df, path, mode="overwrite", partitions=partitions, partition_column=None, **options)
    return path
