"""RecordBatchBuilder and RecordBatch behaviour (``DefaultRecordBatch``, ``DefaultRecord``)."""
from __future__ import annotations

import dataclasses
import struct

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kcodec
from kcodec import (
    CompressionType,
    RecordBatchBuilder,
    RecordBuilderError,
    TimestampType,
    UnsupportedCodecError,
    read_batches,
)
from kcodec.errors import CorruptRecordError, InvalidRecordError
from kcodec.records import BufferPool, ControlRecordType, EndTransactionMarker, LegacyRecordBatchBuilder
from kcodec.records.control import control_key, parse_control_key
from oracle_util import load_case

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def one(data):
    (batch,) = list(read_batches(data))
    return batch


def test_null_and_empty_stay_distinct():
    b = RecordBatchBuilder()
    b.append(None, None, T0)
    b.append(b"", b"", T0)
    b.append(b"k", None, T0, headers=[("h", None), ("e", b""), ("h", b"x")])
    recs = one(b.build()).records()
    assert [(r.key, r.value) for r in recs] == [(None, None), (b"", b""), (b"k", None)]
    assert recs[2].headers == (("h", None), ("e", b""), ("h", b"x"))


def test_offsets_with_gaps_and_must_increase():
    b = RecordBatchBuilder(base_offset=100)
    b.append(b"a", b"1", T0)
    b.append(b"b", b"2", T0, offset=105)
    with pytest.raises(RecordBuilderError, match="Offsets must increase"):
        b.append(b"c", b"3", T0, offset=105)
    batch = one(b.build())
    assert [r.offset for r in batch] == [100, 105]
    assert batch.last_offset == 105 and batch.record_count == 2


def test_timestamps_and_log_append_time():
    b = RecordBatchBuilder()
    b.append(b"a", b"1", T0 + 5)
    b.append(b"b", b"2", T0 - 1000)
    batch = one(b.build())
    assert batch.base_timestamp == T0 + 5 and batch.max_timestamp == T0 + 5
    assert [r.timestamp for r in batch] == [T0 + 5, T0 - 1000]
    b = RecordBatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 999)
    b.append(b"a", b"1", T0)
    b.append(b"b", b"2", T0 + 1)
    batch = one(b.build())
    assert batch.timestamp_type == TimestampType.LOG_APPEND_TIME
    assert [r.timestamp for r in batch] == [T0 + 999, T0 + 999]
    with pytest.raises(RecordBuilderError):
        RecordBatchBuilder(timestamp_type=TimestampType.LOG_APPEND_TIME)
    with pytest.raises(RecordBuilderError, match="Invalid negative timestamp"):
        RecordBatchBuilder().append(b"a", b"1", -5)
    b = RecordBatchBuilder()
    b.append(b"a", b"1", -1)
    assert one(b.build()).records()[0].timestamp == -1


def test_delete_horizon():
    b = RecordBatchBuilder(delete_horizon_ms=T0 + 86_400_000)
    b.append(b"a", None, T0)
    batch = one(b.build())
    assert batch.delete_horizon_ms == T0 + 86_400_000 == batch.base_timestamp
    assert batch.records()[0].timestamp == T0
    assert batch.max_timestamp == T0


def test_producer_fields_and_sequence_wrap():
    b = RecordBatchBuilder(producer_id=77, producer_epoch=3, base_sequence=2147483646,
                           is_transactional=True, partition_leader_epoch=9)
    for i in range(3):
        b.append(b"k", b"v", T0)
    batch = one(b.build())
    assert (batch.producer_id, batch.producer_epoch, batch.base_sequence) == (77, 3, 2147483646)
    assert batch.is_transactional and not batch.is_control and batch.partition_leader_epoch == 9
    assert [r.sequence for r in batch] == [2147483646, 2147483647, 0]
    assert batch.last_sequence == 0


