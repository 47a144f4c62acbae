"""Empty compressed zstd blocks: one verdict whatever the size limit or engine.

libzstd's one-shot ``ZSTD_decompressDCtx`` refuses a compressed block of
size 0 while ``ZSTD_decompressStream`` steps over it, except in a
single-segment frame, which it decodes in one call.  zstd-jni's
``ZstdInputStream`` is the streaming decoder, so Kafka's consumer reads
such frames; kcodec reads them too, by every path.
"""
import struct

import pytest

import kcodec
import kcodec.compression.zstd as zstd_module
from builders import batch_around
from kcodec.errors import CorruptCompressedDataError
from oracle_util import assert_java_reads_as_kcodec, assert_java_refuses, oracle_available

MAGIC = struct.pack("<I", 0xFD2FB528)
EMPTY_COMPRESSED, EMPTY_COMPRESSED_LAST, EMPTY_RAW_LAST = b"\x04\x00\x00", b"\x05\x00\x00", b"\x01\x00\x00"


def _raw(data: bytes, last: bool) -> bytes:
    return ((len(data) << 3) | last).to_bytes(3, "little") + data


def _frame(*blocks: bytes, single: bool = False, size: int = 0) -> bytes:
    head = b"\x20" + bytes([size]) if single else b"\x00\x58"  # single segment with its size, or a 1 MiB window
    return MAGIC + head + b"".join(blocks)


READ = {
    "the 9-byte frame of one last empty compressed block": (_frame(EMPTY_COMPRESSED_LAST), b""),
    "an empty compressed block before data": (_frame(EMPTY_COMPRESSED, _raw(b"hello", True)), b"hello"),
    "an empty compressed block as the last": (_frame(_raw(b"hello", False), EMPTY_COMPRESSED_LAST), b"hello"),
    "two frames, empty blocks in both": (
        _frame(EMPTY_COMPRESSED, _raw(b"ab", True)) + _frame(_raw(b"cd", False), EMPTY_COMPRESSED_LAST), b"abcd"),
}
REFUSED = {
    "single-segment frame": _frame(EMPTY_COMPRESSED, _raw(b"hello", True), single=True, size=5),
    "single-segment frame of nothing": _frame(EMPTY_COMPRESSED_LAST, single=True),
}


def _codecs(monkeypatch):
    """The registered codec (libzstd called directly) and one on python-zstandard's API alone."""
    direct = kcodec.get_codec("zstd")
    assert direct.native
    monkeypatch.setattr(zstd_module, "_native_entry_points", lambda *a: None)
    api = zstd_module.ZstdCodec()
    assert not api.native
    return {"direct": direct, "python-zstandard": api}


def _record(value: bytes) -> bytes:
    """One record as it sits in a batch's records region."""
    b = kcodec.RecordBatchBuilder(magic=2)
    b.append(timestamp=1, key=None, value=value)
    return bytes(b.build())[61:]


@pytest.mark.parametrize("case", sorted(READ))
def test_read_by_every_path(case, monkeypatch):
    frame, content = READ[case]
    for engine, codec in _codecs(monkeypatch).items():
        for max_size in (len(content), 260, 1 << 20, 1 << 28):
            assert codec.decompress(frame, max_size=max_size) == content, (engine, max_size)


@pytest.mark.parametrize("case", sorted(REFUSED))
def test_refused_by_every_path(case, monkeypatch):
    for engine, codec in _codecs(monkeypatch).items():
        for max_size in (260, 1 << 20):
            with pytest.raises(CorruptCompressedDataError, match="single-segment"):
                codec.decompress(REFUSED[case], max_size=max_size)


def test_batches_read_in_columns_and_objects_as_java_reads_them():
    record = _record(b"hello")
    frame = _frame(EMPTY_COMPRESSED, _raw(record, False), EMPTY_COMPRESSED_LAST)
    data = batch_around(frame, 1)
    assert kcodec.to_arrow(data)["value"].to_pylist() == [b"hello"]
    assert kcodec.to_arrow(data, views=True)["value"].to_pylist() == [b"hello"]
    assert [r.value for b in kcodec.read_batches(data) for r in b] == [b"hello"]
    single = batch_around(_frame(EMPTY_COMPRESSED, _raw(record, True), single=True, size=len(record)), 1)
    for read in (kcodec.to_arrow, lambda d: [r for b in kcodec.read_batches(d) for r in b]):
        with pytest.raises(CorruptCompressedDataError):
            read(single)
    if oracle_available():
        assert_java_reads_as_kcodec(data)
        assert_java_refuses(single, "Data corruption detected")
