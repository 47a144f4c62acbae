"""BufferPool and PooledBuffer: reuse in steady state, ownership rules, use after release."""
from __future__ import annotations

import threading

import pytest

from kcodec import BufferReleasedError, RecordBatchBuilder, read_batches
from kcodec.records import BufferPool, PooledBuffer

T0 = 1_700_000_000_000


def build(pool, n=3, codec="none", value=b"v" * 100):
    b = RecordBatchBuilder(pool=pool, compression=codec)
    for i in range(n):
        b.append(b"k%d" % i, value, T0 + i)
    return b, b.build()


@pytest.mark.parametrize("codec", ["none", "gzip", "zstd"])
def test_pooled_build_equals_plain_build(codec):
    pool = BufferPool()
    _, pooled = build(pool, codec=codec)
    _, plain = build(None, codec=codec)
    assert isinstance(pooled, PooledBuffer) and isinstance(plain, bytes)
    assert bytes(pooled) == pooled.tobytes() == plain
    assert len(pooled) == len(plain)
    pooled.release()


def test_steady_state_allocates_nothing():
    pool = BufferPool()
    for _ in range(50):
        _, out = build(pool)
        assert [r.key for batch in read_batches(out) for r in batch] == [b"k0", b"k1", b"k2"]
        out.release()
    # the batch is written into the pooled buffer it is returned in: one buffer serves every batch
    assert pool.allocations == 1


def test_builder_counters_survive_handing_over_the_buffer():
    pool = BufferPool()
    b, out = build(pool, n=4)
    assert b.record_count == 4 and b.next_offset == 4 and b.last_offset == 3
    assert b.max_timestamp == T0 + 3 and b.is_full()
    assert not b.has_room_for(b"k", b"v", timestamp=T0)
    out.release()


def test_size_classes():
    pool = BufferPool()
    small = pool.get(10)
    big = pool.get(100_000)
    assert len(small) == 4096 and len(big) == 131072
    pool.put(small)
    pool.put(big)
    assert pool.get(4000) is small and pool.get(70_000) is big
    assert pool.cached_bytes() == 0


def test_size_class_boundaries():
    # a request of exactly a class's size takes that class, one byte more the next
    pool = BufferPool()
    assert [len(pool.get(n)) for n in (0, 1, 4096, 4097, 8192, 8193, 1 << 20)] == \
        [4096, 4096, 4096, 8192, 8192, 16384, 1 << 20]


def test_default_cache_keeps_eight_per_class():
    pool = BufferPool()
    bufs = [pool.get(10) for _ in range(10)] + [pool.get(5000) for _ in range(3)]
    for b in bufs:
        pool.put(b)
    assert pool.cached_bytes() == 8 * 4096 + 3 * 8192
    assert pool.allocations == 13


@pytest.mark.parametrize("module", ["kcodec.records.pool"])  # named in the node id, for bench/mutation.py
def test_star_import_gives_the_public_names_only(module):
    names: dict = {}
    exec(f"from {module} import *", names)
    assert sorted(k for k in names if k != "__builtins__") == ["BufferPool", "PooledBuffer", "builder_cache"]


def test_cache_is_bounded():
    pool = BufferPool(max_cached_per_class=2)
    bufs = [pool.get(10) for _ in range(5)]
    for b in bufs:
        pool.put(b)
    assert pool.cached_bytes() == 2 * 4096


def test_double_give_back_is_ignored():
    pool = BufferPool()
    buf = pool.get(10)
    pool.put(buf)
    pool.put(buf)
    assert pool.get(10) is buf
    assert pool.get(10) is not buf


def test_use_after_release_raises():
    pool = BufferPool()
    _, out = build(pool)
    out.release()
    assert out.released
    with pytest.raises(BufferReleasedError):
        memoryview(out)
    with pytest.raises(BufferReleasedError):
        bytes(out)
    with pytest.raises(BufferReleasedError):
        out.tobytes()
    with pytest.raises(BufferReleasedError):
        len(out)
    out.release()  # idempotent