@pytest.mark.parametrize("base_sequence, last, records", [
    (-2, 0, [-1, -1, -1]),  # only -1 is "no sequence" for the batch; records of a negative base have none
    (-2147483648, -2147483646, [-1, -1, -1]),
    (2147483647, 1, [2147483647, 0, 1]),
])
def test_sequences_of_any_base_follow_java(base_sequence, last, records):
    from kcodec._native.primitives import crc32c
    from oracle_util import oracle_available, oracle_verify
    b = RecordBatchBuilder(producer_id=5, producer_epoch=0, base_sequence=0)
    for _ in range(3):
        b.append(b"k", b"v", T0)
    buf = bytearray(b.build())
    struct.pack_into(">i", buf, 53, base_sequence)
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    batch = one(bytes(buf))
    assert (batch.base_sequence, batch.last_sequence) == (base_sequence, last)
    assert [r.sequence for r in batch] == records
    if oracle_available():
        status, doc = oracle_verify(bytes(buf))
        assert status == 0 and doc["batches"][0]["lastSequence"] == last


def test_end_txn_marker_is_javas_78_bytes():
    data, doc, _ = load_case("v2_none_control_commit")
    b = RecordBatchBuilder(base_offset=210, producer_id=1234567890123, producer_epoch=7, is_transactional=True,
                           is_control=True, partition_leader_epoch=3)
    b.append_end_txn_marker(ControlRecordType.COMMIT, 5, timestamp=1700000005000)
    built = b.build()
    assert len(built) == 78 and built == data
    rec = one(built).records()[0]
    assert rec.is_control and rec.control_type == ControlRecordType.COMMIT and rec.coordinator_epoch == 5


def test_control_rules():
    with pytest.raises(RecordBuilderError, match="control batches"):
        RecordBatchBuilder().append_control(ControlRecordType.COMMIT, b"\0\0\0\0\0\0")
    with pytest.raises(RecordBuilderError, match="Control records can only be appended"):
        RecordBatchBuilder(is_control=True).append(b"k", b"v")
    with pytest.raises(RecordBuilderError, match="producerId"):
        RecordBatchBuilder(is_control=True, is_transactional=True).append_end_txn_marker(ControlRecordType.ABORT, 1)
    with pytest.raises(RecordBuilderError, match="transactional"):
        RecordBatchBuilder(is_control=True, producer_id=5).append_end_txn_marker(ControlRecordType.ABORT, 1)


def test_control_record_types_are_kafkas_ids():
    # A control key names its type by ControlRecordType.java's ids; an id Kafka does not know reads as UNKNOWN.
    assert {t.name: t.value for t in ControlRecordType} == {
        "UNKNOWN": -1, "ABORT": 0, "COMMIT": 1, "LEADER_CHANGE": 2, "SNAPSHOT_HEADER": 3,
        "SNAPSHOT_FOOTER": 4, "KRAFT_VERSION": 5, "KRAFT_VOTERS": 6}
    assert parse_control_key(b"\x00\x00\x00\x05") == (ControlRecordType.KRAFT_VERSION, 5)
    assert parse_control_key(b"\x00\x00\x00\x06") == (ControlRecordType.KRAFT_VOTERS, 6)
    assert parse_control_key(b"\x00\x00\x00\x07") == (ControlRecordType.UNKNOWN, 7)
    assert control_key(ControlRecordType.KRAFT_VOTERS, 2) == b"\x00\x02\x00\x06"


def test_control_key_checks_name_the_size_and_version_found():
    with pytest.raises(InvalidRecordError, match=r"^Invalid value size found for end control record key\. "
                                                 r"Must have at least 4 bytes, but found only 0$"):
        parse_control_key(None)
    with pytest.raises(InvalidRecordError, match=r"at least 4 bytes, but found only 3$"):
        parse_control_key(b"\x00\x00\x00")
    with pytest.raises(InvalidRecordError, match=r"^Invalid version found for control record: -1\."):
        parse_control_key(b"\xff\xff\x00\x01")
    # a later key version reads as version 0 does, as Kafka's does
    assert parse_control_key(b"\x00\x03\x00\x01") == (ControlRecordType.COMMIT, 1)


