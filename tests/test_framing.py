"""The shared log framing (``ByteBufferLogInputStream``)."""
import struct

import pytest

from kcodec.errors import CorruptRecordError
from kcodec.records.framing import iter_entries, valid_bytes
from oracle_util import load_case


def _single() -> bytes:
    return load_case("v2_none_single")[0]


def test_segment_positions_match_java():
    data, doc, _ = load_case("segment_mixed")
    entries = list(iter_entries(data))
    assert [e.position for e in entries] == [b["position"] for b in doc["batches"]]
    assert [e.size for e in entries] == [b["sizeInBytes"] for b in doc["batches"]]
    assert [e.magic for e in entries] == [b["magic"] for b in doc["batches"]]
    assert valid_bytes(data) == doc["validBytes"]


def test_empty_input():
    assert list(iter_entries(b"")) == []


@pytest.mark.parametrize("n", range(1, 12))
def test_short_trailing_garbage_ignored(n):
    data = _single() + b"\x07" * n
    assert len(list(iter_entries(data))) == 1
    assert valid_bytes(data) == len(data) - n
    with pytest.raises(CorruptRecordError, match="trailing"):
        list(iter_entries(data, strict=True))


def test_twelve_zero_bytes_raise():
    with pytest.raises(CorruptRecordError,
                       match=r"Record size 0 is less than the minimum record overhead \(14\)") as info:
        list(iter_entries(_single() + b"\x00" * 12))
    assert info.value.position == len(_single())


@pytest.mark.parametrize("size", [-5, 0, 13])
def test_small_sizes_raise(size):
    with pytest.raises(CorruptRecordError, match=f"Record size {size} is less"):
        list(iter_entries(struct.pack(">qi", 0, size) + b"\x00" * 60))


def test_size_14_with_few_bytes_is_partial():
    assert list(iter_entries(struct.pack(">qi", 0, 14) + b"\x00\x00\x00")) == []


@pytest.mark.parametrize("magic", [3, -1])
def test_bad_magic(magic):
    data = bytearray(_single())
    data[16] = magic & 0xFF
    with pytest.raises(CorruptRecordError, match=f"Invalid magic found in record: {magic}"):
        list(iter_entries(bytes(data)))


@pytest.mark.parametrize("size", [0x7FFFFFF0, 0x7FFFFFFF])
def test_huge_size_is_partial(size):
    data = bytearray(_single())
    struct.pack_into(">i", data, 8, size)
    assert list(iter_entries(bytes(data))) == []


def test_partial_trailing_batch_dropped():
    single = _single()
    data = single + single[:-1]
    assert [e.position for e in iter_entries(data)] == [0]
    with pytest.raises(CorruptRecordError) as info:
        list(iter_entries(data, strict=True))
    assert info.value.position == len(single)


def test_down_conversion_overflow_batch_ignored():
    single = _single()
    overflow = struct.pack(">qi", -1, 200) + b"\x00" * 30
    assert len(list(iter_entries(single + overflow))) == 1


def test_accepts_memoryview_slices():
    single = _single()
    data = memoryview(b"\xff" * 3 + single + single)
    assert [e.position for e in iter_entries(data, 3)] == [3, 3 + len(single)]
    assert [e.position for e in iter_entries(data, 3, 3 + len(single))] == [3]


def test_java_int_and_long_wrap_as_java_does():
    from kcodec.records.framing import java_int, java_long

    assert [java_long(v) for v in (5, -1, 2 ** 63 - 1, 2 ** 63, -2 ** 63 - 1, 2 ** 64 + 5, -2 ** 63)] == [
        5, -1, 2 ** 63 - 1, -2 ** 63, 2 ** 63 - 1, 5, -2 ** 63]
    assert [java_int(v) for v in (7, -1, 2 ** 31 - 1, 2 ** 31, -2 ** 31 - 1, 2 ** 32 + 7, -2 ** 31)] == [
        7, -1, 2 ** 31 - 1, -2 ** 31, 2 ** 31 - 1, 7, -2 ** 31]


