"""to_arrow's native pass over compressed v2 batches against the general (batch object) path."""
from __future__ import annotations

import gc
import random
import struct

import pyarrow as pa
import pytest

import kcodec
from kcodec import RecordBatchBuilder, TimestampType, read_batches
from kcodec._native.columnar import columns_v2, compression_ids
from kcodec._native.native_codec import native_of
from kcodec._native.records import assemble_batch
from kcodec.arrow import cascade, threads
from kcodec.arrow.options import DecodeOptions
from kcodec.records import ControlRecordType

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
T0 = 1_700_000_000_000


def _batch(codec, base, n, seed, lat=False, control=False):
    rnd = random.Random(seed)
    if n == 0:  # an empty batch (as compaction leaves them): its payload is never read
        return assemble_batch(b"", base, -1, CODECS.index(codec), 0, T0, T0, -1, -1, -1, 0)
    if control:
        b = RecordBatchBuilder(compression=codec, base_offset=base, producer_id=9, producer_epoch=0,
                               is_transactional=True, is_control=True)
        b.append_end_txn_marker(ControlRecordType.COMMIT, 3, timestamp=T0)
        return bytes(b.build())
    b = RecordBatchBuilder(compression=codec, base_offset=base,
                           timestamp_type=TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME,
                           log_append_time=T0 + 5 if lat else None)
    for i in range(n):
        key = None if i % 5 == 0 else b"k%d" % rnd.randrange(1000)
        value = None if i % 11 == 3 else bytes(rnd.randrange(256) for _ in range(rnd.randrange(40))) * 3
        headers = [("h%d" % j, None if j == 1 else b"v" * j) for j in range(i % 3)]
        b.append(key, value, T0 + i, headers)
    return bytes(b.build())


def _mixed():
    """Batches of every codec, interleaved with control, LogAppendTime and empty batches."""
    parts, base = [], 0
    for round_ in range(6):
        for k, codec in enumerate(CODECS):
            n = 0 if (round_ + k) % 7 == 4 else 1 + (round_ * 13 + k * 7) % 60
            parts.append(_batch(codec, base, n, seed=round_ * 10 + k, lat=(round_ + k) % 3 == 0))
            base += max(n, 1)
        parts.append(_batch("none", base, 1, 0, control=True))
        base += 1
    return b"".join(parts)


def _general(monkeypatch):
    """Route to_arrow around the native compressed pass (the general path as before it)."""
    monkeypatch.setattr(cascade, "native_codecs", lambda *a, **k: None)


def test_the_native_pass_takes_mixed_codecs():
    data = _mixed()
    assert compression_ids(data) == 0b11111
    codecs = cascade.native_codecs(data, 1 << 20)
    for views in (False, True):
        options = DecodeOptions(max_decompressed_size=1 << 20, use_threads=False, views=views)
        assert cascade.Chunks(data, len(data), options).compressed(data, codecs) is not None
    assert compression_ids(data + b"\0" * 5) == 0b11111  # a trailing partial batch is ignored, as Kafka does


@pytest.mark.parametrize("include_control", [False, True])
@pytest.mark.parametrize("headers", [False, True])
@pytest.mark.parametrize("validate", [False, True])
@pytest.mark.parametrize("views", [False, True])
def test_native_pass_equals_general_path(monkeypatch, include_control, headers, validate, views):
    data = _mixed()
    options = dict(topic="t", partition=2, include_control=include_control, headers=headers, validate=validate,
                   use_threads=False, views=views)
    native = kcodec.to_arrow(data, **options)
    many = kcodec.to_arrow([data[:0], data, data], **options)
    objects = kcodec.to_arrow(read_batches(data), **options)
    _general(monkeypatch)
    general = kcodec.to_arrow(data, **options)
    assert native.num_rows > 300
    assert native.equals(general) and objects.equals(general)
    assert many.equals(kcodec.to_arrow([data[:0], data, data], **options))


def test_thread_parts_take_the_native_pass(monkeypatch):
    data = _mixed() * 40
    monkeypatch.setattr(threads, "MIN_THREAD_PART", 64 << 10)
    monkeypatch.setattr(threads, "thread_count", lambda: 2)
    calls = []
    real = cascade.columns_v2
    monkeypatch.setattr(cascade, "columns_v2", lambda *a: calls.append(a[-2:]) or real(*a))
    threaded = kcodec.to_arrow(data, use_threads=True)
    assert len(calls) == 2 and threaded.column("offset").num_chunks == 2
    assert threaded.equals(kcodec.to_arrow(read_batches(data)))
    views = kcodec.to_arrow(data, use_threads=True, views=True)
    assert len(calls) == 4 and views.column("value").num_chunks == 2
    assert views.equals(kcodec.to_arrow(read_batches(data), views=True))