def test_end_txn_marker_bytes_and_value_semantics():
    marker = EndTransactionMarker(ControlRecordType.ABORT, 258)
    assert marker.key() == b"\x00\x00\x00\x00"
    assert marker.value() == b"\x00\x00\x00\x00\x01\x02"  # version 0, epoch 258
    assert EndTransactionMarker.decode(ControlRecordType.ABORT, marker.value()) == marker
    assert EndTransactionMarker(ControlRecordType.COMMIT, 1).key() == b"\x00\x00\x00\x01"
    # frozen: hashable, and usable as a set member or dict key
    assert hash(marker) == hash(EndTransactionMarker(ControlRecordType.ABORT, 258))
    with pytest.raises(dataclasses.FrozenInstanceError):
        marker.coordinator_epoch = 1  # type: ignore[misc]
    with pytest.raises(InvalidRecordError, match=r"^Invalid value size found for end transaction marker\. "
                                                 r"Must have at least 6 bytes, but found only 0$"):
        EndTransactionMarker.decode(ControlRecordType.COMMIT, None)


def test_write_limit_semantics():
    b = RecordBatchBuilder(write_limit=200)
    assert b.has_room_for(b"k", b"x" * 1000)  # the first record always fits
    b.append(b"k", b"x" * 1000, T0)
    assert b.is_full() and not b.has_room_for(b"k", b"v")
    b = RecordBatchBuilder(write_limit=200)
    n = 0
    while b.has_room_for(b"key", b"value-123", timestamp=T0):
        b.append(b"key", b"value-123", T0)
        n += 1
    data = b.build()
    assert len(data) <= 200 and n > 3
    b2 = RecordBatchBuilder(compression="zstd", write_limit=200, estimated_compression_ratio=0.5)
    m = 0
    while b2.has_room_for(b"key", b"value-123", timestamp=T0):
        b2.append(b"key", b"value-123", T0)
        m += 1
    assert m > n
    b2.build()
    assert 0 < b2.compression_ratio < 1


def test_codec_checks():
    with pytest.raises(UnsupportedCodecError):
        RecordBatchBuilder(compression="gzip", level=0)
    with pytest.raises(UnsupportedCodecError):
        RecordBatchBuilder(compression="brotli")
    with pytest.raises(UnsupportedCodecError):
        kcodec.batch_builder(magic=1, compression="zstd")
    with pytest.raises(RecordBuilderError, match="headers"):
        kcodec.batch_builder(magic=1).append(b"k", b"v", T0, headers=[("a", b"b")])
    assert isinstance(kcodec.batch_builder(magic=0), LegacyRecordBatchBuilder)
    with pytest.raises(RecordBuilderError, match="Idempotent"):
        kcodec.batch_builder(magic=1, producer_id=4)
    with pytest.raises(RecordBuilderError):
        RecordBatchBuilder().build()


def test_append_many_and_numpy_inputs():
    keys = np.array([b"a", None, b"c"], dtype=object)
    b = RecordBatchBuilder()
    assert b.append_many(keys, [b"1", b"2", b"3"], timestamps=np.array([T0, T0 + 1, T0 + 2]),
                         headers=[None, [("h", b"v")], None]) == 3
    recs = one(b.build()).records()
    assert [(r.key, r.value, r.timestamp) for r in recs] == [(b"a", b"1", T0), (None, b"2", T0 + 1),
                                                             (b"c", b"3", T0 + 2)]
    b = RecordBatchBuilder()
    b.append(np.frombuffer(b"key", np.uint8), memoryview(b"value"), T0)
    assert one(b.build()).records()[0].key == b"key"


def test_append_many_lists_and_iterables_give_the_same_batch():
    keys = [b"k%d" % i if i % 3 else None for i in range(50)]
    values = [b"v" * i for i in range(50)]
    stamps = [T0 + i if i % 7 else None for i in range(50)]
    stamps[5] = np.int64(T0 + 5)  # not an int: converted with int(), as on the iterator path
    headers = [[("h", b"%d" % i), ("n", None)] if i % 2 else None for i in range(50)]
    built = []
    for args in ((keys, values, stamps, headers), (tuple(keys), tuple(values), tuple(stamps), tuple(headers)),
                 (iter(keys), (v for v in values), iter(stamps), iter(headers))):
        b = RecordBatchBuilder(base_offset=7, log_append_time=None)
        assert b.append_many(*args) == 50
        built.append(bytes(b.build()))
    # records without a timestamp take the time of the call, so compare everything else
    recs = [one(x).records() for x in built]
    assert [(r.offset, r.key, r.value, r.headers) for r in recs[0]] == \
        [(r.offset, r.key, r.value, r.headers) for r in recs[1]] == \
        [(r.offset, r.key, r.value, r.headers) for r in recs[2]]
    assert [r.timestamp for r in recs[0] if r.offset % 7 != 0] == [T0 + i for i in range(50) if i % 7]
    b = RecordBatchBuilder()
    assert b.append_many(keys[:3], values[:5]) == 3  # as many as keys and values both have


