"""Hostile and damaged v2 input: only kcodec errors (or Kafka's leniency), never a crash or a hang."""
from __future__ import annotations

import struct
import tracemalloc

import pytest

from kcodec import KcodecError, RecordBatchBuilder, read_batches
from kcodec._native.primitives import crc32c, encode_varint, encode_varlong
from kcodec.errors import CorruptCompressedDataError, CorruptRecordError, InvalidRecordError, UnsupportedCodecError

T0 = 1_700_000_000_000
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]


def small_batch(codec="none") -> bytes:
    b = RecordBatchBuilder(compression=codec, base_offset=10, producer_id=3, producer_epoch=1, base_sequence=0)
    b.append(b"key-1", b"value-1", T0, headers=[("h", b"x")])
    b.append(None, b"", T0 + 1)
    return b.build()


def decode_all(data, validate=True):
    out = []
    for batch in read_batches(data, validate=validate):
        out.extend(batch.records())
    return out


def fix_crc(buf: bytearray) -> bytes:
    struct.pack_into(">I", buf, 17, crc32c(memoryview(buf)[21:]))
    return bytes(buf)


@pytest.mark.parametrize("codec", CODECS)
def test_truncation_at_every_byte(codec):
    data = small_batch(codec)
    for cut in range(len(data)):
        assert decode_all(data[:cut]) == []  # a partial batch is ignored, as Kafka does
        if cut:
            with pytest.raises(CorruptRecordError):
                list(read_batches(data[:cut], strict=True))


@pytest.mark.parametrize("codec", CODECS)
def test_every_single_byte_flip(codec):
    data = small_batch(codec)
    expected = decode_all(data)
    for pos in range(len(data)):
        for mask in (0x01, 0x80, 0xFF):
            buf = bytearray(data)
            buf[pos] ^= mask
            bad = bytes(buf)
            if pos >= 21:
                with pytest.raises(CorruptRecordError, match="Record is corrupt"):
                    decode_all(bad)
            try:
                got = decode_all(bad)
            except KcodecError:
                continue
            if 0 <= pos < 8 or 12 <= pos < 16:
                # baseOffset and partitionLeaderEpoch are outside the CRC (Kafka accepts these)
                assert [(r.key, r.value) for r in got] == [(r.key, r.value) for r in expected]
            # Past the CRC check: decoding without validation must still only raise kcodec errors
            try:
                decode_all(bad, validate=False)
            except KcodecError:
                pass


HOSTILE_ERRORS = (InvalidRecordError, CorruptRecordError, CorruptCompressedDataError, UnsupportedCodecError)


@pytest.mark.parametrize("codec", CODECS)
def test_flips_with_recomputed_crc_decode_or_fail_cleanly(codec):
    data = small_batch(codec)
    # where the first record's key and value bytes and the header's value byte lie, uncompressed
    fields = {} if codec != "none" else {
        "key": range(data.index(b"key-1"), data.index(b"key-1") + 5),
        "value": range(data.index(b"value-1"), data.index(b"value-1") + 7),
        "header": range(data.index(b"h\x02x") + 2, data.index(b"h\x02x") + 3)}
    failures = 0
    for pos in range(21, len(data)):
        for mask in (0x01, 0x40, 0xFF):
            buf = bytearray(data)
            buf[pos] ^= mask
            bad = fix_crc(buf)
            try:
                got = decode_all(bad)
            except HOSTILE_ERRORS as exc:
                assert 0 <= exc.position <= len(bad), (pos, mask, exc)   # len: an early end of data
                failures += 1
                continue
            if codec != "none":
                continue
            # a flip inside a key, value or header value changes exactly that byte; anywhere else,
            # what decodes holds the keys and values unchanged
            want = [[b"key-1", b"value-1"], [None, b""]]
            for i, name in enumerate(("key", "value")):
                if pos in fields[name]:
                    changed = bytearray(want[0][i])
                    changed[pos - fields[name].start] ^= mask
                    want[0][i] = bytes(changed)
            # the second record's key length (-1, null) and value length (0): a flip to another
            # one-byte varint makes that field null (any negative length) or empty
            for i, at in enumerate((len(data) - 3, len(data) - 2)):
                if pos == at:
                    n = (bad[pos] >> 1) ^ -(bad[pos] & 1)
                    want[1][i] = None if n < 0 else b""
            assert [[r.key, r.value] for r in got] == want, (pos, mask)
            if pos in fields["header"]:
                assert list(got[0].headers) == [("h", bytes([ord("x") ^ mask]))]
    assert failures > 0


