"""Message format v0/v1: Kafka's reading rules on hand-built bytes, the builder, malformed input."""
from __future__ import annotations

import struct
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import CompressionType, TimestampType, get_codec
from kcodec.errors import (
    CorruptCompressedDataError,
    CorruptRecordError,
    InvalidRecordError,
    KcodecError,
    LimitExceededError,
    RecordBuilderError,
    UnsupportedCodecError,
)
from kcodec.records import read_batches
from kcodec.records.legacy_batch import LegacyRecordBatch
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
from kcodec.records.message_header import record_size

T0 = 1_700_000_000_000
LAT = 0x08
CODECS = ["none", "gzip", "snappy", "lz4"]


# -- hand-built messages ------------------------------------------------------------
def _sized(b):
    if b is None:
        return struct.pack(">i", -1)
    if isinstance(b, int):  # a raw length field
        return struct.pack(">i", b)
    return struct.pack(">i", len(b)) + b


def message(offset, key, value, *, magic=1, attrs=0, ts=T0, crc=None, tail=b"", size=None):
    """One log entry: offset, size, crc, magic, attributes, [timestamp], key, value."""
    body = bytes([magic & 0xFF, attrs & 0xFF])
    if magic != 0:
        body += struct.pack(">q", ts)
    body += _sized(key) + _sized(value) + tail
    stored = zlib.crc32(body) if crc is None else crc
    msg = struct.pack(">I", stored) + body
    return struct.pack(">qi", offset, len(msg) if size is None else size) + msg


def wrapper(offset, inner: bytes, *, codec=1, magic=1, ts=T0, attrs=0, value=b"compress"):
    payload = get_codec(codec).compress(inner, magic=magic) if value == b"compress" else value
    return message(offset, None, payload, magic=magic, attrs=codec | attrs, ts=ts)


def batches(data):
    return list(read_batches(data, validate=False))


def one(data) -> LegacyRecordBatch:
    (b,) = batches(data)
    return b


def triples(batch):
    return [(r.offset, r.timestamp, r.key, r.value) for r in batch]


# -- legacy wrappers -------------------------------------------------------------------
def test_43_uncompressed_v0_and_v1():
    data = message(5, b"k0", b"v0", magic=0) + message(6, b"k1", b"v1", ts=-5)
    b0, b1 = batches(data)
    for b in (b0, b1):
        b.ensure_valid()
    assert (b0.magic, b0.timestamp_type, b0.max_timestamp) == (0, TimestampType.NO_TIMESTAMP_TYPE, -1)
    assert triples(b0) == [(5, -1, b"k0", b"v0")]
    r = b0.records()[0]
    assert r.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE and tuple(r.headers) == ()
    assert (b1.magic, b1.timestamp_type, b1.max_timestamp) == (1, TimestampType.CREATE_TIME, -5)
    assert triples(b1) == [(6, -5, b"k1", b"v1")]
    for b, off in ((b0, 5), (b1, 6)):
        assert (b.base_offset, b.last_offset, b.next_offset, b.record_count) == (off, off, off + 1, 1)
        assert (b.producer_id, b.producer_epoch, b.base_sequence, b.last_sequence) == (-1, -1, -1, -1)
        assert (b.is_transactional, b.is_control, b.partition_leader_epoch) == (False, False, -1)
        assert b.base_timestamp is None and b.delete_horizon_ms is None
        assert b.compression is CompressionType.NONE and b.compression_id == 0
        assert not (b.has_producer_id or b.has_delete_horizon) and b.compute_checksum() == b.crc
    assert bytes(b1.raw) == data[b1.position:]


def test_43_v0_ignores_the_timestamp_type_bit():
    b = one(message(0, b"k", b"v", magic=0, attrs=LAT))
    assert b.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE
    assert triples(b) == [(0, -1, b"k", b"v")]


def test_43_v1_log_append_time_message():
    b = one(message(3, b"k", b"v", attrs=LAT, ts=T0 + 9))
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert triples(b) == [(3, T0 + 9, b"k", b"v")]
    assert b.records()[0].timestamp_type == TimestampType.LOG_APPEND_TIME


@pytest.mark.parametrize("magic", [0, 1])
def test_44_crc_error(magic):
    data = message(0, b"k", b"v", magic=magic, crc=1)
    computed = zlib.crc32(data[16:])
    b = one(data)
    assert b.crc == 1 and b.compute_checksum() == computed and not b.is_valid()
    with pytest.raises(CorruptRecordError) as e:
        b.ensure_valid()
    assert e.value.message == f"Record is corrupt (stored crc = 1, computed crc = {computed})"
    assert e.value.position == 12 and e.value.batch_offset == 0


def test_44_message_too_small_for_a_crc():
    data = struct.pack(">qi", 0, 3) + b"\0\0\0"
    b = LegacyRecordBatch(data, 0, len(data))
    with pytest.raises(CorruptRecordError, match=r"too small, size = 3\)"):
        b.ensure_valid()


def test_45_negative_lengths_are_null():
    b = one(message(0, -2, -7))
    b.ensure_valid()
    assert triples(b) == [(0, T0, None, None)]
    assert triples(one(message(0, b"", b""))) == [(0, T0, b"", b"")]


def test_45_bytes_after_the_value_are_ignored():
    b = one(message(0, b"k", b"v", tail=b"extra bytes"))
    b.ensure_valid()
    assert triples(b) == [(0, T0, b"k", b"v")]


@pytest.mark.parametrize("key,value", [(100, b"v"), (b"k", 2**31 - 1), (b"k", 2)])
def test_45_lengths_past_the_end(key, value):
    b = one(message(0, key, value))
    b.ensure_valid()  # the CRC covers the bad length, so only reading fails
    with pytest.raises(InvalidRecordError, match="Found invalid record structure") as e:
        b.records()
    assert e.value.batch_offset == 0 and e.value.position is not None


@pytest.mark.parametrize("size", range(14, 22))
def test_45_v1_message_shorter_than_its_header(size):
    body = bytes([1, 0]) + struct.pack(">q", T0) + b"\xff" * 8
    body = body[:size - 4]
    data = struct.pack(">qiI", 0, size, zlib.crc32(body)) + body
    b = one(data)
    b.ensure_valid()
    with pytest.raises(InvalidRecordError):
        b.records()


def inner_set(offsets, *, magic=1, ts=None, attrs=0):
    return b"".join(message(o, b"k%d" % o, b"v%d" % o, magic=magic, ts=T0 + i if ts is None else ts, attrs=attrs)
                    for i, o in enumerate(offsets))


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_46_relative_inner_offsets(codec):
    b = one(wrapper(102, inner_set([0, 1, 2]), codec=codec))
    b.ensure_valid(deep=True)
    assert [r.offset for r in b] == [100, 101, 102]
    assert (b.base_offset, b.last_offset, b.next_offset, b.record_count) == (100, 102, 103, 3)
    assert b.compression == CompressionType(codec)