@pytest.mark.parametrize("listed", [True, False])
def test_append_many_names_a_short_sequence(listed):
    keys, values = [b"a", b"b", b"c"], [b"1", b"2", b"3"]
    for kw, name in (({"timestamps": [T0, T0 + 1]}, "timestamps"), ({"headers": [(), ()]}, "headers")):
        b = RecordBatchBuilder()
        if not listed:
            kw = {k: iter(v) for k, v in kw.items()}
        with pytest.raises(RecordBuilderError, match=f"{name} has only 2 items"):
            b.append_many(keys if listed else iter(keys), values, **kw)
        assert len(one(b.build()).records()) == 2  # the records before it stay appended


def test_append_many_survives_lists_changed_while_appending():
    # Keys and values made at run time, so that clearing the lists frees them
    # (the AddressSanitizer build with PYTHONMALLOC=malloc catches a use after free).
    def fresh():
        return [bytes([97 + i]) * 3 for i in range(4)], [bytes([48 + i]) * 5 for i in range(4)]

    keys, values = fresh()

    class Shrinking:
        def __init__(self, ts):
            self.ts = ts

        def __int__(self):
            keys.clear()  # runs inside append_many, before record 1
            return self.ts

    b = RecordBatchBuilder()
    assert b.append_many(keys, values, [T0, Shrinking(T0 + 1), T0 + 2, T0 + 3]) == 1
    assert [(r.key, r.timestamp) for r in one(b.build()).records()] == [(b"aaa", T0)]

    keys, values = fresh()

    def clearing_headers():
        keys.clear()
        values.clear()  # while record 1 is being appended
        yield ("h", b"v")

    b = RecordBatchBuilder()
    assert b.append_many(keys, values, [T0] * 4, [(), clearing_headers(), (), ()]) == 2
    assert [(r.key, r.value, r.headers) for r in one(b.build()).records()] == \
        [(b"aaa", b"00000", ()), (b"bbb", b"11111", (("h", b"v"),))]


def test_batch_properties_and_reiteration():
    data, doc, _ = load_case("v2_zstd_json100")
    batch = one(data)
    assert batch.compression == CompressionType.ZSTD and batch.magic == 2
    first = batch.records()
    assert first == batch.records() == list(batch)
    assert bytes(batch.raw) == data and batch.is_valid()


def test_mixed_magic_buffer_and_readers_of_any_buffer(tmp_path):
    v0 = load_case("v0_gzip_json100")[0]
    v2 = load_case("v2_lz4_json100")[0]
    v1 = load_case("v1_snappy_json100")[0]
    data = v0 + v2 + v1
    for buf in (data, bytearray(data), memoryview(data), np.frombuffer(data, np.uint8)):
        assert [b.magic for b in read_batches(buf)] == [0, 2, 1]
    f = tmp_path / "x.log"
    f.write_bytes(data)
    import mmap
    with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert sum(len(b.records()) for b in read_batches(m)) == 300


def test_partial_trailing_batch():
    data = load_case("v2_none_json100")[0]
    cut = data + data[:50]
    assert len(list(read_batches(cut))) == 1
    with pytest.raises(CorruptRecordError) as info:
        list(read_batches(cut, strict=True))
    assert info.value.position == len(data)


