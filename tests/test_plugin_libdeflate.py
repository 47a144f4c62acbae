"""The kcodec-libdeflate plugin: a cffi-built native codec, installed by pip and found through its entry point.

Its C functions are checked twice: through the Python ``Codec`` methods that
kcodec's readers and builders call, and directly through the capsule of
``kcodec/codec.h`` (ctypes calls on the struct's function pointers).
"""
from __future__ import annotations

import ctypes
import ctypes.util
import gzip as stdlib_gzip
import struct
import threading
import zlib
from pathlib import Path

import pytest

import kcodec
import plugin_util
from kcodec import LegacyRecordBatchBuilder, RecordBatchBuilder, codecs, get_codec, read_batches
from kcodec.compression.gzip import JAVA_GZIP_HEADER, GzipCodec
from kcodec.errors import CorruptCompressedDataError, LimitExceededError
from oracle_util import assert_java_reads_as_kcodec, load_case, oracle_available

ORIGIN = "entry point kcodec-libdeflate 0.1.0"
MODULE = "kcodec_libdeflate"
DATA = load_case("v2_none_json100")[0][61:]
LEVELS = [1, 2, 3, 4, 5, 6, 7, 8, 9, -1, None]
T0 = 1_700_000_000_000


pytest.importorskip("cffi", reason="the plugin is built with cffi (pip install cffi)")
pytestmark = pytest.mark.skipif(not plugin_util.libdeflate_dev(),
                                reason="libdeflate-dev (libdeflate.h) is not installed: apt-get install libdeflate-dev")


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory) -> Path:
    site = plugin_util.install("kcodec-libdeflate", tmp_path_factory.mktemp("kcodec-libdeflate"))
    assert list((site / MODULE).glob("_kafka_gzip*.so"))
    assert list(site.glob("kcodec_libdeflate-0.1.0.dist-info/entry_points.txt"))
    return site


@pytest.fixture
def plugin(plugin_dir):
    with plugin_util.active(plugin_dir, MODULE):
        yield get_codec("gzip")


def _raw_deflate(level: int, data: bytes) -> bytes:
    """libdeflate's raw deflate of ``data``, called directly (not through the plugin)."""
    lib = ctypes.CDLL(ctypes.util.find_library("deflate"))
    lib.libdeflate_alloc_compressor.restype = ctypes.c_void_p
    lib.libdeflate_deflate_compress.restype = ctypes.c_size_t
    lib.libdeflate_deflate_compress.argtypes = (ctypes.c_void_p, ctypes.c_char_p, ctypes.c_size_t,
                                                ctypes.c_void_p, ctypes.c_size_t)
    lib.libdeflate_free_compressor.argtypes = (ctypes.c_void_p,)
    comp = lib.libdeflate_alloc_compressor(level)
    out = ctypes.create_string_buffer(len(data) + 1024)
    try:
        n = lib.libdeflate_deflate_compress(comp, data, len(data), out, len(out))
    finally:
        lib.libdeflate_free_compressor(comp)
    return out.raw[:n]


# -- the plugin as kcodec finds it ---------------------------------------------------------
def test_not_active_unless_installed():
    if plugin_util.installed_globally("kcodec-libdeflate"):
        pytest.skip("kcodec-libdeflate is installed in this environment")
    plugin_util.forget(MODULE)
    assert type(get_codec("gzip")) is GzipCodec


def test_replaces_the_builtin_through_its_entry_point(plugin):
    rows = [r for r in codecs() if r.id == 1]
    assert [(r.origin, r.active) for r in rows] == [(ORIGIN, True), ("builtin", False)]
    assert rows[0].implementation == "kcodec_libdeflate:LibdeflateGzipCodec"
    assert type(plugin).__name__ == "LibdeflateGzipCodec" and isinstance(plugin, GzipCodec)
    assert get_codec(1) is plugin is get_codec(kcodec.CompressionType.GZIP)
    assert plugin.backend.startswith("libdeflate 1.")