def test_47_wrapper_offset_zero_is_librdkafka():
    b = one(wrapper(0, inner_set([0, 1, 2])))
    assert [r.offset for r in b] == [0, 1, 2]
    assert (b.base_offset, b.last_offset) == (0, 0)


def test_47_wrapper_offset_below_last_inner():
    b = one(wrapper(1, inner_set([0, 1, 2])))
    b.ensure_valid()
    with pytest.raises(InvalidRecordError) as e:
        b.records()
    assert e.value.message == (
        "Found invalid wrapper offset in compressed v1 message set, wrapper offset '1' is less "
        "than the last inner message offset '2' and it is not zero.")
    assert e.value.position == 0 and e.value.batch_offset == 1


def test_47_offsets_wrap_as_java_longs():
    # Kafka computes wrapper - lastInner and base + inner in long arithmetic:
    # extreme offsets wrap instead of leaving the int64 range.
    b = one(wrapper(2 ** 63 - 1, inner_set([0, -2 ** 63])))
    assert b.base_offset == -1
    assert [r.offset for r in b] == [-1, 2 ** 63 - 1]
    assert one(message(2 ** 63 - 1, b"k", b"v")).next_offset == -2 ** 63


def test_48_inner_offset_gaps():
    b = one(wrapper(105, inner_set([0, 5])))
    assert [r.offset for r in b] == [100, 105]


def test_49_log_append_time_wrapper_overrides_inner_timestamps():
    b = one(wrapper(2, inner_set([0, 1, 2]), ts=T0 + 999, attrs=LAT))
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in b] == [T0 + 999] * 3
    assert {r.timestamp_type for r in b} == {TimestampType.LOG_APPEND_TIME}
    c = one(wrapper(2, inner_set([0, 1, 2]), ts=T0 + 999))
    assert [r.timestamp for r in c] == [T0, T0 + 1, T0 + 2]
    assert c.max_timestamp == T0 + 999


def test_50_v0_inner_offsets_are_absolute():
    b = one(wrapper(7, inner_set([50, 51], magic=0), magic=0))
    b.ensure_valid(deep=True)
    assert [r.offset for r in b] == [50, 51]
    assert [r.timestamp for r in b] == [-1, -1]
    assert (b.base_offset, b.last_offset, b.timestamp_type) == (50, 7, TimestampType.NO_TIMESTAMP_TYPE)


def test_51_inner_magic_may_differ():
    v1_in_v0 = one(wrapper(9, inner_set([3, 4], magic=1), magic=0))
    assert triples(v1_in_v0) == [(3, T0, b"k3", b"v3"), (4, T0 + 1, b"k4", b"v4")]
    assert {r.timestamp_type for r in v1_in_v0} == {TimestampType.NO_TIMESTAMP_TYPE}
    v0_in_v1 = one(wrapper(11, inner_set([0, 1], magic=0), magic=1, attrs=LAT))
    assert triples(v0_in_v1) == [(10, -1, b"k0", b"v0"), (11, -1, b"k1", b"v1")]


def test_52_empty_set_null_value_and_zstd():
    with pytest.raises(InvalidRecordError, match="^Found invalid compressed record set with no inner records"):
        one(wrapper(0, b"")).records()
    with pytest.raises(InvalidRecordError) as e:
        one(wrapper(0, b"", value=None)).records()
    assert e.value.message == "Found invalid compressed record set with null value (magic = 1)"
    with pytest.raises(InvalidRecordError) as e:
        one(wrapper(0, b"", value=None, magic=0)).base_offset
    assert e.value.message == "Found invalid compressed record set with null value (magic = 0)"
    z = one(wrapper(0, inner_set([0]), codec=4, value=get_codec(4).compress(inner_set([0]))))
    assert z.compression is CompressionType.ZSTD
    with pytest.raises(InvalidRecordError) as e:
        z.records()
    assert e.value.message == "Invalid wrapper compressionType found in legacy deep record iterator 1"


def test_52_fewer_than_12_bytes_is_no_records():
    with pytest.raises(InvalidRecordError, match="no inner records"):
        one(wrapper(0, b"\0" * 11)).records()


def test_53_nested_compression_is_reported_when_reached():
    nested = inner_set([0]) + wrapper(1, inner_set([0]))
    b = one(wrapper(1, nested))
    it = iter(b)
    assert next(it).offset == 0
    with pytest.raises(InvalidRecordError, match="^Inner messages must not be compressed"):
        next(it)


def test_53_inner_size_below_overhead():
    bad = inner_set([0]) + struct.pack(">qi", 1, 13) + b"\0" * 13
    with pytest.raises(CorruptRecordError) as e:
        one(wrapper(1, bad)).records()
    assert e.value.message == "Record size is less than the minimum record overhead (14)"


def test_53_truncated_last_inner_is_dropped():
    full = inner_set([0, 1, 2])
    for cut in range(1, len(message(2, b"k2", b"v2"))):
        b = one(wrapper(2, full[:-cut]))
        assert [r.key for r in b] == [b"k0", b"k1"]
        # relative offsets: the wrapper's 2 is matched against the last *kept* inner (1)
        assert [r.offset for r in b] == [1, 2]
        # validating, a message cut short raises once its size field is there
        checked = LegacyRecordBatch(wrapper(2, full[:-cut]), validate=True)
        if len(message(2, b"k2", b"v2")) - cut >= 12:
            with pytest.raises(CorruptRecordError, match="of the decompressed wrapper has size"):
                checked.records()
            assert not b.is_valid(deep=True)
        else:
            assert [r.key for r in checked] == [b"k0", b"k1"] and b.is_valid(deep=True)


def test_54_inner_crc_checked_by_deep_validation():
    inner = bytearray(inner_set([0, 1]))
    inner[-1] ^= 0xFF
    b = one(wrapper(1, bytes(inner)))
    b.ensure_valid()
    assert b.is_valid() and not b.is_valid(deep=True)
    with pytest.raises(CorruptRecordError, match=r"^Record is corrupt \(stored crc = \d+, computed crc = \d+\)") as e:
        b.ensure_valid(deep=True)
    assert e.value.batch_offset == 1 and e.value.position == 0
    assert len(b.records()) == 2  # not validating, iteration does not check inner CRCs
    checked = LegacyRecordBatch(wrapper(1, bytes(inner)), validate=True)  # as read_batches makes it
    with pytest.raises(CorruptRecordError, match=r"^Record is corrupt"):
        checked.records()