def test_count_rules():
    data = bytearray(load_case("v2_none_single")[0])

    def with_count(n):
        buf = bytearray(data)
        struct.pack_into(">i", buf, 57, n)
        return bytes(buf)

    assert next(read_batches(with_count(0), validate=False)).records() == []  # payload never looked at
    with pytest.raises(InvalidRecordError, match="Found invalid record count -1 in magic v2 batch"):
        read_batches(with_count(-1), validate=False).__next__().records()
    with pytest.raises(InvalidRecordError, match="premature EOF"):
        next(read_batches(with_count(2), validate=False)).records()
    two = RecordBatchBuilder()
    two.append(b"a", b"1", T0)
    two.append(b"b", b"2", T0)
    buf = bytearray(two.build())
    struct.pack_into(">i", buf, 57, 1)
    with pytest.raises(InvalidRecordError, match="records still remaining"):
        next(read_batches(bytes(buf), validate=False)).records()


def test_unknown_codec_id():
    buf = bytearray(load_case("v2_none_single")[0])
    buf[22] = (buf[22] & 0xF8) | 6
    batch = next(read_batches(bytes(buf), validate=False))
    with pytest.raises(UnsupportedCodecError, match="Unknown compression type id: 6"):
        batch.compression
    with pytest.raises(UnsupportedCodecError):
        batch.records()


def test_a_batch_of_no_records_with_an_unknown_codec_id_reads_as_empty():
    # DefaultRecordBatch.iterator() answers an empty batch before it looks at the codec; only
    # compressionType() itself refuses the id.  Both readers agree (found by the records fuzz target).
    # a header alone: base offset 9, length 49, magic 2, attributes 7, no records
    empty = struct.pack(">qiibIhiqqqhii", 9, 49, -1, 2, 0, 7, -1, -1, -1, -1, -1, -1, 0)
    batch = next(read_batches(bytes(empty), validate=False))
    assert list(batch) == [] and batch.records() == []
    with pytest.raises(UnsupportedCodecError, match="Unknown compression type id: 7"):
        batch.compression
    assert kcodec.to_arrow(bytes(empty), validate=False).num_rows == 0


def test_an_unvalidated_control_record_with_a_negative_marker_version():
    # The objects give a COMMIT/ABORT record's coordinator epoch, so they parse its value as Kafka's
    # EndTransactionMarker does and refuse a negative version even unvalidated; an unvalidated
    # to_arrow returns the key and value as stored (found by the records fuzz target).
    builder = RecordBatchBuilder(base_offset=4, is_control=True, is_transactional=True, producer_id=7,
                                 producer_epoch=1)
    builder.append_end_txn_marker(ControlRecordType.COMMIT, 6)
    data = bytearray(builder.build())
    marker = data.rindex(b"\x00\x00\x00\x00\x00\x06")  # version 0, coordinator epoch 6
    data[marker:marker + 2] = b"\x80\x00"
    with pytest.raises(InvalidRecordError, match="Invalid version found for end transaction marker: -32768"):
        list(next(read_batches(bytes(data), validate=False)))
    table = kcodec.to_arrow(bytes(data), validate=False, include_control=True)
    assert table.to_pylist()[0]["key"] == b"\x00\x00\x00\x01" and table.to_pylist()[0]["offset"] == 4  # COMMIT
    assert table.to_pylist()[0]["value"] == b"\x80\x00\x00\x00\x00\x06"
    with pytest.raises(CorruptRecordError):  # validated, the changed byte fails the batch's CRC first
        kcodec.to_arrow(bytes(data), validate=True, include_control=True)


def _with_count(data, count):
    buf = bytearray(data)
    struct.pack_into(">i", buf, 57, count)
    return bytes(buf)


def _second_batch_counting_two(codec):
    """A 70-byte batch, then a batch of one record whose header counts two (unvalidated)."""
    lead = RecordBatchBuilder(base_offset=0)
    lead.append(b"a", b"1", T0)
    second = RecordBatchBuilder(base_offset=1, compression=codec)
    second.append(b"k", b"v", T0)
    lead_bytes, second_bytes = lead.build(), _with_count(second.build(), 2)
    return len(lead_bytes), len(second_bytes), list(read_batches(lead_bytes + second_bytes, validate=False))[1]


