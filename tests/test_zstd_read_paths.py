"""How the zstd codec reads: which payloads it decodes in one call, into what buffer, and in which pieces it
streams the rest.

One frame first whose blocks fit the limit is decoded in one call: into its declared content size, else
into its blocks' bound as far as the input can plausibly hold it (256 bytes a compressed byte, at least
64 KiB), growing to the bound when that was too small.  python-zstandard's one-shot call cannot grow, so
the codec held to its API streams such a frame.  Everything else (several frames, a skippable frame
first, a bound over the limit) is streamed: first the declared size or the plausible bound, no more
than the limit + 1, then doubling, in pieces of at most 64 MiB, and one more byte to confirm the end.
The calls are recorded by wrapping the codec's per-thread contexts.
"""
from __future__ import annotations

import random
import struct
from typing import Any, List, Tuple

import pytest

import kcodec
import kcodec.compression.zstd as zstd_module
from builders import batch_around
from kcodec.errors import CorruptCompressedDataError, LimitExceededError
from oracle_util import assert_java_refuses, oracle_available

SKIPPABLE = struct.pack("<II", 0x184D2A50, 3) + b"abc"


class _Context:
    """libzstd's one-shot calls made through kcodec's ZstdContext: (capacity, None if too small)."""

    def __init__(self, real: Any, calls: List[Tuple[Any, ...]]) -> None:
        self.real, self.calls = real, calls

    def decompress(self, view: Any, capacity: int, or_none: bool = False) -> Any:
        self.calls.append(("one call", capacity, bool(or_none)))
        return self.real.decompress(view, capacity, or_none)


class _Reader:
    def __init__(self, real: Any, calls: List[Tuple[Any, ...]], most: int = 0) -> None:
        self.real, self.calls, self.most = real, calls, most

    def __enter__(self) -> "_Reader":
        self.real.__enter__()
        return self

    def __exit__(self, *exc: Any) -> Any:
        return self.real.__exit__(*exc)

    def read(self, size: int) -> bytes:
        self.calls.append(("read", size))
        return self.real.read(min(size, self.most) if self.most else size)


class _Decompressor:
    """python-zstandard's ZstdDecompressor: one-shot calls (max_output_size) and streams (read sizes)."""

    def __init__(self, real: Any, calls: List[Tuple[Any, ...]], most: int = 0) -> None:
        self.real, self.calls, self.most = real, calls, most

    def decompress(self, view: Any, max_output_size: int = 0) -> bytes:
        self.calls.append(("one call", max_output_size))
        return self.real.decompress(view, max_output_size=max_output_size)

    def stream_reader(self, view: Any, **options: Any) -> _Reader:
        self.calls.append(("stream", sorted(options.items())))
        return _Reader(self.real.stream_reader(view, **options), self.calls, self.most)


def _direct() -> Any:
    codec = zstd_module.ZstdCodec()  # made before any _api() of the test, which turns direct calls off
    codec.load()
    if codec.native_codec() is None:
        pytest.skip("libzstd's entry points are not exported by python-zstandard here")
    return codec


def _api(monkeypatch: Any) -> Any:
    monkeypatch.setenv("KCODEC_ZSTD_NATIVE", "0")
    codec = zstd_module.ZstdCodec()
    assert not codec.native
    return codec


def _recorded(codec: Any, payload: bytes, most: int = 0, **limit: int) -> Tuple[Any, List[Tuple[Any, ...]]]:
    """What ``codec.decompress`` returned (or raised: class, position) and the calls it made, in order;
    with ``most``, a stream gives no more than that many bytes a read."""
    calls: List[Tuple[Any, ...]] = []
    codec._local.decompressor = _Decompressor(codec._decompressor(), calls, most)
    if codec.native:
        codec._local.context = _Context(codec._context(), calls)
    try:
        return codec.decompress(payload, **limit), calls
    except (CorruptCompressedDataError, LimitExceededError) as exc:
        return (type(exc).__name__, exc.position), calls


STREAM = ("stream", [("read_across_frames", True)])
TEXT = b"abc" * 3000                                            # one compressed block, 23 bytes framed
MIXED = random.Random(5).randbytes(1000) + b"a" * 10_000        # one compressed block, 1,025 bytes framed


def _java(data: bytes) -> bytes:
    return kcodec.get_codec("zstd").compress(data)


def _declared(data: bytes) -> bytes:
    import zstandard
    return zstandard.ZstdCompressor().compress(data)


def _padded(frame: bytes, size: int) -> bytes:
    """``frame`` and a skippable frame after it, ``size`` bytes in all."""
    pad = size - len(frame) - 8
    return frame + struct.pack("<II", 0x184D2A5F, pad) + bytes(pad)


def _declaring(frame: bytes, size: int) -> bytes:
    """Java's ``frame`` (no content size, a window descriptor) with a 4-byte content size in its header."""
    return frame[:4] + b"\x80" + frame[5:6] + struct.pack("<I", size) + frame[6:]