def test_error_positions_point_into_the_buffer():
    prefix = message(0, b"a", b"b")
    start = len(prefix)
    # A length field in a plain message: its absolute position (v1: key length at 14, value at 18+K).
    data = prefix + message(1, b"k", 1000)
    with pytest.raises(InvalidRecordError) as e:
        _read_all(data)
    assert e.value.position == start + 12 + 19 and e.value.batch_offset == 1
    # Damage inside a decompressed set has no place in the buffer: the wrapper's position.
    inner = inner_set([0]) + message(1, b"k", 1000)
    with pytest.raises(InvalidRecordError) as e:
        _read_all(prefix + wrapper(1, inner))
    assert e.value.position == start
    with pytest.raises(CorruptRecordError) as e:
        _read_all(prefix + wrapper(1, struct.pack(">qi", 0, 13) + b"\0" * 13))
    assert e.value.position == start
    # A codec error counts from the compressed value (v1 wrapper, null key: value at 12 + 22).
    good = wrapper(1, inner_set([0, 1, 2]))
    body = bytearray(good)
    body[12 + 22 + 12] ^= 0xFF  # inside the deflate stream, after gzip's 10-byte header
    with pytest.raises(KcodecError) as e:
        _read_all(prefix + _fix(body))
    assert e.value.position is not None and e.value.position >= start + 12 + 22


# -- other reader behaviour ---------------------------------------------------------------
def test_batch_iterates_many_times_and_positions():
    data = message(0, b"a", b"b") + wrapper(3, inner_set([0, 1, 2])) + message(4, None, b"c", magic=0)
    bs = batches(data)
    assert [b.position for b in bs] == [0, 36, 36 + bs[1].size_in_bytes]
    assert triples(bs[1]) == triples(bs[1])
    assert [r.offset for b in bs for r in b] == [0, 1, 2, 3, 4]


def test_any_buffer_type():
    import mmap

    import numpy as np
    data = wrapper(1, inner_set([0, 1]), codec=3)
    expected = triples(one(data))
    for buf in (bytearray(data), memoryview(data), np.frombuffer(data, dtype=np.uint8)):
        assert triples(LegacyRecordBatch(buf, 0)) == expected
    m = mmap.mmap(-1, len(data))
    m.write(data)
    assert triples(LegacyRecordBatch(m, 0, len(data))) == expected
    assert triples(LegacyRecordBatch(b"xx" + data, 2)) == expected


def test_decompression_limit():
    data = wrapper(0, inner_set(range(100)))
    with pytest.raises(LimitExceededError):
        LegacyRecordBatch(data, 0, max_decompressed_size=1000).records()


def test_unknown_codec_id():
    b = one(message(0, None, b"payload", attrs=6))
    with pytest.raises(UnsupportedCodecError):
        b.records()


def test_constructor_refuses_entries_outside_the_buffer():
    data = message(0, b"k", b"v")
    with pytest.raises(CorruptRecordError):
        LegacyRecordBatch(data, 0, len(data) + 1)
    with pytest.raises(CorruptRecordError):
        LegacyRecordBatch(data[:10], 0)
    with pytest.raises(CorruptRecordError):
        LegacyRecordBatch(data, -1)


def test_wrapper_message_accessors():
    inner = inner_set([0])
    b = one(wrapper(0, inner, codec=1))
    assert b.message_key() is None
    assert get_codec(1).decompress(b.message_value()) == inner


# -- builder ---------------------------------------------------------------------------------
@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("magic", [0, 1])
@pytest.mark.parametrize("lat", [False, True])
def test_builder_round_trip(codec, magic, lat):
    kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 5000) if lat else {}
    b = LegacyRecordBatchBuilder(magic, codec, base_offset=1000, **kw)
    recs = [(b"key-%d" % i if i % 3 else None, b"value-%d" % i * i if i % 5 else None, T0 + (i * 7919) % 100)
            for i in range(50)]
    for i, (k, v, ts) in enumerate(recs):
        assert b.append(k, v, ts) == 1000 + i
    data = b.build()
    assert b.build() is data
    got = batches(data)
    assert len(got) == (1 if codec != "none" else 50)
    for batch in got:
        batch.ensure_valid(deep=True)
        assert batch.magic == magic and batch.compression == CompressionType.of(codec)
    out = [r for batch in got for r in batch]
    if magic == 0:
        want_ts = [-1] * 50
    elif lat:
        want_ts = [T0 + 5000] * 50
    else:
        want_ts = [ts for _k, _v, ts in recs]
    assert [(r.offset, r.timestamp, r.key, r.value) for r in out] == [
        (1000 + i, want_ts[i], k, v) for i, (k, v, _ts) in enumerate(recs)]
    if codec != "none":
        w = got[0]
        assert (w.base_offset, w.last_offset) == (1000, 1049)
        assert w.max_timestamp == (-1 if magic == 0 else T0 + 5000 if lat else max(t for *_x, t in recs))
        assert w.timestamp_type == (TimestampType.NO_TIMESTAMP_TYPE if magic == 0 else
                                    TimestampType.LOG_APPEND_TIME if lat else TimestampType.CREATE_TIME)


def test_builder_inner_offsets_v1_relative_v0_absolute():
    for magic, first in ((1, 0), (0, 500)):
        b = LegacyRecordBatchBuilder(magic, "gzip", base_offset=500)
        b.append(b"a", b"b", T0)
        b.append(b"c", b"d", T0, offset=503)
        data = b.build()
        w = one(data)
        inner = get_codec(1).decompress(w.message_value())
        assert struct.unpack_from(">q", inner, 0)[0] == first
        assert [r.offset for r in w] == [500, 503]
        assert w.last_offset == 503