@pytest.mark.parametrize("getter", ["records", "scan"])
def test_record_errors_name_the_byte_in_the_buffer_or_the_compressed_batch(getter):
    # An uncompressed batch's records lie in the buffer: the error names the byte where the missing
    # record should start (the batch's end).  A compressed batch's records are decompressed, so the
    # error names the batch itself.
    lead, size, batch = _second_batch_counting_two("none")
    with pytest.raises(InvalidRecordError, match="premature EOF reached") as info:
        getattr(batch, getter)()
    assert (info.value.position, info.value.batch_offset) == (lead + size, 1) == (140, 1)
    lead, size, batch = _second_batch_counting_two("gzip")
    with pytest.raises(InvalidRecordError, match="premature EOF reached") as info:
        getattr(batch, getter)()
    assert (info.value.position, info.value.batch_offset) == (lead, 1) == (70, 1)


@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_scan_indexes_every_record_field_of_the_records_region(codec):
    b = RecordBatchBuilder(base_offset=5, compression=codec)
    b.append(b"key", b"value-1", T0, headers=[("h", b"x")])
    b.append(None, b"", T0 + 3)
    data = b.build()
    idx, region = one(data).scan()
    if codec == "none":
        assert bytes(region) == data[61:]
    assert idx.size == len(region)
    assert list(idx.offset_delta) == [0, 1] and list(idx.timestamp_delta) == [0, 3]
    assert list(idx.key_len) == [3, -1] and list(idx.value_len) == [7, 0]
    assert bytes(region[idx.key_pos[0]:idx.key_pos[0] + 3]) == b"key"
    assert bytes(region[idx.value_pos[0]:idx.value_pos[0] + 7]) == b"value-1"
    assert list(idx.header_start) == [0, 1, 1]
    assert bytes(region[idx.hval_pos[0]:idx.hval_pos[0] + idx.hval_len[0]]) == b"x"
    empty_idx, empty_region = next(read_batches(_with_count(data, 0), validate=False)).scan()
    assert empty_region == b"" and len(empty_idx.offset_delta) == 0 and empty_idx.size == 0


def test_check_control_records_reads_control_batches_only():
    lead = RecordBatchBuilder(base_offset=0)
    lead.append(b"a", b"1", T0)
    control = RecordBatchBuilder(base_offset=4, is_control=True, producer_id=7, producer_epoch=1)
    control.append_control(key=b"\x00\x00", value=b"")  # a key of 2 bytes, where Kafka needs 4
    data = lead.build() + control.build()
    batches = list(read_batches(data))
    with pytest.raises(InvalidRecordError, match="at least 4 bytes, but found only 2") as info:
        batches[1].check_control_records()
    assert (info.value.position, info.value.batch_offset) == (70, 4)
    # a data batch passes without its records being read, even records that would not decode
    _, _, broken = _second_batch_counting_two("none")
    assert broken.check_control_records() is None
    with pytest.raises(InvalidRecordError):
        broken.records()


def test_control_records_other_than_markers_have_no_coordinator_epoch():
    b = RecordBatchBuilder(base_offset=4, is_control=True, is_transactional=True, producer_id=7, producer_epoch=1)
    b.append_end_txn_marker(ControlRecordType.COMMIT, 6)
    b.append_control(ControlRecordType.LEADER_CHANGE, b"\x00" * 6)
    got = [(r.offset, r.control_type, r.coordinator_epoch) for r in one(b.build()).records()]
    assert got == [(4, ControlRecordType.COMMIT, 6), (5, ControlRecordType.LEADER_CHANGE, None)]
    lone = RecordBatchBuilder(base_offset=9, is_control=True, producer_id=7, producer_epoch=1)
    lone.append_control(ControlRecordType.SNAPSHOT_HEADER, b"\x00" * 6)
    assert [(r.control_type, r.coordinator_epoch) for r in one(lone.build()).records()] == \
        [(ControlRecordType.SNAPSHOT_HEADER, None)]


