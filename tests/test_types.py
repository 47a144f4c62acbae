"""CompressionType and TimestampType mirror Kafka's enums."""
import pickle

import pytest

import kcodec
from kcodec import CompressionType, TimestampType
from kcodec.errors import CorruptRecordError, KcodecError, UnsupportedCodecError


def test_ids_and_names():
    assert [(c.value, c.kafka_name) for c in CompressionType] == [
        (0, "none"), (1, "gzip"), (2, "snappy"), (3, "lz4"), (4, "zstd")]
    assert CompressionType.of("ZSTD") is CompressionType.ZSTD
    assert CompressionType.of(" Gzip ") is CompressionType.GZIP
    assert CompressionType.of("uncompressed") is CompressionType.NONE
    assert CompressionType.of(3) is CompressionType.LZ4
    assert CompressionType.of(CompressionType.SNAPPY) is CompressionType.SNAPPY


def test_bad_id_and_name_list_valid_ones():
    with pytest.raises(UnsupportedCodecError, match=r"0 \(none\), 1 \(gzip\).*4 \(zstd\)"):
        CompressionType.of(5)
    with pytest.raises(UnsupportedCodecError, match="none, gzip, snappy, lz4, zstd"):
        CompressionType.of("brotli")
    with pytest.raises(UnsupportedCodecError):
        CompressionType.of(True)
    with pytest.raises(ValueError):  # the hierarchy also reads as ValueError
        CompressionType.of(-1)


def test_levels_follow_kip_390():
    def levels(t):
        return t.min_level, t.max_level, t.default_level

    assert levels(CompressionType.GZIP) == (1, 9, -1)
    assert levels(CompressionType.LZ4) == (1, 17, 9)
    assert levels(CompressionType.ZSTD) == (-131072, 22, 3)
    assert CompressionType.SNAPPY.default_level is None
    assert CompressionType.GZIP.validate_level(None) == -1
    assert CompressionType.GZIP.validate_level(-1) == -1
    for bad in (0, 10, -2):
        with pytest.raises(UnsupportedCodecError, match="between 1 and 9 or equal to -1"):
            CompressionType.GZIP.validate_level(bad)
    for bad in (23, -131073):
        with pytest.raises(UnsupportedCodecError):
            CompressionType.ZSTD.validate_level(bad)
    with pytest.raises(UnsupportedCodecError, match="no levels"):
        CompressionType.SNAPPY.validate_level(1)


def test_magic_support():
    assert CompressionType.ZSTD.magics == frozenset({2})
    assert not CompressionType.ZSTD.supports_magic(1)
    assert all(CompressionType.of(i).supports_magic(0) for i in range(4))


def test_timestamp_type():
    assert TimestampType(1).kafka_name == "LogAppendTime"
    assert TimestampType.NO_TIMESTAMP_TYPE == -1


def test_error_location_and_pickling():
    err = CorruptRecordError("Record is corrupt", position=5)
    err.with_context(position=100, batch_offset=7, source="x.log")
    assert err.position == 105
    assert str(err) == "Record is corrupt (in x.log, at byte 105, in the batch with base offset 7)"
    clone = pickle.loads(pickle.dumps(err))
    assert type(clone) is CorruptRecordError and str(clone) == str(err)
    assert isinstance(err, KcodecError)


def test_version():
    assert isinstance(kcodec.__version__, str) and kcodec.__version__.count(".") == 2