def test_builder_lat_inner_messages_carry_the_bit_and_time():
    b = LegacyRecordBatchBuilder(1, "gzip", timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    b.append(b"k", b"v", 5)
    w = one(b.build())
    inner = get_codec(1).decompress(w.message_value())
    assert inner[17] == LAT and struct.unpack_from(">q", inner, 18)[0] == T0
    assert w.attributes == LAT | 1


def test_builder_uncompressed_lat_stamps_every_message():
    b = LegacyRecordBatchBuilder(1, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    b.append(b"k", b"v", 5)
    m = one(b.build())
    assert m.attributes == LAT and m.max_timestamp == T0


def test_builder_refusals():
    with pytest.raises(UnsupportedCodecError):
        LegacyRecordBatchBuilder(1, "zstd")
    with pytest.raises(RecordBuilderError):
        LegacyRecordBatchBuilder(2)
    with pytest.raises(RecordBuilderError, match="TimestampType must be set"):
        LegacyRecordBatchBuilder(1, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
    with pytest.raises(UnsupportedCodecError):
        LegacyRecordBatchBuilder(1, "gzip", level=10)
    for magic in (0, 1):
        b = LegacyRecordBatchBuilder(magic)
        with pytest.raises(RecordBuilderError, match=f"^Magic v{magic} does not support record headers"):
            b.append(b"k", b"v", T0, headers=[("h", b"x")])
        with pytest.raises(RecordBuilderError, match="^Invalid negative timestamp -2"):
            b.append(b"k", b"v", -2)
        b.append(b"k", b"v", -1, offset=10)
        with pytest.raises(RecordBuilderError, match=r"^Illegal offset 10 following previous offset 10"):
            b.append(b"k", b"v", T0, offset=10)
        b.build()
        with pytest.raises(RecordBuilderError):
            b.append(b"k", b"v", T0)


def _zlib_codec(magics):
    import kcodec

    class ZlibCodec(kcodec.Codec):
        """A registered codec on a free id, as a third party would add one."""

        id = 6
        name = "zlib-test"
        min_level, max_level, default_level = 1, 9, 6

        def compress(self, data, level=None, magic=2):
            self.check_magic(magic)
            return zlib.compress(bytes(data), self.resolve_level(level))

        def decompress(self, data, magic=2, max_size=kcodec.DEFAULT_MAX_DECOMPRESSED_SIZE):
            self.check_magic(magic)
            out = zlib.decompressobj().decompress(bytes(data), max_size + 1)
            self.check_limit(len(out), max_size)
            return out

    ZlibCodec.magics = frozenset(magics)
    return ZlibCodec


def test_builder_with_a_registered_codec():
    from kcodec import register_codec, unregister_codec
    register_codec(_zlib_codec({0, 1, 2}))
    try:
        b = LegacyRecordBatchBuilder(1, 6, level=1, base_offset=10)
        for i in range(3):
            b.append(b"k%d" % i, b"v" * i, T0 + i)
        w = one(b.build())
        w.ensure_valid(deep=True)
        assert (w.compression, w.attributes & 7) == (6, 6)
        assert triples(w) == [(10 + i, T0 + i, b"k%d" % i, b"v" * i) for i in range(3)]
    finally:
        unregister_codec(6)
    register_codec(_zlib_codec({2}))
    try:
        with pytest.raises(UnsupportedCodecError, match="not supported for magic 1"):
            LegacyRecordBatchBuilder(1, 6)
    finally:
        unregister_codec(6)


def test_builder_empty_and_default_timestamp():
    for magic in (0, 1, 2):  # the same for every magic
        with pytest.raises(RecordBuilderError, match="without records"):
            kcodec.batch_builder(magic, compression="gzip").build()
    b = LegacyRecordBatchBuilder(1)
    b.append(b"k", b"v")
    (r,) = one(b.build()).records()
    assert r.timestamp > T0
    b = LegacyRecordBatchBuilder(0)
    b.append(b"k", b"v")
    assert b.max_timestamp == -1  # v0 has no time to default to
    assert one(b.build()).records()[0].timestamp == -1


def test_builder_accepts_any_buffer_for_key_and_value():
    import numpy as np
    b = LegacyRecordBatchBuilder(1, "lz4")
    b.append(memoryview(b"key"), np.frombuffer(b"value", dtype=np.uint8), T0)
    b.append(bytearray(b"k2"), b"", T0)
    assert triples(one(b.build())) == [(0, T0, b"key", b"value"), (1, T0, b"k2", b"")]


def test_builder_write_limit():
    for codec, expect in (("none", 5), ("gzip", 4)):
        b = LegacyRecordBatchBuilder(1, codec, write_limit=300)
        n = 0
        while b.has_room_for(b"k" * 10, b"v" * 10):
            b.append(b"k" * 10, b"v" * 10, T0)
            n += 1
        record = 12 + record_size(1, b"k" * 10, b"v" * 10)
        assert record == 54 and n == expect
        assert b.is_full() or not b.has_room_for(b"k" * 10, b"v" * 10)
    b = LegacyRecordBatchBuilder(1, write_limit=10)
    assert b.has_room_for(b"x" * 100, None)  # the first record always fits
    b.append(b"x" * 100, None, T0)
    assert not b.has_room_for(b"", b"")
    assert b.estimated_size == 12 + 22 + 100


def test_builder_size_estimate_multiplies_in_java_floats():
    # 60 bytes of messages: Java's 60 * 1.05f rounds to 62.999996f, so (int) gives 62, not 63.
    b = LegacyRecordBatchBuilder(1, "gzip", write_limit=96 + 54)
    b.append(b"k" * 13, b"v" * 13, T0)
    assert b.uncompressed_size == 60 and b.estimated_size == 12 + 22 + 62
    assert b.has_room_for(b"k" * 10, b"v" * 10)  # 96 + 54 <= 150: room, where 97 + 54 would not be
    b = LegacyRecordBatchBuilder(1, "lz4", estimated_compression_ratio=0.5)
    b.append(b"k" * 13, b"v" * 13, T0)
    assert b.estimated_size == 12 + 22 + 31
    with pytest.raises(RecordBuilderError):
        LegacyRecordBatchBuilder(1, "gzip", estimated_compression_ratio=0)


# -- the builder's state and header bytes, value by value -------------------------------------
def test_builder_state_as_records_are_appended():
    for magic, codec in ((0, "none"), (1, "none"), (0, "gzip"), (1, "gzip")):
        b = LegacyRecordBatchBuilder(magic, codec, base_offset=40)
        assert (b.record_count, b.last_offset, b.next_offset, b.max_timestamp) == (0, None, 40, -1)
        assert (b.magic, b.base_offset, b.compression, b.uncompressed_size) == (magic, 40, CompressionType.of(codec), 0)
        assert b.append(b"k", b"vv", T0 + 9) == 40
        assert b.append(None, b"v", T0 + 3, offset=45) == 45
        ts = -1 if magic == 0 else T0 + 9
        assert (b.record_count, b.last_offset, b.next_offset) == (2, 45, 46)
        assert b.max_timestamp == T0 + 9
        size = 12 + record_size(magic, b"k", b"vv") + 12 + record_size(magic, None, b"v")
        assert b.uncompressed_size == size == (12 + 14 + 3) + (12 + 14 + 1) + (16 if magic else 0)
        if codec == "none":
            assert b.estimated_size == size
        else:  # the wrapper's log overhead and message overhead, plus the set times 1.05 (a float)
            assert b.estimated_size == 12 + (14 if magic == 0 else 22) + int(size * 1.05)
        assert not b.is_full()
        data = b.build()
        assert b.is_full() and not b.has_room_for(b"", b"")
        assert b.uncompressed_size == 0  # the messages went into the built set
        got = [(r.offset, r.timestamp) for batch in batches(data) for r in batch]
        assert got == [(40, ts), (45, -1 if magic == 0 else T0 + 3)]


def test_builder_default_timestamps_are_now():
    import time

    before = int(time.time() * 1000)
    b = LegacyRecordBatchBuilder(1)
    b.append(b"k", b"v")
    lat = LegacyRecordBatchBuilder(1, "gzip", timestamp_type=TimestampType.LOG_APPEND_TIME)
    lat.append(b"k", b"v", T0)
    after = int(time.time() * 1000)
    assert before <= one(b.build()).records()[0].timestamp <= after
    assert before <= lat.log_append_time <= after
    w = one(lat.build())
    assert w.max_timestamp == lat.log_append_time and [r.timestamp for r in w] == [lat.log_append_time]


def test_builder_wrapper_bytes():
    """A compressed set's wrapper, field by field (``LegacyRecord.writeHeader``)."""
    for magic, lat in ((0, False), (1, False), (1, True)):
        kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 77) if lat else {}
        b = LegacyRecordBatchBuilder(magic, "gzip", base_offset=500, **kw)
        b.append(b"a", b"bc", T0 + 5)
        b.append(None, None, T0 + 2, offset=503)
        out = b.build()
        payload = one(out).message_value().tobytes()
        head = 26 if magic == 0 else 34
        offset, size, crc, m, attrs = struct.unpack_from(">qiIbb", out, 0)
        assert (offset, size, m, len(out)) == (503, len(out) - 12, magic, head + len(payload))
        assert attrs == (1 | LAT if lat else 1) and crc == zlib.crc32(out[16:])
        if magic == 1:
            assert struct.unpack_from(">q", out, 18)[0] == (T0 + 77 if lat else T0 + 5)
        assert struct.unpack_from(">ii", out, head - 8) == (-1, len(payload))
        inner = get_codec(1).decompress(payload, magic=magic)
        first = 0 if magic == 1 else 500
        assert struct.unpack_from(">q", inner, 0)[0] == first
        assert inner[17] == (LAT if lat else 0)


def test_builder_uncompressed_message_bytes():
    for magic in (0, 1):
        b = LegacyRecordBatchBuilder(magic, base_offset=7)
        b.append(b"key", None, T0 + 1)
        out = b.build()
        assert out == message(7, b"key", None, magic=magic, ts=T0 + 1)
    # v0 has no timestamp type bit even with LogAppendTime
    b = LegacyRecordBatchBuilder(0, timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0)
    b.append(b"k", b"v", 5)
    assert b.build() == message(0, b"k", b"v", magic=0)


def test_builder_negative_base_offsets():
    with pytest.raises(RecordBuilderError) as e:
        LegacyRecordBatchBuilder(1, "gzip", base_offset=-1)
    assert e.value.message == ("a compressed v1 message set cannot start at the negative offset -1: "
                               "Kafka could not read its offsets back")
    for magic, codec in ((1, "none"), (0, "gzip")):  # absolute offsets: nothing to read back wrongly
        b = LegacyRecordBatchBuilder(magic, codec, base_offset=-3)
        b.append(b"k", b"v", T0)
        assert b.last_offset == -3
    LegacyRecordBatchBuilder(1, "gzip", base_offset=0).append(b"k", b"v", T0)


def test_builder_ratio_and_level_arguments():
    for ratio in (0, -0.5, float("nan")):
        with pytest.raises(RecordBuilderError) as e:
            LegacyRecordBatchBuilder(1, "gzip", estimated_compression_ratio=ratio)
        assert e.value.message == f"estimated_compression_ratio must be positive, not {ratio!r}"
    b = LegacyRecordBatchBuilder(1, "lz4", estimated_compression_ratio=0.25)
    assert b.estimated_compression_ratio == 0.25 and b.write_limit is None
    with pytest.raises(RecordBuilderError) as e:
        LegacyRecordBatchBuilder(2)
    assert e.value.message == "LegacyRecordBatchBuilder writes magic 0 or 1, not 2"
    with pytest.raises(UnsupportedCodecError) as e:
        LegacyRecordBatchBuilder(0, CompressionType.ZSTD)
    assert e.value.message == "Compression type zstd is not supported for magic 0: zstd needs magic v2"
    with pytest.raises(RecordBuilderError) as e:
        LegacyRecordBatchBuilder(1, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
    assert e.value.message == "TimestampType must be set for magic >= 0"
    v0 = LegacyRecordBatchBuilder(0, timestamp_type=TimestampType.NO_TIMESTAMP_TYPE)
    assert v0.timestamp_type == TimestampType.NO_TIMESTAMP_TYPE
    # the level reaches the codec; without one a built-in codec writes at Kafka's default level
    data = bytes(range(256)) * 4 + b"value " * 300
    sets = {}
    for compression, level in (("gzip", None), ("gzip", 1), (1, None), (CompressionType.GZIP, 6)):
        b = LegacyRecordBatchBuilder(1, compression, level=level)
        b.append(None, data, T0)
        sets[compression, level] = b.build()
        assert triples(one(sets[compression, level])) == [(0, T0, None, data)]
    assert sets["gzip", None] != sets["gzip", 1]
    assert sets["gzip", None] == sets[1, None] == sets[CompressionType.GZIP, 6]


def test_builder_append_record_and_errors():
    src = LegacyRecordBatchBuilder(1)
    src.append(b"k", b"v", T0 + 1, offset=3)
    (rec,) = one(src.build()).records()
    b = LegacyRecordBatchBuilder(1, "gzip")
    assert b.append_record(rec) == 3
    assert triples(one(b.build())) == [(3, T0 + 1, b"k", b"v")]
    b = LegacyRecordBatchBuilder(1)
    b.append(b"k", b"v", -1)
    assert b.max_timestamp == -1
    with pytest.raises(RecordBuilderError) as e:
        b.append(b"k", b"v", T0, offset=0)
    assert e.value.message == "Illegal offset 0 following previous offset 0 (Offsets must increase monotonically)."
    b.build()
    with pytest.raises(RecordBuilderError) as e:
        b.append(b"k", b"v", T0)
    assert e.value.message == "Tried to append a record, but the builder was already built"


def test_builder_estimate_is_capped_at_java_int_max():
    # Java casts the float estimate to int, which saturates at Integer.MAX_VALUE
    b = LegacyRecordBatchBuilder(1, "gzip", estimated_compression_ratio=1e9)
    b.append(b"k", b"v", T0)
    assert b.estimated_size == 12 + 22 + 2 ** 31 - 1
    b = LegacyRecordBatchBuilder(0, "gzip", estimated_compression_ratio=1e7)
    b.append(b"k", b"v", T0)  # 28 bytes x 1e7 x 1.05, in floats
    assert b.estimated_size == 12 + 14 + 294_000_000


def test_builder_defaults_and_codec_ids():
    b = LegacyRecordBatchBuilder()
    b.append(b"k", b"v", T0)
    assert (b.magic, b.compression, b.timestamp_type) == (1, CompressionType.NONE, TimestampType.CREATE_TIME)
    assert b.build() == message(0, b"k", b"v")
    lat = LegacyRecordBatchBuilder(1, timestamp_type=1, log_append_time=T0)  # a timestamp type by its id
    assert lat.timestamp_type is TimestampType.LOG_APPEND_TIME
    for codec_id in range(4):  # the built-in codecs by id
        b = LegacyRecordBatchBuilder(1, codec_id)
        b.append(b"k", b"v", T0)
        assert one(b.build()).compression is CompressionType(codec_id)
    with pytest.raises(UnsupportedCodecError) as e:
        LegacyRecordBatchBuilder(1, -1)
    assert e.value.message == "Unknown compression type id: -1; ids are 0..7"
    from kcodec import register_codec, unregister_codec
    codec = _zlib_codec({0, 1})
    codec.id = 5  # the first id past Kafka's codecs is a plugin's
    register_codec(codec)
    try:
        b = LegacyRecordBatchBuilder(0, 5, level=2)
        b.append(b"k", b"v", T0)
        w = one(b.build())
        assert (w.compression, triples(w)) == (5, [(0, -1, b"k", b"v")])
    finally:
        unregister_codec(5)


def test_builder_is_full_only_with_a_record_past_the_limit():
    empty = LegacyRecordBatchBuilder(1, write_limit=0)
    assert empty.is_full() is False and empty.has_room_for(b"k", b"v") is True  # the first record always fits
    b = LegacyRecordBatchBuilder(1, write_limit=10)
    b.append(b"x" * 100, None, T0)
    assert b.is_full() is True and b.has_room_for(b"", b"") is False
    b.build()
    assert b.is_full() is True and b.has_room_for(b"", b"") is False
    unbounded = LegacyRecordBatchBuilder(1)
    unbounded.append(b"x" * 100, None, T0)
    assert unbounded.is_full() is False and unbounded.has_room_for(b"x" * 10 ** 6, None) is True


def test_builder_refuses_a_message_past_a_32_bit_size():
    import mmap

    big = mmap.mmap(-1, 2 ** 31 - 34)  # never touched: the size is refused before any byte is copied
    for magic, most in ((0, 2 ** 31 - 12 - 14), (1, 2 ** 31 - 12 - 22)):
        b = LegacyRecordBatchBuilder(magic)
        with pytest.raises(RecordBuilderError) as e:
            b.append(b"k" * (most - len(big) + 1), big, T0)
        assert e.value.message == (f"Record too large for a v{magic} message: a message of "
                                   f"{2 ** 31 - 12 + 1} bytes does not fit a 32-bit size field")
        assert (b.record_count, b.uncompressed_size) == (0, 0)


def test_builder_has_room_for_counts_the_next_message():
    # uncompressed: 54-byte messages (12 + 22 + 10 + 10) under a limit of 108 + 54 = 162
    b = LegacyRecordBatchBuilder(1, write_limit=162)
    for _ in range(2):
        b.append(b"k" * 10, b"v" * 10, T0)
    assert b.estimated_size == 108 and b.has_room_for(b"k" * 10, b"v" * 10)
    assert not b.has_room_for(b"k" * 10, b"v" * 11)  # 163
    assert b.has_room_for(b"k" * 10, None) and b.has_room_for(None, b"v" * 20)
    b.append(b"k" * 10, b"v" * 10, T0)
    assert b.estimated_size == 162 and b.is_full() and not b.has_room_for(None, None)
    v0 = LegacyRecordBatchBuilder(0, write_limit=46 + 46)  # 12 + 14 + 10 + 10
    v0.append(b"k" * 10, b"v" * 10, T0)
    assert v0.has_room_for(b"k" * 10, b"v" * 10) and not v0.has_room_for(b"k" * 10, b"v" * 11)


# -- the reader's fields, value by value ---------------------------------------------------------
def test_reader_header_fields_of_short_entries():
    """Fields past the entry's end read as zero (ensure_valid reports the entry); each appears once it fits."""
    full = message(9, b"key", b"value", attrs=LAT | 2, ts=T0 + 1)  # 39 bytes
    crc = struct.unpack_from(">I", full, 12)[0]
    seen = {}
    for size in (12, 15, 16, 17, 18, 25, 26, len(full)):
        b = LegacyRecordBatch(full, 0, size)
        seen[size] = (b.crc, b.magic, b.attributes, b.max_timestamp)
        assert (b.offset, b.size_in_bytes, b.last_offset) == (9, size, 9)
        assert b.compute_checksum() == zlib.crc32(full[16:size])
    assert seen == {12: (0, 0, 0, -1), 15: (0, 0, 0, -1), 16: (crc, 0, 0, -1), 17: (crc, 1, 0, -1),
                    18: (crc, 1, LAT | 2, -1), 25: (crc, 1, LAT | 2, -1), 26: (crc, 1, LAT | 2, T0 + 1),
                    len(full): (crc, 1, LAT | 2, T0 + 1)}
    assert LegacyRecordBatch(struct.pack(">qi", 5, 0)).size_in_bytes == 12


def test_reader_constructor_messages():
    data = message(0, b"k", b"v")
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data[:14], 3)
    assert (e.value.message, e.value.position) == ("A legacy entry needs at least 12 bytes at position 3, "
                                                   "the buffer has 11", 3)
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data, len(data) - 5)
    assert e.value.message.endswith("the buffer has 5")
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data, 0, len(data) + 1)
    assert (e.value.message, e.value.position) == (f"Legacy entry of {len(data) + 1} bytes does not fit in "
                                                   f"the {len(data)} bytes left", 0)
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data, 0, 11)
    assert e.value.message == f"Legacy entry of 11 bytes does not fit in the {len(data)} bytes left"
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data, -1)
    assert e.value.message == f"A legacy entry needs at least 12 bytes at position -1, the buffer has {len(data) + 1}"


