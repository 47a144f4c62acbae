"""to_arrow(views=True): binary_view key and value columns that reference the input or decompressed records."""
from __future__ import annotations

import gc
import struct
import weakref

import duckdb
import polars as pl
import pyarrow as pa
import pytest

import kcodec
from kcodec import read_batches
from oracle_util import cases, load_case

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000

# Lengths around Arrow's inline limit (12 bytes), empties and nulls, in keys, values and headers.
KEYS = [None, b"", b"k", b"k" * 12, b"K" * 13, b"key-%03d" % 7 * 4, None, b"x" * 200]
VALUES = [b"", None, b"v" * 12, b"w" * 13, b"a long value that lives in the input" * 3, b"", b"z" * 5000, None]
HEADERS = [None, [{"key": "h", "value": b"x" * 13}], [{"key": "k" * 13, "value": None}], None,
           [{"key": "a", "value": b""}, {"key": "b", "value": b"y" * 12}], None, None, [{"key": "", "value": b"1"}]]


def _table(n: int = 400):
    rows = range(n)
    return pa.table({
        "key": pa.array([KEYS[i % len(KEYS)] for i in rows], pa.binary()),
        "value": pa.array([VALUES[i % len(VALUES)] for i in rows], pa.binary()),
        "timestamp": pa.array([T0 + i for i in rows], pa.int64()),
        "headers": pa.array([HEADERS[i % len(HEADERS)] for i in rows], kcodec.kafka_schema().field("headers").type)})


def _log(codec: str, n: int = 400, limit: int = 2048) -> bytes:
    return b"".join(kcodec.from_arrow(_table(n), compression=codec, max_batch_bytes=limit))


def _same(copied: pa.Table, viewed: pa.Table) -> None:
    viewed.validate(full=True)
    assert viewed.schema.field("key").type == pa.binary_view()
    assert viewed.schema.field("value").type == pa.binary_view()
    others = [f for f in copied.schema if f.name not in ("key", "value")]
    assert [f for f in viewed.schema if f.name not in ("key", "value")] == others
    assert viewed.cast(copied.schema).equals(copied)
    assert viewed.column("value").null_count == copied.column("value").null_count


def _variadic(table: pa.Table, name: str = "value"):
    """The data buffers behind a view column's chunks (its buffers after validity and views)."""
    return [b for chunk in table.column(name).chunks for b in chunk.buffers()[2:]]


@pytest.mark.parametrize("codec", CODECS)
def test_views_equal_copies_for_every_codec(codec):
    data = _log(codec)
    for threads in (False, True):
        _same(kcodec.to_arrow(data, use_threads=threads), kcodec.to_arrow(data, views=True, use_threads=threads))


@pytest.mark.parametrize("codec", CODECS)
def test_long_values_are_referenced_not_copied(codec):
    data = _log(codec)
    t = kcodec.to_arrow(data, views=True)
    value = t.column("value").chunk(0)
    views = value.buffers()[1].to_pybytes()
    long_rows = [i for i, v in enumerate(value.to_pylist()) if v is not None and len(v) > 12]
    assert long_rows
    spill_size = value.buffers()[2].size  # variadic buffer 0: copies of legacy values only
    assert spill_size <= 1
    sources = value.buffers()[2:]
    for i in long_rows:
        length, prefix, index, offset = struct.unpack_from("<i4sii", views, 16 * i)
        assert index >= 1
        source = sources[index]
        assert source.to_pybytes()[offset:offset + length] == value[i].as_py()
        if codec == "none":  # the input itself
            assert data.find(value[i].as_py()) >= 0
            assert source.address <= pa.py_buffer(data).address + len(data) and \
                source.address >= pa.py_buffer(data).address
    short = [i for i, v in enumerate(value.to_pylist()) if v is not None and len(v) <= 12]
    for i in short:  # inline: length, the bytes, zero padding
        length, = struct.unpack_from("<i", views, 16 * i)
        assert views[16 * i + 4:16 * i + 16] == value[i].as_py().ljust(12, b"\0")


def test_compressed_views_reference_one_buffer_per_batch():
    data = _log("zstd")
    batches = [b for b in read_batches(data) if len(b)]
    t = kcodec.to_arrow(data, views=True, use_threads=False)
    assert len(_variadic(t)) == 1 + len(batches)


def test_exactly_12_and_13_bytes():
    t = pa.table({"key": pa.array([b"k" * 12, b"k" * 13], pa.binary()),
                  "value": pa.array([b"v" * 13, b"v" * 12], pa.binary())})
    for codec in CODECS:
        got = kcodec.to_arrow(b"".join(kcodec.from_arrow(t, compression=codec)), views=True)
        assert got.column("key").to_pylist() == [b"k" * 12, b"k" * 13]
        assert got.column("value").to_pylist() == [b"v" * 13, b"v" * 12]


@pytest.mark.parametrize("case", [c for c in cases() if not c.startswith("manifest")])
def test_golden_vectors_views_equal_copies(case):
    data, _, _ = load_case(case)
    for control in (False, True):
        _same(kcodec.to_arrow(data, include_control=control),
              kcodec.to_arrow(data, include_control=control, views=True))


