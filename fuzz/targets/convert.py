"""``convert_magic`` up and down on any bytes: whatever it writes, kcodec reads back whole.

The first byte picks the target magic, the codec and whether ``fetch_offset``
is given; the rest is the record set.  Oracles: the output reads whole
(every batch, every record, CRCs checked); it holds the input's data
records (control batches dropped going down), keys and values unchanged.
"""
from common import MAX_DECOMPRESSED, OracleMismatch, verdict

import kcodec
from kcodec.records.convert import convert_magic

CODECS = (None, "none", "gzip", "snappy", "lz4", "zstd", None, None)


def _records(data):
    out = []
    for batch in kcodec.read_batches(data, max_decompressed_size=MAX_DECOMPRESSED):
        if not batch.is_control:
            out.extend((r.offset, r.key, r.value) for r in batch)
    return out


def test_one_input(data: bytes) -> None:
    if not data:
        return
    choice, payload = data[0], data[1:]
    to_magic = choice % 3
    compression = CODECS[(choice >> 2) & 7]
    fetch_offset = 0 if choice & 0x20 else None
    before, error = verdict(lambda: _records(payload))
    if error is not None:
        return  # convert_magic reads with the same reader; what it refuses is the reader's target's business
    out, error = verdict(lambda: convert_magic(payload, to_magic, compression=compression, fetch_offset=fetch_offset))
    if error is not None:
        return
    after, error = verdict(lambda: _records(out))
    if error is not None:
        raise OracleMismatch(f"convert_magic(to {to_magic}, {compression}) wrote what kcodec refuses: {error!r}")
    if fetch_offset is None and [(o, k, v) for o, k, v in after] != before:
        raise OracleMismatch(f"convert_magic(to {to_magic}, {compression}) changed the records")
    for batch in kcodec.read_batches(out):
        if batch.magic > to_magic or (to_magic == 2 and batch.magic != 2):
            raise OracleMismatch(f"convert_magic(to {to_magic}) left a batch of magic {batch.magic}")