def _error(call):
    """The error ``call`` raises (type, message, position, batch offset), or its rows when the damage
    still decodes (without CRC checks a flipped literal byte is just another value)."""
    try:
        table = call()
    except kcodec.KcodecError as e:
        return type(e), str(e), getattr(e, "position", None), getattr(e, "batch_offset", None)
    # timestamps as integers: damaged ones can lie outside Python's datetime
    return [c.cast(pa.int64()).to_pylist() if pa.types.is_timestamp(c.type) else c.to_pylist()
            for c in table.columns]


def _batch_starts(data):
    return [b.position for b in read_batches(data, validate=False)]


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("validate", [True, False])
def test_damage_deep_in_a_compressed_run_gives_the_same_error(monkeypatch, codec, validate):
    data = b"".join(_batch(codec, 100 * i, 50, seed=i) for i in range(40))
    starts = _batch_starts(data)
    damaged = bytearray(data)
    damaged[starts[31] + 61 + 12] ^= 0x5A  # inside the compressed records of batch 31
    damaged = bytes(damaged)
    native = _error(lambda: kcodec.to_arrow(damaged, validate=validate, use_threads=False))
    many = _error(lambda: kcodec.to_arrow([data, damaged], validate=validate))
    views = _error(lambda: kcodec.to_arrow(damaged, validate=validate, views=True))
    _general(monkeypatch)
    assert native == _error(lambda: kcodec.to_arrow(damaged, validate=validate, use_threads=False))
    assert many == _error(lambda: kcodec.to_arrow([data, damaged], validate=validate))
    assert views == _error(lambda: kcodec.to_arrow(damaged, validate=validate, views=True))
    if validate or codec != "snappy":  # snappy has no checksum of its own
        assert isinstance(native, tuple) and native[3] == 3100
    if validate:
        assert native[0] is kcodec.CorruptRecordError and native[2] == starts[31]


def test_bad_record_count_and_size_limit_give_the_same_error(monkeypatch):
    data = bytearray(b"".join(_batch("lz4", 100 * i, 50, seed=i) for i in range(20)))
    at = _batch_starts(bytes(data))[12]
    struct.pack_into(">i", data, at + 57, 51)  # one record more than the region holds
    cases = [lambda: kcodec.to_arrow(bytes(data), validate=False),
             lambda: kcodec.to_arrow(_mixed(), max_decompressed_size=256)]
    native = [_error(c) for c in cases]
    assert all(isinstance(e, tuple) for e in native)
    _general(monkeypatch)
    assert native == [_error(c) for c in cases]


def test_python_only_codec_takes_the_general_path():
    from kcodec.compression import get_codec

    data = _mixed()
    codecs = [None] * 8
    assert columns_v2(data, codecs) is None  # a codec the batches use is not given
    codecs[1:5] = [native_of(get_codec(c)) for c in (1, 2, 3, 4)]
    assert columns_v2(data, codecs) is not None
    assert compression_ids(b"\0" * 8 + struct.pack(">i", 60) + b"\0" * 4 + b"\x01" + b"\0" * 60) == -1  # magic 1


def test_views_keep_their_decompressed_regions_alive():
    data = bytearray(b"".join(_batch(c, 100 * i, 40, seed=i) for i, c in enumerate(CODECS * 4)))
    expected = kcodec.to_arrow(read_batches(bytes(data))).to_pylist()
    table = kcodec.to_arrow(data, views=True, use_threads=False)
    assert str(table.schema.field("value").type) == "binary_view"
    with pytest.raises(BufferError):  # the uncompressed batches' values are views of the input
        data.clear()
    del data
    gc.collect()
    kcodec.to_arrow(b"".join(_batch("lz4", 0, 200, seed=99) for _ in range(30)), views=True)  # reuses memory
    assert table.to_pylist() == expected


