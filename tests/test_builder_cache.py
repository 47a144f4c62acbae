"""The builder cache: blocks reused for the records of compressed batches, within a limit."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest

from kcodec import RecordBatchBuilder, read_batches
from kcodec.records import BufferPool, builder_cache

T0 = 1_700_000_000_000
MiB = 1 << 20


@pytest.fixture
def cache():
    limit, _held, min_block = builder_cache()
    builder_cache(limit=0)  # emptied, then on again: what is held now comes from this test
    builder_cache(limit=limit, min_block=min_block)
    yield builder_cache
    builder_cache(limit=limit, min_block=min_block)


def build(codec, n, value, pool=None, view=False):
    b = RecordBatchBuilder(compression=codec, pool=pool)
    for i in range(n):
        b.append(None, value, T0 + i)
    if view:
        with memoryview(b) as records:
            out = b.build()
            assert len(records) == b.uncompressed_size - 61
        return out
    return b.build()


def values_of(out):
    return [r.value for batch in read_batches(out) for r in batch]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_reused_blocks_build_the_same_bytes(cache, codec):
    value = os.urandom(4096)
    first = build(codec, 300, value)  # grows past 1 MiB: its block is kept
    assert cache()[1] >= MiB
    again = [build(codec, 300, value) for _ in range(3)]
    assert all(bytes(b) == bytes(first) for b in again)
    assert values_of(first) == [value] * 300
    small = build(codec, 3, b"abc")  # a small batch in a large held block
    assert values_of(small) == [b"abc"] * 3
    builder_cache(limit=0)
    assert bytes(build(codec, 300, value)) == bytes(first)
    assert cache()[1] == 0


def test_a_live_view_keeps_the_block(cache):
    value = os.urandom(4096)
    out = build("lz4", 300, value, view=True)
    assert values_of(out) == [value] * 300
    assert bytes(build("lz4", 300, value)) == bytes(out)


def test_uncompressed_and_pooled_batches_take_no_block(cache):
    value = os.urandom(4096)
    builder_cache(limit=0)
    builder_cache(limit=64 * MiB)
    out = build("none", 300, value)
    assert isinstance(out, bytes) and cache()[1] == 0
    pool = BufferPool()
    pooled = build("zstd", 300, value, pool=pool)
    assert values_of(pooled) == [value] * 300 and cache()[1] == 0
    pooled.release()


def test_limits(cache):
    value = os.urandom(4096)
    builder_cache(limit=0)
    builder_cache(limit=3 * MiB, min_block=MiB)
    build("lz4", 300, value)  # 1.2 MiB of records, grown by doubling into a block of 2 MiB: kept
    held = cache()[1]
    assert 2 * MiB <= held <= 3 * MiB
    build("lz4", 600, value)  # takes that block and grows it to 4 MiB: over the limit, freed
    assert cache()[1] == 0
    builder_cache(min_block=4 * MiB)
    build("lz4", 300, value)  # a block under the smallest kept size: freed
    assert cache()[1] == 0
    assert builder_cache(limit=0, min_block=MiB)[0] == 3 * MiB
    assert cache()[:2] == (0, 0)
    with pytest.raises(ValueError):
        builder_cache(limit=-1)
    with pytest.raises(ValueError):
        builder_cache(min_block=0)


def test_two_gib_of_one_mib_batches_in_bounded_memory():
    # 2 GiB of 1 MiB batches, uncompressed and lz4, with a 16 MiB reuse limit: the peak RSS of
    # the process stays within what it holds at once (the values, a few batches, the cache),
    # and the cache never holds more than its limit.
    script = textwrap.dedent("""
        import os, resource
        from kcodec import RecordBatchBuilder
        from kcodec.records import builder_cache
        builder_cache(limit=16 << 20)
        values = [os.urandom(4096) for _ in range(255)]
        def rss():
            with open("/proc/self/status") as f:
                return next(int(l.split()[1]) for l in f if l.startswith("VmHWM:")) * 1024
        base = rss()
        held = 0
        for codec in ("none", "lz4"):
            for _ in range(1024):
                b = RecordBatchBuilder(compression=codec)
                for v in values:
                    b.append(None, v, 1700000000000)
                out = b.build()
                assert len(out) > 1_040_000
                held = max(held, builder_cache()[1])
                del out
        print(rss() - base, held, builder_cache()[0])
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    grown, held, limit = map(int, out.stdout.split())
    assert limit == 16 << 20
    assert 0 < held <= limit
    assert grown < 48 << 20, f"peak RSS grew by {grown / MiB:.1f} MiB building 2 GiB of batches"
