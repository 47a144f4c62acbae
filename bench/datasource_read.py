"""Records/s of ``spark.read.format("kafka-log")`` from local disk and from an S3 API server, in one run.

Builds a log directory of ``--gib`` GiB (lz4 batches of JSON-like values,
``--partitions`` partition folders of 256 MiB segments), uploads it to a
moto S3 server started on 127.0.0.1 (reached over HTTP by s3fs, as a user's
cluster reaches S3), then reads both copies with the same Spark session
(``local[2]``), local and S3 runs alternated, and reports records/s, the
ratio S3/local, and the requests and bytes the S3 read fetched.

The S3 server runs on the same cores as Spark, which a real object store
does not, and moto loads a whole object for every ranged GET.  So the
report also gives the CPU seconds of Spark's processes (the driver, the JVM
and the Python workers) and of the server in each timed read (Linux
``/proc``).

Spark runs each task in a Python worker, whose request counter the driver
cannot see; the requests and bytes are therefore counted by running the
data source's own planner and task function in this process over the same
S3 copy (the same calls Spark's workers make), after the timed Spark runs.

With ``--against-parquet`` it instead compares, in one run on local disk,
``spark.read.format("kafka-log")`` (all columns, and with ``columns`` naming
only what the query uses) against Spark's Parquet reader over the same
records (written from the log by Spark), for ``count(*)``,
``sum(length(value))`` and a filter on the last 1% of offsets, with the CPU
seconds of the JVM and of the Python workers in each query; then times the
data source's Python work alone outside Spark, and reports how many input
partitions the pushed offset filter leaves.

    python bench/datasource_read.py              # 1.1 GiB, 3 timed runs each
    python bench/datasource_read.py --gib 0.2 --runs 1
    python bench/datasource_read.py --against-parquet --gib 0.3 --runs 2
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "tests"))


def build_log_dir(root: str, gib: float, partitions: int, segment_bytes: int) -> tuple:
    """(records, bytes on disk): one partition's segments built, the others hard links to them."""
    import numpy as np
    import pyarrow as pa

    import kcodec
    from kcodec.log import partition_path, write_partition

    per_partition = int(gib * (1 << 30) / partitions)
    rng = np.random.default_rng(7)
    first = partition_path(root, "events", 0)
    written = records = 0
    chunk = 200_000

    def message_sets():
        nonlocal written, records
        offset = 0
        while written < per_partition:
            ids = rng.integers(0, 10**9, size=chunk)
            vals = [b'{"user":%d,"page":"/p/%d","agent":"Mozilla/5.0","ms":%d,"pad":"%s"}'
                    % (u, u % 977, u % 5000, os.urandom(24).hex().encode()) for u in ids.tolist()]
            table = pa.table({"key": pa.array([b"user-%d" % (u % 50_000) for u in ids.tolist()], pa.binary()),
                              "value": pa.array(vals, pa.binary()),
                              "offset": pa.array(np.arange(offset, offset + chunk), pa.int64())})
            for ms in kcodec.from_arrow(table, compression="lz4", max_batch_bytes=64 * 1024):
                written += len(ms)
                yield ms
            records += chunk
            offset += chunk

    write_partition(first, message_sets(), segment_bytes=segment_bytes)
    for p in range(1, partitions):
        d = partition_path(root, "events", p)
        os.makedirs(d)
        for name in os.listdir(first):
            os.link(os.path.join(first, name), os.path.join(d, name))
    size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(root) for f in fs)
    return records * partitions, size


def proc_cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc; 0 elsewhere)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def process_tree_cpu(root: int, leave_out: int = 0) -> list:
    """``(command name, own CPU s, reaped children's CPU s)`` of ``root`` and every process under
    it, but not ``leave_out`` and its children (Linux /proc; empty elsewhere)."""
    children: dict = {}
    stat: dict = {}
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                head, tail = f.read().rsplit(")", 1)
        except OSError:
            continue
        fields = tail.split()
        children.setdefault(int(fields[1]), []).append(pid)
        # utime + stime; cutime + cstime: the ended children this process waited for
        stat[pid] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / tick,
                     (int(fields[13]) + int(fields[14])) / tick)
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        if pid == leave_out or pid not in stat:
            continue
        out.append(stat[pid])
        todo.extend(children.get(pid, ()))
    return out


def tree_cpu_seconds(root: int, leave_out: int = 0) -> float:
    """CPU seconds of ``root`` and every process under it, ended ones included: Spark's driver,
    JVM and Python workers."""
    return sum(own + reaped for _, own, reaped in process_tree_cpu(root, leave_out))