def test_byte_view_is_a_flat_view_of_unsigned_bytes():
    import array

    from kcodec.records.framing import byte_view

    flat = memoryview(b"abcd")
    assert byte_view(flat) is flat  # already flat unsigned bytes: no new view
    ints = byte_view(array.array("i", [1, 2]))
    assert (ints.format, ints.ndim, ints.nbytes, len(ints)) == ("B", 1, 8, 8)
    square = memoryview(bytearray(range(6))).cast("B", (2, 3))
    flattened = byte_view(square)
    assert (flattened.format, flattened.ndim, flattened.tolist()) == ("B", 1, [0, 1, 2, 3, 4, 5])
    signed = byte_view(memoryview(b"\xff\x01").cast("b"))
    assert (signed.format, signed.tolist()) == ("B", [255, 1])
    assert byte_view(b"xy").tolist() == [120, 121]


def _walk(fn, data, strict):
    """Positions an entry walk yields, and the error (message, position) it ends with, if any."""
    out = []
    try:
        for item in fn(data, strict):
            out.append(item)
    except CorruptRecordError as exc:
        return out, (str(exc), exc.position)
    return out, None


def test_native_batch_walk_agrees_with_iter_entries():
    """read_batches walks natively; it must follow iter_entries' rules byte for byte."""
    from kcodec import read_batches

    data = load_case("segment_mixed")[0]
    tail = _single()
    cases = [data, data + tail[:20], data + b"\x00" * 12, data + tail[:16] + b"\x09" + tail[17:],
             data + struct.pack(">qi", 0, 13) + b"\x02" * 8, data + struct.pack(">qi", 0, 1 << 30) + b"\x02" * 8]
    cases += [data[:cut] for cut in range(0, len(data), 997)]
    for buf in cases:
        for strict in (False, True):
            entries, err = _walk(lambda d, s: ((e.position, e.size) for e in iter_entries(d, strict=s)), buf, strict)
            batches, err2 = _walk(lambda d, s: ((b.position, b.size_in_bytes)
                                                for b in read_batches(d, strict=s, validate=False)), buf, strict)
            assert batches == entries and err2 == err


def test_batch_walk_reads_the_buffer_as_it_is_at_each_step():
    from kcodec import read_batches

    one = _single()
    buf = bytearray(one * 3)
    it = read_batches(buf)
    assert next(it).position == 0
    del buf[len(one) + 30:]  # the buffer shrinks between steps: the cut batch is a partial one
    assert list(it) == []
    buf = bytearray(one * 2)
    it = read_batches(buf, strict=True)
    next(it)
    del buf[len(one) + 30:]
    with pytest.raises(CorruptRecordError, match="30 trailing bytes"):
        next(it)


def test_positions_outside_the_buffer_are_refused():
    from kcodec import RecordBatchBuilder
    from kcodec._native.records import read_batch_header, write_batch_header
    b = RecordBatchBuilder()
    b.append(b"k", b"v", 1)
    data = bytearray(b.build())
    with pytest.raises(ValueError):
        list(iter_entries(data, start=-64))
    buf = bytearray(200)
    for pos in (2 ** 63 - 30, 2 ** 63 - 1, -1, 150):
        with pytest.raises(ValueError):
            read_batch_header(buf, pos)
        with pytest.raises(ValueError):
            write_batch_header(buf, pos, 0, 100, -1, 0, 0, 0, 0, -1, -1, -1, 1)
    assert read_batch_header(data, 0)[0] == 0


