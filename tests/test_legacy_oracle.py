"""v0/v1 against the Kafka Java client: golden vectors, byte identity, and Java reading what kcodec writes."""
from __future__ import annotations

import struct
import zlib
from typing import Any, Dict

import pytest

import canonical
import kcodec
from kcodec import TimestampType, get_codec
from kcodec.records import read_batches
from kcodec.records.legacy_batch import LegacyRecordBatch
from kcodec.records.legacy_builder import LegacyRecordBatchBuilder
from oracle_util import (
    assert_java_reads_as_kcodec,
    cases,
    digest,
    load_case,
    manifest,
    oracle_available,
    oracle_verify,
)

T0 = 1_700_000_000_000
LEGACY_CASES = [c for c in cases() if c.startswith(("v0_", "v1_"))]
_LEVELS = {c["name"]: c["level"] for c in manifest()["cases"]}


def render(data: bytes, validate: bool = True) -> Dict[str, Any]:
    """The oracle document for ``data`` (tests/canonical.py).

    Java's ``verify`` calls ``record.ensureValid()`` on every record, which
    checks the CRC of each inner message of a compressed wrapper; kcodec's
    reader does the same when validating.
    """
    return canonical.render(data, validate)


#: kcodec's one deliberate difference from Kafka's reader: an inner message whose size runs
#: past the end of its decompressed wrapper.  Java ends the set there and drops it silently (or
#: fails to allocate the declared size); validating, kcodec raises.  validate=False reads as Java.
OVERRUN = "of the decompressed wrapper has size"


# -- golden vectors -----------------------------------------------------------------
@pytest.mark.parametrize("name", LEGACY_CASES)
def test_vector_decodes_to_java_document(name):
    data, expected, is_digest = load_case(name)
    got = render(data)
    assert (digest(got) if is_digest else got) == expected


def test_segment_mixed():
    data, expected, _ = load_case("segment_mixed")
    batches = list(kcodec.read_batches(data))
    legacy = [b for b in batches if b.magic < 2]
    assert len(legacy) == 30 and all(isinstance(b, LegacyRecordBatch) for b in legacy)
    assert render(data) == expected


# -- byte identity ------------------------------------------------------------------------
def _groups(data):
    """Split a vector into what one Java builder wrote: a wrapper, or a run of plain messages."""
    batches = list(read_batches(data, validate=False))
    i = 0
    while i < len(batches):
        if batches[i].is_compressed:
            yield [batches[i]]
            i += 1
        else:
            j = i
            while j < len(batches) and not batches[j].is_compressed:
                j += 1
            yield batches[i:j]
            i = j


def rebuild(data: bytes, level=None) -> bytes:
    out = b""
    for group in _groups(data):
        first = group[0]
        ts_type = first.timestamp_type if first.magic else TimestampType.CREATE_TIME
        builder = LegacyRecordBatchBuilder(
            first.magic, first.compression, level, base_offset=first.base_offset, timestamp_type=ts_type,
            log_append_time=first.max_timestamp if ts_type == TimestampType.LOG_APPEND_TIME else None)
        for b in group:
            for r in b:
                builder.append(r.key, r.value, r.timestamp, offset=r.offset)
        out += builder.build()
    return out


def _identical_compressor(codec: str, level) -> bool:
    """Where kcodec's compressor emits Java's exact bytes (see test_codecs._java_identical)."""
    if codec == "none":
        return True
    if codec == "gzip":
        return zlib.ZLIB_RUNTIME_VERSION == "1.2.13"
    if codec == "lz4":
        return level is not None and level != 9  # LZ4HC matches lz4-java; the fast compressor does not
    return False


@pytest.mark.parametrize("name", LEGACY_CASES)
def test_builder_reproduces_java_bytes(name):
    data, _, _ = load_case(name)
    codec = name.split("_")[1]
    level = _LEVELS.get(name) if "_lvl" in name else None
    mine = rebuild(data, level)
    if _identical_compressor(codec, level):
        assert mine == data
        return
    # Otherwise only the compressor's choice of matches differs: the wrapper header
    # fields and the decompressed inner message sets are Java's exactly.
    ours, theirs = list(read_batches(mine, validate=False)), list(read_batches(data, validate=False))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert (a.offset, a.magic, a.attributes, a.max_timestamp, a.message_key()) == \
               (b.offset, b.magic, b.attributes, b.max_timestamp, b.message_key())
        c = get_codec(a.compression)
        assert c.decompress(a.message_value(), magic=a.magic) == c.decompress(b.message_value(), magic=b.magic)
        a.ensure_valid(deep=True)