def test_the_payloads_are_what_the_cases_say():
    from kcodec._native.codecs import zstd_scan
    assert zstd_scan(_java(TEXT)) == (1, -1, 131072, 0) and len(_java(TEXT)) < 256
    assert zstd_scan(_java(MIXED)) == (1, -1, 131072, 0) and len(_java(MIXED)) >= 512
    assert zstd_scan(_java(b"")) == (1, -1, 0, 0)
    assert zstd_scan(_declared(b"")) == (1, 0, 0, 0)
    assert zstd_scan(_java(bytes(2 << 20))) == (1, -1, 2 << 20, 0)
    assert zstd_scan(_padded(_java(TEXT), 511)) == (1, -1, 131072, 0)
    assert zstd_scan(_declaring(_java(TEXT), 9000)) == (1, 9000, 131072, 0)
    assert zstd_scan(_declaring(_java(TEXT), 0) * 2) == (2, 0, 262144, 0)


# payload, then the calls of the codec that calls libzstd directly and of the one held to python-zstandard
ONE_FRAME = {
    "declared content size": (_declared(b"x" * 1000), [("one call", 1000, False)], [("one call", 1000)]),
    # not single-segment: the blocks' bound (128 KiB) is above the declared size, which is the buffer's
    "declared content size under the blocks' bound": (
        _declaring(_java(TEXT), 9000), [("one call", 9000, False)], [("one call", 9000)]),
    # an empty content still gets a buffer of one byte: python-zstandard takes 0 for "no limit"
    "declared 0 bytes": (_declared(b""), [("one call", 1, False)], [("one call", 1)]),
    "Java's frame of nothing (a bound of 0)": (_java(b""), [("one call", 1, False)], [("one call", 1)]),
    # 23 bytes plausibly hold 64 KiB, less than the block's 128 KiB bound: python-zstandard streams it
    "a short frame": (_java(TEXT), [("one call", 65536, True)], [STREAM, ("read", 65536), ("read", 1)]),
    # 1,025 bytes plausibly hold more than the bound: the bound, which cannot be too small
    "a frame plausibly holding its bound": (_java(MIXED), [("one call", 131072, False)], [("one call", 131072)]),
    # 511 bytes (a skippable frame after it) plausibly hold 130,816 bytes, 256 short of the bound
    "a frame plausibly holding a little less than its bound": (
        _padded(_java(TEXT), 511), [("one call", 130816, True)], [STREAM, ("read", 130816), ("read", 1)]),
    # 64 KiB was too small: the direct call grows to the bound; python-zstandard streams, doubling
    "a frame holding more than is plausible": (
        _java(bytes(100_000)), [("one call", 65536, True), ("one call", 131072, False)],
        [STREAM, ("read", 65536), ("read", 131072), ("read", 1)]),
}


@pytest.mark.parametrize("case", sorted(ONE_FRAME))
def test_one_frame_is_decoded_in_one_call_where_its_engine_can(case, monkeypatch):
    payload, direct_calls, api_calls = ONE_FRAME[case]
    content = kcodec.get_codec("zstd").decompress(payload)
    assert _recorded(_direct(), payload) == (content, direct_calls)
    assert _recorded(_api(monkeypatch), payload) == (content, api_calls)


@pytest.mark.parametrize("payload", [b"", SKIPPABLE, SKIPPABLE * 2])
def test_no_frame_is_nothing_without_a_call(payload, monkeypatch):
    assert _recorded(_direct(), payload) == (b"", [])
    assert _recorded(_api(monkeypatch), payload) == (b"", [])


@pytest.mark.parametrize("frame", [_java(TEXT), _java(MIXED)])
def test_a_frame_declaring_0_bytes_over_blocks_is_streamed_and_refused(frame, monkeypatch):
    # zstd-jni's stream decodes the blocks and refuses the frame; python-zstandard's one-shot call
    # returned b"" for it unread (the second frame's bound is plausible in its size: a one-shot call)
    payload, direct = _declaring(frame, 0), _direct()
    assert _recorded(direct, payload) == (("CorruptCompressedDataError", 0), [STREAM, ("read", 1)])
    assert _recorded(_api(monkeypatch), payload) == (("CorruptCompressedDataError", 0), [STREAM, ("read", 1)])



@pytest.mark.skipif(not oracle_available(), reason="needs Java and the oracle's jars")
def test_java_refuses_a_frame_declaring_0_bytes_over_blocks():
    record = kcodec.RecordBatchBuilder(magic=2)
    record.append(timestamp=1, key=None, value=b"hello")
    frame = _java(bytes(record.build())[61:])
    assert_java_refuses(batch_around(_declaring(frame, 0), 1), "Data corruption detected")


def test_a_bound_at_the_limit_is_decoded_in_one_call_one_over_is_streamed():
    payload = _java(TEXT)
    assert _recorded(_direct(), payload, max_size=131072) == (TEXT, [("one call", 65536, True)])
    assert _recorded(_direct(), payload, max_size=131071) == (TEXT, [STREAM, ("read", 65536), ("read", 1)])


