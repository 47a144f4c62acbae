"""Arrow columns of the wrong type are refused with kcodec's error, by from_arrow and by advise's replay.

Found by the ``builder`` and ``advise`` fuzz targets: pyarrow's cast errors
(and an AttributeError for headers of binaries) used to escape.
"""
import pyarrow as pa
import pytest

import kcodec
from kcodec.advise.measure import BatchEncoder
from kcodec.advise.profile import record_columns
from kcodec.errors import RecordBuilderError

HEADERS = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))

BAD = {
    "an int value": ({"value": pa.array([1, 2], pa.int32())}, "the value column must be binary or string"),
    "a float key": ({"value": [b"a", b"b"], "key": pa.array([1.5, 2.0])}, "the key column must be"),
    "fractional timestamps": ({"value": [b"a", b"b"], "timestamp": pa.array([1.5, 2.0])}, "the timestamp column"),
    "text timestamps": ({"value": [b"a", b"b"], "timestamp": pa.array(["soon", "later"])}, "the timestamp column"),
    "headers of binaries": ({"value": [b"a", b"b"], "headers": pa.array([[b"x"], []], pa.list_(pa.binary()))},
                            "the headers column must be"),
    "headers with int values": ({"value": [b"a", b"b"], "headers": pa.array(
        [[{"key": "h", "value": 1}], []], pa.list_(pa.struct([("key", pa.string()), ("value", pa.int64())])))},
        "the header value column must be"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("magic", [2, 1])
def test_from_arrow_refuses(case, magic):
    columns, message = BAD[case]
    if magic == 1 and "header" in case:
        pytest.skip("v0/v1 messages have no headers")
    with pytest.raises(RecordBuilderError, match=message):
        kcodec.from_arrow(pa.table(columns), magic=magic, compression="gzip")


@pytest.mark.parametrize("case", sorted(BAD))
def test_advise_replay_refuses(case):
    columns, message = BAD[case]
    table = pa.table(columns)
    with pytest.raises(RecordBuilderError, match=message):
        record_columns(table)
        BatchEncoder(table)


def test_types_that_hold_bytes_are_taken():
    table = pa.table({"value": pa.array([b"a", None], pa.binary_view()), "key": pa.array(["k", "l"], pa.string_view()),
                      "timestamp": pa.array([5, 6], pa.int32()),
                      "headers": pa.array([[{"key": "h", "value": b"v"}], None], HEADERS)})
    got = kcodec.to_arrow(b"".join(kcodec.from_arrow(table)))
    assert got["value"].to_pylist() == [b"a", None] and got["key"].to_pylist() == [b"k", b"l"]
    assert record_columns(table)["value_len"].tolist() == [1, -1]