def test_output_is_one_java_gzip_member_at_every_level(plugin):
    from kafka.codec import gzip_decode
    builtin = GzipCodec()
    for level in LEVELS:
        out = plugin.compress(DATA, level=level)
        assert out[:10] == JAVA_GZIP_HEADER
        assert out[10:-8] == _raw_deflate(6 if level in (None, -1) else level, DATA)
        assert out[-8:] == struct.pack("<II", zlib.crc32(DATA), len(DATA))
        d = zlib.decompressobj(-15)
        assert d.decompress(out[10:]) == DATA and d.unused_data == out[-8:]  # one member, nothing after
        assert builtin.decompress(out) == DATA == plugin.decompress(out)
        assert gzip_decode(out) == DATA == stdlib_gzip.decompress(out)
        assert plugin.decompress(builtin.compress(DATA, level=level)) == DATA
    for empty in (b"", bytearray(), memoryview(b"")):
        assert builtin.decompress(plugin.compress(empty)) == b"" == plugin.decompress(plugin.compress(empty))


def test_levels_are_kafkas(plugin):
    assert plugin.compress(DATA) == plugin.compress(DATA, level=-1) == plugin.compress(DATA, level=6)
    for bad in (0, 10, -2, 12):
        with pytest.raises(kcodec.UnsupportedCodecError, match="between 1 and 9"):
            plugin.compress(DATA, level=bad)
    with pytest.raises(kcodec.UnsupportedCodecError):
        plugin.compress(DATA, magic=3)


def _member(payload: bytes, flags: int = 0, extra: bytes = b"") -> bytes:
    c = zlib.compressobj(6, zlib.DEFLATED, -15)
    return (bytes([0x1F, 0x8B, 8, flags]) + b"\0\0\0\0\0\xff" + extra + c.compress(payload) + c.flush()
            + struct.pack("<II", zlib.crc32(payload), len(payload)))


def _with_header_crc(flags: int, fields: bytes, payload: bytes) -> bytes:
    head = bytes([0x1F, 0x8B, 8, flags | 0x02]) + b"\0\0\0\0\0\xff" + fields
    return _member(payload, flags | 0x02, fields + struct.pack("<H", zlib.crc32(head) & 0xFFFF))


READ_CASES = {
    "one member": _member(DATA),
    "trailing garbage": _member(DATA) + b"32 bytes of ascii garbage follow",
    "two members": _member(b"first ") + _member(b"second"),
    "empty trailing member": _member(DATA) + _member(b""),
    "cut header after a member": _member(DATA) + b"\x1f\x8b\x08",
    "fextra fname fcomment": _member(DATA, 0x04 | 0x08 | 0x10, b"\x03\x00abcname\0comment\0"),
    "fhcrc": _with_header_crc(0x08, b"n\0", DATA),
    "fhcrc wrong": _member(DATA, 0x02, b"\x00\x00"),
    "not gzip": zlib.compress(DATA),
    "raw deflate": zlib.compress(DATA)[2:-4],
    "method 9": b"\x1f\x8b\x09" + _member(DATA)[3:],
    "cut header": _member(DATA)[:6],
    "cut fname": _member(DATA, 0x08, b"unterminated"),
    "cut deflate": _member(DATA)[:-40],
    "cut trailer": _member(DATA)[:-3],
    "bad crc": _member(DATA)[:-8] + struct.pack("<II", 1, len(DATA)),
    "bad isize": _member(DATA)[:-8] + struct.pack("<II", zlib.crc32(DATA), len(DATA) + 1),
    "flipped deflate": _member(DATA)[:30] + bytes([_member(DATA)[30] ^ 0xFF]) + _member(DATA)[31:],
    "empty": b"",
}


@pytest.mark.parametrize("case", sorted(READ_CASES))
def test_reads_what_the_builtin_reads(plugin, case):
    """Same data or the same kind of error as kcodec's built-in gzip (Java's GZIPInputStream rules)."""
    data = READ_CASES[case]
    try:
        expected = GzipCodec().decompress(data)
    except kcodec.KcodecError as exc:
        with pytest.raises(type(exc)):
            plugin.decompress(data)
        return
    assert plugin.decompress(data) == expected


def test_decompressed_size_is_bounded(plugin):
    bomb = GzipCodec().compress(b"\0" * (8 << 20))
    with pytest.raises(LimitExceededError, match="limit of 1000000 bytes"):
        plugin.decompress(bomb, max_size=1_000_000)
    assert plugin.decompress(bomb, max_size=8 << 20) == b"\0" * (8 << 20)
    # an ISIZE that lies: the output grows from the guess, within the limit
    lying = bomb[:-4] + struct.pack("<I", 10)
    with pytest.raises(CorruptCompressedDataError, match="Corrupt GZIP trailer"):
        plugin.decompress(lying)
    with pytest.raises(LimitExceededError):
        plugin.decompress(bomb[:-4] + struct.pack("<I", 0xFFFFFFFF), max_size=1 << 20)


