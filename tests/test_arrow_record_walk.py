"""to_arrow's record walk agrees with the record objects on every record shape.

The columnar walk (csrc/kc_gather.h) reads the common record, whose varints
are one or two bytes long and whose fields end exactly at its declared
length, on a fast path, and leaves everything else to the full parse.  Each
shape below sits between other records, where that fast path is tried, and
at the end of its batch, where it is not; every byte flip of a batch of them
must give the same rows, or the same error, as the object path.
"""
from __future__ import annotations

import pytest

import kcodec
from builders import batch_around
from kcodec import KcodecError, read_batches
from kcodec._native.primitives import encode_varint, encode_varlong
from kcodec.records import batch_header


def _overlong(value: int, size: int) -> bytes:
    """value's zigzag varint spread over size bytes (Kafka accepts the extra zero groups)."""
    z = (value << 1) ^ (value >> 31)
    out = bytearray()
    for _ in range(size - 1):
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


def _field(data, length_bytes: bytes = b"") -> bytes:
    if data is None:
        return length_bytes or encode_varint(-1)
    return (length_bytes or encode_varint(len(data))) + data


def _record(ts=0, off=0, key=b"k", value=b"v", headers=(), *, ts_bytes=b"", off_bytes=b"", key_len=b"",
            value_len=b"", count_bytes=b"", header_lens=None, length_delta=0) -> bytes:
    body = b"\x00" + (ts_bytes or encode_varlong(ts)) + (off_bytes or encode_varint(off))
    body += _field(key, key_len) + _field(value, value_len)
    body += count_bytes or encode_varint(len(headers))
    for i, (hk, hv) in enumerate(headers):
        lens = (header_lens or {}).get(i, (b"", b""))
        body += _field(hk, lens[0]) + _field(hv, lens[1])
    return encode_varint(len(body) + length_delta) + body


SHAPES = {
    "plain": _record(key=b"k" * 16, value=b"v" * 100, headers=[(b"trace-id", b"0" * 12), (b"source", b"web")]),
    "null key and value": _record(key=None, value=None),
    "key length -2": _record(key=None, key_len=encode_varint(-2)),
    "value length -100": _record(value=None, value_len=encode_varint(-100)),
    "null header value": _record(headers=[(b"h", None)]),
    "header value length -7": _record(headers=[(b"h", None)], header_lens={0: (b"", encode_varint(-7))}),
    "negative header key length": _record(headers=[(b"h", b"x")], header_lens={0: (encode_varint(-1), b"")}),
    "three-byte value length": _record(value=b"x" * 9000),
    "three-byte deltas": _record(ts=70000, off=70000),
    "negative deltas": _record(ts=-5, off=-3),
    "over-long timestamp delta": _record(ts_bytes=_overlong(1, 3)),
    "over-long offset delta": _record(off_bytes=_overlong(1, 2) + b""),
    "over-long key length": _record(key=b"ab", key_len=_overlong(2, 4)),
    "over-long value length": _record(value=b"abc", value_len=_overlong(3, 3)),
    "over-long header count": _record(headers=[(b"h", b"x")], count_bytes=_overlong(1, 2)),
    "over-long header lengths": _record(headers=[(b"h", b"x")], header_lens={0: (_overlong(1, 2), _overlong(1, 5))}),
    "many headers": _record(headers=[(b"h%d" % i, b"v" * i) for i in range(9)]),
    "no headers": _record(headers=[]),
    "negative header count": _record(count_bytes=encode_varint(-1)),
    "huge header count": _record(headers=[(b"h", b"x")], count_bytes=encode_varint(2 ** 20)),
    "header count past the record": _record(headers=[(b"h", b"x")], count_bytes=encode_varint(2)),
    "length one short": _record(value=b"vvvv", length_delta=-1),
    "length one long": _record(value=b"vvvv", length_delta=1),
    "length -1": b"\x01" + _record()[1:],
    "key past the record": _record(key=b"k", key_len=encode_varint(40)),
    "empty body": encode_varint(0),
}


def _batch(records) -> bytes:
    return batch_around(b"".join(records), len(records), compression="none")


def _fix_crc(buf: bytearray) -> bytes:
    batch_header.seal(buf, 0, len(buf))
    return bytes(buf)


def _objects(data):
    try:
        rows = [(r.offset, r.timestamp, r.key, r.value,
                 [(k, v) for k, v in r.headers] or None)
                for batch in read_batches(data) for r in batch.records()]
    except KcodecError as e:
        return type(e), str(e)
    return rows


def _columns(data, views):
    try:
        table = kcodec.to_arrow(data, views=views)
    except KcodecError as e:
        return type(e), str(e)
    cols = table.to_pydict()
    return [(o, int(t.timestamp() * 1000) if t is not None else None, k, v,
             [(h["key"], h["value"]) for h in hs] if hs is not None else None)
            for o, t, k, v, hs in zip(cols["offset"], cols["timestamp"], cols["key"], cols["value"], cols["headers"])]


def _agree(data):
    expected = _objects(data)
    for views in (False, True):
        assert _columns(data, views) == expected, views


GOOD = SHAPES["plain"]


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_each_shape_between_records_and_last(shape):
    rec = SHAPES[shape]
    for records in ([GOOD, rec, GOOD, GOOD], [GOOD, GOOD, rec], [rec]):
        _agree(_batch(records))


def test_every_byte_flip_of_mixed_records():
    shapes = ["plain", "null header value", "no headers", "null key and value", "three-byte value length"]
    records = [SHAPES[s] for s in shapes[:4]] + [GOOD]
    data = _batch(records)
    _agree(data)
    for pos in range(61, len(data)):
        for mask in (0x01, 0x02, 0x40, 0x80, 0xFF):
            buf = bytearray(data)
            buf[pos] ^= mask
            _agree(_fix_crc(buf))
