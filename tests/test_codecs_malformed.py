"""Malformed and hostile compressed payloads (truncated, oversized, bombs, bad checksums).

Every failure must be a KcodecError with Kafka's message where Kafka has one;
nothing may crash, hang, or allocate in proportion to what a payload claims.
"""
from __future__ import annotations

import os
import random
import struct
import sys
import time
import tracemalloc
import zlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kcodec import get_codec
from kcodec._native.codecs import xxh32
from kcodec.errors import CodecLibraryMissingError, CorruptCompressedDataError, KcodecError, LimitExceededError

CODECS = ["gzip", "snappy", "lz4", "zstd"]
RECORDS = b"".join(b'{"id":%d,"user":"user-%d","event":"click"}' % (i, i * 7 % 101) for i in range(40))


def _payload(name: str, data: bytes = RECORDS, **kw) -> bytes:
    return get_codec(name).compress(data, **kw)


def _decode(name: str, payload, **kw):
    """Decompress; a failure must be a KcodecError (anything else propagates and fails the test)."""
    try:
        return get_codec(name).decompress(payload, **kw)
    except KcodecError as exc:
        return exc


# -- truncation and bit flips ----------------------------------------------------------
@pytest.mark.parametrize("name", CODECS)
def test_truncation_at_every_position(name):
    full = _payload(name)
    for cut in range(len(full)):
        got = _decode(name, full[:cut])
        if name == "snappy" and cut in range(16, 20):
            assert got == b""  # the header alone, plus at most 3 ignored bytes: no chunks
        elif name == "zstd" and cut == 0:
            assert got == b""  # no frame at all: zstd-jni reads an empty stream
        else:
            assert isinstance(got, CorruptCompressedDataError), (name, cut, got)


