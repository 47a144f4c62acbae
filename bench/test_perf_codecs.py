"""Codec benchmarks: kcodec's codecs next to the bare library calls, on the same bytes.

The bytes are each batch's uncompressed records region of compare.py's
workloads; the raw closures are compare._raw's.  Levels are the ones
compare._raw uses, so both sides do the same compression work.
"""
from __future__ import annotations

import itertools
import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))

import compare  # noqa: E402

import kcodec  # noqa: E402
from kcodec._native.primitives import crc32c_backends, crc32c_portable, crc32c_using  # noqa: E402

pytestmark = pytest.mark.perf

WORKLOADS = ["w1", "w2", "w3"]
CODECS = [c for c in compare.CODECS if c != "none"]
LEVELS = {"gzip": 6, "snappy": None, "lz4": 9, "zstd": 3}  # lz4 9 is Kafka's fast (non-HC) compressor
#: every codec test runs on each workload and codec, for kcodec and for the bare library call
GRID = pytest.mark.parametrize(("workload", "codec", "impl"),
                               list(itertools.product(WORKLOADS, CODECS, ["kcodec", "raw"])))


def _raw_decoder(codec):
    # To check the raw compressors' output independently of compare._raw's decompress closure.
    if codec == "gzip":
        import zlib
        return zlib.decompress
    if codec == "snappy":
        import cramjam
        return lambda d: bytes(cramjam.snappy.decompress_raw(d))
    if codec == "lz4":
        import lz4.frame
        return lz4.frame.decompress
    import zstandard
    return zstandard.ZstdDecompressor().decompress


def _raw(wl, codec):
    key = ("raw", codec)
    if key not in wl.cache:
        wl.cache[key] = compare._raw(codec, wl.records)
    return wl.cache[key]


def _kc_compressed(wl, codec):
    key = ("kcodec compressed", codec)
    if key not in wl.cache:
        c = kcodec.get_codec(codec)
        wl.cache[key] = [c.compress(x, LEVELS[codec], magic=2) for x in wl.regions()]
    return wl.cache[key]


@GRID
def test_compress(benchmark, workloads, workload, codec, impl):
    wl = workloads.timed(benchmark, workload, codec, "compress", impl)
    regions = wl.regions()
    if impl == "kcodec":
        c, level = kcodec.get_codec(codec), LEVELS[codec]
        out = benchmark(lambda: [c.compress(x, level, magic=2) for x in regions])
        assert [c.decompress(x) for x in out] == regions
    else:
        out = benchmark(_raw(wl, codec)[0])
        dec = _raw_decoder(codec)
        assert [dec(x) for x in out] == regions


@GRID
def test_decompress(benchmark, workloads, workload, codec, impl):
    wl = workloads.timed(benchmark, workload, codec, "decompress", impl)
    regions = wl.regions()
    if impl == "kcodec":
        c, compressed = kcodec.get_codec(codec), _kc_compressed(wl, codec)
        out = benchmark(lambda: [c.decompress(x) for x in compressed])
    else:
        out = benchmark(_raw(wl, codec)[1])
    assert out == regions


@pytest.mark.parametrize("backend", crc32c_backends())
@pytest.mark.parametrize("size", [256, 4096, 16384, 1 << 20])
def test_crc32c(benchmark, size, backend):
    # Every backend on the same in-cache bytes: v2 batches of these sizes are
    # checksummed once when built and once when read.
    data = os.urandom(size)
    loops = max(1, (1 << 22) // size)
    benchmark.group = f"crc32c {size} bytes x {loops}"
    benchmark.extra_info.update({"bytes": size * loops, "backend": backend})
    out = benchmark(lambda: [crc32c_using(backend, data) for _ in range(loops)])
    assert out[0] == crc32c_portable(data)