def _record(body: bytes) -> bytes:
    return encode_varint(len(body)) + body


def _batch_with(records: bytes, count: int) -> bytes:
    b = RecordBatchBuilder()
    b.append(b"k", b"v", T0)
    buf = bytearray(b.build()[:61] + records)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    struct.pack_into(">i", buf, 57, count)
    return fix_crc(buf)


def test_record_level_errors_with_kafkas_messages():
    base = b"\x00" + encode_varlong(0) + encode_varint(0)
    good = _record(base + encode_varint(1) + b"k" + encode_varint(1) + b"v" + encode_varint(0))
    assert len(decode_all(_batch_with(good, 1))) == 1
    cases = [
        (_record(base + encode_varint(-2) + encode_varint(-1) + encode_varint(0)), None),  # key -2 = null
        (_record(base + encode_varint(-1) + encode_varint(-1) + encode_varint(-3)),
         "Found invalid number of record headers -3"),
        (_record(base + encode_varint(-1) + encode_varint(-1) + encode_varint(50)),
         "Found invalid number of record headers. 50 is larger"),
        (_record(base + encode_varint(-1) + encode_varint(-1) + encode_varint(1) + encode_varint(-1)),
         "Invalid negative header key size -1"),
        (encode_varint(200) + base, "Invalid record size: expected 200 bytes"),
        (encode_varint(4) + base + encode_varint(-1) + encode_varint(-1) + encode_varint(0),
         "expected to read 4 bytes in record payload, but instead read 6"),
        (encode_varint(7) + base[:1] + bytes([0x80] * 10), "Found invalid record structure"),  # varlong too long
        (_record(base + bytes([0x81, 0x80, 0x80, 0x80, 0x80, 0x01]) + encode_varint(-1) + encode_varint(0)),
         "Found invalid record structure"),  # 6-byte varint
        (_record(base + encode_varint(100) + b"kk"), "Found invalid record structure"),
    ]
    for records, message in cases:
        data = _batch_with(records, 1)
        if message is None:
            assert decode_all(data)[0].key is None
            continue
        with pytest.raises(InvalidRecordError, match=message.replace("(", r"\(").replace(".", r"\.")) as info:
            decode_all(data)
        assert info.value.position is not None and info.value.position >= 61
        assert info.value.batch_offset == 0


def test_overlong_but_legal_varints_accepted():
    body = b"\x00" + b"\x80\x00" + b"\x80\x00" + encode_varint(-1) + encode_varint(-1) + encode_varint(0)
    assert decode_all(_batch_with(_record(body), 1))[0].offset == 0


def test_absurd_counts_and_lengths_stay_bounded():
    tracemalloc.start()
    for count in (2 ** 31 - 1, 10 ** 9):
        with pytest.raises(InvalidRecordError):
            decode_all(_batch_with(b"", count))
    with pytest.raises(InvalidRecordError):
        decode_all(_batch_with(encode_varint(2 ** 31 - 1), 1))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 50 * 1024 * 1024