def test_layout_constants_are_kafkas_and_the_c_headers():
    """The Python constants are csrc's (kc_batch.h, kc_message.h, kc_walk.h), and those are Kafka's."""
    from kcodec._native.records import LAYOUT
    from kcodec.records import batch_header as bh
    from kcodec.records import framing
    from kcodec.records import message_header as mh

    # Records, DefaultRecordBatch and LegacyRecord (offsets from the entry's start)
    kafka = {
        framing: {"LOG_OVERHEAD": 12, "MAGIC_OFFSET": 16, "HEADER_SIZE_UP_TO_MAGIC": 17,
                  "RECORD_BATCH_OVERHEAD": 61, "MIN_RECORD_OVERHEAD": 14},
        bh: {"BASE_OFFSET": 0, "LENGTH": 8, "PARTITION_LEADER_EPOCH": 12, "MAGIC": 16, "CRC": 17,
             "ATTRIBUTES": 21, "LAST_OFFSET_DELTA": 23, "BASE_TIMESTAMP": 27, "MAX_TIMESTAMP": 35,
             "PRODUCER_ID": 43, "PRODUCER_EPOCH": 51, "BASE_SEQUENCE": 53, "RECORDS_COUNT": 57,
             "COMPRESSION_MASK": 0x07, "TIMESTAMP_TYPE_MASK": 0x08, "TRANSACTIONAL_MASK": 0x10,
             "CONTROL_MASK": 0x20, "DELETE_HORIZON_MASK": 0x40},
        mh: {"OFFSET": 0, "SIZE": 8, "CRC": 12, "MAGIC": 16, "ATTRIBUTES": 17, "TIMESTAMP": 18,
             "HEADER_SIZE_V0": 6, "HEADER_SIZE_V1": 14, "RECORD_OVERHEAD_V0": 14, "RECORD_OVERHEAD_V1": 22,
             "COMPRESSION_MASK": 0x07, "TIMESTAMP_TYPE_MASK": 0x08},
    }
    for module, values in kafka.items():
        assert {name: getattr(module, name) for name in values} == values, module.__name__
    # the header struct has its fields where the offsets say, and ends at the overhead
    order = ["BASE_OFFSET", "LENGTH", "PARTITION_LEADER_EPOCH", "MAGIC", "CRC", "ATTRIBUTES", "LAST_OFFSET_DELTA",
             "BASE_TIMESTAMP", "MAX_TIMESTAMP", "PRODUCER_ID", "PRODUCER_EPOCH", "BASE_SEQUENCE", "RECORDS_COUNT"]
    fmt = bh.HEADER.format.lstrip(">")
    assert [struct.calcsize(">" + fmt[:i]) for i in range(len(order))] == [getattr(bh, n) for n in order]
    assert bh.HEADER.size == framing.RECORD_BATCH_OVERHEAD
    assert mh.HEADER_V0.size == mh.TIMESTAMP and mh.HEADER_V1.size == mh.TIMESTAMP + 8
    assert mh.HEADER_V0.size == framing.LOG_OVERHEAD + mh.HEADER_SIZE_V0
    assert mh.HEADER_V1.size == framing.LOG_OVERHEAD + mh.HEADER_SIZE_V1
    assert [mh.record_overhead(m) for m in (0, 1, 2)] == [14, 22, 22]  # Kafka reads any magic but 0 as v1
    assert mh.record_size(0, b"k", None) == 15 and mh.record_size(1, b"k", b"vv") == 25
    # the two framings share the log overhead and the magic's byte, which the one walk relies on
    assert LAYOUT["KC_ENTRY_MAGIC"] == LAYOUT["KC_BATCH_MAGIC"] == framing.LOG_OVERHEAD + LAYOUT["KC_MSG_MAGIC"]


def _v2(prefix: int = 0, **kw):
    """A built v2 batch of three records after ``prefix`` bytes of filler, and its decoded batch."""
    from kcodec import RecordBatchBuilder, read_batches

    b = RecordBatchBuilder(base_offset=100, **kw)
    for i, ts in enumerate((5_000, 9_000, 7_000)):
        b.append(b"k%d" % i, b"v" * 40, ts, offset=100 + 2 * i)
    data = bytearray(b"\xee" * prefix + bytes(b.build()))
    (batch,) = list(read_batches(bytes(data[prefix:])))
    return data, batch


def _crc_ok(data, pos=0):
    from kcodec import read_batches

    return all(b.is_valid() for b in read_batches(bytes(data[pos:])))


def test_batch_header_attributes_are_kafkas_bits():
    from kcodec.records import batch_header as bh

    assert bh.attributes(4, False, False, False, False) == 0x04
    assert bh.attributes(0x0F, False, False, False, False) == 0x07  # only the codec's three bits
    assert [bh.attributes(0, *(i == j for j in range(4))) for i in range(4)] == [0x08, 0x10, 0x20, 0x40]
    assert bh.attributes(1, True, True, True, True) == 0x79


