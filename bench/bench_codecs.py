"""kcodec's codecs against the raw library calls, on the same bytes.

    python bench/bench_codecs.py [--seconds 0.2] [--repeat 5]

Two deterministic workloads, each as a v2 records region (what a batch
compresses) of ~16 KiB and ~1 MiB:

* W1 -- JSON events (ids, users, event names, timestamps, small nested tags);
* W2 -- application log lines (timestamp, level, service, request id, path,
  latency).

For each codec at Kafka's default level, compress and decompress are timed
for kcodec (Kafka's framing, buffer checks, size limits) and for the bare
library call that does the same compression work:

* gzip   -- ``zlib.compress(wbits=31)`` / ``zlib.decompress(wbits=31)``
* snappy -- ``cramjam.snappy.compress_raw`` / ``decompress_raw`` (one block)
* lz4    -- ``lz4.frame`` with independent 64 KiB blocks, and ``lz4.block``
            on the whole input as one block
* zstd   -- ``ZstdCompressor(level=3).compress`` / ``ZstdDecompressor().decompress``

Throughput is MB/s of uncompressed data (best of ``--repeat`` runs);
``kcodec/raw`` is kcodec's throughput over the raw call's: 1.00 means the
framing costs nothing, below 1 is overhead.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from typing import Callable, Dict, Iterable, Iterator, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import kcodec  # noqa: E402
from kcodec._native.primitives import encode_varint, encode_varlong  # noqa: E402


# -- workloads -------------------------------------------------------------------------
def _record(offset_delta: int, ts_delta: int, key: bytes, value: bytes) -> bytes:
    body = (b"\x00" + encode_varlong(ts_delta) + encode_varint(offset_delta)
            + encode_varint(len(key)) + key + encode_varint(len(value)) + value + encode_varint(0))
    return encode_varint(len(body)) + body


def _region(make_value: Callable[[random.Random, int], Tuple[bytes, bytes]], target: int, seed: int) -> bytes:
    rnd = random.Random(seed)
    out: List[bytes] = []
    size = i = 0
    while size < target:
        key, value = make_value(rnd, i)
        rec = _record(i, i * 3, key, value)
        out.append(rec)
        size += len(rec)
        i += 1
    return b"".join(out)


_USERS = [f"user-{n:05d}" for n in range(5000)]
_EVENTS = ["page_view", "click", "add_to_cart", "checkout", "search", "login", "logout"]
_TAGS = ["mobile", "desktop", "eu", "us", "beta", "returning", "new"]


def _json_event(rnd: random.Random, i: int) -> Tuple[bytes, bytes]:
    user = rnd.choice(_USERS)
    event = {
        "id": 10_000_000 + i,
        "user": user,
        "event": rnd.choice(_EVENTS),
        "ts": 1_700_000_000_000 + i * 37,
        "session": f"{rnd.getrandbits(64):016x}",
        "price": round(rnd.uniform(1, 500), 2),
        "tags": rnd.sample(_TAGS, rnd.randint(0, 3)),
        "page": f"/products/{rnd.randint(1, 20000)}",
    }
    return user.encode(), json.dumps(event, separators=(",", ":")).encode()


_SERVICES = ["api-gateway", "orders", "payments", "inventory", "auth"]
_PATHS = ["/api/v1/orders", "/api/v1/orders/{id}", "/api/v1/cart", "/api/v2/search", "/healthz"]
_LEVELS = ["INFO"] * 8 + ["WARN", "ERROR", "DEBUG"]


def _log_line(rnd: random.Random, i: int) -> Tuple[bytes, bytes]:
    service = rnd.choice(_SERVICES)
    path = rnd.choice(_PATHS).replace("{id}", str(rnd.randint(1, 999999)))
    ms = 1_700_000_000_000 + i * 11
    line = (f"2023-11-14T22:{(ms // 60000) % 60:02d}:{(ms // 1000) % 60:02d}.{ms % 1000:03d}Z "
            f"{rnd.choice(_LEVELS):5s} [{service}] req={rnd.getrandbits(48):012x} "
            f"method={rnd.choice(['GET', 'POST', 'PUT'])} path={path} status={rnd.choice([200, 200, 201, 404, 500])} "
            f"latency_ms={rnd.expovariate(1 / 40):.1f} bytes={rnd.randint(100, 90000)}")
    return service.encode(), line.encode()


def workloads() -> Dict[str, bytes]:
    return {
        "W1 json 16K": _region(_json_event, 16 * 1024, 1),
        "W1 json 1M": _region(_json_event, 1024 * 1024, 1),
        "W2 logs 16K": _region(_log_line, 16 * 1024, 2),
        "W2 logs 1M": _region(_log_line, 1024 * 1024, 2),
    }


# -- raw library calls ----------------------------------------------------------------------
def raw_calls() -> Dict[str, Tuple[Callable, Callable]]:
    import zlib

    import cramjam
    import lz4.block
    import lz4.frame
    import zstandard

    zc = zstandard.ZstdCompressor(level=3)
    zd = zstandard.ZstdDecompressor()
    return {
        "gzip": (lambda d: zlib.compress(d, 6, wbits=31), lambda c: zlib.decompress(c, wbits=31)),
        "snappy": (lambda d: bytes(cramjam.snappy.compress_raw(d)),
                   lambda c: bytes(cramjam.snappy.decompress_raw(c))),
        "lz4": (lambda d: lz4.frame.compress(d, block_size=lz4.frame.BLOCKSIZE_MAX64KB, block_linked=False),
                lz4.frame.decompress),
        "lz4.block": (lambda d: lz4.block.compress(d, store_size=True), lz4.block.decompress),
        "zstd": (zc.compress, zd.decompress),
    }


def best_rate(fn: Callable, arg, nbytes: int, seconds: float, repeat: int,
              clock: Callable[[], float] = time.perf_counter) -> float:
    fn(arg)
    loops, elapsed = 1, 0.0
    while True:
        t0 = clock()
        for _ in range(loops):
            fn(arg)
        elapsed = clock() - t0
        if elapsed >= seconds / 4:
            break
        loops *= 4
    best = elapsed / loops
    for _ in range(repeat - 1):
        t0 = clock()
        for _ in range(loops):
            fn(arg)
        best = min(best, (clock() - t0) / loops)
    return nbytes / best / 1e6


def rate_options(description: str, argv=None) -> argparse.Namespace:
    """The options of a rate script: the time per measurement and the runs of which the best counts."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--seconds", type=float, default=0.2, help="target time per measurement")
    parser.add_argument("--repeat", type=int, default=5, help="runs per measurement; the best counts")
    return parser.parse_args(argv)


