"""The kcodec-libdeflate plugin's gzip against kcodec's built-in gzip (zlib), on W2's log lines.

    python bench/bench_libdeflate.py [--seconds 0.2] [--repeat 5]

Both write Kafka's gzip framing (Java's header, one member) and read it by the
same rules; only the deflate engine differs.  The regions are bench_codecs.py's
W2 records regions of ~16 KiB and ~1 MiB.  For Kafka's levels 1, 6 (the
default) and 9 it prints compress and decompress throughput (MB/s of
uncompressed data, best of ``--repeat``, timed in process CPU time as compare.py
times, so that a busy machine slows both alike), the speed ratios plugin/built-in and
the compression ratios.  Each engine decompresses its own output, and the
plugin also the built-in's (``dec zlib's``: the bytes Java writes).

The plugin is used where it is installed; otherwise it is built from
plugins/kcodec-libdeflate into a temporary directory first (needs cffi and
libdeflate-dev).
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Iterator

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.join(ROOT, "bench"))

from bench_codecs import best_rate, print_table, rate_options, workloads  # noqa: E402

from kcodec.compression.gzip import GzipCodec  # noqa: E402


def _plugin_class(tmp: str):
    try:
        from kcodec_libdeflate import LibdeflateGzipCodec
        return LibdeflateGzipCodec
    except ImportError:
        pass
    src, site = os.path.join(tmp, "src"), os.path.join(tmp, "site")
    shutil.copytree(os.path.join(ROOT, "plugins", "kcodec-libdeflate"), src)  # builds leave the tree as it was
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                    "--no-index", "--target", site, src], check=True, env=env)
    sys.path.insert(0, site)
    from kcodec_libdeflate import LibdeflateGzipCodec
    return LibdeflateGzipCodec


_HEADER = (f"{'region':<12} {'level':>5} | {'comp zlib':>9} {'comp ld':>8} {'ld/zlib':>7} | "
           f"{'dec zlib':>8} {'dec ld':>8} {'ld/zlib':>7} {'dec zlib s':>10} | "
           f"{'ratio zlib':>10} {'ratio ld':>8}")
_LEGEND = ("MB/s of uncompressed data; ld/zlib = plugin throughput / built-in throughput; "
           "ratio = uncompressed / compressed size")


def _rows(args: argparse.Namespace, builtin: GzipCodec, plugin: GzipCodec) -> Iterator[str]:
    regions = {k: v for k, v in workloads().items() if k.startswith("W2")}
    for name, data in regions.items():
        n = len(data)
        for level in (1, 6, 9):
            z, ld = builtin.compress(data, level=level), plugin.compress(data, level=level)
            assert builtin.decompress(ld) == data == plugin.decompress(z) == plugin.decompress(ld)
            rate = {key: best_rate(fn, arg, n, args.seconds, args.repeat, time.process_time)
                    for key, fn, arg in (
                ("cz", lambda d: builtin.compress(d, level=level), data),
                ("cl", lambda d: plugin.compress(d, level=level), data),
                ("dz", builtin.decompress, z),
                ("dl", plugin.decompress, ld),
                ("dlz", plugin.decompress, z))}
            yield (f"{name:<12} {level:>5} | {rate['cz']:>9.1f} {rate['cl']:>8.1f} "
                   f"{rate['cl'] / rate['cz']:>7.2f} | "
                   f"{rate['dz']:>8.1f} {rate['dl']:>8.1f} {rate['dl'] / rate['dz']:>7.2f} {rate['dlz']:>10.1f} | "
                   f"{n / len(z):>10.2f} {n / len(ld):>8.2f}")


def main(argv=None) -> int:
    args = rate_options(__doc__.split("\n")[0], argv)
    with tempfile.TemporaryDirectory() as tmp:
        plugin, builtin = _plugin_class(tmp)(), GzipCodec()
        print(f"built-in: {builtin.backend}; plugin: {plugin.backend}")
        print_table(_HEADER, _rows(args, builtin, plugin), _LEGEND)
    return 0


if __name__ == "__main__":
    sys.exit(main())
