"""The kcodec-isal plugin, installed as a real distribution and found only through its entry point."""
from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

import kcodec
import plugin_util
from kcodec import codecs, get_codec, register_codec
from kcodec.compression import registry
from kcodec.compression.gzip import JAVA_GZIP_HEADER, GzipCodec
from kcodec.errors import LimitExceededError, UnsupportedCodecError
from oracle_util import load_case, oracle_available, oracle_verify

ORIGIN = "entry point kcodec-isal 0.1.0"
DATA = load_case("v2_none_json100")[0][61:]
LEVELS = [1, 2, 3, 4, 5, 6, 7, 8, 9, -1, None]

pytest.importorskip("isal")


@pytest.fixture(scope="session")
def plugin_dir(tmp_path_factory) -> Path:
    target = plugin_util.install("kcodec-isal", tmp_path_factory.mktemp("kcodec-isal"))
    assert (target / "kcodec_isal" / "__init__.py").exists()
    assert list(target.glob("kcodec_isal-0.1.0.dist-info/entry_points.txt"))
    return target


def _forget_plugin() -> None:
    plugin_util.forget("kcodec_isal")


@pytest.fixture
def plugin(plugin_dir):
    with plugin_util.active(plugin_dir, "kcodec_isal"):
        yield plugin_dir


def _installed_globally() -> bool:
    return plugin_util.installed_globally("kcodec-isal")


def _run(code: str, plugin_dir: Path, **env: str):
    return plugin_util.run(code, plugin_dir, **env)


def test_not_active_unless_installed():
    if _installed_globally():
        pytest.skip("kcodec-isal is installed in this environment")
    registry._reset_for_tests()
    assert type(get_codec("gzip")) is GzipCodec
    assert [r.origin for r in codecs() if r.id == 1] == ["builtin"]


def test_discovered_through_its_entry_point(plugin):
    rows = [r for r in codecs() if r.id == 1]
    assert [(r.origin, r.active) for r in rows] == [(ORIGIN, True), ("builtin", False)]
    assert rows[0].implementation == "kcodec_isal:IsalGzipCodec"
    assert "kcodec_isal" not in sys.modules  # listing does not import a plugin for a Kafka id
    codec = get_codec(1)
    assert type(codec).__name__ == "IsalGzipCodec" and type(codec).__module__ == "kcodec_isal"
    assert get_codec("gzip") is codec is get_codec(kcodec.CompressionType.GZIP)
    assert isinstance(codec, GzipCodec)
    assert codec.backend.startswith("isal ")
    assert not codec.native and GzipCodec().native  # ISA-L deflates through its Python API, zlib in C


def test_output_is_kafka_gzip_at_every_level(plugin):
    from kafka.codec import gzip_decode
    isal_codec = get_codec("gzip")
    builtin = GzipCodec()
    for level in LEVELS:
        out = isal_codec.compress(DATA, level=level)
        assert out[:10] == JAVA_GZIP_HEADER
        assert builtin.decompress(out) == DATA
        assert gzip_decode(out) == DATA
        assert isal_codec.decompress(out) == DATA
        assert isal_codec.decompress(builtin.compress(DATA, level=level)) == DATA


def test_single_member(plugin):
    import zlib
    out = get_codec("gzip").compress(DATA * 50, level=9)
    d = zlib.decompressobj(-15)
    assert d.decompress(out[10:]) == DATA * 50
    assert len(d.unused_data) == 8  # the trailer, then nothing


def test_levels_are_kafkas(plugin):
    from kcodec_isal import ISAL_LEVELS
    codec = get_codec("gzip")
    assert sorted(ISAL_LEVELS) == [-1, 1, 2, 3, 4, 5, 6, 7, 8, 9]
    assert set(ISAL_LEVELS.values()) == {0, 1, 2, 3}
    assert ISAL_LEVELS[-1] == ISAL_LEVELS[6]
    from isal import isal_zlib
    for level, isal_level in ISAL_LEVELS.items():
        c = isal_zlib.compressobj(isal_level, isal_zlib.DEFLATED, -15, 8)
        deflated = c.compress(DATA) + c.flush()
        assert codec.compress(DATA, level=level)[10:-8] == deflated
    assert codec.compress(DATA) == codec.compress(DATA, level=-1)
    for bad in (0, 10, -2):
        with pytest.raises(UnsupportedCodecError, match="between 1 and 9"):
            codec.compress(DATA, level=bad)