# -- kcodec's paths with the plugin as its gzip --------------------------------------------
def _batches_with(plugin):
    records = [(b"k%d" % i, b'{"n": %d, "pad": "%s"}' % (i, b"x" * (i % 50))) for i in range(300)]
    out = []
    for level in (1, 6, 9):
        b = RecordBatchBuilder(compression="gzip", level=level, base_offset=len(out) * 300)
        for i, (k, v) in enumerate(records):
            b.append(k, v, T0 + i)
        out.append(bytes(b.build()))
    for magic in (0, 1):
        lb = LegacyRecordBatchBuilder(magic=magic, compression="gzip", base_offset=len(out) * 300)
        for i, (k, v) in enumerate(records):
            lb.append(k, v, T0 + i)
        out.append(lb.build())
    return b"".join(out), records


def test_builders_readers_and_arrow_use_the_plugin(plugin):
    data, records = _batches_with(plugin)
    batches = list(read_batches(data))
    assert len(batches) == 5 and all(b.compression == kcodec.CompressionType.GZIP for b in batches)
    v2 = batches[0]
    assert bytes(v2.payload) == plugin.compress(bytes(GzipCodec().decompress(v2.payload)), level=1)
    assert [(r.key, r.value) for b in batches for r in b] == records * 5
    table = kcodec.to_arrow(data)
    assert table.num_rows == 1500 and table.column("key").to_pylist() == [k for k, _ in records] * 5
    back = b"".join(kcodec.from_arrow(table.slice(0, 300), compression="gzip"))
    assert [r.value for b in read_batches(back) for r in b] == [v for _, v in records]


def test_builtin_gzip_reads_what_the_plugin_built(plugin_dir):
    with plugin_util.active(plugin_dir, MODULE):
        data, records = _batches_with(get_codec("gzip"))
    assert type(get_codec("gzip")) is GzipCodec
    assert [(r.key, r.value) for b in read_batches(data) for r in b] == records * 5


@pytest.mark.skipif(not oracle_available(), reason="Java or the oracle is not installed")
def test_java_reads_the_plugins_batches(plugin):
    data, records = _batches_with(plugin)
    doc = assert_java_reads_as_kcodec(data)
    assert [b["compression"] for b in doc["batches"]] == ["gzip"] * 5


# -- the native interface ------------------------------------------------------------------
COMPRESS_BOUND = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int, ctypes.c_int)
COMPRESS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p,
                            ctypes.c_int64, ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)
SIZE = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_int)
DECOMPRESS = ctypes.CFUNCTYPE(ctypes.c_int64, ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int64, ctypes.c_void_p,
                              ctypes.c_int64, ctypes.c_int, ctypes.c_char_p, ctypes.c_size_t)


class CodecV1(ctypes.Structure):
    """``kcodec_codec_v1`` of kcodec/codec.h."""
    _fields_ = [("abi_version", ctypes.c_uint32), ("flags", ctypes.c_uint32), ("state", ctypes.c_void_p),
                ("compress_bound", COMPRESS_BOUND), ("compress", COMPRESS), ("decompressed_size", SIZE),
                ("decompress", DECOMPRESS)]


def _header_define(name: str) -> int:
    text = (Path(kcodec.get_include()) / "kcodec" / "codec.h").read_text()
    for line in text.splitlines():
        parts = line.split()
        if parts[:2] == ["#define", name]:
            return int(parts[2].strip("()u"), 0)
    raise AssertionError(f"{name} is not in codec.h")


def _struct_of(capsule) -> CodecV1:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = (ctypes.py_object, ctypes.c_char_p)
    return CodecV1.from_address(get(capsule, b"kcodec.native_codec.v1"))


def _native_compress(c: CodecV1, data: bytes, level: int = -1, magic: int = 2) -> bytes:
    out = ctypes.create_string_buffer(c.compress_bound(c.state, len(data), level, magic))
    err = ctypes.create_string_buffer(256)
    n = c.compress(c.state, data, len(data), out, len(out), level, magic, err, len(err))
    assert n > 0, err.value
    return out.raw[:n]