def test_legacy_values_are_copied_into_the_table_with_the_view_type():
    data, _, _ = load_case("v1_gzip_json100")
    t = kcodec.to_arrow(data, views=True)
    _same(kcodec.to_arrow(data), t)
    spill = t.column("value").chunk(0).buffers()[2]
    assert spill.size >= sum(len(v) for v in t.column("value").to_pylist() if v and len(v) > 12)
    assert len(_variadic(t)) == 1


def test_mixed_legacy_and_v2_with_control_batches():
    data, _, _ = load_case("segment_mixed")
    txn, _, _ = load_case("segment_v2_txn")
    for buf in (data, txn, data + txn):
        for control in (False, True):
            for fields in ((), ("base_offset", "magic")):
                _same(kcodec.to_arrow(buf, include_control=control, batch_fields=fields),
                      kcodec.to_arrow(buf, include_control=control, batch_fields=fields, views=True))


def test_without_headers_and_from_batches():
    data = _log("lz4")
    _same(kcodec.to_arrow(data, headers=False), kcodec.to_arrow(data, headers=False, views=True))
    _same(kcodec.to_arrow(read_batches(data)), kcodec.to_arrow(read_batches(data), views=True))


def test_views_over_a_bytearray_and_a_numpy_array():
    import numpy as np

    data = _log("none")
    for buf in (bytearray(data), np.frombuffer(data, np.uint8), memoryview(data)[0:len(data)]):
        _same(kcodec.to_arrow(data), kcodec.to_arrow(buf, views=True))


class _Tracked(bytearray):
    """A buffer that can be watched with a weak reference."""


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_the_referenced_buffer_lives_while_any_view_does(codec):
    data = _Tracked(_log(codec))
    expected = kcodec.to_arrow(bytes(data)).column("value").to_pylist()
    table = kcodec.to_arrow(data, views=True)
    alive = weakref.ref(data)
    del data
    gc.collect()
    if codec == "none":
        assert alive() is not None  # the table holds the input
    value = table.column("value")
    del table
    gc.collect()
    if codec == "none":
        assert alive() is not None  # one column still references it
    assert value.to_pylist() == expected
    del value
    gc.collect()
    assert alive() is None


def test_decompressed_records_are_freed_with_the_table():
    import tracemalloc

    data = _log("zstd", n=4000, limit=1 << 20)
    kcodec.to_arrow(data, views=True)  # warm up caches and pools
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        table = kcodec.to_arrow(data, views=True, use_threads=False)
        held = tracemalloc.get_traced_memory()[0] - base
        regions = sum(b.size for b in _variadic(table)[1:])
        assert held >= regions > len(data)  # the decompressed records are what the table holds
        del table
        gc.collect()
        assert tracemalloc.get_traced_memory()[0] - base < regions // 10
    finally:
        tracemalloc.stop()


def test_bytearray_cannot_be_resized_under_the_views():
    data = bytearray(_log("none"))
    table = kcodec.to_arrow(data, views=True)
    with pytest.raises(BufferError):
        data.extend(b"x")
    del table
    gc.collect()
    data.extend(b"x")


def test_polars_receives_its_native_layout():
    data = _log("snappy")
    table = kcodec.to_arrow(data, views=True)
    df = pl.from_arrow(table)
    assert df.schema["value"] == pl.Binary and df.schema["key"] == pl.Binary
    assert df["value"].to_list() == table.column("value").to_pylist()
    assert df["key"].to_list() == table.column("key").to_pylist()
    copied = pl.from_arrow(kcodec.to_arrow(data))
    assert df.select(pl.col("value").bin.encode("hex")).equals(copied.select(pl.col("value").bin.encode("hex")))


def test_duckdb_reads_views():
    data = _log("none")
    records = kcodec.to_arrow(data, views=True)
    got = duckdb.sql("select sum(octet_length(value)), count(key), count(*) from records").fetchall()[0]
    values, keys = records.column("value").to_pylist(), records.column("key").to_pylist()
    assert got == (sum(len(v) for v in values if v is not None), sum(k is not None for k in keys), records.num_rows)
    long = duckdb.sql("select value from records where octet_length(value) = 5000").fetchall()
    assert long and all(v == b"z" * 5000 for (v,) in long)


def test_a_large_input_is_referenced_through_several_buffers():
    # Views hold 32-bit offsets: past 2 GiB a new variadic buffer starts (here, past 16 KiB).
    from kcodec._native.columnar import columns_uncompressed_v2, record_columns
    from kcodec.arrow.decode import table_of

    data = _log("none", n=800, limit=1024)
    chunk = columns_uncompressed_v2(data, views=True, view_buffer_limit=16384)
    viewed = table_of(record_columns([chunk], None, None, True, (), True))
    buffers = _variadic(viewed)[1:]
    assert len(buffers) > 3 and all(b.size <= 16384 for b in buffers)
    assert sum(b.size for b in buffers) == len(data)
    _same(kcodec.to_arrow(data, use_threads=False), viewed)