@pytest.mark.parametrize("name", CODECS)
def test_truncated_multi_block_payloads(name):
    data = os.urandom(40_000) + RECORDS * 500
    full = _payload(name, data)
    for cut in sorted({1, 10, 100, len(full) // 3, len(full) // 2, len(full) - 5, len(full) - 1}):
        got = _decode(name, full[:cut])
        if isinstance(got, bytes):
            # Only snappy can stop cleanly, and only on a chunk boundary.
            assert name == "snappy" and data.startswith(got)
        else:
            assert isinstance(got, CorruptCompressedDataError)


@pytest.mark.parametrize("name", CODECS)
def test_single_byte_flips(name):
    full = _payload(name)
    for pos in range(len(full)):
        for mask in (0x01, 0x80, 0xFF):
            damaged = bytearray(full)
            damaged[pos] ^= mask
            got = _decode(name, bytes(damaged))
            if isinstance(got, bytes):
                # gzip's CRC-32 covers every output byte: what it returns is the original
                assert name != "gzip" or got == RECORDS, (pos, mask)
            else:
                assert isinstance(got, KcodecError) and 0 <= got.position <= len(full), (pos, mask, got)


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzzed_mutations(name, data):
    full = bytearray(_payload(name, RECORDS * 3))
    for _ in range(data.draw(st.integers(1, 6))):
        op = data.draw(st.sampled_from(["set", "insert", "delete"]))
        pos = data.draw(st.integers(0, len(full) - 1))
        if op == "set":
            full[pos] = data.draw(st.integers(0, 255))
        elif op == "insert":
            full[pos:pos] = data.draw(st.binary(min_size=1, max_size=8))
        elif len(full) > 1:
            del full[pos]
    got = _decode(name, bytes(full), max_size=1 << 20)
    if isinstance(got, bytes):
        assert len(got) <= 1 << 20
        assert name != "gzip" or got == RECORDS * 3  # a changed gzip member fails its CRC-32
    else:
        assert isinstance(got, KcodecError) and 0 <= got.position <= len(full)


@pytest.mark.parametrize("name", CODECS)
@settings(max_examples=100, deadline=None)
@given(blob=st.binary(max_size=300))
def test_random_bytes(name, blob):
    got = _decode(name, blob, max_size=1 << 20)
    if isinstance(got, bytes):
        assert len(got) <= 1 << 20
    else:
        assert isinstance(got, KcodecError) and 0 <= got.position <= len(blob)


# -- gzip -------------------------------------------------------------------------------
def test_gzip_rejects_other_containers():
    data = RECORDS
    with pytest.raises(CorruptCompressedDataError, match="Not in GZIP format"):
        get_codec("gzip").decompress(zlib.compress(data))
    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    with pytest.raises(CorruptCompressedDataError, match="Not in GZIP format"):
        get_codec("gzip").decompress(raw.compress(data) + raw.flush())
    with pytest.raises(CorruptCompressedDataError):
        get_codec("gzip").decompress(b"")


def test_gzip_trailer_and_header_checks():
    gz = get_codec("gzip")
    full = _payload("gzip")
    bad_crc = full[:-8] + bytes([full[-8] ^ 1]) + full[-7:]
    with pytest.raises(CorruptCompressedDataError, match="Corrupt GZIP trailer"):
        gz.decompress(bad_crc)
    bad_size = full[:-4] + struct.pack("<I", len(RECORDS) + 1)
    with pytest.raises(CorruptCompressedDataError, match="Corrupt GZIP trailer"):
        gz.decompress(bad_size)
    with pytest.raises(CorruptCompressedDataError, match="Unexpected end of ZLIB input stream"):
        gz.decompress(full[:-3])
    header = b"\x1f\x8b\x08\x02" + b"\0" * 6
    with pytest.raises(CorruptCompressedDataError, match="Corrupt GZIP header"):
        gz.decompress(header + b"\x00\x00" + full[10:])
    with pytest.raises(CorruptCompressedDataError, match="Unsupported compression method"):
        gz.decompress(full[:2] + b"\x07" + full[3:])
    second = gz.compress(b"more")
    with pytest.raises(CorruptCompressedDataError):
        gz.decompress(full + second[:-5])  # a second member that parses but is cut short


def _gzip_error(payload: bytes, **kw):
    with pytest.raises(KcodecError) as info:
        get_codec("gzip").decompress(payload, **kw)
    return type(info.value), info.value.message, info.value.position


def test_gzip_header_errors_name_their_byte():
    full = _payload("gzip")
    eof = "gzip: Unexpected end of ZLIB input stream"
    not_gzip = "gzip: Not in GZIP format"
    assert _gzip_error(b"") == (CorruptCompressedDataError, eof, 0)
    assert _gzip_error(b"\x1f") == (CorruptCompressedDataError, eof, 1)
    assert _gzip_error(b"\x1f\x00") == (CorruptCompressedDataError, not_gzip, 0)
    assert _gzip_error(b"\x00\x8b" + full[2:]) == (CorruptCompressedDataError, not_gzip, 0)
    assert _gzip_error(b"\x1f\x8c" + full[2:]) == (CorruptCompressedDataError, not_gzip, 0)
    assert _gzip_error(b"\x1e\x8b" + full[2:]) == (CorruptCompressedDataError, not_gzip, 0)
    assert _gzip_error(b"\x1f\x8a" + full[2:]) == (CorruptCompressedDataError, not_gzip, 0)
    assert _gzip_error(full[:9]) == (CorruptCompressedDataError, eof, 9)
    assert _gzip_error(full[:10]) == (CorruptCompressedDataError, eof, 10)
    assert _gzip_error(full[:2] + b"\x09" + full[3:]) == \
        (CorruptCompressedDataError, "gzip: Unsupported compression method", 2)
    # FEXTRA: the two length bytes must be there, then as many bytes as they say
    fextra = b"\x1f\x8b\x08\x04" + b"\0" * 6
    assert _gzip_error(fextra + b"\x05") == (CorruptCompressedDataError, eof, 11)
    assert _gzip_error(fextra + b"\x00\x01" + bytes(255)) == (CorruptCompressedDataError, eof, 267)
    # FNAME / FCOMMENT without their terminating zero
    assert _gzip_error(b"\x1f\x8b\x08\x08" + b"\0" * 6 + b"name") == (CorruptCompressedDataError, eof, 14)
    assert _gzip_error(b"\x1f\x8b\x08\x10" + b"\0" * 6 + b"note") == (CorruptCompressedDataError, eof, 14)
    # FHCRC: the two CRC bytes are missing, or wrong at the byte they start
    fhcrc = b"\x1f\x8b\x08\x02" + b"\0" * 6
    assert _gzip_error(fhcrc + b"\x01") == (CorruptCompressedDataError, eof, 11)
    assert _gzip_error(fhcrc + b"\x00\x00" + full[10:]) == \
        (CorruptCompressedDataError, "gzip: Corrupt GZIP header", 10)


def test_gzip_header_fields_each_alone():
    gz = get_codec("gzip")
    data = RECORDS * 3
    body = zlib.compressobj(6, zlib.DEFLATED, -15)
    rest = body.compress(data) + body.flush() + struct.pack("<II", zlib.crc32(data), len(data))
    base = b"\0" * 6
    # XLEN is little-endian: 0x0102 bytes of extra field, not 0x0201
    assert gz.decompress(b"\x1f\x8b\x08\x04" + base + b"\x02\x01" + bytes(0x102) + rest) == data
    assert gz.decompress(b"\x1f\x8b\x08\x08" + base + b"n\x00" + rest) == data
    # FTEXT and the reserved bits add no header field: GZIPInputStream reads past them
    assert gz.decompress(b"\x1f\x8b\x08\xe1" + base + rest) == data
    assert gz.decompress(b"\x1f\x8b\x08\x10" + base + b"\x00" + rest) == data
    header = b"\x1f\x8b\x08\x06" + base + b"\x01\x00x"
    header += struct.pack("<H", zlib.crc32(header) & 0xFFFF)
    assert gz.decompress(header + rest) == data
    # FHCRC covers the whole header from its first byte: a CRC of part of it is refused
    partial = b"\x1f\x8b\x08\x06" + base + b"\x01\x00x"
    wrong = partial + struct.pack("<H", zlib.crc32(partial[1:]) & 0xFFFF)
    assert _gzip_error(wrong + rest) == (CorruptCompressedDataError, "gzip: Corrupt GZIP header", 13)


def test_gzip_body_and_trailer_errors_name_their_byte():
    full = _payload("gzip")
    n = len(full)
    eof = "gzip: Unexpected end of ZLIB input stream"
    assert _gzip_error(full[:-8]) == (CorruptCompressedDataError, eof + " (trailer)", n - 8)
    assert _gzip_error(full[:-1]) == (CorruptCompressedDataError, eof + " (trailer)", n - 1)
    assert _gzip_error(full[:-9]) == (CorruptCompressedDataError, eof, n - 9)
    bad_crc = full[:-8] + bytes([full[-8] ^ 1]) + full[-7:]
    assert _gzip_error(bad_crc) == (CorruptCompressedDataError, "gzip: Corrupt GZIP trailer", n - 8)
    bad_deflate = full[:10] + b"\xff" * 20
    kind, message, position = _gzip_error(bad_deflate)
    assert (kind, message.startswith("gzip: invalid deflate data: "), position) == \
        (CorruptCompressedDataError, True, 10)
    second = get_codec("gzip").compress(b"more")
    kind, message, position = _gzip_error(full + second[:10] + b"\xff" * 20)
    assert (kind, message.startswith("gzip: invalid deflate data: "), position) == \
        (CorruptCompressedDataError, True, n + 10)


def test_gzip_limit_is_exact_across_members():
    gz = get_codec("gzip")
    a, b = RECORDS, RECORDS[::-1] * 2
    one = gz.compress(a)
    assert gz.decompress(one, max_size=len(a)) == a
    assert _gzip_error(one, max_size=len(a) - 1) == (
        LimitExceededError, f"gzip: decompressed data exceeds the limit of {len(a) - 1} bytes", 10)
    two = one + gz.compress(b)
    assert gz.decompress(two, max_size=len(a) + len(b)) == a + b
    assert _gzip_error(two, max_size=len(a) + len(b) - 1) == (
        LimitExceededError, f"gzip: decompressed data exceeds the limit of {len(a) + len(b) - 1} bytes",
        len(one) + 10)


_JDK_GZIP_HEADER = bytes.fromhex("1f8b08000000000000ff")


def test_gzip_a_second_member_is_read_to_its_end():
    gz = get_codec("gzip")
    full = _payload("gzip")
    n = len(full)
    eof = "gzip: Unexpected end of ZLIB input stream"
    # a whole header after the first member starts a member, which then has no body
    assert _gzip_error(full + _JDK_GZIP_HEADER) == (CorruptCompressedDataError, eof, n + 10)
    fextra = b"\x1f\x8b\x08\x04" + b"\0" * 6 + b"\x02\x00ab"
    assert _gzip_error(full + fextra) == (CorruptCompressedDataError, eof, n + 14)
    empty_extra = b"\x1f\x8b\x08\x04" + b"\0" * 6 + b"\x00\x00"
    assert _gzip_error(full + empty_extra) == (CorruptCompressedDataError, eof, n + 12)
    checked = b"\x1f\x8b\x08\x02" + b"\0" * 6
    assert zlib.crc32(checked) & 1  # an odd header CRC: every bit of its 16 counts
    checked += struct.pack("<H", zlib.crc32(checked) & 0xFFFF)
    assert _gzip_error(full + checked) == (CorruptCompressedDataError, eof, n + 12)
    # a header cut short, a foreign method or a bad header CRC there is not a member: ignored
    assert gz.decompress(full + _JDK_GZIP_HEADER[:9]) == RECORDS
    assert gz.decompress(full + b"\x1f\x8b\x08\x04" + b"\0" * 6 + b"\x05\x00ab") == RECORDS  # extra cut short
    assert gz.decompress(full + _JDK_GZIP_HEADER[:2] + b"\x07" + _JDK_GZIP_HEADER[3:]) == RECORDS
    assert gz.decompress(full + b"\x1f\x8b\x08\x02" + b"\0" * 6 + b"\x00\x00") == RECORDS


# -- snappy -----------------------------------------------------------------------------
def _framed(*chunks: bytes) -> bytes:
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"".join(chunks)


def test_snappy_chunk_lengths():
    sn = get_codec("snappy")
    with pytest.raises(CorruptCompressedDataError, match="Cannot decompress empty stream"):
        sn.decompress(b"")
    with pytest.raises(CorruptCompressedDataError, match="zero-length chunk"):
        sn.decompress(_framed(struct.pack(">i", 0)))
    with pytest.raises(CorruptCompressedDataError, match=r"chunkSize is too big or negative : -5"):
        sn.decompress(_framed(struct.pack(">i", -5) + b"abcdefgh"))
    with pytest.raises(CorruptCompressedDataError, match="chunkSize is too big or negative"):
        sn.decompress(_framed(struct.pack(">i", 600 * 1024 * 1024) + b"abc"))
    with pytest.raises(CorruptCompressedDataError, match="failed to read chunk"):
        sn.decompress(_framed(struct.pack(">i", 100) + b"\x05abc"))
    with pytest.raises(CorruptCompressedDataError, match="Insufficient header size"):
        sn.decompress(_payload("snappy") + b"\x82SNAPPY\x00\x00")
    version0 = b"\x82SNAPPY\x00" + struct.pack(">ii", 0, 1)
    with pytest.raises(CorruptCompressedDataError, match="INCOMPATIBLE_VERSION"):
        sn.decompress(_payload("snappy") + version0)


def test_snappy_google_framing_rejected():
    import cramjam
    framed = bytes(cramjam.snappy.compress(RECORDS))
    assert framed.startswith(b"\xff\x06\x00\x00sNaPpY")
    with pytest.raises(CorruptCompressedDataError):
        get_codec("snappy").decompress(framed)


def test_snappy_corrupt_block_and_lying_preamble():
    sn = get_codec("snappy")
    import cramjam
    block = bytearray(cramjam.snappy.compress_raw(RECORDS))
    block[0] += 1  # claims one byte more than the block holds
    with pytest.raises(CorruptCompressedDataError):
        sn.decompress(_framed(struct.pack(">i", len(block)) + bytes(block)))
    with pytest.raises(CorruptCompressedDataError):
        sn.decompress(bytes(block))


def test_snappy_preamble_claiming_4gib():
    sn = get_codec("snappy")
    claim = b"\xff\xff\xff\xff\x0f" + b"\x00" * 20
    plausible = b"\x80\x80\x80\x01" + b"\x00" * 100_000  # 2 MiB, which 100 KB could encode
    tracemalloc.start()
    try:
        for payload in (claim, _framed(struct.pack(">i", len(claim)) + claim)):
            for limit in (1 << 20, 1 << 40):
                # No 25-byte block can hold 4 GiB: refused as corrupt whatever the limit.
                with pytest.raises(CorruptCompressedDataError, match="more than its size can encode"):
                    sn.decompress(payload, max_size=limit)
        with pytest.raises(LimitExceededError):
            sn.decompress(plausible, max_size=1 << 20)
        with pytest.raises(LimitExceededError):
            sn.decompress(_framed(struct.pack(">i", len(plausible)) + plausible), max_size=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20


def _legacy_snappy(uncompress=None):
    """A SnappyCodec on a stand-in for python-snappy before 0.7 (compress/uncompress only)."""
    import types

    import cramjam

    from kcodec.compression.snappy import SnappyCodec
    legacy = types.ModuleType("snappy")
    legacy.__version__ = "0.6.1"
    legacy.compress = lambda d: bytes(cramjam.snappy.compress_raw(bytes(d)))
    legacy.uncompress = uncompress or (lambda d: bytes(cramjam.snappy.decompress_raw(bytes(d))))
    codec = SnappyCodec()
    codec._use_legacy(legacy)
    return codec


def test_snappy_legacy_backend_writes_java_frames():
    import cramjam

    # 2.5 blocks of 32 KiB: the cut points, the big-endian block lengths and the header are Java's
    data = bytes(random.Random(7).getrandbits(8) for _ in range(40_000)) + b"kafka" * 8_000
    out = _legacy_snappy().compress(data)
    expected = bytes.fromhex("82534e41505059000000000100000001")
    for start in (0, 32768, 65536):
        block = bytes(cramjam.snappy.compress_raw(data[start:start + 32768]))
        expected += struct.pack(">I", len(block)) + block
    assert out == expected
    assert _legacy_snappy().compress(b"") == bytes.fromhex("82534e41505059000000000100000001")


def test_snappy_legacy_backend_block_errors_name_the_block():
    data = b"snappy " * 10_000
    framed = get_codec("snappy").compress(data)
    second = 16 + 4 + struct.unpack_from(">I", framed, 16)[0] + 4
    liar = _legacy_snappy(uncompress=lambda d: b"x")
    with pytest.raises(CorruptCompressedDataError) as info:
        liar.decompress(framed)
    assert info.value.message == ("snappy: [FAILED_TO_UNCOMPRESS] corrupt block: "
                                  "block decompressed to 1 bytes, its header says 32768")
    assert info.value.position == 20
    damaged = bytearray(framed)
    damaged[second + 3] = 0xFF  # a copy reaching back before the start of the block
    with pytest.raises(CorruptCompressedDataError) as info:
        _legacy_snappy().decompress(bytes(damaged))
    assert info.value.message.startswith("snappy: [FAILED_TO_UNCOMPRESS] corrupt block: ")
    assert info.value.position == second


def test_snappy_corrupt_block_names_its_offset():
    data = b"snappy " * 10_000
    framed = get_codec("snappy").compress(data)
    second = 16 + 4 + struct.unpack_from(">I", framed, 16)[0] + 4
    damaged = bytearray(framed)
    damaged[second + 3] = 0xFF
    with pytest.raises(CorruptCompressedDataError) as info:
        get_codec("snappy").decompress(bytes(damaged))
    assert info.value.message.startswith("snappy: [FAILED_TO_UNCOMPRESS] corrupt block: ")
    assert info.value.position == second
    assert get_codec("snappy").decompress(framed, max_size=len(data)) == data
    with pytest.raises(LimitExceededError):
        get_codec("snappy").decompress(framed, max_size=len(data) - 1)


def test_snappy_engine_chosen_on_first_use(monkeypatch):
    """A fresh codec loads its engine on whatever call comes first: cramjam, else python-snappy
    before 0.7, else an error naming the package to install."""
    import types

    import cramjam

    from kcodec.compression.snappy import SnappyCodec
    data = b"snappy " * 10_000
    assert SnappyCodec().backend == f"cramjam {cramjam.__version__}"
    assert SnappyCodec().native_codec() is not None
    with pytest.raises(CorruptCompressedDataError) as info:
        SnappyCodec().decompress(b"\x10" + b"\xff" * 8)  # cramjam's own error, as kcodec's
    assert info.value.message.startswith("snappy: [FAILED_TO_UNCOMPRESS] corrupt block: ")
    assert info.value.position == 0
    assert _legacy_snappy().native_codec() is None
    legacy = types.ModuleType("snappy")
    legacy.__version__ = "0.6.1"
    legacy.compress = lambda d: bytes(cramjam.snappy.compress_raw(bytes(d)))
    legacy.uncompress = lambda d: bytes(cramjam.snappy.decompress_raw(bytes(d)))
    monkeypatch.setitem(sys.modules, "cramjam", None)  # None in sys.modules: the import fails
    monkeypatch.setitem(sys.modules, "snappy", legacy)
    codec = SnappyCodec()
    assert codec.decompress(get_codec("snappy").compress(data)) == data
    assert codec.backend == "snappy 0.6.1" and codec.native_codec() is None
    monkeypatch.setitem(sys.modules, "snappy", None)
    with pytest.raises(CodecLibraryMissingError, match="package 'python-snappy'"):
        SnappyCodec().compress(data)


def test_snappy_block_shorter_than_its_preamble_is_refused():
    """A block library that writes fewer bytes than the block's preamble declares (none of the
    supported ones does) is caught instead of leaving zeros in the output."""
    from kcodec.compression.snappy import SnappyCodec
    data = b"snappy " * 10_000
    framed = get_codec("snappy").compress(data)
    codec = SnappyCodec()
    codec.load()
    codec._decompress_into = lambda src, dst: len(dst) - 1
    with pytest.raises(CorruptCompressedDataError) as info:
        codec.decompress(framed)
    assert info.value.message == "snappy: block decompressed to 32767 bytes, its header says 32768"
    assert info.value.position == 20


# -- lz4 ---------------------------------------------------------------------------------
def _lz4_header(flg: int, bd: int, broken: bool = False) -> bytes:
    desc = bytes((flg, bd))
    hashed = b"\x04\x22\x4d\x18" + desc if broken else desc
    return b"\x04\x22\x4d\x18" + desc + bytes([(xxh32(hashed) >> 8) & 0xFF])


@pytest.mark.parametrize("flg,bd,message", [
    (0x61, 0x40, "Reserved bits must be 0"),
    (0x40, 0x40, "Dependent block stream is unsupported"),
    (0xA0, 0x40, "Version 2 is unsupported"),
    (0x60, 0x41, "Reserved2 field must be 0"),
    (0x60, 0x30, "Block size value must be between 4 and 7"),
    (0x60, 0xC0, "Reserved3 field must be 0"),
])
def test_lz4_descriptor_checks(flg, bd, message):
    with pytest.raises(CorruptCompressedDataError, match=message):
        get_codec("lz4").decompress(_lz4_header(flg, bd) + b"\0\0\0\0")


def test_lz4_linked_blocks_from_python_lz4():
    import lz4.frame
    data = os.urandom(1000) * 200
    linked = lz4.frame.compress(data, block_linked=True, block_size=lz4.frame.BLOCKSIZE_MAX64KB)
    with pytest.raises(CorruptCompressedDataError, match="Dependent block stream is unsupported"):
        get_codec("lz4").decompress(linked)


def test_lz4_header_checksum_by_magic():
    l4 = get_codec("lz4")
    v2 = _payload("lz4")
    broken = _payload("lz4", magic=0)
    for magic in (1, 2):
        with pytest.raises(CorruptCompressedDataError, match="Stream frame descriptor corrupted"):
            l4.decompress(broken, magic=magic)
        with pytest.raises(CorruptCompressedDataError, match="Stream frame descriptor corrupted"):
            l4.decompress(v2[:6] + b"\x00" + v2[7:], magic=magic)
    assert l4.decompress(v2, magic=0) == RECORDS


def test_lz4_block_errors():
    l4 = get_codec("lz4")
    header = _lz4_header(0x60, 0x40)
    with pytest.raises(CorruptCompressedDataError, match=r"Block size 65537 exceeded max: 65536"):
        l4.decompress(header + struct.pack("<I", 65537) + bytes(10))
    with pytest.raises(CorruptCompressedDataError, match="Stream ended prematurely"):
        l4.decompress(header + struct.pack("<I", 0x80000000 | 100) + bytes(10))
    with pytest.raises(CorruptCompressedDataError, match="Stream ended prematurely"):
        l4.decompress(_payload("lz4")[:-4])  # no end mark
    with pytest.raises(CorruptCompressedDataError, match="Stream ended prematurely"):
        l4.decompress(b"\x04\x22\x4d")
    with pytest.raises(CorruptCompressedDataError, match="invalid magic bytes"):
        l4.decompress(struct.pack("<II", 0x184D2A50, 0) + _payload("lz4"))
    with pytest.raises(CorruptCompressedDataError, match="invalid magic bytes"):
        l4.decompress(struct.pack("<I", 0x184C2102) + bytes(20))
    with pytest.raises(CorruptCompressedDataError, match="corrupt block"):
        l4.decompress(header + struct.pack("<I", 8) + b"\xff" * 8 + b"\0\0\0\0")


def test_lz4_checksums():
    l4 = get_codec("lz4")
    block = b"raw block bytes"
    good = struct.pack("<I", xxh32(block))
    header = _lz4_header(0x70, 0x40)
    frame = header + struct.pack("<I", 0x80000000 | len(block)) + block
    assert l4.decompress(frame + good + b"\0\0\0\0") == block
    with pytest.raises(CorruptCompressedDataError, match="Block checksum mismatch"):
        l4.decompress(frame + bytes(4) + b"\0\0\0\0")
    content = _lz4_header(0x64, 0x40) + struct.pack("<I", 0x80000000 | len(block)) + block + b"\0\0\0\0"
    assert l4.decompress(content + good) == block
    assert l4.decompress(content + b"bad!") == block  # read, never verified (as Kafka)
    with pytest.raises(CorruptCompressedDataError, match="Stream ended prematurely"):
        l4.decompress(content + b"ab")


# -- zstd ---------------------------------------------------------------------------------
def _zstd_frame_wl(window_log: int, data: bytes) -> bytes:
    import zstandard
    params = zstandard.ZstdCompressionParameters.from_level(3, window_log=window_log)
    cobj = zstandard.ZstdCompressor(compression_params=params).compressobj()  # size unknown: no content size
    return cobj.compress(data) + cobj.flush()


def test_zstd_window_log_28_refused():
    zs = get_codec("zstd")
    frame = _zstd_frame_wl(28, RECORDS)
    assert frame[5] >> 3 == 18  # windowLog 28 in the window descriptor
    with pytest.raises(CorruptCompressedDataError, match="Frame requires too much memory for decoding"):
        zs.decompress(frame)
    with pytest.raises(CorruptCompressedDataError, match="Frame requires too much memory for decoding"):
        zs.decompress(_zstd_frame_wl(30, RECORDS))
    assert zs.decompress(_zstd_frame_wl(27, RECORDS)) == RECORDS


def test_zstd_trailing_garbage_and_truncation():
    zs = get_codec("zstd")
    full = _payload("zstd")
    with pytest.raises(CorruptCompressedDataError, match="Unknown frame descriptor"):
        zs.decompress(full + b"garbage!")
    with pytest.raises(CorruptCompressedDataError):
        zs.decompress(full + b"\x00")
    with pytest.raises(CorruptCompressedDataError, match="Truncated source"):
        zs.decompress(full[:-1])
    with pytest.raises(CorruptCompressedDataError, match="Truncated source"):
        zs.decompress(struct.pack("<II", 0x184D2A50, 100) + b"short")


def test_zstd_checksum_verified():
    import zstandard
    frame = bytearray(zstandard.ZstdCompressor(write_checksum=True).compress(RECORDS))
    frame[-1] ^= 0x55
    with pytest.raises(CorruptCompressedDataError, match="doesn't match checksum"):
        get_codec("zstd").decompress(bytes(frame))


def test_zstd_corrupt_block():
    frame = bytearray(_payload("zstd", os.urandom(100) + RECORDS))
    frame[10:20] = b"\xff" * 10
    got = _decode("zstd", bytes(frame))
    assert isinstance(got, CorruptCompressedDataError)


# -- bombs ---------------------------------------------------------------------------------
def _zstd_rle_bomb(blocks: int) -> bytes:
    """A frame of RLE blocks of 128 KiB each: 4 bytes in, 128 KiB out per block."""
    out = bytearray(struct.pack("<I", 0xFD2FB528) + b"\x00" + bytes([(17 - 10) << 3]))
    for i in range(blocks):
        last = 1 if i == blocks - 1 else 0
        out += (((128 * 1024) << 3) | (1 << 1) | last).to_bytes(3, "little") + b"\x00"
    return bytes(out)


def _lz4_bomb(blocks: int) -> bytes:
    import lz4.block
    block = lz4.block.compress(bytes(65536), store_size=False)
    return _lz4_header(0x60, 0x40) + (struct.pack("<I", len(block)) + block) * blocks + b"\0\0\0\0"


def _lz4_engines():
    """Two lz4 codecs: liblz4's frame functions where python-lz4 exports them, and the per-block path."""
    from kcodec.compression.lz4 import Lz4Codec
    engines = [Lz4Codec(), Lz4Codec()]
    engines[0].load()
    old = os.environ.get("KCODEC_LZ4_NATIVE")
    os.environ["KCODEC_LZ4_NATIVE"] = "0"
    try:
        engines[1].load()   # the engine is chosen when the codec loads
    finally:
        if old is None:
            del os.environ["KCODEC_LZ4_NATIVE"]
        else:
            os.environ["KCODEC_LZ4_NATIVE"] = old
    assert not engines[1].native
    return engines


def test_lz4_stored_blocks_count_toward_max_size():
    # Three stored (uncompressed) 64 KiB blocks and a 10-byte one: no decompression runs, yet every
    # byte counts against the limit, which the block that crosses it names by its position.
    rng = random.Random(5)
    blocks = [rng.randbytes(65536) for _ in range(3)] + [b"0123456789"]
    frame = _lz4_header(0x60, 0x40) + b"".join(struct.pack("<I", 0x80000000 | len(b)) + b for b in blocks) \
        + b"\0\0\0\0"
    plain = b"".join(blocks)
    for codec in _lz4_engines():
        assert codec.decompress(frame, max_size=len(plain)) == plain
        for limit, block in ((len(plain) - 1, 3), (3 * 65536, 3), (3 * 65536 - 1, 2), (65535, 0), (0, 0)):
            with pytest.raises(LimitExceededError, match=f"^lz4: decompressed data exceeds the limit of "
                                                         f"{limit} bytes") as e:
                codec.decompress(frame, max_size=limit)
            assert e.value.position == 7 + block * (4 + 65536) + 4, (codec.native, limit)


def test_lz4_compressed_block_at_exactly_the_limit():
    block = bytes(65536)
    frame = _payload("lz4", block + block)
    for codec in _lz4_engines():
        assert codec.decompress(frame, max_size=2 * 65536) == block + block
        with pytest.raises(LimitExceededError) as e:
            codec.decompress(frame, max_size=2 * 65536 - 1)
        second = 7 + 4 + struct.unpack_from("<I", frame, 7)[0]
        assert e.value.position == second + 4


def test_lz4_corrupt_block_under_a_small_limit_is_corrupt():
    """A block that no buffer could decode is corrupt whatever the limit: the per-block path, whose
    buffer is then smaller than a block, tries the block's full size before it blames the limit."""
    block = b"\x10a\x00\x10\x50bcdef"   # one literal, then a match 4096 bytes before the output's start
    frame = _lz4_header(0x60, 0x40) + struct.pack("<I", len(block)) + block + b"\0\0\0\0"
    for codec in _lz4_engines():
        for limit in (1 << 30, 65536, 10, 0):
            with pytest.raises(CorruptCompressedDataError,
                               match=r"^lz4: corrupt block \(LZ4 decompression failed\)") as e:
                codec.decompress(frame, max_size=limit)
            assert e.value.position == 11, (codec.native, limit)


def _gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    chunk = bytes(1 << 20)
    body = b"".join(c.compress(chunk) for _ in range(size >> 20)) + c.flush()
    crc = 0
    for _ in range(size >> 20):
        crc = zlib.crc32(chunk, crc)
    return b"\x1f\x8b\x08\0\0\0\0\0\0\xff" + body + struct.pack("<II", crc, size & 0xFFFFFFFF)


def _snappy_bomb(chunks: int) -> bytes:
    import cramjam
    block = bytes(cramjam.snappy.compress_raw(bytes(32768)))
    return _framed(*([struct.pack(">i", len(block)) + block] * chunks))


BOMBS = {
    "zstd": lambda: _zstd_rle_bomb(32768),  # 128 KiB in, 4 GiB out
    "lz4": lambda: _lz4_bomb(4096),  # ~1 MiB in, 256 MiB out
    "gzip": lambda: _gzip_bomb(256 << 20),  # ~256 KiB in, 256 MiB out
    "snappy": lambda: _snappy_bomb(8192),  # ~13 MiB in, 256 MiB out
}


@pytest.mark.parametrize("name", CODECS)
def test_bomb_stops_at_max_size_without_allocating(name):
    bomb = BOMBS[name]()
    limit = 1 << 20
    tracemalloc.start()
    started = time.perf_counter()
    try:
        with pytest.raises(LimitExceededError):
            get_codec(name).decompress(bomb, max_size=limit)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert time.perf_counter() - started < 5
    assert peak < 4 * limit + 256 * 1024, f"{name} peaked at {peak} bytes"


def test_zstd_bomb_with_default_limit():
    with pytest.raises(LimitExceededError):
        get_codec("zstd").decompress(_zstd_rle_bomb(32768))


def test_zstd_declared_content_size_over_limit():
    import zstandard
    frame = zstandard.ZstdCompressor().compress(bytes(2 << 20))
    with pytest.raises(LimitExceededError, match="declare"):
        get_codec("zstd").decompress(frame, max_size=1 << 20)


def test_zstd_declared_content_size_at_the_limit():
    # the declared size is refused before any decoding, so only above the limit, and at the frame's start
    import zstandard
    frame = zstandard.ZstdCompressor().compress(bytes(2 << 20))
    assert get_codec("zstd").decompress(frame, max_size=2 << 20) == bytes(2 << 20)
    with pytest.raises(LimitExceededError, match=f"declare {2 << 20} bytes, more than the limit of {(2 << 20) - 1}"
                       ) as info:
        get_codec("zstd").decompress(frame, max_size=(2 << 20) - 1)
    assert info.value.position == 0


@pytest.mark.parametrize("name", CODECS)
def test_exact_limit_is_allowed(name):
    data = RECORDS * 100
    payload = _payload(name, data)
    assert get_codec(name).decompress(payload, max_size=len(data)) == data
    with pytest.raises(LimitExceededError):
        get_codec(name).decompress(payload, max_size=len(data) - 1)


@pytest.mark.parametrize("name", CODECS)
def test_limit_inside_a_later_block(name):
    rnd = random.Random(3)
    data = bytes(rnd.getrandbits(8) for _ in range(50_000)) + bytes(200_000)
    payload = _payload(name, data)
    with pytest.raises(LimitExceededError):
        get_codec(name).decompress(payload, max_size=100_000)
    with pytest.raises(LimitExceededError):
        get_codec(name).decompress(payload, max_size=0)