def jvm_and_python_cpu(root: int) -> tuple:
    """(JVM, Python workers) CPU seconds so far of the Spark processes under the driver ``root``.
    A Python process the JVM started and waited for counts as Python."""
    jvm = python = 0.0
    for name, own, reaped in process_tree_cpu(root)[1:]:  # not the driver
        if name == "java":
            jvm += own
            python += reaped
        else:
            python += own + reaped
    return jvm, python


class Run:
    """One timed read: wall seconds, and the CPU seconds Spark's processes and the S3 server used in it."""

    def __init__(self, rows: int, wall: float, spark_cpu: float, server_cpu: float) -> None:
        self.rows, self.wall, self.spark_cpu, self.server_cpu = rows, wall, spark_cpu, server_cpu


def fastest(best: "Run | None", run: Run) -> Run:
    return run if best is None or run.wall < best.wall else best


def timed_read(spark, path: str, options: dict, server_pid: int = 0) -> Run:
    """One read of count(*) and sum(length(value)), with the CPU Spark and the server used in it."""
    reader = spark.read.format("kafka-log")
    for k, v in options.items():
        reader = reader.option(k, v)
    spark0 = tree_cpu_seconds(os.getpid(), server_pid)
    server0 = proc_cpu_seconds(server_pid) if server_pid else 0.0
    t0 = time.perf_counter()
    got = reader.load(path).selectExpr("count(*) AS n", "sum(length(value)) AS b").collect()[0]
    return Run(got["n"], time.perf_counter() - t0, tree_cpu_seconds(os.getpid(), server_pid) - spark0,
               proc_cpu_seconds(server_pid) - server0 if server_pid else 0.0)


def best_query(runs: int, query) -> tuple:
    """(result, best wall seconds, its JVM CPU s, its Python workers' CPU s) of ``query()`` over ``runs``."""
    best = None
    for _ in range(runs):
        cpu0 = jvm_and_python_cpu(os.getpid())
        t0 = time.perf_counter()
        got = query()
        wall = time.perf_counter() - t0
        cpu1 = jvm_and_python_cpu(os.getpid())
        if best is None or wall < best[1]:
            best = (got, wall, cpu1[0] - cpu0[0], cpu1[1] - cpu0[1])
    return best


def python_side(log_path: str, columns) -> dict:
    """CPU seconds of the data source's Python work over the whole log on one thread, outside Spark:
    ``read`` (map the file, decode, build the Arrow batches it yields) and of that the decoding
    (``to_arrow`` alone); and the size of the Arrow IPC stream of its batches (what workers send the JVM)."""
    import pyarrow as pa

    import kcodec
    from kcodec.log import LogSegment
    from kcodec.spark.datasource import KafkaLogReader

    options = {"path": log_path}
    if columns:
        options["columns"] = columns
    reader = KafkaLogReader(options)
    parts = reader.partitions()
    sink = pa.MockOutputStream()  # counts the bytes only
    writer = None
    batches = rows = 0
    read_s = 0.0
    for p in parts:
        t0 = time.process_time()
        got = list(reader.read(p))
        read_s += time.process_time() - t0
        for b in got:
            writer = writer or pa.ipc.new_stream(sink, b.schema)
            writer.write_batch(b)
            batches, rows = batches + 1, rows + b.num_rows
    writer.close()
    headers = columns is None or "headers" in columns
    t0 = time.process_time()
    for p in parts:
        with LogSegment(p.path, base_offset=0) as seg:
            kcodec.to_arrow(seg.read_range(p.start, p.end), topic=p.topic, partition=p.partition,
                            headers=headers, use_threads=False)  # as the reader called it before it
            # left out the columns a query does not name
    decode_s = time.process_time() - t0
    return {"read": read_s, "decode": decode_s, "batches": batches, "rows": rows, "ipc_bytes": sink.size()}


