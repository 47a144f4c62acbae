"""Crafted inputs Kafka's Java client rejects, on every reader path kcodec has.

Three classes: a legacy inner message with a wrong CRC-32 inside a compressed
wrapper (the consumer's ``check.crcs``, the broker's validator); control
records whose key or end-transaction value Kafka cannot parse
(``ControlRecordType.parseTypeId``, ``EndTransactionMarker.deserializeValue``);
and a legacy inner message whose size runs past the end of the decompressed
wrapper.  Validating (the default) each is kcodec's error naming the batch and
its byte; ``validate=False`` reads them as before.  The paths: record
iteration, ``to_arrow`` (the native pass over uncompressed v2 batches and the
general one), the broker's validator and ``kcodec dump``.
"""
from __future__ import annotations

import struct

import pytest

import kcodec
from builders import T0, batch
from kcodec import RecordBatchBuilder, read_batches, to_arrow
from kcodec._native.columnar import columns_uncompressed_v2
from kcodec.cli import main
from kcodec.errors import CorruptRecordError, InvalidRecordError, KcodecError
from kcodec.log.validator import RecordValidationError, ValidatorConfig, validate_and_assign_offsets
from oracle_util import oracle_available, oracle_verify
from test_legacy import inner_set, message, wrapper

needs_java = pytest.mark.skipif(not oracle_available(), reason="the Kafka Java client (java + oracle) is not available")

#: A valid message before each crafted entry, so that positions are not 0.
PREFIX = message(0, b"k", b"v")
AT = len(PREFIX)


def _records(data, **kw) -> int:
    return sum(len(list(b)) for b in read_batches(data, **kw))


# -- legacy: inner CRC and inner size ------------------------------------------------------
def bad_inner_crc(magic: int, codec: int) -> bytes:
    inner = bytearray(inner_set([1, 2, 3], magic=magic))
    inner[len(inner_set([1, 2], magic=magic)) - 1] ^= 0x55  # the second message's last value byte
    return PREFIX + wrapper(3, bytes(inner), magic=magic, codec=codec)


def overrun(size, magic: int = 1, codec: int = 1) -> bytes:
    """The last of three inner messages declares ``size`` bytes (None: it is cut 3 bytes short)."""
    inner = bytearray(inner_set([1, 2, 3], magic=magic))
    if size is None:
        inner = inner[:-3]
    else:
        struct.pack_into(">i", inner, len(inner_set([1, 2], magic=magic)) + 8, size)
    return PREFIX + wrapper(3, bytes(inner), magic=magic, codec=codec)


LEGACY = {
    **{f"inner-crc-v{m}-{c}": (bad_inner_crc(m, c), r"Record is corrupt \(stored crc = \d+, computed crc = \d+\)")
       for m in (0, 1) for c in (1, 2, 3)},
    **{f"overrun-{s}-v{m}": (overrun(s, m), r"Inner message at byte \d+ of the decompressed wrapper has size")
       for s in (2 ** 31 - 1, 2 ** 20, 100, None) for m in (0, 1)},
}


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_reading_paths_raise(name):
    data, text = LEGACY[name]
    for read in (lambda: _records(data), lambda: to_arrow(data), lambda: to_arrow(data, use_threads=False),
                 lambda: next(b for b in read_batches(data) if b.position == AT).record_count):
        with pytest.raises(CorruptRecordError, match=text) as e:
            read()
        assert (e.value.position, e.value.batch_offset) == (AT, 3)
        assert f"at byte {AT}, in the batch with base offset 3" in str(e.value)


@pytest.mark.parametrize("name", sorted(LEGACY))
def test_legacy_without_validation_reads_as_before(name):
    data, _ = LEGACY[name]
    kept = 3 if name.startswith("inner-crc") else 2  # Kafka's reader ends the set at the overrun
    assert _records(data, validate=False) == 1 + kept
    assert to_arrow(data, validate=False).num_rows == 1 + kept
    batch = list(read_batches(data, validate=False))[1]
    with pytest.raises(CorruptRecordError, match=LEGACY[name][1]) as e:
        batch.ensure_valid(deep=True)  # asked for, the deep check still runs
    assert (e.value.position, e.value.batch_offset) == (AT, 3)