def test_reader_defaults_past_the_end_and_slots():
    data = message(0, b"k", b"v")
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(data, len(data) + 5)
    assert e.value.message == f"A legacy entry needs at least 12 bytes at position {len(data) + 5}, the buffer has 0"
    prefix = message(9, b"a", b"b")
    with pytest.raises(CorruptRecordError) as e:  # the room left counts from the entry's position
        LegacyRecordBatch(prefix + data, len(prefix), len(data) + 1)
    assert (e.value.message, e.value.position) == (
        f"Legacy entry of {len(data) + 1} bytes does not fit in the {len(data)} bytes left", len(prefix))
    assert LegacyRecordBatch(prefix + data, len(prefix), len(data)).offset == 0
    # constructed directly, a batch checks inner messages only when asked (validate=False)
    bad = wrapper(41, message(0, b"k", b"v", crc=7))
    b = LegacyRecordBatch(bad)
    assert triples(b) == [(41, T0, b"k", b"v")] and not b.is_valid(deep=True)
    assert not hasattr(b, "__dict__")  # one small object per batch of a large log


def test_reader_magic_byte_is_signed_and_codec_ids_beyond_four_are_ints():
    odd = bytearray(message(0, b"k", b"v"))
    for byte, magic in ((0xFF, -1), (0x80, -128), (0x7F, 127)):  # Kafka's magic is a signed byte
        odd[16] = byte
        assert LegacyRecordBatch(bytes(odd)).magic == magic
    b = one(message(2, None, b"payload", attrs=6 | LAT))
    assert (b.compression, b.compression_id, b.is_compressed) == (6, 6, True)
    assert b.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert repr(b) == f"LegacyRecordBatch(magic=1, offset=2, compression=6, position=0, size={b.size_in_bytes})"
    g = one(wrapper(7, inner_set([0, 1])))
    assert repr(g) == f"LegacyRecordBatch(magic=1, offset=7, compression=gzip, position=0, size={g.size_in_bytes})"
    assert (g.compression, g.compression_id, g.is_compressed) == (CompressionType.GZIP, 1, True)
    plain = one(message(0, b"k", b"v", magic=0))
    assert (plain.is_compressed, plain.inner_magics, len(plain), plain.message_key()) == (False, {0}, 1, b"k")