def print_table(header: str, rows: Iterable[str], legend: str) -> None:
    """``header`` over a rule, each row as soon as it is measured, then what the columns mean."""
    print(header)
    print("-" * len(header))
    for row in rows:
        print(row)
    print(legend)


_HEADER = (f"{'workload':<12} {'codec':<7} {'raw call':<10} {'ratio':>6} | "
           f"{'comp kc':>8} {'comp raw':>8} {'kc/raw':>6} | {'dec kc':>8} {'dec raw':>8} {'kc/raw':>6}")
_LEGEND = ("MB/s of uncompressed data; ratio = uncompressed / kcodec compressed size; "
           "kc/raw = kcodec throughput / raw call throughput")


def _rows(args: argparse.Namespace, raw: Dict[str, Tuple[Callable, Callable]]) -> Iterator[str]:
    for wname, data in workloads().items():
        n = len(data)
        for cname in ("gzip", "snappy", "lz4", "zstd"):
            codec = kcodec.get_codec(cname)
            payload = codec.compress(data)
            assert codec.decompress(payload) == data
            kc_c = best_rate(codec.compress, data, n, args.seconds, args.repeat)
            kc_d = best_rate(codec.decompress, payload, n, args.seconds, args.repeat)
            for rname in [cname] + (["lz4.block"] if cname == "lz4" else []):
                rc, rd = raw[rname]
                raw_payload = rc(data)
                assert rd(raw_payload) == data
                raw_c = best_rate(rc, data, n, args.seconds, args.repeat)
                raw_d = best_rate(rd, raw_payload, n, args.seconds, args.repeat)
                label = {"gzip": "zlib", "snappy": "cramjam", "lz4": "lz4.frame", "lz4.block": "lz4.block",
                         "zstd": "zstandard"}[rname]
                yield (f"{wname:<12} {cname:<7} {label:<10} {n / len(payload):>6.2f} | "
                       f"{kc_c:>8.1f} {raw_c:>8.1f} {kc_c / raw_c:>6.2f} | "
                       f"{kc_d:>8.1f} {raw_d:>8.1f} {kc_d / raw_d:>6.2f}")


def main(argv=None) -> int:
    args = rate_options(__doc__.split("\n")[0], argv)
    raw = raw_calls()
    print(f"kcodec {kcodec.__version__}; backends: "
          + ", ".join(f"{n}={kcodec.get_codec(n).backend}" for n in ("gzip", "snappy", "lz4", "zstd")))
    print_table(_HEADER, _rows(args, raw), _LEGEND)
    return 0


if __name__ == "__main__":
    sys.exit(main())