@pytest.mark.parametrize("count", [2 ** 31 - 1, 2 ** 31 - 2, 2 ** 28, 10 ** 9])
def test_absurd_counts_bound_the_index_and_columns(count):
    # One good record under a count it cannot hold: the index and the Arrow
    # columns are sized by the data, not by the count, and the error is
    # Kafka's premature EOF after the first record.
    import kcodec
    data = _batch_with(_record(b"\x00" + encode_varlong(0) + encode_varint(0) + encode_varint(-1)
                               + encode_varint(-1) + encode_varint(0)), count)
    tracemalloc.start()
    for convert in (lambda: next(read_batches(data)).scan(), lambda: kcodec.to_arrow(data),
                    lambda: kcodec.to_arrow(data, validate=False, include_control=True)):
        with pytest.raises(InvalidRecordError, match="premature EOF") as info:
            convert()
        assert info.value.position == 61 + 7
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 10 * 1024 * 1024


_LATER_BAD_COUNT = """
import resource, struct
import kcodec
good = []
for i in range(80):
    b = kcodec.RecordBatchBuilder(base_offset=i * 10)
    for _ in range(10):
        b.append(b"k", b"v" * 100, 1700000000000)
    good.append(b.build())
bad = bytearray(good[0])
struct.pack_into(">i", bad, 57, 2 ** 31 - 1)  # the CRC is left stale
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
try:
    kcodec.to_arrow(b"".join(good) + bytes(bad))
except kcodec.CorruptRecordError as e:
    assert "Record is corrupt" in str(e), e
else:
    raise AssertionError("no error")
print((resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024)
"""


def test_a_later_batchs_absurd_count_does_not_size_the_columns():
    # to_arrow sizes its columns from the batches' record counts once 64 KiB
    # are in; a corrupt count further on, whose CRC is not checked yet, must
    # not make it reserve (and zero) memory for that many rows.  The columns
    # are malloc'ed, out of tracemalloc's sight: a child process measures RSS.
    import subprocess
    import sys
    out = subprocess.run([sys.executable, "-c", _LATER_BAD_COUNT], capture_output=True, text=True, check=True)
    assert int(out.stdout) < 64, out.stdout  # MiB; 1 GiB before counts were bounded by batch sizes


#: A 522-byte zstd batch (CRC stale) whose frame declares no content size, a 2 MiB window and one
#: 449-byte compressed block whose sequences claim more than the block can hold: libzstd answers
#: "Destination buffer is too small" into any buffer, the 128 KiB its blocks can decode to included.
ZSTD_TOO_SMALL_EVERYWHERE = bytes.fromhex(
    "0000000000000800000001feffffffff0201e4097600040000001d0000018bcfe568000000018bcff37555ff"
    "ffffffffffffffffffffffffff0000001e28b52ffd00580c0e0096d9533a3053920e33c51bd67f10f9c64d0f"
    "d8d85a4a62fec5595ebbba640d841b5518d0283c81f537acdc52ee2465392d3fffac5b69bda9c84f12d616a7"
    "45004400460067755b4b777737132605246801e233ead2751549b0d1c1e7b52a931ecaf039aa5a22c9051341"
    "56f3eb00708871c2e75c689649c3e94023165478f0d934614cc3e940b64f02185848f846bb45ccc643c3b7c2"
    "53b543b0d191e23b35352f3a60b232c337eaa5260da7135d02acf8e15ba523de16c8d4aaf3e11d106f11c8dc"
    "50f1d970ad341d00793e0e6b9a2ec2a56584ef84a9ae0e42051c2abfaa740f0ca0f8e0fb375b070c3c45709d"
    "36d02024876f45c4af2e2019f2c2f733dd2e939212447c5b66a6a560c30e16be95296e66024ef5cd74281796"
    "1ebe35adddae8d8c16be31d3d62f515660f84ecbbcbaab8b1464617461ea287c78acbc5d3f2b09e1c3b7deda"
    "fd69369de864028814dfa7023c20404392e601253c7c4457a040f73b2c36bc628757e1c859ed84317c11b204"
    "0c4b08afd8c882167ba088bb4acb5404412ce0be13ebdf77b00afcfb0db682acfb652a0caeb89ddb8bf058af"
    "f88415143e843b206178622ffc2731421c9ed8e113132ec024041194d80bbf49b2f12f010000"
)