def test_lz4_v0_wrapper_carries_kafkas_old_header_checksum():
    b = LegacyRecordBatchBuilder(0, "lz4")
    b.append(b"k", b"v")
    w = next(read_batches(b.build(), validate=False))
    assert bytes(w.message_value()[:7]) == bytes.fromhex("04224d1860401a")
    b = LegacyRecordBatchBuilder(1, "lz4")
    b.append(b"k", b"v", T0)
    w = next(read_batches(b.build(), validate=False))
    assert bytes(w.message_value()[:7]) == bytes.fromhex("04224d18604082")


# -- Java reads what kcodec writes ------------------------------------------------------
def built_cases() -> bytes:
    """Every codec x magic x timestamp type, one after another with contiguous offsets."""
    out = b""
    offset = 0
    for magic in (0, 1):
        for codec in ("none", "gzip", "snappy", "lz4"):
            for lat in (False, True):
                for level in ([None, 1, 9] if codec in ("gzip", "lz4") else [None]):
                    kw = dict(timestamp_type=TimestampType.LOG_APPEND_TIME, log_append_time=T0 + 777) if lat else {}
                    b = LegacyRecordBatchBuilder(magic, codec, level, base_offset=offset, **kw)
                    for i in range(7):
                        key = None if i == 3 else b"key-%d" % i
                        value = None if i == 5 else (b"" if i == 6 else b"value %d " % i * (i * 40))
                        b.append(key, value, -1 if i == 4 else T0 + i * 13)
                    offset += 7
                    out += b.build()
    # gaps in v1 relative offsets, and a single-record wrapper at a large offset
    b = LegacyRecordBatchBuilder(1, "gzip", base_offset=offset)
    for gap in (0, 1, 5, 100):
        b.append(b"g", b"gap", T0, offset=offset + gap)
    out += b.build()
    b = LegacyRecordBatchBuilder(1, "snappy", base_offset=2**40)
    b.append(None, b"far", T0)
    return out + b.build()


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_java_reads_built_sets():
    assert_java_reads_as_kcodec(built_cases())


def test_built_sets_read_back():
    data = built_cases()
    doc = render(data)
    assert doc["validBytes"] == len(data)
    offsets = [r["offset"] for b in doc["batches"] for r in b["records"]]
    assert offsets == list(range(224)) + [224, 225, 229, 324, 2**40]


# -- Java on the hand-built inputs of test_legacy's reading rules (items 43-54) ------------
def _legacy_cases_accepted() -> bytes:
    """Inputs Kafka reads, one after another (each wrapper is a separate entry)."""
    from test_legacy import inner_set, message, wrapper
    parts = [
        message(5, b"k0", b"v0", magic=0, attrs=0x08),  # 43: v0 ignores bit 3
        message(6, b"k1", b"v1", ts=-5),  # 43: negative v1 timestamp
        message(7, -2, -7),  # 45: negative lengths are null
        message(8, b"k", b"v", tail=b"extra bytes"),  # 45: ignored tail
        wrapper(102, inner_set([0, 1, 2])),  # 46
        wrapper(0, inner_set([0, 1, 2]), codec=2),  # 47: librdkafka's wrapper offset 0
        wrapper(105, inner_set([0, 5]), codec=3),  # 48: gaps
        wrapper(110, inner_set([0, 1], ts=5), attrs=0x08, ts=T0),  # 49: LogAppendTime wrapper
        wrapper(120, inner_set([115, 116], magic=0), magic=0),  # 50: v0 absolute inner offsets
        wrapper(122, inner_set([0], magic=0)),  # 51: v1 wrapper, v0 inner
        wrapper(123, inner_set([123]), magic=0, codec=2),  # 51: v0 wrapper, v1 inner
    ]
    return b"".join(parts)