@pytest.mark.parametrize("name", ["inner-crc-v1-1", "inner-crc-v0-3", "overrun-100-v1", "overrun-None-v0"])
def test_legacy_validator_rejects(name):
    data, text = LEGACY[name]
    wrapped = data[AT:]  # the broker takes one compressed wrapper per append
    for to_magic in (1, 2):
        with pytest.raises(RecordValidationError, match=text) as e:
            validate_and_assign_offsets(wrapped, ValidatorConfig(to_magic=to_magic), next_offset=0)
        assert e.value.error_name == "CORRUPT_MESSAGE" and e.value.position == 0


@pytest.mark.parametrize("name", ["inner-crc-v1-2", "overrun-None-v1"])
def test_legacy_dump(tmp_path, capsys, name):
    data, _ = LEGACY[name]
    f = tmp_path / "crafted.bin"
    f.write_bytes(data)
    assert main(["dump", "--deep-iteration", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and f"at byte {AT}" in err
    assert main(["dump", "--deep-iteration", "--skip-crc", str(f)]) == 0
    assert capsys.readouterr().out.count("| offset:") == (4 if "crc" in name else 3)


@needs_java
@pytest.mark.parametrize("name", [n for n in sorted(LEGACY) if n.startswith("inner-crc")])
def test_java_rejects_the_inner_crc_alike(name):
    data, _ = LEGACY[name]
    status, doc = oracle_verify(data)
    assert status == 1 and doc["error"]["position"] == AT, doc
    assert doc["error"]["class"] == "org.apache.kafka.common.errors.CorruptRecordException"
    with pytest.raises(CorruptRecordError) as e:
        _records(data)
    assert e.value.message == doc["error"]["message"]


@needs_java
def test_java_on_an_inner_message_past_the_end():
    # Java drops the message (or cannot allocate its declared size): see test_legacy_oracle.
    status, doc = oracle_verify(LEGACY["overrun-2147483647-v1"][0])
    assert status == 1 and doc["error"]["class"] == "java.lang.OutOfMemoryError"
    status, doc = oracle_verify(LEGACY["overrun-None-v1"][0])
    assert status == 0 and doc["recordCount"] == 3


# -- control records -------------------------------------------------------------------
def control_batch(key, value, compression="none", base_offset=100) -> bytes:
    b = RecordBatchBuilder(compression=compression, is_control=True, is_transactional=True, producer_id=5,
                           producer_epoch=1, base_offset=base_offset)
    b.append_control(key=key, value=value, timestamp=T0) if key is not None else b._append_raw(None, value, T0)
    return bytes(b.build())


def data_batch(compression="none", base_offset=0) -> bytes:
    return batch(base_offset, [(b"k%d" % i, b"v%d" % i) for i in range(3)], ts=T0, codec=compression)


KEY = struct.Struct(">hh")
MARKER = struct.Struct(">hi")
CONTROL_REJECTED = {
    "key-3-bytes": (b"\0\0\0", MARKER.pack(0, 1), "Must have at least 4 bytes, but found only 3"),
    "key-empty": (b"", MARKER.pack(0, 1), "Must have at least 4 bytes, but found only 0"),
    "key-null": (None, MARKER.pack(0, 1), "Must have at least 4 bytes, but found only 0"),
    "key-version-negative": (KEY.pack(-1, 1), MARKER.pack(0, 1), "Invalid version found for control record: -1"),
    "commit-value-5-bytes": (KEY.pack(0, 1), b"\0" * 5, "end transaction marker. Must have at least 6 bytes, "
                                                          "but found only 5"),
    "abort-value-null": (KEY.pack(0, 0), None, "end transaction marker. Must have at least 6 bytes, "
                                               "but found only 0"),
    "abort-value-version-negative": (KEY.pack(0, 0), MARKER.pack(-3, 7), "Invalid version found for end "
                                                                          "transaction marker: -3"),
}
#: Java reads newer key and marker versions as version 0, and unknown types as UNKNOWN.
CONTROL_ACCEPTED = {
    "key-version-7": (KEY.pack(7, 1), MARKER.pack(0, 1)),
    "marker-version-2": (KEY.pack(0, 0), MARKER.pack(2, 9) + b"more"),
    "unknown-type": (KEY.pack(0, 77), None),
    "leader-change-short-value": (KEY.pack(0, 2), b""),
}


def _control_paths(data):
    """Every reader of a control batch, each a callable."""
    yield "iterate", lambda: _records(data)
    for include in (True, False):
        for threads in (True, False):
            yield f"to_arrow include_control={include}", \
                lambda include=include, threads=threads: to_arrow(data, include_control=include, use_threads=threads)


@pytest.mark.parametrize("compression", ["none", "gzip"])
@pytest.mark.parametrize("name", sorted(CONTROL_REJECTED))
def test_control_records_rejected_on_every_path(name, compression):
    key, value, text = CONTROL_REJECTED[name]
    prefix = data_batch()
    data = prefix + control_batch(key, value, compression)
    for path, read in _control_paths(data):
        with pytest.raises(InvalidRecordError, match=text) as e:
            read()
        assert (e.value.position, e.value.batch_offset) == (len(prefix), 100), path
    # a compressed batch in the buffer: the general path of to_arrow
    with pytest.raises(InvalidRecordError, match=text):
        to_arrow(data_batch("gzip") + data[len(prefix):])
    assert to_arrow(data, include_control=True, validate=False).num_rows == 4  # skipped as before
    assert to_arrow(data, validate=False).num_rows == 3


@pytest.mark.parametrize("name", sorted(CONTROL_REJECTED))
def test_control_records_rejected_by_the_validator_and_dump(tmp_path, capsys, name):
    key, value, text = CONTROL_REJECTED[name]
    data = control_batch(key, value)
    with pytest.raises(RecordValidationError, match=text) as e:
        validate_and_assign_offsets(data, next_offset=0, origin="coordinator")
    assert e.value.error_name == "INVALID_RECORD"
    f = tmp_path / "crafted.bin"
    f.write_bytes(data_batch() + data)
    assert main(["dump", str(f)]) == 0  # batch headers only, as kafka-dump-log
    capsys.readouterr()
    assert main(["dump", "--deep-iteration", str(f)]) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and str(f) in err and text in err


@pytest.mark.parametrize("name", sorted(CONTROL_ACCEPTED))
def test_control_records_java_accepts_are_read(name):
    key, value = CONTROL_ACCEPTED[name]
    data = data_batch() + control_batch(key, value)
    assert _records(data) == 4
    assert to_arrow(data, include_control=True).num_rows == 4
    assert to_arrow(data).num_rows == 3
    validate_and_assign_offsets(data[len(data_batch()):], next_offset=0, origin="coordinator")


def test_native_pass_keeps_valid_control_batches_and_hands_bad_ones_on():
    """Valid markers stay on the one-pass path; a bad one goes to the general path, which reports it."""
    good = data_batch() + control_batch(KEY.pack(0, 1), MARKER.pack(0, 4)) + data_batch(base_offset=101)
    assert columns_uncompressed_v2(good, True, False).num_rows == 6
    assert columns_uncompressed_v2(good, True, True).num_rows == 7
    for key, value, _ in CONTROL_REJECTED.values():
        bad = data_batch() + control_batch(key, value)
        assert columns_uncompressed_v2(bad, True, False) is None
        assert columns_uncompressed_v2(bad, False, False).num_rows == 3


@needs_java
@pytest.mark.parametrize("name", sorted(CONTROL_REJECTED) + sorted(CONTROL_ACCEPTED))
def test_java_agrees_on_control_records(name):
    import canonical
    if name in CONTROL_REJECTED:
        key, value, text = CONTROL_REJECTED[name]
    else:
        (key, value), text = CONTROL_ACCEPTED[name], None
    data = control_batch(key, value)
    status, doc = oracle_verify(data)
    if text is None:
        assert status == 0 and doc == canonical.render(data)
        return
    assert status == 1, doc
    with pytest.raises(InvalidRecordError) as e:
        _records(data)
    java = doc["error"]
    if java["class"] == "org.apache.kafka.common.InvalidRecordException":
        assert e.value.message == java["message"]
    else:  # a null key or value: Java fails on the null buffer
        assert java["class"] in ("java.lang.NullPointerException", "java.lang.IllegalStateException"), java


def test_errors_are_kcodec_errors():
    for data, _ in LEGACY.values():
        with pytest.raises(KcodecError):
            _records(data)
    assert issubclass(RecordValidationError, KcodecError) and kcodec.CorruptRecordError is CorruptRecordError
