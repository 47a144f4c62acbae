"""The codec registry: lookups, errors, lazy imports, missing libraries, user codecs."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from typing import Optional

import pytest

import kcodec
from kcodec import Codec, CompressionType, codecs, get_codec, register_codec, unregister_codec
from kcodec.compression import registry
from kcodec.compression.gzip import GzipCodec
from kcodec.errors import CodecLibraryMissingError, KcodecError, UnsupportedCodecError

# the folder this kcodec was imported from: site-packages, or the tree with in-place builds
KCODEC_HOME = os.path.dirname(os.path.dirname(os.path.abspath(kcodec.__file__)))
LIBRARIES = ["zstandard", "lz4", "snappy", "cramjam", "isal", "pyarrow"]


@pytest.fixture(autouse=True)
def _clean_registry():
    registry._reset_for_tests()
    yield
    registry._reset_for_tests()


def _run(code: str, env: Optional[dict] = None) -> subprocess.CompletedProcess:
    full_env = dict(os.environ, **(env or {}))
    full_env["PYTHONPATH"] = KCODEC_HOME + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, cwd=KCODEC_HOME, timeout=120)


# -- lookups ----------------------------------------------------------------------
@pytest.mark.parametrize("ctype", list(CompressionType))
def test_lookup_by_id_name_and_type(ctype):
    codec = get_codec(ctype)
    assert codec is get_codec(int(ctype)) is get_codec(ctype.kafka_name)
    assert codec is get_codec(ctype.kafka_name.upper()) is get_codec(f"  {ctype.kafka_name.title()} ")
    assert codec.id == ctype.value and codec.name == ctype.kafka_name
    assert (codec.min_level, codec.max_level, codec.default_level) == \
        (ctype.min_level, ctype.max_level, ctype.default_level)
    assert codec.magics == ctype.magics


def test_topic_spelling_of_none():
    assert get_codec("uncompressed") is get_codec(0)


@pytest.mark.parametrize("key", [8, -1, 100])
def test_bad_id(key):
    with pytest.raises(UnsupportedCodecError, match="0..7"):
        get_codec(key)


def test_free_id_lists_valid_ones():
    with pytest.raises(UnsupportedCodecError) as info:
        get_codec(5)
    for text in ("0 (none)", "1 (gzip)", "2 (snappy)", "3 (lz4)", "4 (zstd)"):
        assert text in str(info.value)


@pytest.mark.parametrize("key", ["brotli", "gz", ""])
def test_bad_name_lists_valid_ones(key):
    with pytest.raises(UnsupportedCodecError) as info:
        get_codec(key)
    assert "gzip, lz4, none, snappy, zstd" in str(info.value)


@pytest.mark.parametrize("key", [1.0, None, b"gzip", True])
def test_bad_key_type(key):
    with pytest.raises(UnsupportedCodecError):
        get_codec(key)


def test_listing_shows_builtins():
    rows = [r for r in codecs() if r.origin == "builtin"]
    assert [(r.id, r.name) for r in rows] == [(0, "none"), (1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")]
    assert rows[1].implementation == "kcodec.compression.gzip:GzipCodec"


# -- lazy imports -------------------------------------------------------------------
def test_import_kcodec_imports_no_compression_library():
    proc = _run(f"""
        import sys
        import kcodec
        loaded = [m for m in {LIBRARIES!r} if m in sys.modules]
        assert not loaded, loaded
        kcodec.codecs()
        for name in ("gzip", "snappy", "lz4", "zstd"):
            kcodec.get_codec(name)
        loaded = [m for m in {LIBRARIES!r} if m in sys.modules]
        assert not loaded, loaded
        print("ok")
    """, {"KCODEC_DISABLE_PLUGINS": "1"})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


@pytest.mark.parametrize("name,module", [("zstd", "zstandard"), ("lz4", "lz4"), ("snappy", "cramjam")])
def test_library_imported_on_first_use(name, module):
    proc = _run(f"""
        import sys
        import kcodec
        codec = kcodec.get_codec({name!r})
        assert {module!r} not in sys.modules
        codec.compress(b"first use")
        assert {module!r} in sys.modules
        print("ok")
    """)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("name,blocked,package", [
    ("zstd", ["zstandard"], "zstandard"),
    ("lz4", ["lz4", "lz4.block"], "lz4"),
    ("snappy", ["cramjam", "snappy"], "python-snappy"),
])
def test_missing_library_names_the_package(name, blocked, package):
    proc = _run(f"""
        import sys
        for m in {blocked!r}:
            sys.modules[m] = None  # makes "import m" fail as if it were not installed
        import kcodec
        codec = kcodec.get_codec({name!r})
        assert codec.available() is False
        for call in (lambda: codec.compress(b"x"), lambda: codec.decompress(b"x")):
            try:
                call()
            except kcodec.CodecLibraryMissingError as exc:
                assert isinstance(exc, ImportError) and isinstance(exc, kcodec.KcodecError)
                print(exc)
            else:
                raise SystemExit("no error")
    """)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert len(lines) == 2
    for line in lines:
        assert f"package {package!r}" in line and name in line
        assert 'install it with: pip install "kcodec[codecs]"' in line


@pytest.mark.parametrize("name,blocked,package", [
    ("zstd", ["zstandard"], "zstandard"),
    ("lz4", ["lz4", "lz4.block"], "lz4"),
    ("snappy", ["cramjam", "snappy"], "python-snappy"),
])
def test_missing_library_names_the_package_in_process(monkeypatch, name, blocked, package):
    """The same error from a fresh codec object of this process, the library blocked as it loads."""
    for m in blocked:
        monkeypatch.setitem(sys.modules, m, None)
    codec = type(get_codec(name))()
    with pytest.raises(kcodec.CodecLibraryMissingError) as e:
        codec.compress(b"x")
    assert str(e.value).startswith(f"the {name} codec needs the Python package {package!r} (module ")
    assert codec.available() is False


def test_available_when_installed():
    for name in ("none", "gzip", "snappy", "lz4", "zstd"):
        assert get_codec(name).available()


# -- user codecs ------------------------------------------------------------------------
class BrotliCodec(Codec):
    """A codec for a free id, as a third party would write one."""

    id = 5
    name = "brotli"
    min_level, max_level, default_level = 0, 11, 4
    magics = frozenset({2})
    requires = "brotli"

    def compress(self, data, level=None, magic=2):
        self.check_magic(magic)
        import brotli
        return brotli.compress(bytes(data), quality=self.resolve_level(level))

    def decompress(self, data, magic=2, max_size=kcodec.DEFAULT_MAX_DECOMPRESSED_SIZE):
        self.check_magic(magic)
        import brotli
        d = brotli.Decompressor()
        out = d.process(bytes(data), output_buffer_limit=max_size + 1)
        self.check_limit(len(out), max_size)
        return out


def test_register_a_codec_for_a_free_id():
    codec = register_codec(BrotliCodec)
    assert get_codec(5) is codec is get_codec("Brotli")
    data = b"brotli " * 1000
    assert codec.decompress(codec.compress(data, 9)) == data
    rows = [r for r in codecs() if r.id == 5]
    assert len(rows) == 1 and rows[0].origin == "registered" and rows[0].active
    assert rows[0].implementation.endswith(":BrotliCodec")
    with pytest.raises(UnsupportedCodecError, match="replace=True"):
        register_codec(BrotliCodec)
    unregister_codec("brotli")
    with pytest.raises(UnsupportedCodecError):
        get_codec(5)


def test_replacing_a_builtin_needs_replace():
    class LoudGzip(GzipCodec):
        pass

    with pytest.raises(UnsupportedCodecError, match="replace=True"):
        register_codec(LoudGzip)
    mine = register_codec(LoudGzip(), replace=True)
    assert get_codec(1) is mine and get_codec("gzip") is mine
    rows = [r for r in codecs() if r.id == 1]
    assert rows[0].origin == "registered" and rows[0].active
    assert all(not r.active for r in rows[1:])
    assert any(r.origin == "builtin" for r in rows)
    unregister_codec(1)
    assert type(get_codec(1)) is GzipCodec


def test_lookups_remembered_before_a_registration_follow_it():
    """get_codec remembers its answers for ids and names; registering and unregistering forget
    them, so the builder and the readers (which look a codec up per batch) follow at once."""
    class CountingGzip(GzipCodec):
        calls = 0

        def native_codec(self):
            return None  # through decompress(), where the calls are counted

        def decompress(self, data, magic=2, max_size=kcodec.DEFAULT_MAX_DECOMPRESSED_SIZE):
            CountingGzip.calls += 1
            return super().decompress(data, magic, max_size)

    builtin = get_codec(1)
    assert get_codec("gzip") is builtin is get_codec(1)
    builder = kcodec.RecordBatchBuilder(compression="gzip")
    builder.append(b"k", b"v" * 100, 1)
    batch = builder.build()
    assert [r.value for b in kcodec.read_batches(batch) for r in b] == [b"v" * 100]
    mine = register_codec(CountingGzip(), replace=True)
    assert get_codec(1) is mine and get_codec("gzip") is mine
    assert [r.value for b in kcodec.read_batches(batch) for r in b] == [b"v" * 100]
    assert CountingGzip.calls == 1
    unregister_codec(1)
    assert get_codec(1) is builtin and get_codec("gzip") is builtin
    assert [r.value for b in kcodec.read_batches(batch) for r in b] == [b"v" * 100]
    assert CountingGzip.calls == 1


def test_registering_nonsense_fails():
    class NoId(BrotliCodec):
        id = 9

    with pytest.raises(UnsupportedCodecError, match="0..7"):
        register_codec(NoId)
    with pytest.raises(UnsupportedCodecError, match="not a kcodec.Codec"):
        register_codec(object())


# -- CompressionType ---------------------------------------------------------------------
def test_compression_type_properties():
    assert [c.kafka_name for c in CompressionType] == ["none", "gzip", "snappy", "lz4", "zstd"]
    assert (CompressionType.GZIP.min_level, CompressionType.GZIP.max_level,
            CompressionType.GZIP.default_level) == (1, 9, -1)
    assert (CompressionType.LZ4.min_level, CompressionType.LZ4.max_level,
            CompressionType.LZ4.default_level) == (1, 17, 9)
    assert (CompressionType.ZSTD.min_level, CompressionType.ZSTD.max_level,
            CompressionType.ZSTD.default_level) == (-131072, 22, 3)
    assert CompressionType.SNAPPY.default_level is None and CompressionType.NONE.min_level is None
    assert CompressionType.ZSTD.magics == {2}
    assert not CompressionType.ZSTD.supports_magic(1) and CompressionType.LZ4.supports_magic(0)
    assert CompressionType.GZIP.validate_level(-1) == -1
    assert CompressionType.GZIP.validate_level(None) == -1
    for ctype, level in [(CompressionType.GZIP, 0), (CompressionType.LZ4, 18),
                         (CompressionType.ZSTD, 23), (CompressionType.SNAPPY, 1)]:
        with pytest.raises(UnsupportedCodecError):
            ctype.validate_level(level)
    assert CompressionType.of("ZSTD") is CompressionType.ZSTD
    assert CompressionType.of(3) is CompressionType.LZ4
    with pytest.raises(UnsupportedCodecError, match="valid ids"):
        CompressionType.from_id(5)


def test_errors_are_kcodec_errors():
    for exc in (CodecLibraryMissingError("x"), UnsupportedCodecError("y")):
        assert isinstance(exc, KcodecError)
