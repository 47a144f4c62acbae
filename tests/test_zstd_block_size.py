"""zstd blocks larger than their frame's Block_Maximum_Size (the window, at most 128 KiB).

A raw or RLE block says how many bytes it regenerates.  zstd-jni's stream
(``ZSTD_decompressContinue``, so Kafka's consumer) refuses one that
regenerates more than the frame's window allows, with "Data corruption
detected"; libzstd's one-shot call does not look.  kcodec refuses such a
frame by every path and under every size limit, naming the block's header.
"""
import struct

import pytest

import kcodec
import kcodec.compression.zstd as zstd_module
from builders import batch_around
from kcodec._native.native_codec import native_of
from kcodec.errors import CorruptCompressedDataError
from oracle_util import assert_java_reads_as_kcodec, assert_java_refuses, oracle_available

MAGIC = struct.pack("<I", 0xFD2FB528)
RAW, RLE = 0, 1


def _frame(window_descriptor: int, block_type: int, size: int, body: bytes) -> bytes:
    """One frame without a content size whose only block is last: magic, descriptor, window, block."""
    header = (1 | (block_type << 1) | (size << 3)).to_bytes(3, "little")
    return MAGIC + bytes([0x00, window_descriptor]) + header + body


def _window(descriptor: int) -> int:
    base = 1 << (10 + (descriptor >> 3))
    return base + (base >> 3) * (descriptor & 7)


BLOCK_AT = len(MAGIC) + 2  # the block header follows the magic, the descriptor and the window byte

# The fuzz finding: two frames whose RLE blocks regenerate 75,025 bytes each,
# the first under a 16 KiB window.  libzstd's one-shot call read 150,050 bytes.
FUZZ_FINDING = bytes.fromhex("28b52ffd00208b28098b28b52ffd00608b280900")


def _engines(monkeypatch):
    """The registered codec (libzstd called directly), its native functions, and a codec on
    python-zstandard's API alone."""
    direct = kcodec.get_codec("zstd")
    native = native_of(direct)
    monkeypatch.setattr(zstd_module, "_native_entry_points", lambda *a: None)
    api = zstd_module.ZstdCodec()
    assert direct.native and native is not None and not api.native
    return {
        "direct": lambda data, limit: direct.decompress(data, max_size=limit),
        "native functions": lambda data, limit: bytes(native.decompress(data, 2, limit)),
        "python-zstandard": lambda data, limit: api.decompress(data, max_size=limit),
    }


def _records(n: int) -> bytes:
    """The records region of an uncompressed batch of ``n`` 100-byte values."""
    b = kcodec.RecordBatchBuilder(magic=2)
    for i in range(n):
        b.append(b"k%d" % i, b"x" * 100, 1_700_000_000_000 + i)
    return bytes(b.build())[61:]


@pytest.mark.parametrize("block_type,descriptor,size", [
    (RAW, 0x00, 1025),      # 1 KiB window, one byte over
    (RLE, 0x00, 1025),
    (RLE, 0x20, 75025),     # 16 KiB window, the fuzz finding's block
    (RAW, 0x09, 2305),      # 2,304-byte window (a mantissa of 1/8), one byte over
])
def test_a_block_over_the_window_is_refused_by_every_path(monkeypatch, block_type, descriptor, size):
    assert size == _window(descriptor) + 1 or descriptor == 0x20
    frame = _frame(descriptor, block_type, size, b"a" * (size if block_type == RAW else 1))
    for engine, decompress in _engines(monkeypatch).items():
        for limit in (1 << 10, 1 << 16, 1 << 22, 1 << 28):
            with pytest.raises(CorruptCompressedDataError, match="Corrupted block detected") as info:
                decompress(frame, limit)
            assert info.value.position == BLOCK_AT, (engine, limit)


@pytest.mark.parametrize("block_type", [RAW, RLE])
def test_a_block_of_exactly_the_window_reads(monkeypatch, block_type):
    size = _window(0x09)
    frame = _frame(0x09, block_type, size, b"a" * (size if block_type == RAW else 1))
    for engine, decompress in _engines(monkeypatch).items():
        assert decompress(frame, 1 << 20) == b"a" * size, engine


def test_the_fuzz_finding_gets_one_verdict(monkeypatch):
    for engine, decompress in _engines(monkeypatch).items():
        for limit in (1 << 10, 1 << 16, 1 << 22, 1 << 28):
            with pytest.raises(CorruptCompressedDataError, match="Corrupted block detected") as info:
                decompress(FUZZ_FINDING, limit)
            assert info.value.position == BLOCK_AT, (engine, limit)


def test_batches_as_java_reads_them():
    records = _records(20)  # 2,230 bytes
    fits = batch_around(_frame(0x09, RAW, len(records), records), 20)          # 2,304-byte window
    over = batch_around(_frame(0x08, RAW, len(records), records), 20)          # 2,048-byte window
    assert kcodec.to_arrow(fits)["value"].to_pylist() == [b"x" * 100] * 20
    assert [r.key for b in kcodec.read_batches(fits) for r in b] == [b"k%d" % i for i in range(20)]
    reads = {
        "to_arrow": kcodec.to_arrow,
        "to_arrow views": lambda d: kcodec.to_arrow(d, views=True),
        "read_batches": lambda d: [r for b in kcodec.read_batches(d) for r in b],
    }
    for name, read in reads.items():
        with pytest.raises(CorruptCompressedDataError, match="Corrupted block detected"):
            read(over)
    if oracle_available():
        assert_java_reads_as_kcodec(fits)
        assert_java_refuses(over, "Data corruption detected")
