"""Header keys that are not valid UTF-8 read as Kafka's Java clients read them."""
from __future__ import annotations

import json
import pathlib
import random

import pytest

import kcodec
from kcodec._java_utf8 import decode
from oracle_util import oracle_available, oracle_verify

FIXTURE = pathlib.Path(__file__).parent / "fixtures" / "java_utf8_header_keys.json"


def test_malformed_keys_decode_as_java_decoded_them():
    # Written by the Java client (oracle.py verify) for every lead byte class
    # followed by edge bytes, cut short and continued.
    cases = json.loads(FIXTURE.read_text())["keys"]
    assert len(cases) > 1000
    mismatches = [(k, j, decode(bytes.fromhex(k))) for k, j in cases if decode(bytes.fromhex(k)) != j]
    assert mismatches == []


def test_valid_utf8_is_the_builtin_decoding():
    for text in ["", "key", "é", "ключ", "\u20ac", "\U0001F600", "a\x00b"]:
        assert decode(text.encode()) == text
    assert decode(b"\xed\xa0\x80") == "\ufffd"  # an encoded surrogate: one U+FFFD, as in Java


@pytest.mark.parametrize("codec", ["none", "zstd"])
def test_readers_and_to_arrow_use_it(codec):
    b = kcodec.RecordBatchBuilder(compression=codec)
    b.append(b"k", b"v", 1, headers=[(b"\xed\xa0\x80x\xff", b"1"), ("ok", None)])
    b.append(b"k", b"v", 1, headers=[("\u00e9", b"2")])
    data = b.build()
    (batch,) = kcodec.read_batches(data)
    assert [r.headers for r in batch] == [(("\ufffdx\ufffd", b"1"), ("ok", None)), (("\u00e9", b"2"),)]
    table = kcodec.to_arrow(data)
    table.validate(full=True)  # Arrow strings must be UTF-8
    assert table.column("headers").to_pylist() == [
        [{"key": "\ufffdx\ufffd", "value": b"1"}, {"key": "ok", "value": None}], [{"key": "\u00e9", "value": b"2"}]]
    assert kcodec.Record(0, 1, 0, b"k", b"v", headers=[(b"\xed\xa0\x80", b"")]).headers == (("\ufffd", b""),)


@pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")
def test_random_malformed_keys_against_java():
    rng = random.Random(7)
    edge = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xED,
            0xEF, 0xF0, 0xF1, 0xF4, 0xF5, 0xF7, 0xF8, 0xFF]
    keys = [bytes(rng.choice(edge) if rng.random() < 0.8 else rng.randrange(256) for _ in range(rng.randint(1, 8)))
            for _ in range(1500)]
    b = kcodec.RecordBatchBuilder()
    for k in keys:
        b.append(None, b"", 1, headers=[(k, None)])
    status, doc = oracle_verify(b.build())
    assert status == 0, doc
    java = [r["headers"][0][0] for r in doc["batches"][0]["records"]]
    assert [decode(k) for k in keys] == java