def test_reader_offsets_of_a_wrapper():
    w = one(wrapper(107, inner_set([0, 1, 2, 5])))  # v1: inner offsets relative to 107 - 5
    assert (w.base_offset, w.last_offset, w.next_offset, w.record_count, len(w)) == (102, 107, 108, 4, 4)
    assert [r.offset for r in w] == [102, 103, 104, 107]
    top = one(message(2 ** 63 - 1, b"k", b"v"))
    assert top.next_offset == -(2 ** 63)
    mixed = one(wrapper(1, message(0, b"a", b"b", magic=0) + message(1, b"c", b"d", magic=1)))
    assert mixed.inner_magics == {0, 1}
    assert [(r.timestamp, r.timestamp_type) for r in mixed] == [(-1, TimestampType.NO_TIMESTAMP_TYPE),
                                                                (T0, TimestampType.CREATE_TIME)]


def test_message_headers_are_each_records_message_magic_attributes_and_stored_crc():
    # what the validator checks of v0/v1 messages: the wrapper's own header for a plain message,
    # each inner message's for a wrapper, with the CRC as stored (a wrong one included)
    plain = message(3, b"k", b"v", attrs=LAT, ts=T0 + 4, crc=0xDEADBEEF)
    assert one(plain).message_headers() == [(1, LAT, 0xDEADBEEF)]
    first = message(0, b"a", b"b", magic=0)
    second = message(1, b"c", b"d", ts=T0 + 1, crc=7)
    lead = message(0, b"x", b"y")
    w = batches(lead + wrapper(9, first + second))[1]
    assert w.message_headers() == [(0, 0, zlib.crc32(first[16:])), (1, 0, 7)]
    assert [r.offset for r in w] == [8, 9]