def test_filter_rows_selects_views_without_copying_values():
    from kcodec.arrow import filter_rows

    data = _log("none")
    copied, viewed = kcodec.to_arrow(data), kcodec.to_arrow(data, views=True)
    mask = pa.compute.equal(pa.compute.bit_wise_and(copied["offset"], 3), 1)
    got = filter_rows(viewed, mask)
    got.validate(full=True)
    assert got.cast(copied.schema).equals(copied.filter(mask))
    assert _variadic(got) == _variadic(viewed)
    batch = viewed.to_batches()[0].slice(5, 100)  # an offset into the views
    small = filter_rows(batch, mask.slice(5, 100).combine_chunks())
    assert small.column(1).to_pylist() == [v for v, k in zip(batch.column(1).to_pylist(),
                                                             mask.slice(5, 100).to_pylist()) if k]


def test_filter_rows_takes_the_masks_table_filter_takes():
    from kcodec.arrow import filter_rows

    data = _log("none", n=60)
    copied, viewed = kcodec.to_arrow(data), kcodec.to_arrow(data, views=True)
    # Without view columns it is table.filter itself, which also takes an expression.
    expr = pa.compute.equal(pa.compute.bit_wise_and(pa.compute.field("offset"), 3), 1)
    got = filter_rows(copied, expr)
    assert got.equals(copied.filter(expr)) and got["offset"].to_pylist() == list(range(1, 60, 4))
    # A null in the mask drops its row, as in table.filter.
    mask = pa.array([None if i % 5 == 0 else i % 3 == 0 for i in range(60)])
    kept = [i for i in range(60) if i % 5 and i % 3 == 0]
    for table in (viewed, viewed.to_batches()[0]):
        got = filter_rows(table, mask)
        got.validate(full=True)
        assert got["offset"].to_pylist() == kept
        assert got["value"].to_pylist() == [copied["value"][i].as_py() for i in kept]
        assert got["key"].to_pylist() == [copied["key"][i].as_py() for i in kept]
    # No nulls, distinct values inline and not, in a slice: the views start at the slice's offset.
    values = [b"%02d" % i * (i % 9) for i in range(60)]
    table = pa.table({"key": [b"k%d" % i for i in range(60)], "value": values})
    batch = kcodec.to_arrow(b"".join(kcodec.from_arrow(table)), views=True).to_batches()[0].slice(7, 40)
    got = filter_rows(batch, pa.array([i % 3 != 1 for i in range(40)]))
    got.validate(full=True)
    assert got["value"].null_count == 0
    assert got["value"].to_pylist() == [values[7 + i] for i in range(40) if i % 3 != 1]
    assert got["key"].to_pylist() == [b"k%d" % (7 + i) for i in range(40) if i % 3 != 1]


def test_decode_columns_hands_views_over_the_c_data_interface():
    data = _log("lz4")
    cols = kcodec.decode_columns(data, views=True, use_threads=False)
    assert cols.views
    schema = pa.schema(cols)
    assert schema.field("key").type == pa.binary_view() and schema.field("value").type == pa.binary_view()
    _same(kcodec.to_arrow(data), pa.table(cols))
    frame = pl.DataFrame(cols)
    assert frame["value"].to_list() == kcodec.to_arrow(data)["value"].to_pylist()


def test_a_list_of_buffers_is_viewed_where_each_lies():
    parts = [_log("none", n=100), _log("zstd", n=100), _Tracked(_log("none", n=50))]
    copied = kcodec.to_arrow(parts)
    viewed = kcodec.to_arrow(parts, views=True)
    _same(copied, viewed)
    alive = weakref.ref(parts[2])
    del parts
    gc.collect()
    assert alive() is not None  # the table references the third buffer in place
    del viewed
    gc.collect()
    assert alive() is None


def test_the_input_outlives_the_columns_object_while_an_array_is_held():
    data = _Tracked(_log("none"))
    expected = kcodec.to_arrow(bytes(data))["value"].to_pylist()
    cols = kcodec.decode_columns(data, views=True, use_threads=False)
    alive = weakref.ref(data)
    batch = pa.record_batch(cols)
    del data, cols
    gc.collect()
    assert alive() is not None
    assert batch.column(1).to_pylist() == expected
    del batch
    gc.collect()
    assert alive() is None


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_views_on_threads_equal_one_thread(monkeypatch, codec):
    from kcodec.arrow import threads

    monkeypatch.setattr(threads, "MIN_THREAD_PART", 1024)
    monkeypatch.setattr(threads, "MIN_THREAD_MEAN_BATCH", 64)
    before = pa.cpu_count()
    pa.set_cpu_count(4)
    try:
        data = _log(codec, n=3000, limit=4096)
        threaded = kcodec.to_arrow(data, views=True)
    finally:
        pa.set_cpu_count(before)
    assert threaded.column("value").num_chunks > 1
    _same(kcodec.to_arrow(data, use_threads=False), threaded)