# payload, limit, then what the read gives and the calls it makes, the same for both engines
STREAMED = {
    "two frames": (_java(TEXT) * 2, {}, TEXT * 2, [STREAM, ("read", 65536), ("read", 1)]),
    "a skippable frame first": (SKIPPABLE + _java(TEXT), {}, TEXT, [STREAM, ("read", 65536), ("read", 1)]),
    # bounds of 0: no byte expected, one asked for to confirm it
    "two frames of nothing": (_java(b"") * 2, {}, b"", [STREAM, ("read", 1)]),
    # a declared size of 0 is what is expected, whatever the blocks' bound: one byte asked, which fails
    "two frames declaring 0 bytes that hold more": (
        _declaring(_java(TEXT), 0) * 2, {}, ("CorruptCompressedDataError", 0), [STREAM, ("read", 1)]),
    # raw blocks: a bound of exactly 1,400 bytes, all read at once; one byte confirms the end
    "raw blocks": (_java(MIXED[:700]) * 2, {}, MIXED[:700] * 2, [STREAM, ("read", 1400), ("read", 1)]),
    # raw blocks: a bound of exactly 1,400 bytes, the limit
    "raw blocks up to the limit": (_java(MIXED[:700]) * 2, {"max_size": 1400}, MIXED[:700] * 2,
                                   [STREAM, ("read", 1400), ("read", 1)]),
    # the first read asks for the limit + 1 and refuses what it gets
    "one frame over the limit": (_java(bytes(2 << 20)), {"max_size": 5000}, ("LimitExceededError", None),
                                 [STREAM, ("read", 5001)]),
    # the doubled second read is cut to what is left of the limit + 1
    "a later read over the limit": (_java(bytes(1 << 20)) * 2, {"max_size": 100_000}, ("LimitExceededError", None),
                                    [STREAM, ("read", 65536), ("read", 100_001 - 65536)]),
}


@pytest.mark.parametrize("case", sorted(STREAMED))
def test_the_rest_is_streamed_in_bounded_pieces(case, monkeypatch):
    payload, limit, expected, calls = STREAMED[case]
    assert _recorded(_direct(), payload, **limit) == (expected, calls)
    assert _recorded(_api(monkeypatch), payload, **limit) == (expected, calls)


def test_no_piece_is_larger_than_64_mib():
    # two frames declaring 40 MiB each: the first read would be their 80 MiB
    frame = _declared(bytes(40 << 20))
    got, calls = _recorded(_direct(), frame * 2)
    assert calls == [STREAM, ("read", 64 << 20), ("read", 64 << 20), ("read", 1)]
    assert len(got) == 80 << 20 and got.count(0) == len(got)


def test_a_stream_that_gives_less_than_asked_is_read_to_its_end():
    # a short read makes the next ask one byte; a byte back means the data goes on: 64 KiB again
    got, calls = _recorded(_direct(), _java(TEXT) * 2, most=4096)
    assert got == TEXT * 2
    assert calls == [STREAM] + [("read", 65536), ("read", 1)] * 5   # 4 x (4,096 + 1) bytes, then 1,612


def _corrupt() -> bytes:
    frame = bytearray(_java(MIXED))
    frame[-12:-3] = b"\xff" * 9  # the sequences that end the compressed block: its header still walks
    return bytes(frame)


def test_an_error_of_python_zstandards_one_call_names_the_frame(monkeypatch):
    frame, direct = _corrupt(), _direct()
    assert _recorded(direct, frame) == (("CorruptCompressedDataError", 0), [("one call", 131072, False)])
    assert _recorded(_api(monkeypatch), frame) == (("CorruptCompressedDataError", 0), [("one call", 131072)])
    # streamed (two frames: a bound of 256 KiB, plausible in 2,050 bytes), the error names the payload's start
    assert _recorded(direct, frame * 2) == (("CorruptCompressedDataError", 0), [STREAM, ("read", 262144)])


def test_compressors_are_kept_for_the_last_four_levels_up_to_19(monkeypatch):
    import zstandard
    codec = _api(monkeypatch)
    for level in (1, 2, 3, 4, 1, 5):
        codec.compress(TEXT, level)
    # level 1, used again, stays; level 2, the least recently used, goes
    assert list(codec._local.compressors) == [3, 4, 1, 5]
    assert codec._compressor(zstandard, 19) is codec._compressor(zstandard, 19)
    # from level 20 a compressor (hundreds of MB of tables once used) is made for one frame
    assert codec._compressor(zstandard, 20) is not codec._compressor(zstandard, 20)
    assert list(codec._local.compressors) == [4, 1, 5, 19]


def test_native_codec_and_native_load_the_library_first(monkeypatch):
    _direct()
    fresh = zstd_module.ZstdCodec()
    assert fresh.native_codec() is not None and fresh.native
    assert zstd_module.ZstdCodec().native is True   # asked first, too
    assert _api(monkeypatch).native_codec() is None


def test_star_import_gives_the_public_names():
    names: dict = {}
    exec("from kcodec.compression.zstd import *", names)
    assert sorted(n for n in names if n != "__builtins__") == ["ZSTD_WINDOW_LOG_MAX", "ZstdCodec"]
    codec = names["ZstdCodec"]()
    assert codec.decompress(codec.compress(b"x" * 100)) == b"x" * 100