def test_batch_header_reads_and_changes_in_place_at_any_position():
    from kcodec.records import batch_header as bh

    data, batch = _v2(prefix=7, partition_leader_epoch=3)
    assert bh.last_offset_and_max_timestamp(data, 7) == (104, 9_000)
    original = bytes(data)
    data[7 + bh.CRC:7 + bh.ATTRIBUTES] = b"\0\0\0\0"
    bh.seal(data, 7, len(data) - 7)
    assert data == original
    bh.set_partition_leader_epoch(data, 7, 0x01020304)
    assert data[7 + 12:7 + 16] == b"\x01\x02\x03\x04" and data[:7 + 12] == original[:7 + 12]
    assert data[7 + 16:] == original[7 + 16:]  # outside the CRC: nothing else moves
    bh.set_last_offset(data, 7, 1_000)  # baseOffset = last - lastOffsetDelta (4)
    assert struct.unpack_from(">q", data, 7)[0] == 996 and _crc_ok(data, 7)
    bh.set_last_offset_delta(data, 7, len(data) - 7, 9)
    assert struct.unpack_from(">i", data, 7 + 23)[0] == 9 and _crc_ok(data, 7)
    assert bh.last_offset_and_max_timestamp(data, 7) == (1_005, 9_000)


def test_batch_header_set_max_timestamp():
    from kcodec import read_batches
    from kcodec.records import batch_header as bh

    p = 40  # after filler bytes, so that a field read or written off its place shows
    kw = dict(producer_id=8, producer_epoch=1, base_sequence=0, is_transactional=True, compression="gzip")
    data, batch = _v2(prefix=p, **kw)
    original = bytes(data)
    size = len(data) - p
    bh.set_max_timestamp(data, p, size, batch, False, 9_000)  # nothing changes: no rewrite
    assert data == original
    data[p + 21:p + 23] = b"\x80\x11"  # unknown high bits, and a CRC that no longer holds
    bh.set_max_timestamp(data, p, size, batch, False, 9_000)
    assert data[p + 21:p + 23] == b"\x80\x11"  # a no-op leaves the bytes (and the bad CRC) alone
    data = bytearray(original)
    data[p + 21:p + 23] = b"\x80\x11"
    bh.set_max_timestamp(data, p, size, batch, True, 12_345)
    assert struct.unpack_from(">h", data, p + 21)[0] == 0x19  # recomputed: gzip, LogAppendTime, transactional
    assert struct.unpack_from(">q", data, p + 35)[0] == 12_345 and _crc_ok(data, p)
    assert data[:p] == original[:p]
    (after,) = list(read_batches(bytes(data[p:])))
    bh.set_max_timestamp(data, p, size, after, False, 12_345)  # the type alone changes
    assert struct.unpack_from(">h", data, p + 21)[0] == 0x11 and _crc_ok(data, p)
    data, batch = _v2(prefix=p, delete_horizon_ms=77)
    bh.set_max_timestamp(data, p, len(data) - p, batch, False, 1)
    assert struct.unpack_from(">h", data, p + 21)[0] == 0x40 and _crc_ok(data, p)
    data, batch = _v2(prefix=p)
    bh.set_max_timestamp(data, p, len(data) - p, batch, False, 9_001)  # the time alone changes
    assert struct.unpack_from(">q", data, p + 35)[0] == 9_001 and struct.unpack_from(">h", data, p + 21)[0] == 0
    assert _crc_ok(data, p) and data[:p] == b"\xee" * p


def test_batch_header_empty_header_keeps_what_the_cleaner_needs():
    from kcodec import read_batches
    from kcodec.records import batch_header as bh

    _, batch = _v2(producer_id=8, producer_epoch=3, base_sequence=40, is_transactional=True,
                   partition_leader_epoch=6, compression="gzip", timestamp_type=1, log_append_time=4_242)
    empty = bh.empty_header(batch)
    assert len(empty) == 61
    assert bh.HEADER.unpack(empty)[:4] == (100, 49, 6, 2)
    fields = bh.HEADER.unpack(empty)
    assert fields[5:] == (0x18, 4, -1, 4_242, 8, 3, 40, 0)
    (read,) = list(read_batches(empty))
    assert read.is_valid() and read.record_count == 0 and read.last_offset == 104