def test_batch_repr_and_no_instance_dict():
    lead = RecordBatchBuilder(base_offset=0)
    lead.append(b"a", b"1", T0)
    b = RecordBatchBuilder(base_offset=7, compression="gzip")
    for i in range(3):
        b.append(b"k", b"v%d" % i, T0)
    batch = list(read_batches(lead.build() + b.build()))[1]
    assert repr(batch) == "RecordBatch(base_offset=7, last_offset=9, count=3, compression=1, position=70)"
    with pytest.raises(AttributeError):  # __slots__: millions of batches carry no __dict__
        batch.note = 1


def test_attribute_high_bits_ignored():
    buf = bytearray(load_case("v2_none_single")[0])
    buf[21] = 0xFF  # bits 8-15
    batch = next(read_batches(bytes(buf), validate=False))
    assert batch.compression == CompressionType.NONE and len(batch.records()) == 1


def test_pool_reuse_and_misuse():
    pool = BufferPool()
    outs = []
    for i in range(20):
        b = RecordBatchBuilder(pool=pool)
        b.append(b"k", b"v" * 100, T0)
        out = b.build()
        assert bytes(out) == bytes(one(bytes(out)).raw)
        outs.append(bytes(out))
        out.release()
    assert pool.allocations == 1  # steady state: the same buffer every time
    b = RecordBatchBuilder(pool=pool)
    b.append(b"k", b"v", T0)
    out = b.build()
    view = memoryview(out)
    with pytest.raises(BufferError):
        out.release()  # a live view would see the next batch
    view.release()
    out.release()
    with pytest.raises(kcodec.BufferReleasedError):
        memoryview(out)
    with pytest.raises(kcodec.BufferReleasedError):
        len(out)


headers_st = st.lists(st.tuples(st.text(max_size=8), st.one_of(st.none(), st.binary(max_size=20))), max_size=3)
record_st = st.tuples(st.one_of(st.none(), st.binary(max_size=40)), st.one_of(st.none(), st.binary(max_size=300)),
                      st.one_of(st.just(-1), st.integers(0, 2 ** 45)), headers_st, st.integers(1, 1000))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(record_st, min_size=1, max_size=30), st.sampled_from(CODECS), st.integers(0, 2 ** 50))
def test_property_roundtrip(records, codec, base):
    b = RecordBatchBuilder(compression=codec, base_offset=base)
    offset = base
    expected = []
    for key, value, ts, headers, gap in records:
        b.append(key, value, ts, headers, offset=offset)
        expected.append((offset, ts, key, value, tuple((k, v) for k, v in headers)))
        offset += gap
    batch = one(b.build())
    assert [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in batch] == expected


@pytest.mark.parametrize("codec", ["gzip", "snappy", "lz4", "zstd"])
def test_compressed_records_read_from_a_buffer_that_shrank(codec):
    """A compressed batch is decompressed straight from its source buffer: one that lost the
    batch's end since the batch was made is refused, never read past its end."""
    builder = kcodec.RecordBatchBuilder(compression=codec, base_offset=7)
    for i in range(50):
        builder.append(b"k%d" % i, b"value %d " % i * 20, 1000 + i)
    buf = bytearray(b"\0" * 5) + bytearray(builder.build())
    batch = kcodec.RecordBatch(buf, 5)
    whole = next(iter(kcodec.read_batches(bytes(buf[5:]))))
    assert len(list(batch)) == 50 and batch.records_data() == whole.records_data()
    del buf[len(buf) - 3:]
    with pytest.raises(CorruptRecordError, match="shrank") as info:
        batch.records_data()
    assert info.value.position == 5 and info.value.batch_offset == 7
    with pytest.raises(CorruptRecordError, match="shrank"):
        list(batch)


def test_read_batches_checks_every_magic_s_crc_by_default():
    v2 = RecordBatchBuilder()
    v2.append(b"k", b"value", T0)
    legacy = LegacyRecordBatchBuilder(1)
    legacy.append(b"k", b"value", T0)
    for built in (v2.build(), legacy.build()):
        data = bytearray(built)
        data[-1] ^= 0x01  # the value's last byte, inside the CRC's span
        with pytest.raises(CorruptRecordError, match="corrupt"):
            list(read_batches(bytes(data)))
        (batch,) = read_batches(bytes(data), validate=False)
        assert not batch.is_valid()