def _native_decompress(c: CodecV1, data: bytes, cap: int, magic: int = 2):
    out = ctypes.create_string_buffer(max(cap, 1))
    err = ctypes.create_string_buffer(256)
    n = c.decompress(c.state, data, len(data), out, cap, magic, err, len(err))
    return (out.raw[:n], None) if n >= 0 else (n, err.value.decode())


def test_capsule_is_kcodecs_interface(plugin):
    capsule = plugin.native_codec()
    c = _struct_of(capsule)
    assert c.abi_version == _header_define("KCODEC_CODEC_ABI_VERSION") == 1
    assert c.flags & _header_define("KCODEC_CODEC_THREAD_SAFE")
    for level in (1, 6, 9, -1):
        framed = _native_compress(c, DATA, level)
        assert framed == plugin.compress(DATA, level=level)
        assert len(framed) <= c.compress_bound(c.state, len(DATA), level, 2)
        assert c.decompressed_size(c.state, framed, len(framed), 2) == len(DATA)
        assert _native_decompress(c, framed, len(DATA)) == (DATA, None)
        assert _native_decompress(c, GzipCodec().compress(DATA, level=level), len(DATA) + 10) == (DATA, None)
    assert _native_compress(c, b"") == plugin.compress(b"")


def test_capsule_error_codes(plugin):
    c = _struct_of(plugin.native_codec())
    framed = _native_compress(c, DATA)
    small = ctypes.create_string_buffer(20)
    err = ctypes.create_string_buffer(64)
    too_small = _header_define("KCODEC_CODEC_DST_TOO_SMALL")
    assert c.compress(c.state, DATA, len(DATA), small, 20, 6, 2, err, 64) == too_small
    assert c.compress(c.state, DATA, len(DATA), small, 20, 10, 2, err, 64) == _header_define("KCODEC_CODEC_BAD_LEVEL")
    assert b"between 1 and 9" in err.value
    assert c.compress(c.state, DATA, len(DATA), small, 20, 6, 7, None, 0) == _header_define("KCODEC_CODEC_BAD_MAGIC")
    assert _native_decompress(c, framed, len(DATA) - 1)[0] == _header_define("KCODEC_CODEC_DST_TOO_SMALL")
    code, message = _native_decompress(c, framed[:-1] + bytes([framed[-1] ^ 1]), len(DATA))
    assert (code, message) == (_header_define("KCODEC_CODEC_CORRUPT"), "gzip: Corrupt GZIP trailer")
    assert _native_decompress(c, b"not gzip", 100) == (_header_define("KCODEC_CODEC_CORRUPT"),
                                                       "gzip: Not in GZIP format")
    assert c.decompressed_size(c.state, b"short", 5, 2) == -1


def test_capsule_functions_run_on_many_threads_at_once(plugin):
    """Thread safe as flagged: per-thread libdeflate objects; ctypes calls them without the GIL."""
    c = _struct_of(plugin.native_codec())
    inputs = [DATA[i:] + bytes([i]) * 5000 for i in range(32)]
    expected = [plugin.compress(d, level=1 + i % 9) for i, d in enumerate(inputs)]
    failures = []

    def work(offset: int) -> None:
        for k in range(len(inputs)):
            i = (k + offset) % len(inputs)
            framed = _native_compress(c, inputs[i], 1 + i % 9)
            if framed != expected[i] or _native_decompress(c, framed, len(inputs[i])) != (inputs[i], None):
                failures.append(i)

    threads = [threading.Thread(target=work, args=(t * 5,)) for t in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failures


# -- packaging -----------------------------------------------------------------------------
def test_import_is_lazy_and_a_missing_extension_names_the_package(plugin_dir):
    plugin_util.check_lazy_import(plugin_dir, "kcodec_libdeflate", "kcodec_libdeflate._kafka_gzip")
    message = plugin_util.missing_library_error(plugin_dir, ["kcodec_libdeflate._kafka_gzip"], "LibdeflateGzipCodec")
    assert "pip install kcodec-libdeflate" in message


def test_disable_plugins_restores_the_builtin(plugin_dir):
    code = 'import kcodec; print(type(kcodec.get_codec("gzip")).__name__)'
    assert plugin_util.run(code, plugin_dir).stdout.strip() == "LibdeflateGzipCodec"
    assert plugin_util.run(code, plugin_dir, KCODEC_DISABLE_PLUGINS="1").stdout.strip() == "GzipCodec"