_EVERY_READ_PATH = """
import resource, sys
import kcodec
from kcodec.log import LogSegment, read_arrow

data = bytes.fromhex(sys.argv[1])
segment = sys.argv[2]
with open(segment, "wb") as f:
    f.write(data)
z = kcodec.get_codec("zstd")  # the library and a context loaded, and Arrow's conversion run once
warm = kcodec.RecordBatchBuilder(compression="zstd")
warm.append(b"k", b"v" * 1000, 0)
kcodec.to_arrow(warm.build())
paths = {
    "to_arrow copying": lambda: kcodec.to_arrow(data, validate=False, use_threads=False),
    "to_arrow threads": lambda: kcodec.to_arrow(data, validate=False),
    "to_arrow views": lambda: kcodec.to_arrow(data, validate=False, use_threads=False, views=True),
    "records": lambda: [b.records() for b in kcodec.read_batches(data, validate=False)],
    "iteration": lambda: [list(b) for b in kcodec.read_batches(data, validate=False)],
    "scan": lambda: [b.scan() for b in kcodec.read_batches(data, validate=False)],
    "codec": lambda: z.decompress(data[61:]),
    "segment batches": lambda: [b.records() for b in LogSegment(segment).batches(validate=False)],
    "segment read_arrow": lambda: read_arrow(segment, validate=False).read_all(),
    "segment read_arrow views": lambda: read_arrow(segment, validate=False, views=True).read_all(),
}
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
for name, read in paths.items():
    try:
        read()
    except kcodec.errors.CorruptCompressedDataError as e:
        message = e.message
    else:
        message = "no error"
    print(name, (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) // 1024, message, sep="\t")
"""


