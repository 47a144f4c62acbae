"""``to_arrow`` on any bytes: copying and views, validate on and off, native pass and general path.

Oracles: views read the same rows as copying; the native pass (no batch
fields) reads the same rows as the general path (``batch_fields`` forces
it), with and without validation; threads change nothing.
"""
from common import MAX_DECOMPRESSED, rows, same_verdict, verdict

import kcodec

KAFKA_COLUMNS = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]


def _read(data, **kw):
    return rows(kcodec.to_arrow(data, max_decompressed_size=MAX_DECOMPRESSED, **kw).select(KAFKA_COLUMNS))


def test_one_input(data: bytes) -> None:
    for validate in (True, False):
        copying = verdict(lambda: _read(data, validate=validate, use_threads=False))
        same_verdict(f"views (validate={validate})", copying,
                     verdict(lambda: _read(data, validate=validate, views=True, use_threads=False)))
        same_verdict(f"general path (validate={validate})", copying,
                     verdict(lambda: _read(data, validate=validate, batch_fields=("base_offset",),
                                           use_threads=False)))
        if len(data) > 4096:
            same_verdict(f"threads (validate={validate})", copying,
                         verdict(lambda: _read(data, validate=validate, use_threads=True)))
    verdict(lambda: kcodec.to_arrow(data, include_control=True, max_decompressed_size=MAX_DECOMPRESSED))
