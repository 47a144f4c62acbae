"""A third-party codec in C behind kcodec/codec.h, built with cffi at test time.

The codec (id 5, "zlen") frames zlib data after the input's size as a
big-endian int32.  Its C functions count the calls made with and without
the GIL and the calls running at the same moment, so the tests see how the
builder, ``from_arrow``, ``to_arrow`` and the readers call a plugin.
"""
from __future__ import annotations

import ctypes
import struct
import threading
import zlib

import pytest

import kcodec
from kcodec import Codec, RecordBatchBuilder, read_batches
from kcodec.errors import CorruptCompressedDataError, LimitExceededError, UnsupportedCodecError

cffi = pytest.importorskip("cffi")
pa = pytest.importorskip("pyarrow")

C_SOURCE = r"""
#include <Python.h>
#include <string.h>
#include <zlib.h>
#include <kcodec/codec.h>

/* not in the limited API cffi builds with, but exported by every CPython */
int PyGILState_Check(void);

static long calls_with_gil, calls_without_gil, running, most_running;

static void enter(void) {
    if (PyGILState_Check()) __atomic_add_fetch(&calls_with_gil, 1, __ATOMIC_SEQ_CST);
    else __atomic_add_fetch(&calls_without_gil, 1, __ATOMIC_SEQ_CST);
    long now = __atomic_add_fetch(&running, 1, __ATOMIC_SEQ_CST);
    long seen = __atomic_load_n(&most_running, __ATOMIC_SEQ_CST);
    while (now > seen && !__atomic_compare_exchange_n(&most_running, &seen, now, 0,
                                                      __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST)) {}
}

static void leave(void) {
    /* long enough for a second thread to arrive if it is let in */
    for (volatile int i = 0; i < 20000; i++) {}
    __atomic_sub_fetch(&running, 1, __ATOMIC_SEQ_CST);
}

static int64_t zlen_bound(void *state, int64_t n, int level, int magic) {
    (void)state; (void)level; (void)magic;
    return 4 + (int64_t)compressBound((uLong)n);
}

static int64_t zlen_compress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap,
                             int level, int magic, char *err, size_t err_cap) {
    (void)state; (void)magic;
    if (level < 1 || level > 9) return KCODEC_CODEC_BAD_LEVEL;
    if (cap < zlen_bound(state, n, level, magic)) return KCODEC_CODEC_DST_TOO_SMALL;
    enter();
    uLongf out = (uLongf)(cap - 4);
    int rc = compress2(dst + 4, &out, src, (uLong)n, level);
    leave();
    if (rc != Z_OK) {
        if (err_cap) snprintf(err, err_cap, "zlen: compress2 returned %d", rc);
        return KCODEC_CODEC_ERROR;
    }
    dst[0] = (uint8_t)(n >> 24); dst[1] = (uint8_t)(n >> 16); dst[2] = (uint8_t)(n >> 8); dst[3] = (uint8_t)n;
    return 4 + (int64_t)out;
}

static int64_t zlen_size(void *state, const uint8_t *src, int64_t n, int magic) {
    (void)state; (void)magic;
    if (n < 4) return -1;
    return ((int64_t)src[0] << 24) | ((int64_t)src[1] << 16) | ((int64_t)src[2] << 8) | src[3];
}

static int64_t zlen_decompress(void *state, const uint8_t *src, int64_t n, uint8_t *dst, int64_t cap,
                               int magic, char *err, size_t err_cap) {
    int64_t size = zlen_size(state, src, n, magic);
    if (size < 0) {
        if (err_cap) snprintf(err, err_cap, "zlen: no size field");
        return KCODEC_CODEC_CORRUPT;
    }
    if (size > cap) return KCODEC_CODEC_DST_TOO_SMALL;
    enter();
    uLongf out = (uLongf)cap;
    int rc = uncompress(dst, &out, src + 4, (uLong)(n - 4));
    leave();
    if (rc != Z_OK || (int64_t)out != size) {
        if (err_cap) snprintf(err, err_cap, "zlen: corrupt zlib data");
        return KCODEC_CODEC_CORRUPT;
    }
    return (int64_t)out;
}

static kcodec_codec_v1 zlen = {KCODEC_CODEC_ABI_VERSION, KCODEC_CODEC_THREAD_SAFE, NULL,
                               zlen_bound, zlen_compress, zlen_size, zlen_decompress};
static kcodec_codec_v1 zlen_serial = {KCODEC_CODEC_ABI_VERSION, 0, NULL,
                                      zlen_bound, zlen_compress, zlen_size, zlen_decompress};
static kcodec_codec_v1 zlen_future = {KCODEC_CODEC_ABI_VERSION + 1, KCODEC_CODEC_THREAD_SAFE, NULL,
                                      zlen_bound, zlen_compress, zlen_size, zlen_decompress};

void *zlen_codec(int which) { return which == 0 ? &zlen : which == 1 ? &zlen_serial : &zlen_future; }
long zlen_count(int which) {
    return which == 0 ? calls_with_gil : which == 1 ? calls_without_gil : most_running;
}
void zlen_reset(void) { calls_with_gil = calls_without_gil = running = most_running = 0; }
"""


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    ffi = cffi.FFI()
    ffi.cdef("void *zlen_codec(int which); long zlen_count(int which); void zlen_reset(void);")
    ffi.set_source("_kcodec_test_zlen", C_SOURCE, include_dirs=[kcodec.get_include()], libraries=["z"])
    path = ffi.compile(tmpdir=str(tmp_path_factory.mktemp("zlen")))
    import importlib.util

    spec = importlib.util.spec_from_file_location("_kcodec_test_zlen", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_CAPSULE_NAME = b"kcodec.native_codec.v1"  # capsule names must outlive the capsules
_OTHER_NAME = b"another.capsule"
_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


def _capsule(lib, which: int):
    return _new_capsule(int(lib.ffi.cast("uintptr_t", lib.lib.zlen_codec(which))), _CAPSULE_NAME, None)


def _codec_class(lib, which: int):
    class Zlen(Codec):
        """The same framing in Python: what a plugin without native functions would do."""

        id = 5
        name = "zlen"
        min_level = 1
        max_level = 9
        default_level = 6
        magics = frozenset({2})

        def native_codec(self):
            return _capsule(lib, which)

        def compress(self, data, level=None, magic=2):
            level = self.resolve_level(level)
            data = bytes(data)
            return struct.pack(">i", len(data)) + zlib.compress(data, level)

        def decompress(self, data, magic=2, max_size=kcodec.DEFAULT_MAX_DECOMPRESSED_SIZE):
            data = bytes(data)
            if len(data) < 4:
                raise CorruptCompressedDataError("zlen: no size field (Python)", position=0)
            (size,) = struct.unpack_from(">i", data)
            if size > max_size:
                raise LimitExceededError(f"zlen: {size} bytes exceed the limit of {max_size}", position=0)
            try:
                return zlib.decompress(data[4:])
            except zlib.error as exc:
                raise CorruptCompressedDataError(f"zlen: {exc} (Python)", position=4) from None

    return Zlen


@pytest.fixture
def zlen(lib):
    codec = kcodec.register_codec(_codec_class(lib, 0))
    lib.lib.zlen_reset()
    yield codec
    kcodec.unregister_codec(5)


def _counts(lib):
    return lib.lib.zlen_count(0), lib.lib.zlen_count(1), lib.lib.zlen_count(2)


def _batch(n: int = 200, compression="zlen", base_offset: int = 0) -> bytes:
    b = RecordBatchBuilder(magic=2, compression=compression, base_offset=base_offset)
    for i in range(n):
        b.append(f"key-{i}".encode(), (f"value {i} " * 20).encode(), 1_700_000_000_000 + i, [("h", b"v")])
    return b.build()


def test_builder_and_readers_call_the_plugins_c_functions_without_the_gil(lib, zlen):
    batch = _batch()
    with_gil, without_gil, _ = _counts(lib)
    assert (with_gil, without_gil) == (0, 1)
    # The frame is the plugin's: the Python method reads it the same.
    (read,) = read_batches(batch)
    assert read.compression == 5
    assert zlen.decompress(read.payload) == read.records_data()
    assert [r.value for r in read] == [(f"value {i} " * 20).encode() for i in range(200)]
    with_gil, without_gil, _ = _counts(lib)
    assert with_gil == 0 and without_gil >= 2


def test_from_arrow_and_to_arrow_call_the_plugin_without_the_gil(lib, zlen):
    table = pa.table({"key": [f"k{i}".encode() for i in range(5000)],
                      "value": [(f"v{i} " * 30).encode() for i in range(5000)]})
    batches = kcodec.from_arrow(table, compression="zlen", max_batch_bytes=16384)
    with_gil, without_gil, _ = _counts(lib)
    assert with_gil == 0 and without_gil == len(batches) > 10
    lib.lib.zlen_reset()
    back = kcodec.to_arrow(b"".join(batches), use_threads=False)
    assert back.column("value").to_pylist() == table.column("value").to_pylist()
    with_gil, without_gil, _ = _counts(lib)
    assert with_gil == 0 and without_gil == len(batches)


def test_a_thread_safe_plugin_runs_on_two_threads_at_once_and_a_serial_one_never(lib):
    def most_at_once():
        lib.lib.zlen_reset()
        barrier = threading.Barrier(2)

        def work():
            barrier.wait()
            for i in range(60):
                _batch(400, base_offset=i)

        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return _counts(lib)[2]

    kcodec.register_codec(_codec_class(lib, 1))
    try:
        assert most_at_once() == 1  # no KCODEC_CODEC_THREAD_SAFE: kcodec calls it from one thread at a time
    finally:
        kcodec.unregister_codec(5)
    kcodec.register_codec(_codec_class(lib, 0))
    try:
        assert most_at_once() == 2
    finally:
        kcodec.unregister_codec(5)


def test_plugin_errors_become_kcodec_errors(lib, zlen):
    batch = bytearray(_batch())
    batch[-3] ^= 0xFF  # inside the zlib data: the CRC-32C no longer matches either
    (read,) = read_batches(bytes(batch), validate=False)
    # The native function fails; the codec's Python method names the error and the byte.
    with pytest.raises(CorruptCompressedDataError, match=r"\(Python\)") as info:
        read.records_data()
    assert info.value.batch_offset == 0
    (read,) = read_batches(_batch(), max_decompressed_size=1000)
    with pytest.raises(LimitExceededError):
        read.records_data()
    with pytest.raises(UnsupportedCodecError):
        zlen.compress_into(b"x" * 100, bytearray(200), level=12)


def test_a_capsule_of_another_version_or_name_is_refused(lib):
    from kcodec._native.native_codec import NativeCodec

    codec = _codec_class(lib, 2)()
    with pytest.raises(UnsupportedCodecError, match="version 2"):
        NativeCodec(codec.native_codec(), codec)
    with pytest.raises(UnsupportedCodecError, match="kcodec.native_codec.v1"):
        NativeCodec(_new_capsule(int(lib.ffi.cast("uintptr_t", lib.lib.zlen_codec(0))), _OTHER_NAME, None), codec)


def test_python_only_codecs_keep_their_methods(lib):
    class PythonOnly(_codec_class(lib, 0)):
        def native_codec(self):
            return None

    kcodec.register_codec(PythonOnly)
    lib.lib.zlen_reset()
    try:
        batch = _batch()
        (read,) = read_batches(batch)
        assert len(list(read)) == 200
        assert _counts(lib)[:2] == (0, 0)
        out = bytearray(10_000)
        n = kcodec.get_codec(5).compress_into(b"abc" * 100, out, headroom=61)
        assert kcodec.get_codec(5).decompress(out[61:61 + n]) == b"abc" * 100
    finally:
        kcodec.unregister_codec(5)