def test_a_frame_too_small_for_any_buffer_stays_within_its_blocks_bound(tmp_path):
    # Each read path grew its output while libzstd said "too small", up to its limit: copying
    # to_arrow peaked 454 MB above the process before.  The blocks can decode to 128 KiB at most,
    # so no buffer past that is asked for.  ru_maxrss (KiB, Linux) counts the malloc'ed columns
    # that tracemalloc does not see, in a child process of its own.
    import subprocess
    import sys
    if sys.platform != "linux":
        pytest.skip("ru_maxrss is in KiB on Linux only")
    out = subprocess.run([sys.executable, "-c", _EVERY_READ_PATH, ZSTD_TOO_SMALL_EVERYWHERE.hex(),
                          str(tmp_path / "00000000000000002048.log")], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    rows = [line.split("\t") for line in out.stdout.splitlines()]
    assert [name for name, _, _ in rows] == [
        "to_arrow copying", "to_arrow threads", "to_arrow views", "records", "iteration", "scan", "codec",
        "segment batches", "segment read_arrow", "segment read_arrow views"]
    for name, grown_mb, message in rows:
        assert message == "zstd: Destination buffer is too small", (name, message)
        assert int(grown_mb) < 16, (name, grown_mb, out.stdout)  # MiB over the process before the reads


def test_compressed_payload_that_lies_about_its_size():
    from kcodec import LimitExceededError, get_codec
    bomb = get_codec("zstd").compress(b"\0" * (64 * 1024 * 1024))
    b = RecordBatchBuilder()
    b.append(b"k", b"v", T0)
    buf = bytearray(b.build()[:61] + bomb)
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    buf[22] = (buf[22] & 0xF8) | 4
    data = fix_crc(buf)
    with pytest.raises(LimitExceededError):
        for batch in read_batches(data, max_decompressed_size=1024 * 1024):
            batch.records()


def test_wrong_magic():
    buf = bytearray(small_batch())
    buf[16] = 3
    with pytest.raises(CorruptRecordError, match="Invalid magic found in record: 3"):
        decode_all(bytes(buf))


def _compressed_batch_with(records: bytes, count: int, codec: str, position: int = 0) -> bytes:
    from kcodec import CompressionType, get_codec
    payload = get_codec(codec).compress(records)
    buf = bytearray(_batch_with(b"", count))
    buf[22] = (buf[22] & 0xF8) | int(CompressionType.of(codec))
    buf += payload
    struct.pack_into(">i", buf, 8, len(buf) - 12)
    return b"\0" * position + fix_crc(buf)


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "snappy"])
def test_compressed_batches_follow_kafkas_stream_reader(codec):
    # Kafka reads a compressed batch's records from a stream (DefaultRecord.readFrom(InputStream)),
    # whose error texts differ from the uncompressed reader's.
    base = b"\x00" + encode_varlong(0) + encode_varint(0)
    good = _record(base + encode_varint(1) + b"k" + encode_varint(1) + b"v" + encode_varint(0))
    cases = [
        (good, 1, None),
        (good + b"\x80", 2, "Incorrect declared batch size, premature EOF reached"),  # cut length varint
        (good, 2, "Incorrect declared batch size, premature EOF reached"),
        (good + encode_varint(-3), 2, "Incorrect declared batch size, premature EOF reached"),
        (good + encode_varint(40) + base, 2,
         "Invalid record size: expected 40 bytes in record payload, but the record payload reached EOF."),
        # a key longer than its record: bounded by the record in the stream reader
        (_record(base + encode_varint(5) + b"k" + encode_varint(-1) + encode_varint(0)) + b"xxxxxxxx", 1,
         "Found invalid record structure"),
        (good + good, 1, "Incorrect declared batch size, records still remaining in file"),
    ]
    for records, count, message in cases:
        data = _compressed_batch_with(records, count, codec, position=7)
        if message is None:
            assert decode_all(data[7:])[0].key == b"k"
            continue
        for getter in (lambda b: b.records(), lambda b: list(b), lambda b: b.scan()):
            with pytest.raises(InvalidRecordError) as info:
                for batch in read_batches(memoryview(data)[7:]):
                    getter(batch)
            assert info.value.message == message
            assert info.value.batch_offset == 0 and info.value.position == 0


def test_uncompressed_cut_length_prefix_is_premature_eof():
    base = b"\x00" + encode_varlong(0) + encode_varint(0)
    good = _record(base + encode_varint(-1) + encode_varint(-1) + encode_varint(0))
    with pytest.raises(InvalidRecordError, match="premature EOF reached") as info:
        decode_all(_batch_with(good + b"\x80", 2))
    assert info.value.position == 61 + len(good)


def test_errors_from_iteration_and_scan_carry_absolute_positions():
    base = b"\x00" + encode_varlong(0) + encode_varint(0)
    bad = _record(base + encode_varint(-1) + encode_varint(-1) + encode_varint(-3))
    data = small_batch() + _batch_with(bad, 1)
    start = len(small_batch())
    batches = list(read_batches(data))
    for getter in (lambda b: b.records(), lambda b: list(b), lambda b: b.scan()):
        with pytest.raises(InvalidRecordError, match="Found invalid number of record headers -3") as info:
            getter(batches[1])
        assert info.value.position == start + 61


def _segment_with_corrupt_gzip_second_batch() -> bytes:
    """A 616-byte batch, then a gzip batch (payload from byte 677) whose deflate data's first byte is flipped."""
    first = RecordBatchBuilder(base_offset=0)
    for i in range(5):
        first.append(b"k%d" % i, b"v" * 100, T0 + i)
    second = RecordBatchBuilder(compression="gzip", base_offset=5)
    for i in range(5):
        second.append(b"k%d" % i, b"w" * 100 + bytes([i]), T0 + i)
    bad = bytearray(second.build())
    bad[61 + 10] ^= 0xFF  # past the 10-byte gzip header
    return first.build() + fix_crc(bad)