def test_reader_inner_timestamps_follow_the_wrapper():
    inner = message(0, b"a", b"b", ts=T0 + 1) + message(1, b"c", b"d", ts=T0 + 2)
    lat = one(wrapper(1, inner, attrs=LAT, ts=T0 + 50))
    assert [(r.timestamp, r.timestamp_type) for r in lat] == [(T0 + 50, TimestampType.LOG_APPEND_TIME)] * 2
    create = one(wrapper(1, inner, ts=T0 + 50))
    assert [(r.timestamp, r.timestamp_type) for r in create] == [(T0 + 1, TimestampType.CREATE_TIME),
                                                                 (T0 + 2, TimestampType.CREATE_TIME)]
    # a v0 wrapper carries no time: its v1 inner messages keep theirs, typed as the wrapper's (none)
    v0 = one(wrapper(1, inner, magic=0, attrs=LAT))
    assert [(r.offset, r.timestamp, r.timestamp_type) for r in v0] == [
        (0, T0 + 1, TimestampType.NO_TIMESTAMP_TYPE), (1, T0 + 2, TimestampType.NO_TIMESTAMP_TYPE)]
    # an inner message of a magic past 1 reads as v1, with its own timestamp type
    odd = one(wrapper(0, message(0, b"a", b"b", magic=2, attrs=LAT, ts=T0 + 3)))
    assert [(r.timestamp, r.timestamp_type) for r in odd] == [(T0 + 3, TimestampType.LOG_APPEND_TIME)]


def test_reader_errors_of_inner_messages_name_the_wrapper():
    prefix = message(0, b"a", b"b")
    nested = prefix + wrapper(40, message(0, b"k", b"v", attrs=1))
    b = batches(nested)[1]
    with pytest.raises(InvalidRecordError) as e:
        b.records()
    assert (e.value.message, e.value.position, e.value.batch_offset) == (
        "Inner messages must not be compressed", len(prefix), 40)
    bad = wrapper(41, message(0, b"k", b"v", crc=7))
    w = one(bad)
    assert w.is_valid() and not w.is_valid(deep=True)
    with pytest.raises(CorruptRecordError) as e:
        w.ensure_valid(deep=True)
    assert (e.value.position, e.value.batch_offset) == (0, 41)
    with pytest.raises(CorruptRecordError) as e:
        LegacyRecordBatch(prefix + bad, len(prefix), validate=True).records()
    assert (e.value.position, e.value.batch_offset) == (len(prefix), 41)
    odd = bytearray(wrapper(3, inner_set([0])))
    odd[16] = 3
    with pytest.raises(InvalidRecordError) as e:
        LegacyRecordBatch(_fix(odd)).records()
    assert e.value.message == "Invalid wrapper magic found in legacy deep record iterator 3"
    assert e.value.batch_offset == 3
    short = message(6, b"k", 1000)
    with pytest.raises(InvalidRecordError) as e:
        one(short).message_value()
    assert e.value.batch_offset == 6
    with pytest.raises(KcodecError) as e:
        one(short).message_key()
    assert e.value.batch_offset == 6


# -- malformed input gives kcodec errors only ------------------------------------------------
def _read_all(data):
    n = 0
    for b in read_batches(data, validate=False):
        b.ensure_valid(deep=True)
        b.base_offset, b.record_count  # noqa: B018 -- the properties decompress
        n += len(b.records())
    return n


def _fix(entry: bytearray) -> bytes:
    """Make the size field and CRC agree with a mutated entry, so the parser sees the damage."""
    struct.pack_into(">i", entry, 8, len(entry) - 12)
    if len(entry) >= 16:
        struct.pack_into(">I", entry, 12, zlib.crc32(entry[16:]))
    return bytes(entry)


