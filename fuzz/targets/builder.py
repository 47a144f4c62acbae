"""``from_arrow`` and the record builder given hostile Arrow input: wrong types, nulls, odd lengths.

The input picks each column's presence, Arrow type, nulls and values, and
the options (codec, magic, batch size, base offset).  Oracles: bad input
is refused with kcodec's error, never pyarrow's or Python's; what is
written reads back whole, every record, with the same values.
"""
import pyarrow as pa
from common import OracleMismatch, verdict
from provider import Provider

import kcodec

BINARY_TYPES = (pa.binary(), pa.large_binary(), pa.string(), pa.large_string(), pa.binary_view(),
                pa.binary(3), pa.int32(), pa.null())
STAMP_TYPES = (pa.int64(), pa.timestamp("ms"), pa.timestamp("us", "UTC"), pa.timestamp("ns"), pa.timestamp("s"),
               pa.int32(), pa.float64(), pa.string())
HEADER_TYPES = (pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())])),
                pa.large_list(pa.struct([("key", pa.string()), ("value", pa.binary())])),
                pa.list_(pa.struct([("key", pa.binary()), ("value", pa.string())])),
                pa.list_(pa.struct([("value", pa.binary()), ("key", pa.string())])),
                pa.list_(pa.binary()), pa.int64())
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _blob(p: Provider):
    return None if p.int(0, 5) == 0 else p.bytes(p.int(0, 40))


def _column(p: Provider, typ, n: int):
    values = [_blob(p) for _ in range(n)]
    try:
        if pa.types.is_fixed_size_binary(typ):
            values = [None if v is None else v[:3].ljust(3, b"\0") for v in values]
        elif pa.types.is_string(typ) or pa.types.is_large_string(typ):
            values = [None if v is None else v.decode("latin-1") for v in values]
        elif pa.types.is_integer(typ) or pa.types.is_floating(typ):
            values = [None if v is None else int.from_bytes(v[:4], "little", signed=True) for v in values]
        return pa.array(values, typ)
    except (pa.ArrowException, ValueError, TypeError, OverflowError):
        return pa.nulls(n, typ)


def _stamps(p: Provider, typ, n: int):
    values = [None if p.int(0, 7) == 0 else p.int(-(1 << 62), 1 << 62) >> p.int(0, 62) for _ in range(n)]
    try:
        if pa.types.is_string(typ):
            return pa.array([None if v is None else str(v) for v in values], typ)
        if pa.types.is_floating(typ):
            return pa.array([None if v is None else v / 7 for v in values], typ)
        return pa.array(values, pa.int64()).cast(typ, safe=False)
    except (pa.ArrowException, ValueError, OverflowError):
        return pa.nulls(n, typ)


def _headers(p: Provider, typ, n: int):
    try:
        if pa.types.is_integer(typ):
            return pa.array([p.int(0, 9) for _ in range(n)], typ)
        if pa.types.is_binary(typ.value_type):
            return pa.array([[_blob(p) for _ in range(p.int(0, 2))] for _ in range(n)], typ)
        names = [f.name for f in typ.value_type]
        out = []
        for _ in range(n):
            if p.int(0, 4) == 0:
                out.append(None)
                continue
            out.append([{names[0]: _text(p, typ.value_type[0].type), names[1]: _text(p, typ.value_type[1].type)}
                        for _ in range(p.int(0, 3))])
        return pa.array(out, typ)
    except (pa.ArrowException, ValueError, TypeError):
        return pa.nulls(n, typ)


def _text(p: Provider, typ):
    v = _blob(p)
    return v.decode("latin-1") if v is not None and pa.types.is_string(typ) else v


def other_columns(p: Provider, n: int) -> dict:
    """Maybe a key, a timestamp and a headers column, each of a hostile type."""
    cols = {}
    if p.bool():
        cols["key"] = _column(p, BINARY_TYPES[p.int(0, len(BINARY_TYPES) - 1)], n)
    if p.bool():
        cols["timestamp"] = _stamps(p, STAMP_TYPES[p.int(0, len(STAMP_TYPES) - 1)], n)
    if p.bool():
        cols["headers"] = _headers(p, HEADER_TYPES[p.int(0, len(HEADER_TYPES) - 1)], n)
    return cols


def test_one_input(data: bytes) -> None:
    p = Provider(data)
    n = p.int(0, 12)
    cols = {}
    if p.int(0, 7):
        cols["value"] = _column(p, BINARY_TYPES[p.int(0, len(BINARY_TYPES) - 1)], n)
    cols.update(other_columns(p, n))
    if p.int(0, 3) == 0:
        start = p.int(-5, 1 << 40)
        cols["offset"] = pa.array([start + i * p.int(0, 3) for i in range(n)], pa.int64())
    table = pa.table(cols) if cols else pa.table({"other": pa.nulls(n)})
    options = dict(compression=CODECS[p.int(0, 4)], magic=p.int(0, 2), max_batch_bytes=p.int(1, 1 << 14),
                   base_offset=p.int(-3, 1 << 20))
    if options["magic"] < 2 and options["compression"] == "zstd":
        options["compression"] = "lz4"
    built, error = verdict(lambda: kcodec.from_arrow(table, **options))
    if error is not None:
        return
    data_out = b"".join(bytes(b) for b in built)
    # The object reader: any int64 millisecond Kafka holds reads back there (Arrow's microseconds may not hold it).
    got, error = verdict(lambda: [(r.key, r.value, r.offset) for b in kcodec.read_batches(data_out) for r in b])
    if error is not None:
        raise OracleMismatch(f"from_arrow({options}) wrote what kcodec refuses: {error!r}")
    if len(got) != n:
        raise OracleMismatch(f"from_arrow({options}) wrote {len(got)} records of {n}")
    if "value" in cols and pa.types.is_binary(cols["value"].type):
        if [r[1] for r in got] != cols["value"].to_pylist():
            raise OracleMismatch(f"from_arrow({options}) changed the values")