@pytest.mark.parametrize("views", [False, True])
@pytest.mark.parametrize("validate", [False, True])
def test_random_damage_gives_what_the_general_path_gives(monkeypatch, validate, views):
    """Flipped bytes anywhere (headers, compressed frames, records): the same rows or the same error."""
    data = _mixed()
    rnd = random.Random(7 + validate)
    damaged = []
    for _ in range(150):
        d = bytearray(data)
        for _ in range(rnd.choice((1, 1, 2, 3))):
            d[rnd.randrange(len(d))] ^= 1 << rnd.randrange(8)
        damaged.append(bytes(d))
    options = dict(validate=validate, use_threads=False, include_control=True, views=views)
    native = [_error(lambda d=d: kcodec.to_arrow(d, **options)) for d in damaged]
    _general(monkeypatch)
    general = [_error(lambda d=d: kcodec.to_arrow(d, **options)) for d in damaged]
    assert native == general
    assert sum(isinstance(o, tuple) for o in native) > 30  # most damage is caught (every bit of it with CRCs)


@pytest.mark.parametrize("views", [False, True])
def test_no_python_step_per_batch(views):
    """The Python calls of a conversion do not grow with its batches: the walk is one native call."""
    import sys

    def calls(n):
        data = b"".join(_batch(CODECS[1 + i % 4], 100 * i, 20, seed=i) for i in range(n))
        seen = []
        # A collection during the walk would run the callbacks other tests left in gc.callbacks
        # (hypothesis times its collections): steps of the collector, not of the conversion.
        gc.collect()
        gc.disable()
        sys.setprofile(lambda frame, event, arg: seen.append(event) if event in ("call", "c_call") else None)
        try:
            kcodec.to_arrow(data, use_threads=False, views=views)
        finally:
            sys.setprofile(None)
            gc.enable()
        return len(seen)

    calls(4)  # imports and first-use caches
    assert calls(8) == calls(200)


def test_native_codecs_of_each_codec_a_buffer_uses(monkeypatch):
    from kcodec.compression import get_codec

    gz, zs = _batch("gzip", 0, 20, seed=1), _batch("zstd", 20, 20, seed=2)
    mixed = gz + _batch("none", 40, 5, seed=3) + zs
    got = cascade.native_codecs(mixed, 1 << 20)
    assert got == (None, native_of(get_codec(1)), None, None, native_of(get_codec(4)), None, None, None)
    assert got[1] is not None and got[4] is not None
    assert cascade.native_codecs(gz, 2 ** 63 - 1)[1] is not None and cascade.native_codecs(gz, 1) is not None
    # Limits the native pass does not take, buffers it does not take whole: the general path's.
    assert cascade.native_codecs(gz, 0) is None and cascade.native_codecs(gz, 2 ** 63) is None
    assert cascade.native_codecs(_batch("none", 0, 5, seed=3), 1 << 20) is None  # nothing compressed
    legacy = kcodec.LegacyRecordBatchBuilder(magic=1, compression="gzip")
    legacy.append(b"k", b"v", T0)
    assert cascade.native_codecs(gz + bytes(legacy.build()), 1 << 20) is None
    reserved = bytearray(gz)
    reserved[22] |= 7  # codec id 7: none is registered
    assert compression_ids(bytes(reserved)) == 1 << 7 and cascade.native_codecs(bytes(reserved), 1 << 20) is None
    monkeypatch.setattr(cascade, "native_of", lambda codec: None)  # a codec without native functions
    assert cascade.native_codecs(gz, 1 << 20) is None


def test_the_cascade_takes_the_first_pass_that_takes_a_buffer(monkeypatch):
    plain = b"".join(_batch("none", 10 * i, 10, seed=i) for i in range(5))
    packed = b"".join(_batch(CODECS[1 + i % 4], 10 * i, 10, seed=i) for i in range(8))
    expected = {id(plain): kcodec.to_arrow(read_batches(plain)), id(packed): kcodec.to_arrow(read_batches(packed))}

    def no_general(*args, **kwargs):
        raise AssertionError("the general path")

    monkeypatch.setattr(cascade, "read_batches", no_general)
    for data in (plain, packed):
        for views in (False, True):
            table = kcodec.to_arrow(data, use_threads=False, views=views)
            assert table.cast(expected[id(data)].schema).equals(expected[id(data)])
        assert kcodec.to_arrow([data, data]).num_rows == 2 * expected[id(data)].num_rows
    # Batch fields are gathered by the general path only.
    with pytest.raises(AssertionError, match="the general path"):
        kcodec.to_arrow(plain, batch_fields=["batch_position"], use_threads=False)