SAMPLES = {
    "v0": message(1, b"key", b"value", magic=0),
    "v1": message(1, b"key", b"value"),
    "v1-gzip": wrapper(2, inner_set([0, 1, 2])),
    "v0-lz4": wrapper(2, inner_set([0, 1, 2], magic=0), codec=3, magic=0),
    "v1-snappy": wrapper(2, inner_set([0, 1, 2]), codec=2),
}


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_truncated_at_every_byte(name):
    data = SAMPLES[name]
    for cut in range(len(data)):
        assert _read_all(data[:cut]) == 0  # a partial trailing entry is ignored
        if cut >= 12:
            try:
                _read_all(_fix(bytearray(data[:cut])))
            except KcodecError:
                pass


def _records_or_error(data):
    """The (offset, key, value) decoded, or the error, whose class and byte position are checked."""
    try:
        out = []
        for b in read_batches(data, validate=False):
            b.ensure_valid(deep=True)
            out.extend((r.offset, r.key, r.value) for r in b.records())
        return out
    except (CorruptRecordError, InvalidRecordError, UnsupportedCodecError, CorruptCompressedDataError) as exc:
        assert 0 <= exc.position <= len(data), exc   # len: an early end of data
        return exc


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_byte_flips(name):
    data = SAMPLES[name]
    original = _records_or_error(data)
    # uncompressed samples: a flip inside the key or value bytes, with the CRC made to agree,
    # decodes to exactly that byte changed
    spans = {} if name not in ("v0", "v1") else {1: range(data.index(b"key"), data.index(b"key") + 3),
                                                 2: range(data.index(b"value"), data.index(b"value") + 5)}
    for i in range(len(data)):
        for flip in (0x01, 0x80, 0xFF):
            mutated = bytearray(data)
            mutated[i] ^= flip
            _records_or_error(bytes(mutated))
            got = _records_or_error(_fix(mutated))
            for field, span in spans.items():
                if i in span:
                    want = list(original[0])
                    want[field] = bytes(b ^ flip if k == i - span.start else b for k, b in enumerate(want[field]))
                    assert got == [tuple(want)], (i, flip)
    # flips in the CRC-covered part without fixing the CRC are all caught
    for i in range(16, len(data)):
        mutated = bytearray(data)
        mutated[i] ^= 0x10
        with pytest.raises(CorruptRecordError):
            _read_all(bytes(mutated))


@pytest.mark.parametrize("codec", [1, 2, 3])
def test_inner_set_truncated_and_flipped(codec):
    inner = inner_set([0, 1, 2])
    for cut in range(len(inner)):
        try:
            _read_all(wrapper(2, inner[:cut], codec=codec))
        except (InvalidRecordError, CorruptRecordError):
            pass
    for i in range(len(inner)):
        mutated = bytearray(inner)
        mutated[i] ^= 0xA5
        try:
            _read_all(wrapper(2, bytes(mutated), codec=codec))
        except KcodecError:
            pass


@pytest.mark.parametrize("value", [2**31 - 1, 2**31 - 20, -(2**31)])
def test_absurd_lengths(value):
    for fields in ((value, b"v"), (b"k", value)):
        try:
            _read_all(message(0, *fields))
        except InvalidRecordError:
            pass
    absurd_inner = struct.pack(">qi", 0, value) + b"\0" * 30
    try:
        _read_all(wrapper(0, absurd_inner))
    except (InvalidRecordError, CorruptRecordError):
        pass
    size_field = struct.pack(">qi", 0, value) + b"\0" * 40
    try:
        _read_all(size_field)
    except CorruptRecordError:
        pass


def test_random_bytes_give_only_kcodec_errors():
    import random
    rng = random.Random(7)
    for _ in range(2000):
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(12, 80)))
        body = bytearray(struct.pack(">qi", 0, len(junk)) + junk)
        body[16] = rng.choice((0, 1))
        body[17] = rng.choice((0, 1, 2, 3, 4, 8, 9, 0x7F, 0xFF)) if rng.random() < 0.7 else body[17]
        for candidate in (bytes(body), _fix(body)):
            try:
                _read_all(candidate)
            except KcodecError:
                pass


# -- property tests ----------------------------------------------------------------------------
blobs = st.one_of(st.none(), st.binary(max_size=300))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(magic=st.sampled_from([0, 1]), codec=st.sampled_from(CODECS),
       records=st.lists(st.tuples(blobs, blobs, st.one_of(st.just(-1), st.integers(0, 2**62)),
                                  st.integers(1, 1000)), min_size=1, max_size=30),
       base=st.integers(0, 2**40), lat=st.booleans())
def test_property_round_trip(magic, codec, records, base, lat):
    kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0) if lat else {}
    b = LegacyRecordBatchBuilder(magic, codec, base_offset=base, **kw)
    offset = base
    expected = []
    for key, value, ts, gap in records:
        b.append(key, value, ts, offset=offset)
        expected.append((offset, -1 if magic == 0 else (T0 if lat else ts), key, value))
        offset += gap
    data = b.build()
    got = []
    for batch in read_batches(data, validate=False):
        batch.ensure_valid(deep=True)
        got += triples(batch)
    assert got == expected


def test_an_empty_value_is_empty_not_null():
    # a length of 0 is an empty value; only a negative length is null
    assert one(message(0, b"k", b"")).message_value().tobytes() == b""
    assert one(message(0, b"k", None)).message_value() is None
    assert one(message(0, b"k", b"v", crc=1)).is_valid() is False
    # a wrapper whose value is empty is handed to its codec, which finds no stream in it (34: the value's byte)
    for codec, why in ((1, "gzip: Unexpected end of ZLIB input stream"),
                       (2, "snappy: [EMPTY_INPUT] Cannot decompress empty stream"),
                       (3, "lz4: Stream ended prematurely")):
        with pytest.raises(CorruptCompressedDataError) as e:
            one(wrapper(0, b"", codec=codec, value=b"")).records()
        assert (e.value.message, e.value.position) == (why, 34)


def test_a_registered_codec_may_give_any_buffer_of_bytes():
    import array

    from kcodec import register_codec, unregister_codec

    class SignedBytes(_zlib_codec({0, 1, 2})):
        """Decompresses into a buffer of signed bytes, as a codec written over numpy or array might."""

        def decompress(self, data, magic=2, max_size=kcodec.DEFAULT_MAX_DECOMPRESSED_SIZE):
            return array.array("b", super().decompress(data, magic, max_size))

    register_codec(SignedBytes)
    try:
        inner = inner_set([0, 1])
        b = one(wrapper(5, inner, codec=6, value=zlib.compress(inner)))
        # v1 inner offsets count back from the wrapper's: 0 and 1 under 5 are 4 and 5
        assert [(r.offset, r.key, r.value) for r in b] == [(4, b"k0", b"v0"), (5, b"k1", b"v1")]
        b.ensure_valid(deep=True)
    finally:
        unregister_codec(6)