def test_reads_with_kafka_rules(plugin):
    codec = get_codec("gzip")
    member = codec.compress(DATA)
    assert codec.decompress(member + b"trailing garbage is ignored") == DATA
    assert codec.decompress(member + GzipCodec().compress(b"tail")) == DATA + b"tail"
    with pytest.raises(LimitExceededError):
        codec.decompress(member, max_size=100)
    with pytest.raises(kcodec.CorruptCompressedDataError, match="Corrupt GZIP trailer"):
        codec.decompress(member[:-1] + bytes([member[-1] ^ 1]))


def test_register_codec_beats_the_plugin(plugin):
    mine = register_codec(GzipCodec(), replace=True)
    assert get_codec("gzip") is mine
    rows = [r for r in codecs() if r.id == 1]
    assert [(r.origin, r.active) for r in rows] == [("registered", True), (ORIGIN, False), ("builtin", False)]
    kcodec.unregister_codec("gzip")
    assert type(get_codec("gzip")).__name__ == "IsalGzipCodec"


def test_disable_plugins_restores_the_builtin(plugin_dir):
    code = """
        import kcodec
        rows = [(r.origin, r.active) for r in kcodec.codecs() if r.id == 1]
        print(type(kcodec.get_codec("gzip")).__name__, rows)
    """
    on = _run(code, plugin_dir)
    assert on.returncode == 0, on.stderr
    assert on.stdout.startswith("IsalGzipCodec") and ORIGIN in on.stdout
    off = _run(code, plugin_dir, KCODEC_DISABLE_PLUGINS="1")
    assert off.returncode == 0, off.stderr
    assert off.stdout.strip() == "GzipCodec [('builtin', True)]"


def test_missing_isal_names_the_package(plugin_dir):
    message = plugin_util.missing_library_error(plugin_dir, ["isal", "isal.isal_zlib"], "IsalGzipCodec")
    assert "pip install isal" in message


def test_plugin_import_is_lazy(plugin_dir):
    plugin_util.check_lazy_import(plugin_dir, "kcodec_isal", "isal")


@pytest.mark.skipif(not oracle_available(), reason="Java or the oracle is not installed")
def test_java_reads_the_plugins_output(plugin):
    import struct

    from kcodec._native.primitives import crc32c
    java, doc, _ = load_case("v2_none_json100")
    batches = []
    for level in (1, 6, 9):
        batch = bytearray(java[:61]) + get_codec("gzip").compress(DATA, level=level)
        struct.pack_into(">i", batch, 8, len(batch) - 12)
        struct.pack_into(">h", batch, 21, struct.unpack_from(">h", batch, 21)[0] | 1)
        struct.pack_into(">I", batch, 17, crc32c(memoryview(batch)[21:]))
        batches.append(bytes(batch))
    rc, out = oracle_verify(b"".join(batches))
    assert rc == 0, out.get("error")
    expected = [(r["offset"], r["key"], r["value"]) for r in doc["batches"][0]["records"]]
    for batch in out["batches"]:
        assert batch["compression"] == "gzip"
        assert [(r["offset"], r["key"], r["value"]) for r in batch["records"]] == expected


def test_plugin_error_for_wrong_id_is_reported(plugin_dir, tmp_path):
    """A plugin claiming Kafka's gzip name with another id is refused, not silently used."""
    dist = tmp_path / "bad_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: bad-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[kcodec.codecs]\nlz4 = bad_plugin:Codec\n")
    (tmp_path / "bad_plugin.py").write_text(textwrap.dedent("""
        from kcodec.compression.gzip import GzipCodec
        class Codec(GzipCodec):
            pass
    """))
    sys.path.insert(0, str(tmp_path))
    _forget_plugin()
    try:
        with pytest.raises(UnsupportedCodecError, match="but lz4 is id 3"):
            get_codec("lz4")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("bad_plugin", None)
        _forget_plugin()
