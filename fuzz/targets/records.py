"""The object reader on any bytes, touching every field of every batch and record.

Oracle: the records it reads (offset, key, value, headers) are the rows
``to_arrow`` reads, and it refuses what ``to_arrow`` refuses (but for
timestamps beyond Arrow's microseconds, which only the objects hold).
"""
from common import MAX_DECOMPRESSED, rows, same_verdict, verdict

import kcodec
from kcodec.errors import InvalidRecordError, KcodecError, LimitExceededError
from kcodec.records.control import ControlRecordType, EndTransactionMarker, parse_control_key


def _touch(obj) -> None:
    """Every public attribute that is not a method.

    An accessor may refuse a field with kcodec's own error, as Java's do: ``compression_type`` of a
    batch whose codec id is unknown raises, like ``DefaultRecordBatch.compressionType()``, while a
    batch of no records still reads as empty, like its ``iterator()``.  Anything else is a finding.
    """
    for name in dir(obj):
        if not name.startswith("_"):
            try:
                value = getattr(obj, name)
            except KcodecError:
                continue
            if isinstance(value, memoryview):
                bytes(value)


def _objects(data, validate):
    out = []
    for batch in kcodec.read_batches(data, validate=validate, max_decompressed_size=MAX_DECOMPRESSED):
        _touch(batch)
        if validate:
            batch.ensure_valid()
        for record in batch:
            _touch(record)
            out.append((record.offset, record.key, record.value, [(k, v) for k, v in record.headers] or None))
    return out


def _columns(data, validate):
    # Control batches too: without them to_arrow would not read their records at all.
    table = kcodec.to_arrow(data, validate=validate, include_control=True, max_decompressed_size=MAX_DECOMPRESSED,
                            use_threads=False)
    return [(off, key, value, [(h["key"], h["value"]) for h in hdrs] if hdrs else None)
            for key, value, off, hdrs in rows(table.select(["key", "value", "offset", "headers"]))]


def _refused_marker(columns, error) -> bool:
    """Whether ``error`` is Kafka's refusal of a control record that ``to_arrow`` hands out as raw bytes.

    The objects decode each control record's key and COMMIT/ABORT value (``ControlRecordType``,
    ``EndTransactionMarker``) to give typed fields, validated or not, while an unvalidated
    ``to_arrow`` returns the key and value as stored.  The same message must then come from parsing
    one of the rows ``to_arrow`` read.
    """
    if not isinstance(error, InvalidRecordError):
        return False
    for _, key, value, _ in columns:
        try:
            ctype, _ = parse_control_key(key)
            if ctype in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                EndTransactionMarker.decode(ctype, value)
        except InvalidRecordError as exc:
            if str(exc) in str(error):
                return True
    return False


def test_one_input(data: bytes) -> None:
    for validate in (True, False):
        objects, columns = verdict(lambda: _objects(data, validate)), verdict(lambda: _columns(data, validate))
        if objects[1] is None and isinstance(columns[1], LimitExceededError) and "Arrow's timestamp" in str(columns[1]):
            continue  # a Kafka millisecond beyond Arrow's timestamp('us'): only the objects hold it
        if not validate and columns[1] is None and _refused_marker(columns[0], objects[1]):
            continue
        same_verdict(f"objects and columns (validate={validate})", objects, columns)