def test_release_refused_while_a_view_is_alive():
    pool = BufferPool()
    _, out = build(pool)
    view = memoryview(out)
    with pytest.raises(BufferError):
        out.release()
    assert not out.released
    view.release()
    out.release()
    # the memory went back and serves the next batch
    _, again = build(pool)
    assert pool.allocations == 1
    again.release()


def test_context_manager_releases():
    pool = BufferPool()
    _, out = build(pool)
    with out as pb:
        assert len(list(read_batches(bytes(pb)))) == 1
    assert out.released


def test_views_are_read_only():
    pool = BufferPool()
    _, out = build(pool)
    view = memoryview(out)
    assert view.readonly
    with pytest.raises(TypeError):
        view[0] = 1
    view.release()
    out.release()


def test_reader_accepts_a_pool():
    pool = BufferPool()
    _, data = build(None, codec="gzip")
    for _ in range(3):
        assert [r.offset for b in read_batches(data, pool=pool) for r in b] == [0, 1, 2]


def test_threads_share_a_pool():
    pool = BufferPool()
    errors = []

    def work():
        try:
            for _ in range(200):
                _, out = build(pool, n=2)
                assert len(list(read_batches(out))[0].records()) == 2
                out.release()
        except Exception as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert pool.allocations <= 4


def test_a_lent_bytearray_cannot_be_resized_under_its_views():
    store = bytearray(b"A" * 64)
    pb = PooledBuffer(store, 64, BufferPool())
    view = memoryview(pb)
    with pytest.raises(BufferError):
        store.clear()
    with pytest.raises(BufferError):
        store.extend(b"B")
    assert bytes(view[:4]) == b"AAAA"
    view.release()
    pb.release()
    store.clear()  # given back: the pool's to resize


def test_lent_length_must_fit_the_bytearray():
    pool = BufferPool()
    with pytest.raises(ValueError, match="outside"):
        pool.wrap(bytearray(16), 100000)
    with pytest.raises(ValueError, match="outside"):
        pool.wrap(bytearray(16), -1)
    assert len(pool.wrap(bytearray(16), 16)) == 16


def test_a_pool_that_returns_too_little_is_refused():
    class ShortPool:
        def get(self, n):
            return bytearray(8)

        def put(self, b):
            pass

        _give_back = put

    with pytest.raises(ValueError, match=r"returned a bytearray of 8 bytes"):
        RecordBatchBuilder(pool=ShortPool())


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_read_path_decompresses_into_pool_buffers(codec):
    import kcodec
    from kcodec.records import BufferPool, PooledBuffer

    batches = []
    for j in range(20):
        b = RecordBatchBuilder(magic=2, compression=codec, base_offset=j * 50)
        for i in range(50):
            b.append(b"k%d" % i, b"value %d " % i * 20, 1_700_000_000_000 + i)
        batches.append(b.build())
    data = b"".join(batches)
    pool = BufferPool()
    for batch in kcodec.read_batches(data, pool=pool):
        region = batch._pooled_records()
        assert type(region) is PooledBuffer and bytes(region) == batch.records_data()
        region.release()
    assert pool.allocations <= 2  # one buffer serves every batch (two size classes at most)
    assert pool.cached_bytes() > 0
    table = kcodec.to_arrow(data, use_threads=False)
    assert table.num_rows == 1000 and table.column("value")[999].as_py() == b"value 49 " * 20
    damaged = bytearray(batches[3])
    damaged[-5] ^= 0xFF  # inside the compressed records: the codec or the record scan fails
    (batch,) = kcodec.read_batches(bytes(damaged), validate=False, pool=BufferPool())
    try:
        expected = batch.records_data()
    except kcodec.KcodecError as exc:
        with pytest.raises(type(exc)) as pooled:
            batch._pooled_records()
        assert str(pooled.value) == str(exc)
    else:
        assert bytes(batch._pooled_records()) == expected
    with pytest.raises(kcodec.KcodecError):
        kcodec.to_arrow(bytes(damaged), validate=False, use_threads=False)