def _legacy_cases_rejected():
    from test_legacy import inner_set, message, wrapper
    bad_inner_crc = bytearray(inner_set([0, 1]))
    bad_inner_crc[-1] ^= 0xFF
    return {
        "44-crc-v0": message(0, b"k", b"v", magic=0, crc=1),
        "44-crc-v1": message(0, b"k", b"v", crc=1),
        "47-wrapper-offset": wrapper(1, inner_set([0, 1, 2])),
        "52-empty-set": wrapper(0, b""),
        "52-null-value": wrapper(0, b"", value=None),
        "52-zstd": wrapper(0, b"", codec=4, value=b"zstd?"),
        "53-nested": wrapper(1, inner_set([0]) + wrapper(1, inner_set([0]))),
        "53-inner-size-13": wrapper(1, inner_set([0]) + struct.pack(">qi", 1, 13) + b"\0" * 13),
        "54-inner-crc": wrapper(1, bytes(bad_inner_crc)),
    }


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
@pytest.mark.parametrize("size", [2 ** 31 - 1, 2 ** 20, None])
def test_inner_message_past_the_end_of_its_wrapper(size):
    """Java drops it (or fails to allocate 2^31-1 bytes); kcodec raises unless validate=False."""
    from kcodec.errors import CorruptRecordError
    from test_legacy import inner_set, wrapper
    inner = bytearray(inner_set([0, 1, 2]))
    if size is None:
        inner = inner[:-3]  # the last message cut short
    else:
        last = len(inner_set([0, 1]))
        struct.pack_into(">i", inner, last + 8, size)
    data = wrapper(125, bytes(inner))
    status, doc = oracle_verify(data)
    with pytest.raises(CorruptRecordError, match=OVERRUN) as e:
        render(data)
    assert e.value.position == 0 and e.value.batch_offset == 125
    if size == 2 ** 31 - 1:
        assert status == 1 and doc["error"]["class"] == "java.lang.OutOfMemoryError", doc
    else:
        assert status == 0 and doc == render(data, validate=False)
        assert doc["recordCount"] == 2


_JAVA_ERRORS = {
    "org.apache.kafka.common.errors.CorruptRecordException": "CorruptRecordError",
    "org.apache.kafka.common.InvalidRecordException": "InvalidRecordError",
}


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_java_reads_the_legacy_cases_like_kcodec():
    assert_java_reads_as_kcodec(_legacy_cases_accepted())


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
@pytest.mark.parametrize("case", sorted(_legacy_cases_rejected()))
def test_java_rejects_the_legacy_cases_like_kcodec(case):
    from kcodec.errors import KcodecError
    data = _legacy_cases_rejected()[case]
    status, doc = oracle_verify(data)
    assert status == 1, doc
    with pytest.raises(KcodecError) as e:
        render(data)
    assert (type(e.value).__name__, e.value.message) == (_JAVA_ERRORS[doc["error"]["class"]],
                                                         doc["error"]["message"])


def _mutants(seed: int, count: int):
    """Damaged plain messages and wrappers whose inner set (not its compressed form) is damaged.

    The CRCs are recomputed, so the damage reaches the field parsers and the
    deep iterator rather than stopping at the checksum.
    """
    import random

    from test_legacy import _fix, inner_set, message, wrapper
    rng = random.Random(seed)
    plain = message(9, b"key", b"value")
    inner = inner_set([0, 1, 2])
    out = []
    for i in range(count):
        if i % 2:
            body = bytearray(plain)
            pos = rng.randrange(16, len(body))
            body[pos] ^= rng.choice((0x01, 0x08, 0x80, 0xFF))
            out.append(_fix(body))
        else:
            body = bytearray(inner)
            pos = rng.randrange(len(body))
            body[pos] ^= rng.choice((0x01, 0x08, 0x80, 0xFF))
            at = 0
            while len(body) - at >= 12:  # repair each inner CRC that still has a place
                size = struct.unpack_from(">i", body, at + 8)[0]
                if size < 14 or at + 12 + size > len(body):
                    break
                struct.pack_into(">I", body, at + 12, zlib.crc32(body[at + 16:at + 12 + size]))
                at += 12 + size
            out.append(wrapper(2, bytes(body)))
    return out


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_java_and_kcodec_agree_on_damaged_messages():
    from kcodec.errors import KcodecError
    for data in _mutants(11, 24):
        status, doc = oracle_verify(data)
        try:
            mine = render(data)
        except KcodecError as e:
            if status == 0 and OVERRUN in e.message:
                assert doc == render(data, validate=False), data.hex()
                continue
            assert status == 1, (data.hex(), e)
            java = doc["error"]
            if java["class"] in _JAVA_ERRORS:  # elsewhere Java throws raw runtime exceptions
                assert (type(e).__name__, e.message) == (_JAVA_ERRORS[java["class"]], java["message"])
            continue
        assert status == 0 and doc == mine, data.hex()


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_java_and_kcodec_wrap_extreme_offsets_alike():
    from test_legacy import inner_set, wrapper
    data = wrapper(2 ** 63 - 1, inner_set([0, -2 ** 63])) + wrapper(2 ** 62, inner_set([-2 ** 63 + 5, 3]))
    status, doc = oracle_verify(data)
    assert status == 0, doc
    assert doc == render(data)
