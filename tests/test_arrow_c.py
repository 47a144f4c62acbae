"""decode_columns and the Arrow PyCapsule protocol: pyarrow, Polars and DuckDB take the columns
without a copy, decoding runs without pyarrow, from_arrow takes any exporter, and several
buffers decode as one input."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import duckdb
import polars as pl
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kcodec
from builders import batch, legacy_batch
from kcodec import RecordBatchBuilder
from kcodec.arrow import column_cache

# the kcodec under test (installed, or the source tree with its built extensions), not the folder above tests/
KCODEC_ROOT = Path(kcodec.__file__).resolve().parents[1]
TS = 1_700_000_000_000


def _batch(n=5, compression="none", base_offset=0, magic=2, headers=True) -> bytes:
    records = [(None if i % 2 == 0 else b"k%d" % (base_offset + i), b"v%d" % (base_offset + i), TS + i,
                [("h", b"%d" % i)] if headers and i % 3 else []) for i in range(n)]
    if magic < 2:
        return legacy_batch(base_offset, records, magic=magic, codec=compression)
    return batch(base_offset, records, codec=compression)


def test_pyarrow_reads_the_capsules_as_to_arrow_builds_them():
    blob = _batch(7, "zstd") + _batch(3, "none", base_offset=7)
    cols = kcodec.decode_columns(blob, topic="events", partition=2, batch_fields=("base_offset", "is_transactional"))
    expected = kcodec.to_arrow(blob, topic="events", partition=2, batch_fields=("base_offset", "is_transactional"))
    assert len(cols) == cols.num_rows == 10 and cols.num_chunks == 1
    assert cols.column_names == expected.column_names
    assert pa.Schema._import_from_c_capsule(cols.__arrow_c_schema__()) == expected.schema
    assert pa.table(cols).equals(expected)
    assert pa.record_batch(cols).equals(expected.to_batches()[0])
    assert expected.column("base_offset").to_pylist() == [0] * 7 + [7] * 3
    assert expected.column("offset").to_pylist() == list(range(10))
    assert expected.column("topic").to_pylist() == ["events"] * 10
    assert expected.column("partition").to_pylist() == [2] * 10


def test_columns_without_topic_partition_or_rows():
    cols = kcodec.decode_columns(_batch(3), headers=False)
    table = pa.table(cols)
    assert table.column_names == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
    assert table.column("topic").null_count == 3 and table.column("partition").null_count == 3
    table.validate(full=True)
    empty = pa.table(kcodec.decode_columns(b"", topic="t", partition=0))
    assert empty.num_rows == 0 and empty.schema == kcodec.kafka_schema()
    empty.validate(full=True)


def test_malformed_header_keys_become_what_java_decodes():
    b = RecordBatchBuilder()
    b.append(b"k", b"v", TS, [(b"ok", b"1"), (b"bad\xff", b"2"), ("caf\u00e9", b"3")])
    table = pa.table(kcodec.decode_columns(bytes(b.build())))
    table.validate(full=True)
    assert [h["key"] for h in table.column("headers")[0].as_py()] == ["ok", "bad\ufffd", "caf\u00e9"]


def test_the_buffers_outlive_the_columns_object_and_are_freed_after():
    values = [os.urandom(3000) for _ in range(1500)]  # over the column cache's 1 MiB smallest block
    blob = b"".join(kcodec.from_arrow(pa.table({"value": values}), max_batch_bytes=1 << 20))
    limit, _, min_block = column_cache()
    column_cache(limit=0)  # emptied, then on again: held bytes now come only from this test
    column_cache(limit=limit, min_block=min_block)
    try:
        cols = kcodec.decode_columns(blob, use_threads=False)
        _, array = cols.__arrow_c_array__()
        stream = cols.__arrow_c_stream__()
        del cols
        gc.collect()
        assert column_cache()[1] == 0  # the capsules still hold the buffers
        batch = pa.RecordBatch._import_from_c_capsule(kcodec.kafka_schema().__arrow_c_schema__(), array)
        del array
        assert batch.column("value").to_pylist() == values
        table = pa.RecordBatchReader._import_from_c_capsule(stream).read_all()
        del stream
        assert table.column("value").to_pylist() == values
        assert column_cache()[1] == 0
        del batch, table
        gc.collect()
        assert column_cache()[1] >= 3000 * 1500  # the value column came back to the cache
    finally:
        column_cache(limit=limit, min_block=min_block)


def test_a_capsule_dropped_unread_frees_nothing_twice():
    cols = kcodec.decode_columns(_batch(4))
    for _ in range(3):
        cols.__arrow_c_array__()
        cols.__arrow_c_stream__()
    assert pa.table(cols).num_rows == 4


def test_chunks_decoded_on_threads_are_a_stream(monkeypatch):
    from kcodec.arrow import threads

    monkeypatch.setattr(threads, "MIN_THREAD_PART", 2048)
    monkeypatch.setattr(threads, "thread_count", lambda: 4)
    blob = b"".join(_batch(40, base_offset=40 * i) for i in range(40))
    cols = kcodec.decode_columns(blob, topic="t")
    assert cols.num_chunks == 4
    assert isinstance(cols, kcodec.RecordColumns) and not hasattr(cols, "__arrow_c_array__")
    reader = pa.RecordBatchReader._import_from_c_capsule(cols.__arrow_c_stream__())
    assert sum(b.num_rows for b in reader) == 1600
    assert pa.table(cols).equals(kcodec.to_arrow(blob, topic="t", use_threads=False))
    assert pl.DataFrame(cols)["offset"].to_list() == list(range(1600))


def test_polars_and_duckdb_read_the_columns():
    blob = _batch(6, "lz4") + _batch(2, "gzip", base_offset=6)
    cols = kcodec.decode_columns(blob, topic="t", partition=1)
    df = pl.DataFrame(cols)
    assert df["value"].to_list() == [b"v%d" % i for i in range(8)]
    assert df["key"].to_list() == [None if i % 2 == 0 else b"k%d" % i for i in range(8)]
    assert df["offset"].to_list() == list(range(8))
    rows = duckdb.sql('select "offset", key, value, topic, "partition", len(headers) from cols order by 1').fetchall()
    assert rows[1] == (1, b"k1", b"v1", "t", 1, 1) and rows[0][5] is None and len(rows) == 8


NO_PYARROW = """
import sys
sys.modules["pyarrow"] = None  # any import of pyarrow now fails
import kcodec, polars as pl, duckdb
from kcodec import RecordBatchBuilder, batch_builder
b = RecordBatchBuilder(compression="zstd")
for i in range(5):
    b.append(b"k%d" % i if i % 2 else None, b"v%d" % i, 1700000000000 + i, [("h", b"x")] if i % 3 else [])