def against_parquet(spark, log_path: str, parquet_path: str, records: int, partitions: int, runs: int) -> None:
    """kafka-log (all columns, and ``columns`` cut to the query's) against Spark's Parquet on the same records."""
    from pyspark.sql import functions as F

    from kcodec.spark.datasource import KafkaLogReader

    per_partition = records // partitions
    cut = per_partition - per_partition // 100  # the last 1% of each partition's offsets
    queries = [
        ("count(*)", "key,value", lambda df: df.agg(F.count(F.lit(1))).collect()[0][0]),
        ("sum(length(value))", "key,value", lambda df: df.agg(F.sum(F.length("value"))).collect()[0][0]),
        (f"offset >= {cut}: count, sum(length(value))", "key,value,offset",
         lambda df: tuple(df.filter(F.col("offset") >= cut)
                          .agg(F.count(F.lit(1)), F.sum(F.length("value"))).collect()[0])),
    ]

    def kafka_log(columns=None):
        reader = spark.read.format("kafka-log")
        return (reader.option("columns", columns) if columns else reader).load(log_path)

    print()
    print("| query | kafka-log, all columns (s) | kafka-log, `columns` (s) | Parquet (s) | "
          "speed-up from `columns` | kafka-log with `columns` / Parquet (time) |")
    print("|---|---:|---:|---:|---:|---:|")
    cpu_rows = []
    for name, columns, query in queries:
        full = best_query(runs, lambda: query(kafka_log()))
        cols = best_query(runs, lambda: query(kafka_log(columns)))
        pq = best_query(runs, lambda: query(spark.read.parquet(parquet_path)))
        assert full[0] == cols[0] == pq[0], (name, full[0], cols[0], pq[0])
        print(f"| {name} (`columns={columns}`) | {full[1]:.2f} | {cols[1]:.2f} | {pq[1]:.2f} | "
              f"{full[1] / cols[1]:.2f}x | {cols[1] / pq[1]:.2f} |")
        cpu_rows.append((name, full, cols, pq))
    print()
    print("CPU seconds of the best runs, JVM + Python workers:")
    print()
    print("| query | kafka-log, all columns | kafka-log, `columns` | Parquet |")
    print("|---|---:|---:|---:|")
    for name, *variants in cpu_rows:
        print(f"| {name} | " + " | ".join(f"{v[2]:.1f} + {v[3]:.1f}" for v in variants) + " |")
    print()
    print("The data source's Python work outside Spark, one thread, CPU seconds:")
    print()
    print("| columns | read() in all (s) | of it to_arrow (s) | batches | Arrow IPC stream to the JVM (MiB) |")
    print("|---|---:|---:|---:|---:|")
    for columns in (None, "key,value"):
        side = python_side(log_path, columns)
        assert side["rows"] == records
        print(f"| {columns or 'all'} | {side['read']:.2f} | {side['decode']:.2f} | {side['batches']} | "
              f"{side['ipc_bytes'] / (1 << 20):,.0f} |")
    from pyspark.sql.datasource import GreaterThanOrEqual

    everything = KafkaLogReader({"path": log_path}).partitions()
    reader = KafkaLogReader({"path": log_path})
    list(reader.pushFilters([GreaterThanOrEqual(("offset",), cut)]))
    planned = reader.partitions()
    print()
    print(f"input partitions: {len(everything)} for the whole log, {len(planned)} with offset >= {cut} pushed "
          f"({sum(p.end - p.start for p in planned):,} of {sum(p.end - p.start for p in everything):,} bytes)")