def test_increment_sequence_wraps_as_java_does():
    from kcodec.records.batch_header import increment_sequence

    m = 2 ** 31 - 1
    assert [increment_sequence(5, 3), increment_sequence(m - 1, 1), increment_sequence(m, 1)] == [8, m, 0]
    assert [increment_sequence(m, 2), increment_sequence(m - 2, 5), increment_sequence(0, m)] == [1, 2, m]


def _v1(prefix: int = 0, magic: int = 1, **kw):
    from kcodec import read_batches
    from kcodec.records import LegacyRecordBatchBuilder

    b = LegacyRecordBatchBuilder(magic, base_offset=50, **kw)
    for i, ts in enumerate((5_000, 9_000)):
        b.append(b"k", b"v" * 30, ts, offset=50 + 3 * i)
    data = bytearray(b"\xee" * prefix + bytes(b.build()))
    batches = list(read_batches(bytes(data[prefix:])))
    return data, batches


def test_message_header_codec_ids():
    from kcodec import CompressionType
    from kcodec.records.message_header import compression_of

    assert [compression_of(i) for i in range(8)] == [
        CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4,
        CompressionType.ZSTD, 5, 6, 7]


def test_message_header_reads_and_changes_in_place():
    from kcodec.records import message_header as mh

    data, (first, second) = _v1(prefix=5)
    assert mh.last_offset_and_max_timestamp(data, 5, 1) == (50, 5_000)
    second_at = 5 + second.position
    assert mh.last_offset_and_max_timestamp(data, second_at, 1) == (53, 9_000)
    assert mh.last_offset_and_max_timestamp(data, 5, 0) == (50, -1)
    original = bytes(data)
    data[5 + 12:5 + 16] = b"\0\0\0\0"
    mh.seal(data, 5, first.size_in_bytes)
    assert data == original
    mh.set_last_offset(data, second_at, 0x0102030405)
    assert struct.unpack_from(">q", data, second_at)[0] == 0x0102030405 and _crc_ok(data, 5)
    assert data[second_at + 8:] == original[second_at + 8:] and data[:second_at] == original[:second_at]


def test_message_header_set_max_timestamp():
    from kcodec.records import message_header as mh

    p = 40  # after filler bytes, so that a field read or written off its place shows
    data, (v0,) = _v1(prefix=p, magic=0, compression="gzip")
    original = bytes(data)
    mh.set_max_timestamp(data, p, len(data) - p, v0, True, 1)  # v0 has no timestamp to set
    assert data == original
    data, (wrapper,) = _v1(prefix=p, compression="gzip")
    original = bytes(data)
    size = len(data) - p
    mh.set_max_timestamp(data, p, size, wrapper, False, 9_000)  # unchanged: not rewritten
    assert data == original
    mh.set_max_timestamp(data, p, size, wrapper, True, 9_000)  # the type alone changes
    assert data[p + 17] == 0x09 and struct.unpack_from(">q", data, p + 18)[0] == 9_000 and _crc_ok(data, p)
    data = bytearray(original)
    mh.set_max_timestamp(data, p, size, wrapper, False, 123)  # the time alone changes
    assert data[p + 17] == 0x01 and struct.unpack_from(">q", data, p + 18)[0] == 123 and _crc_ok(data, p)
    assert data[p + 26:] == original[p + 26:] and data[:p] == original[:p]
    data = bytearray(original)
    data[p + 17] |= 0x40  # an attribute bit Kafka does not define, kept by a no-op, cleared by a rewrite
    mh.seal(data, p, size)
    kept = bytes(data)
    mh.set_max_timestamp(data, p, size, wrapper, False, 9_000)
    assert data == kept
    mh.set_max_timestamp(data, p, size, wrapper, False, 9_001)
    assert data[p + 17] == 0x01 and _crc_ok(data, p)