legacy = batch_builder(magic=1, compression="gzip", base_offset=5)
legacy.append(b"old", b"v5", 1700000000005)
buffers = [bytes(b.build()), bytes(legacy.build())]
cols = kcodec.decode_columns(buffers, topic="t", partition=3, batch_fields=("magic",))
df = pl.DataFrame(cols)
assert df["value"].to_list() == [b"v%d" % i for i in range(6)], df
assert df["key"].to_list() == [None, b"k1", None, b"k3", None, b"old"], df
assert df["magic"].to_list() == [2] * 5 + [1], df
assert df["topic"].to_list() == ["t"] * 6 and df["partition"].to_list() == [3] * 6
assert df["headers"].to_list()[:2] == [None, [{"key": "h", "value": b"x"}]], df["headers"]
rows = duckdb.sql('select "offset", value, epoch_ms("timestamp") from cols order by 1').fetchall()
assert rows == [(i, b"v%d" % i, 1700000000000 + i) for i in range(6)], rows
assert all(not name.startswith("pyarrow") for name in sys.modules if sys.modules[name] is not None)
print("ok")
"""


def test_decoding_and_handing_over_need_no_pyarrow(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(KCODEC_ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run([sys.executable, "-c", textwrap.dedent(NO_PYARROW)], capture_output=True, text=True,
                          cwd=tmp_path, env=env, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stdout + proc.stderr


def _round_trip(source) -> list:
    return [(r.key, r.value) for batch in kcodec.from_arrow(source) for b in kcodec.read_batches(batch) for r in b]


def test_from_arrow_takes_polars_duckdb_and_decoded_columns():
    expected = [(None, b"a"), (b"k", b"bb"), (None, b"")]
    # timestamps given: without them each call would stamp its own clock reading
    columns = {"key": [None, b"k", None], "value": [b"a", b"bb", b""], "timestamp": [TS, TS + 1, TS + 2]}
    pyarrow_table = pa.table(columns)
    frame = pl.DataFrame(columns)
    relation = duckdb.sql("select * from (values (1, null::blob, 'a'::blob), (2, 'k'::blob, 'bb'::blob), "
                          "(3, null::blob, ''::blob)) t(n, key, value) order by n")
    decoded = kcodec.decode_columns(kcodec.from_arrow(pyarrow_table))
    for source in (pyarrow_table, frame, relation, decoded):
        assert _round_trip(source) == expected, type(source)
    assert kcodec.from_arrow(frame) == kcodec.from_arrow(pyarrow_table)


def test_from_arrow_takes_polars_headers_and_timestamps():
    frame = pl.DataFrame({"value": [b"x", b"y"], "headers": [[{"key": "h", "value": b"1"}], []],
                          "timestamp": [TS, TS + 5]})
    (batch,) = kcodec.from_arrow(frame)
    records = [r for b in kcodec.read_batches(batch) for r in b]
    assert [(r.value, r.timestamp, [tuple(h) for h in r.headers]) for r in records] == \
        [(b"x", TS, [("h", b"1")]), (b"y", TS + 5, [])]


def test_from_arrow_refuses_what_is_not_arrow():
    with pytest.raises(TypeError, match="__arrow_c_stream__"):
        kcodec.from_arrow({"value": [b"x"]})


# Several buffers in one call


def test_many_buffers_of_mixed_codecs_and_magics_decode_as_their_join():
    buffers = [_batch(4, "none"), _batch(3, "zstd", base_offset=4), _batch(2, "gzip", base_offset=7, magic=1),
               _batch(2, "snappy", base_offset=9, magic=0), b"", _batch(5, "lz4", base_offset=11),
               bytearray(_batch(2, "none", base_offset=16)), memoryview(_batch(1, "none", base_offset=18))]
    joined = b"".join(bytes(b) for b in buffers)
    for fields in ((), ("magic", "compression", "batch_position")):
        many = kcodec.to_arrow(buffers, topic="t", batch_fields=fields)
        if not fields:
            assert many.equals(kcodec.to_arrow(joined, topic="t"))
        assert many.column("offset").to_pylist() == list(range(19))
    assert many.column("magic").to_pylist() == [2] * 7 + [1] * 2 + [0] * 2 + [2] * 8
    assert many.column("batch_position").to_pylist()[:4] == [0] * 4  # positions within each buffer
    assert pa.table(kcodec.decode_columns(tuple(buffers))).equals(kcodec.to_arrow(joined))


def test_many_uncompressed_buffers_stay_in_one_chunk():
    buffers = [_batch(3, base_offset=3 * i) for i in range(50)]
    table = kcodec.to_arrow(buffers)
    assert table.column("value").num_chunks == 1
    assert table.column("offset").to_pylist() == list(range(150))
    assert table.equals(kcodec.to_arrow(b"".join(buffers), use_threads=False))


def test_an_empty_sequence_gives_no_records():
    for empty in ([], ()):
        table = kcodec.to_arrow(empty, topic="t")
        assert table.num_rows == 0 and table.schema == kcodec.kafka_schema()
        assert len(kcodec.decode_columns(empty)) == 0


def test_a_bad_buffer_is_named_with_its_byte():
    good = _batch(3)
    bad = bytearray(_batch(2, "none", base_offset=3) + _batch(2, "zstd", base_offset=5))
    second = len(_batch(2, "none", base_offset=3))
    bad[second + 70] ^= 0xFF  # inside the second batch's payload: its CRC fails
    with pytest.raises(kcodec.CorruptRecordError) as info:
        kcodec.to_arrow([good, good, bytes(bad)])
    assert info.value.source == "buffer 2 of 3" and info.value.position == second
    assert "in buffer 2 of 3, at byte %d" % second in str(info.value)
    # an uncompressed buffer that fails half-way leaves nothing of itself behind for the general path
    bad = bytearray(_batch(2, base_offset=3) + _batch(2, base_offset=5))
    bad[second + 67] ^= 0x01  # the first value's first byte: "v5" becomes "w5", the records still parse
    with pytest.raises(kcodec.CorruptRecordError) as info:
        kcodec.decode_columns([good, bytes(bad)], validate=True)
    assert info.value.source == "buffer 1 of 2" and info.value.position == second
    unchecked = pa.table(kcodec.decode_columns([good, bytes(bad)], validate=False))
    assert unchecked.column("offset").to_pylist() == list(range(7))
    with pytest.raises(TypeError, match="buffer 1 of 2"):
        kcodec.to_arrow([good, 42])


def test_a_pass_that_fails_half_way_is_taken_back_whole():
    from kcodec._native.columnar import ColumnAccumulator, record_columns

    def keyed(n, base_offset):
        b = RecordBatchBuilder(base_offset=base_offset)
        for i in range(n):
            b.append(b"k%d" % i, b"v", TS, [("h", b"1")])
        return bytes(b.build())

    acc = ColumnAccumulator(True)
    assert acc.add_uncompressed(_batch(3))  # keys null at rows 0 and 2
    bad = bytearray(_batch(4, base_offset=3) + _batch(2, base_offset=7))  # null keys and headers at rows 3, 5
    bad[-1] ^= 0xFF  # the second batch's CRC fails after the first batch was gathered
    assert not acc.add_uncompressed(bytes(bad))
    assert acc.n == 3
    assert acc.add_uncompressed(keyed(4, 3))
    table = pa.table(record_columns([acc.result()], None, None, True, ()))
    table.validate(full=True)
    assert table.column("key").to_pylist() == [None, b"k1", None, b"k0", b"k1", b"k2", b"k3"]
    assert table.column("offset").to_pylist() == list(range(7))
    assert table.column("headers").null_count == 1  # row 0 only: row 3's missing headers were taken back


#: Bytes at the edges of UTF-8's ranges: ASCII, continuation bytes, and leads with narrowed second bytes.
TRICKY = [0x00, 0x41, 0x7F, 0x80, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xED, 0xEF, 0xF0, 0xF4, 0xF5, 0xFF,
          0x9F, 0xA0, 0x8F, 0x90]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=6).map(lambda b: bytes(TRICKY[x % len(TRICKY)] for x in b)), min_size=1,
                max_size=8))
def test_header_keys_are_checked_as_utf8_value_by_value(keys):
    from kcodec._java_utf8 import decode as java_utf8_decode

    b = RecordBatchBuilder()
    b.append(None, b"v", TS, [(k, b"") for k in keys])
    table = pa.table(kcodec.decode_columns(bytes(b.build())))
    table.validate(full=True)
    assert [h["key"] for h in table.column("headers")[0].as_py()] == [java_utf8_decode(k) for k in keys]