def count_requests(url: str, options: dict) -> tuple:
    from kcodec.spark.datasource import KafkaLogReader
    from kcodec.storage import io_stats

    reader = KafkaLogReader(dict(options, path=url))
    io_stats.reset()
    parts = reader.partitions()
    plan = io_stats.snapshot()
    io_stats.reset()
    for p in parts:
        for _ in reader.read(p):
            pass
    return len(parts), plan, io_stats.snapshot()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--gib", type=float, default=1.1)
    ap.add_argument("--partitions", type=int, default=4)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--segment-mib", type=int, default=256, help="segment.bytes of the log (MiB)")
    ap.add_argument("--split-mib", type=int, default=0,
                    help="the data source's splitBytes for both reads (MiB; default: its own)")
    ap.add_argument("--fetch-mib", type=int, default=0,
                    help="the data source's fetchBytes for the S3 read (MiB; default: its own)")
    ap.add_argument("--against-parquet", action="store_true",
                    help="compare kafka-log with Spark's Parquet reader on local disk instead")
    args = ap.parse_args()
    if args.against_parquet:
        return main_against_parquet(args)

    from s3_server import start_server

    work = tempfile.mkdtemp(prefix="kcodec-dsread-")
    server = start_server()
    spark = None
    try:
        t0 = time.perf_counter()
        records, size = build_log_dir(os.path.join(work, "kafka"), args.gib, args.partitions,
                                        args.segment_mib << 20)
        print(f"log directory: {records:,} records, {size / (1 << 30):.2f} GiB in {args.partitions} partitions "
              f"of {args.segment_mib} MiB segments (built in {time.perf_counter() - t0:.0f} s)", flush=True)
        bucket = server.new_bucket()
        url = f"s3://{bucket}/kafka"
        t0 = time.perf_counter()
        server.upload_dir(os.path.join(work, "kafka"), url)
        print(f"uploaded to the S3 server in {time.perf_counter() - t0:.0f} s", flush=True)
        spark = local_session()
        read_options = {"splitBytes": str(args.split_mib << 20)} if args.split_mib else {}
        s3_options = dict(read_options, **{f"storage.{k}": v for k, v in server.storage_options.items()
                                           if isinstance(v, str)})
        if args.fetch_mib:
            s3_options["fetchBytes"] = str(args.fetch_mib << 20)
        local_path = os.path.join(work, "kafka")
        # One untimed read each: the workers import pyarrow, kcodec and s3fs and the page cache fills.
        cold_local = timed_read(spark, local_path, read_options)
        cold_s3 = timed_read(spark, url, s3_options, server.proc.pid)
        # Alternated, so that a busy spell of the shared machine falls on both alike.
        local = s3 = None
        for _ in range(args.runs):
            local = fastest(local, timed_read(spark, local_path, read_options))
            s3 = fastest(s3, timed_read(spark, url, s3_options, server.proc.pid))
        assert local.rows == s3.rows == records, (local.rows, s3.rows, records)
        tasks, plan, fetch = count_requests(url, s3_options)
        local_rate, s3_rate = local.rows / local.wall, s3.rows / s3.wall
        print()
        print(f"| source | records | best of {args.runs} (s) | records/s | MiB/s on disk | "
              "Spark's CPU (s) | S3 server's CPU (s) | requests | bytes fetched |")
        print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
        print(f"| local disk | {local.rows:,} | {local.wall:.2f} | {local_rate:,.0f} | "
              f"{size / local.wall / (1 << 20):,.0f} | {local.spark_cpu:.1f} | - | - | - |")
        print(f"| S3 (moto on 127.0.0.1) | {s3.rows:,} | {s3.wall:.2f} | {s3_rate:,.0f} | "
              f"{size / s3.wall / (1 << 20):,.0f} | {s3.spark_cpu:.1f} | {s3.server_cpu:.1f} | "
              f"{plan.requests + fetch.requests} ({plan.requests} planning, {fetch.requests} for {tasks} tasks) | "
              f"{plan.bytes_read + fetch.bytes_read:,} ({plan.bytes_read:,} planning) |")
        print()
        print(f"S3 / local: {100 * s3_rate / local_rate:.0f}% (goal: at least 80%); log files {size:,} bytes; "
              f"mean read {fetch.bytes_read / max(1, fetch.requests) / (1 << 20):.1f} MiB; "
              f"first (untimed) runs {cold_local.wall:.2f} s local, {cold_s3.wall:.2f} s S3; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        # The server shares the machine's cores with Spark; a real object store does not.
        print(f"CPU seconds: Spark {local.spark_cpu:.1f} local, {s3.spark_cpu:.1f} S3 "
              f"({100 * local.spark_cpu / max(s3.spark_cpu, 1e-9):.0f}% of it); with the S3 server's "
              f"{s3.server_cpu:.1f}, local is {100 * local.spark_cpu / max(s3.spark_cpu + s3.server_cpu, 1e-9):.0f}% "
              "of the S3 read's CPU")
    finally:
        if spark is not None:
            spark.stop()
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


def local_session():
    from pyspark.sql import SparkSession

    import kcodec.spark

    os.environ["PYSPARK_PYTHON"] = sys.executable
    spark = (SparkSession.builder.master("local[2]").appName("kcodec-datasource-read")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config("spark.sql.session.timeZone", "UTC").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    kcodec.spark.register(spark)
    return spark


def main_against_parquet(args) -> int:
    work = tempfile.mkdtemp(prefix="kcodec-dsread-")
    spark = None
    try:
        t0 = time.perf_counter()
        log_path, parquet_path = os.path.join(work, "kafka"), os.path.join(work, "parquet")
        records, size = build_log_dir(log_path, args.gib, args.partitions, args.segment_mib << 20)
        print(f"log directory: {records:,} records, {size / (1 << 30):.2f} GiB in {args.partitions} partitions "
              f"of {args.segment_mib} MiB segments (built in {time.perf_counter() - t0:.0f} s)", flush=True)
        spark = local_session()
        spark.read.format("kafka-log").load(log_path).write.parquet(parquet_path)
        pq_size = sum(os.path.getsize(os.path.join(dp, f)) for dp, _, fs in os.walk(parquet_path) for f in fs)
        print(f"Parquet copy (Spark's default snappy): {pq_size / (1 << 30):.2f} GiB; best of {args.runs} runs each",
              flush=True)
        spark.read.format("kafka-log").load(log_path).count()  # warm the workers and the page cache
        against_parquet(spark, log_path, parquet_path, records, args.partitions, args.runs)
    finally:
        if spark is not None:
            spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
