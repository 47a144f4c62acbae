"""CRC-32C, CRC-32 and Kafka's varints (``Crc32C``, ``ByteUtils``)."""
import mmap
import pathlib
import random
import re
import zlib

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from kcodec._native import primitives as p
from kcodec.errors import CorruptRecordError, KcodecError

VARINT_TABLE = [
    (0, "00"), (-1, "01"), (1, "02"), (63, "7e"), (64, "8001"), (-64, "7f"), (-65, "8101"),
    (2147483647, "feffffff0f"), (-2147483648, "ffffffff0f"),
]


def crc32c_reference(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def test_crc_known_answers():
    assert p.crc32c(b"123456789") == 0xE3069283
    assert p.crc32c_portable(b"123456789") == 0xE3069283
    assert p.crc32(b"123456789") == 0xCBF43926
    assert p.crc32c(b"") == 0


def test_crc32c_backend_is_reported():
    assert p.crc32c_backend() in {"vpclmulqdq", "sse4.2", "armv8-crc", "portable"}
    assert p.crc32c_backend() == p.crc32c_backends()[0] or p.crc32c_backend() in p.crc32c_backends()
    assert p.crc32c_backends()[-1] == "portable"
    with pytest.raises(ValueError, match="not available"):
        p.crc32c_using("no-such-backend", b"x")


BACKENDS = p.crc32c_backends()


@pytest.mark.parametrize("n", [0, 1, 7, 8, 9, 63, 64, 4095, 4096, 4097, 100_000])
def test_crc_backends_agree(n):
    data = random.Random(n).randbytes(n)
    assert p.crc32c(data) == p.crc32c_portable(data)
    assert p.crc32(data) == zlib.crc32(data)
    if n < 5000:
        assert p.crc32c(data) == crc32c_reference(data)


# The CRC instruction hashes long inputs in three interleaved lanes of 256 or
# 4096 bytes, joined; the folding backend takes 256-byte then 64-byte steps
# and finishes the last 63 bytes with the instruction.  These lengths sit on
# and around every boundary of both.
@pytest.mark.parametrize("n", [255, 256, 257, 263, 319, 320, 321, 511, 512, 513, 575, 576,
                               767, 768, 769, 775, 776, 1535, 1536, 1544, 12287, 12288, 12289, 12295,
                               12288 + 768, 12288 * 2 + 767, 1 << 20, (1 << 20) + 5])
@pytest.mark.parametrize("start", [0, 1, 5])
@pytest.mark.parametrize("backend", BACKENDS)
def test_crc_lanes_agree_with_the_portable_table(n, start, backend):
    data = memoryview(random.Random(n).randbytes(n + start))[start:]
    expected = p.crc32c_portable(data)
    assert p.crc32c_using(backend, data) == expected
    assert p.crc32c(data) == expected
    half = n // 3
    assert p.crc32c_using(backend, data[half:], p.crc32c_using(backend, data[:half])) == expected


@pytest.mark.parametrize("backend", BACKENDS)
def test_crc_every_length_to_1100(backend):
    data = random.Random(7).randbytes(1100)
    for n in range(1101):
        assert p.crc32c_using(backend, data[:n], 0x9E3779B9) == p.crc32c_portable(data[:n], 0x9E3779B9), n


# Carry-less folding (csrc/kc_crc.c): a 16-byte lane X moves D bytes forward as
# L*x^(63+8D) + H*x^(8D-1) mod P, L and H its 8-byte halves, in the reflected
# bit order where a 64x64 carry-less product carries an extra factor x.
P_CASTAGNOLI = (1 << 32) | 0x1EDC6F41
P_IEEE = (1 << 32) | 0x04C11DB7


def _xpow_mod(n: int, poly: int = P_CASTAGNOLI) -> int:
    r = 1
    for _ in range(n):
        r <<= 1
        if r >> 32:
            r ^= poly
    return r


def _reflected(c: int) -> int:
    return sum(1 << (63 - d) for d in range(32) if c >> d & 1)


def _fold_constants(distance: int, poly: int = P_CASTAGNOLI):
    return _reflected(_xpow_mod(63 + 8 * distance, poly)), _reflected(_xpow_mod(8 * distance - 1, poly))


def _clmul(a: int, b: int) -> int:
    r = 0
    while b:
        if b & 1:
            r ^= a
        a <<= 1
        b >>= 1
    return r


def _raw_crc(state: int, data: bytes) -> int:
    for b in data:
        state ^= b
        for _ in range(8):
            state = (state >> 1) ^ 0x82F63B78 if state & 1 else state >> 1
    return state


def test_fold_constants_in_the_c_source_are_the_derived_ones():
    source = (pathlib.Path(__file__).parents[1] / "csrc" / "kc_crc.c").read_text()
    consts = {m[0]: int(m[1], 16) for m in re.findall(r"#define (KC_FOLD_\w+) (0x[0-9a-f]+)ull", source)}
    for distance in (64, 256):
        lo, hi = _fold_constants(distance)
        assert consts[f"KC_FOLD_{distance}_LO"] == lo
        assert consts[f"KC_FOLD_{distance}_HI"] == hi


@pytest.mark.parametrize("state", [0, 0xFFFFFFFF, 0x12345678])
def test_folding_with_the_derived_constants_is_the_crc(state):
    # The algorithm the C code runs, in Python: a state xor-ed into the first
    # lane, 64-byte steps, the CRC of the folded lanes and the tail.
    data = random.Random(state).randbytes(64 * 5 + 13)
    lo, hi = _fold_constants(64)
    lanes = [int.from_bytes(data[16 * i:16 * i + 16], "little") for i in range(4)]
    lanes[0] ^= state
    pos = 64
    while pos + 64 <= len(data):
        lanes = [_clmul(x & (2 ** 64 - 1), lo) ^ _clmul(x >> 64, hi)
                 ^ int.from_bytes(data[pos + 16 * i:pos + 16 * i + 16], "little") for i, x in enumerate(lanes)]
        pos += 64
    folded = b"".join(x.to_bytes(16, "little") for x in lanes) + data[pos:]
    assert _raw_crc(0, folded) == _raw_crc(state, data)


def test_crc32_fold_constants_in_the_c_source_are_the_derived_ones():
    source = (pathlib.Path(__file__).parents[1] / "csrc" / "kc_crc.c").read_text()
    consts = {m[0]: int(m[1], 16) for m in re.findall(r"#define (KC_IEEE_FOLD_\w+) (0x[0-9a-f]+)ull", source)}
    for distance in (16, 64):
        lo, hi = _fold_constants(distance, P_IEEE)
        assert consts[f"KC_IEEE_FOLD_{distance}_LO"] == lo
        assert consts[f"KC_IEEE_FOLD_{distance}_HI"] == hi


def test_crc32_backend_is_reported():
    assert p.crc32_backend() in {"pclmulqdq", "portable"}


# CRC-32 folds four 16-byte lanes 64 bytes at a time from 128 bytes on, then
# one lane 16 bytes at a time; the table finishes the folded lane and the tail.
@pytest.mark.parametrize("start", [0, 1, 3, 8])
def test_crc32_every_length_to_1100_and_its_continuation(start):
    data = random.Random(11).randbytes(1100 + start)
    for n in range(1101):
        chunk = data[start:start + n]
        for value in (0, 0x9E3779B9):
            expected = zlib.crc32(chunk, value)
            assert p.crc32(memoryview(data)[start:start + n], value) == expected, n
            assert p.crc32_portable(chunk, value) == expected, n


@pytest.mark.parametrize("n", [4095, 4096, 65536 + 13, (1 << 20) + 5])
def test_crc32_long_inputs(n):
    data = random.Random(n).randbytes(n)
    assert p.crc32(data) == zlib.crc32(data) == p.crc32_portable(data)
    assert p.crc32(data[n // 3:], p.crc32(data[:n // 3])) == zlib.crc32(data)


def test_crc_unaligned_and_continued():
    data = random.Random(1).randbytes(1000)
    for start in range(65):
        chunk = data[start:]
        assert p.crc32c(memoryview(data)[start:]) == p.crc32c_portable(chunk)
    assert p.crc32c(data[500:], p.crc32c(data[:500])) == p.crc32c(data)
    assert p.crc32(data[500:], p.crc32(data[:500])) == zlib.crc32(data)


@pytest.mark.parametrize("stream", [False, True])
def test_crc_while_copying_is_the_crc_and_the_copy(stream):
    # Every alignment of source and destination, lengths around the streaming
    # threshold (1024) and the folding's 256- and 64-byte steps, and a continued CRC.
    rnd = random.Random(7)
    data = rnd.randbytes(70_000)
    lengths = [0, 1, 63, 255, 256, 1023, 1024, 1025, 1087, 1088, 1280, 1344, 4096, 4159, 65_537]
    for n in lengths:
        for start, at in [(0, 0), (1, 63), (63, 1), (17, 40), (64, 0), (rnd.randrange(64), rnd.randrange(64))]:
            src = data[start:start + n]
            value = rnd.getrandbits(32)
            dst = bytearray(rnd.randbytes(n + 200))
            before = bytes(dst)
            got = p.crc32c_copy(memoryview(data)[start:start + n], dst, at, value, stream)
            assert got == p.crc32c_portable(src, value), (n, start, at)
            assert dst[at:at + n] == src
            assert dst[:at] == before[:at] and dst[at + n:] == before[at + n:], "wrote outside its range"


def test_crc_while_copying_refuses_a_destination_too_small():
    with pytest.raises(ValueError, match="do not fit"):
        p.crc32c_copy(b"x" * 10, bytearray(9))
    with pytest.raises(ValueError, match="do not fit"):
        p.crc32c_copy(b"x" * 10, bytearray(20), 11)
    with pytest.raises(BufferError):
        p.crc32c_copy(b"x", b"read-only destination")


@given(st.binary(max_size=3000), st.binary(max_size=3000))
def test_crc32c_combine_is_the_crc_of_the_concatenation(a, b):
    assert p.crc32c_combine(p.crc32c(a), p.crc32c(b), len(b)) == p.crc32c(a + b)


def test_crc32c_combine_over_long_lengths():
    # A 1 MiB run of zeros computed both ways, then lengths up to 2^32 through the
    # associativity of concatenation: (a+b)+c == a+(b+c).
    a = b"kafka"
    n = 1 << 20
    assert p.crc32c_combine(p.crc32c(a), p.crc32c(bytes(n)), n) == p.crc32c(bytes(n), p.crc32c(a))
    rnd = random.Random(3)
    for _ in range(20):
        c1, c2, c3 = (rnd.getrandbits(32) for _ in range(3))
        n2, n3 = rnd.randrange(1 << 31), rnd.randrange(1 << 31)
        left = p.crc32c_combine(p.crc32c_combine(c1, c2, n2), c3, n3)
        right = p.crc32c_combine(c1, p.crc32c_combine(c2, c3, n3), n2 + n3)
        assert left == right


def test_crc_accepts_any_buffer(tmp_path):
    data = bytes(range(256)) * 40
    expected = p.crc32c(data)
    assert p.crc32c(bytearray(data)) == expected
    assert p.crc32c(memoryview(data)) == expected
    assert p.crc32c(np.frombuffer(data, dtype=np.uint8)) == expected
    assert p.crc32c(np.frombuffer(data, dtype=np.int64)) == expected
    f = tmp_path / "x"
    f.write_bytes(data)
    with open(f, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as m:
        assert p.crc32c(m) == expected


def test_crc_rejects_non_contiguous():
    arr = np.arange(100, dtype=np.uint8)[::2]
    with pytest.raises((BufferError, ValueError)):
        p.crc32c(arr)


@pytest.mark.parametrize("value,hexbytes", VARINT_TABLE)
def test_varint_table(value, hexbytes):
    assert p.encode_varint(value).hex() == hexbytes
    assert p.decode_varint(bytes.fromhex(hexbytes)) == (value, len(hexbytes) // 2)
    assert p.varint_size(value) == len(hexbytes) // 2


def test_varlong_table():
    assert p.encode_varlong(-(2 ** 63)).hex() == "ffffffffffffffffff01"
    assert p.encode_varlong(-86400000).hex() == "ffefb252"
    assert p.decode_varlong(bytes.fromhex("ffffffffffffffffff01")) == (-(2 ** 63), 10)
    assert p.varlong_size(2 ** 63 - 1) == 10


def test_sizes_match_encodings_at_every_bit_length():
    for bits in range(64):
        for v in {2 ** bits - 1, 2 ** bits, -(2 ** bits), -(2 ** bits) - 1}:
            if -(2 ** 63) <= v < 2 ** 63:
                assert p.varlong_size(v) == len(p.encode_varlong(v)), v
            if -(2 ** 31) <= v < 2 ** 31:
                assert p.varint_size(v) == len(p.encode_varint(v)), v


@pytest.mark.parametrize("k", range(1, 10))
def test_size_boundaries(k):
    # zigzag(v) = 2v for v >= 0: the encoding grows at 2^(7k) / 2
    edge = 2 ** (7 * k) // 2
    if edge - 1 <= 2 ** 31 - 1:
        assert p.varint_size(edge - 1) == k
        if edge <= 2 ** 31 - 1:
            assert p.varint_size(edge) == k + 1
    assert p.varlong_size(edge - 1) == k
    assert p.varlong_size(edge) == k + 1
    assert p.varlong_size(-edge) == k
    assert p.varlong_size(-edge - 1) == k + 1


@given(st.integers(-(2 ** 31), 2 ** 31 - 1))
def test_varint_roundtrip(v):
    enc = p.encode_varint(v)
    assert p.decode_varint(b"\x00" + enc, 1) == (v, 1 + len(enc))
    assert len(enc) == p.varint_size(v)


@given(st.integers(-(2 ** 63), 2 ** 63 - 1))
def test_varlong_roundtrip(v):
    enc = p.encode_varlong(v)
    assert p.decode_varlong(enc) == (v, len(enc))
    assert len(enc) == p.varlong_size(v)


def test_kafka_lenient_reading():
    assert p.decode_varint(b"\x80\x00") == (0, 2)  # over-long but legal
    assert p.decode_varint(bytes([0x80, 0x80, 0x80, 0x80, 0x70])) == (0, 5)  # high bits of byte 5 dropped
    assert p.decode_varlong(bytes([0x80] * 9 + [0x7E])) == (0, 10)  # only bit 0 of byte 10


def test_varint_errors():
    with pytest.raises(CorruptRecordError, match="too long"):
        p.decode_varint(bytes([0x80] * 5 + [0x01]))
    with pytest.raises(CorruptRecordError, match="too long"):
        p.decode_varlong(bytes([0x80] * 10 + [0x01]))
    with pytest.raises(CorruptRecordError, match="truncated") as info:
        p.decode_varint(b"\x00\x80", 1)
    assert info.value.position == 1
    assert isinstance(info.value, KcodecError)
    with pytest.raises(IndexError):
        p.decode_varint(b"\x00", 5)