def test_decompression_errors_name_the_payloads_byte_in_the_file(tmp_path, capsys):
    # The codec names byte 10 of the payload; the file's byte is the payload's start (677) plus
    # that, not the batch's start (616) plus it, which lies in the batch header.
    import kcodec
    from kcodec.cli import main
    from kcodec.log import LogSegment, read_arrow

    data = _segment_with_corrupt_gzip_second_batch()
    assert len(data) == 754 and data[616 + 61:616 + 61 + 3] == b"\x1f\x8b\x08"
    with pytest.raises(CorruptCompressedDataError) as codec_error:
        kcodec.get_codec("gzip").decompress(data[677:])
    assert codec_error.value.position == 10
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(data)
    paths = {
        "records": lambda: [b.records() for b in read_batches(data)],
        "iteration": lambda: [list(b) for b in read_batches(data)],
        "scan": lambda: [b.scan() for b in read_batches(data)],
        "to_arrow": lambda: kcodec.to_arrow(data, use_threads=False),
        "to_arrow views": lambda: kcodec.to_arrow(data, views=True),
        "segment batches": lambda: [b.records() for b in LogSegment(log).batches()],
        "segment read_arrow": lambda: read_arrow(log).read_all(),
    }
    for name, read in paths.items():
        with pytest.raises(CorruptCompressedDataError) as info:
            read()
        assert (name, info.value.position, info.value.batch_offset) == (name, 687, 5)
    assert main(["dump", "--deep-iteration", str(log)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "at byte 687, in the batch with base offset 5" in err, err


def test_kafkas_lenient_varints_and_record_fields():
    # dropped high bits of a 5-byte varint / 10-byte varlong,
    # ignored record attributes, negative offset and timestamp deltas.
    five_byte_zero = bytes([0x80, 0x80, 0x80, 0x80, 0x70])
    ten_byte_zero = bytes([0x80] * 9 + [0x7E])
    body = b"\xff" + ten_byte_zero + five_byte_zero + encode_varint(-1) + encode_varint(-1) + encode_varint(0)
    rec = decode_all(_batch_with(_record(body), 1))[0]
    assert rec.offset == 0 and rec.timestamp == T0
    body = b"\x00" + encode_varlong(-7) + encode_varint(-5) + encode_varint(-1) + encode_varint(-1) + encode_varint(0)
    buf = bytearray(_batch_with(_record(body), 1))
    struct.pack_into(">q", buf, 0, 100)  # baseOffset is outside the CRC
    rec = decode_all(bytes(buf))[0]
    assert rec.offset == 95 and rec.timestamp == T0 - 7
    too_long = bytes([0x80] * 10 + [0x01])  # an 11-byte varlong
    body = b"\x00" + too_long + encode_varint(0) + encode_varint(-1) + encode_varint(-1) + encode_varint(0)
    with pytest.raises(InvalidRecordError, match="Found invalid record structure"):
        decode_all(_batch_with(_record(body), 1))


def test_batch_near_max_message_bytes_round_trips():
    b = RecordBatchBuilder(write_limit=1048588)
    value = b"x" * 1000
    while b.has_room_for(b"key", value, timestamp=T0):
        b.append(b"key", value, T0)
    data = bytes(b.build())
    assert 1048588 - 1100 < len(data) <= 1048588
    assert sum(1 for batch in read_batches(data) for _ in batch) == b.record_count


@pytest.mark.parametrize("codec", CODECS)
def test_shortened_batches_with_consistent_framing_fail_cleanly(codec):
    # Cut the records region but fix batchLength and CRC, so only the record decoders see the damage.
    data = small_batch(codec)
    for cut in range(61, len(data)):
        buf = bytearray(data[:cut])
        struct.pack_into(">i", buf, 8, cut - 12)
        bad = fix_crc(buf)
        for getter in (lambda b: b.records(), lambda b: list(b), lambda b: b.scan()):
            with pytest.raises(KcodecError):
                for batch in read_batches(bad):
                    getter(batch)
