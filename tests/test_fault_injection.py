"""A crash after any single file operation of recompression or compaction.

Each operation runs once to count its file operations; then, for every step
k, a fresh copy of the log runs with a hook that raises right after step k
(a simulated crash).  The directory must then recover to a log where every
record is present exactly once -- each record equal to the original record
at its offset, offsets strictly increasing across segments, and for
recompression every original record there -- and re-running the operation
must complete with the same result as an uninterrupted run.
"""
import os
import shutil

import pytest

import kcodec
from builders import DAY, PID, T0, batch, check_dir_with_java, check_indexes, kv, make_log, marker
from kcodec.log.cleaner import CleanerConfig, FileOps, compact, list_segments, recover_log_dir
from kcodec.log.recompression import recompress


class Crash(Exception):
    pass


def crash_after(k):
    state = {"n": 0}

    def hook(op, path):
        state["n"] += 1
        if state["n"] == k:
            raise Crash(f"step {k}: {op} {os.path.basename(path)}")
    return FileOps(hook=hook, fsync=False)


def records(path):
    out = []
    for seg in list_segments(path):
        with open(seg.path(), "rb") as f:
            data = f.read()
        for b in kcodec.read_batches(data):
            b.ensure_valid()
            out.extend((r.offset, r.timestamp, r.key, r.value, tuple(r.headers)) for r in b)
    return out


def assert_exactly_once(path, original):
    by_offset = {r[0]: r for r in original}
    got = records(path)
    offsets = [r[0] for r in got]
    assert offsets == sorted(set(offsets)), "offsets repeat or go backwards"
    for r in got:
        assert by_offset.get(r[0]) == r, f"record at offset {r[0]} differs from the original"
    leftovers = [f for f in os.listdir(path) if f.endswith((".cleaned", ".swap", ".deleted"))]
    assert not leftovers
    return got


def source_log(path):
    """Several segments with overwritten keys, a tombstone, an aborted and a committed transaction."""
    return make_log(path, [
        [batch(0, [kv("k%d" % (i % 6), "v%d" % i * 20) for i in range(12)], codec="gzip"),
         batch(12, [kv("k1", None), kv("k7", "x" * 50)])],
        [batch(14, [kv("k2", "aborted"), kv("k8", "aborted")], producer_id=PID, producer_epoch=0, base_sequence=0,
               is_transactional=True),
         marker(16, PID, 0, commit=False),
         batch(17, [kv("k%d" % (i % 4), "w%d" % i * 30) for i in range(8)], codec="lz4")],
        [batch(25, [kv("k3", "c" * 40)], producer_id=PID + 1, producer_epoch=0, base_sequence=0,
               is_transactional=True), marker(26, PID + 1, 0, commit=True),
         batch(27, [kv("k%d" % i, "z" * 60) for i in range(5)], codec="snappy")],
        [batch(32, [kv("k0", "active")])],
    ])


def run_compact(path, ops=None):
    return compact(path, config=CleanerConfig(segment_bytes=900, producer_id_expiration_ms=1,
                                              delete_retention_ms=DAY),
                   now_ms=T0 + 1000, force=True, ops=ops)


def run_recompress(path, ops=None):
    return recompress(path, "zstd", level=3, ops=ops)


def _count_ops(fn, path):
    ops = FileOps(fsync=False)
    fn(path, ops)
    return ops.count


def _crashed_and_recovered(tmp_path, source, fn, steps, name):
    """For each step k in 1..steps: ``(k, copy)``, a copy of ``source`` on which ``fn(copy, ops)``
    crashed right after its k-th file operation and which recover_log_dir then recovered.
    Each copy is removed once the caller has checked it."""
    for k in range(1, steps + 1):
        d = str(tmp_path / f"{name}{k}-0")
        shutil.copytree(source, d)
        with pytest.raises(Crash):
            fn(d, crash_after(k))
        recover_log_dir(d)
        yield k, d
        shutil.rmtree(d)


@pytest.mark.parametrize("operation", ["recompress", "compact"])
def test_crash_after_every_file_operation(tmp_path, operation):
    fn = run_recompress if operation == "recompress" else run_compact
    pristine = source_log(tmp_path / "pristine-0")
    original = records(pristine)
    reference = str(tmp_path / "reference-0")
    shutil.copytree(pristine, reference)
    steps = _count_ops(fn, reference)
    expected = records(reference)
    assert steps > 10
    if operation == "recompress":
        assert expected == original
    else:
        assert len(expected) < len(original)
    for k, d in _crashed_and_recovered(tmp_path, pristine, fn, steps, "crash"):
        got = assert_exactly_once(d, original)
        if operation == "recompress":
            assert got == original, f"crash after step {k} lost or duplicated records"
        else:
            assert set(r[0] for r in expected) <= set(r[0] for r in got), f"crash after step {k} lost records"
        check_indexes(d)
        fn(d, FileOps(fsync=False))  # re-running completes
        assert records(d) == expected, f"re-run after a crash at step {k} differs"
        check_indexes(d)
        if k in (1, steps // 2, steps):
            check_dir_with_java(d)


def test_crash_in_recovery_itself_is_recoverable(tmp_path):
    pristine = source_log(tmp_path / "p-0")
    original = records(pristine)
    d = str(tmp_path / "c-0")
    shutil.copytree(pristine, d)
    steps = _count_ops(run_recompress, str(shutil.copytree(pristine, tmp_path / "count-0")))
    # stop right after the first .log.swap rename of the run (the commit point)
    seen = []

    def hook(op, path):
        seen.append((op, path))
        if op == "rename" and path.endswith(".log.swap"):
            raise Crash(path)
    with pytest.raises(Crash):
        run_recompress(d, FileOps(hook=hook, fsync=False))
    assert steps > len(seen)
    # recovery crashes at each of its own steps, then a full recovery finishes
    recovery_steps = _count_ops(lambda p, ops: recover_log_dir(p, ops), str(shutil.copytree(d, tmp_path / "r-0")))
    for _, c in _crashed_and_recovered(tmp_path, d, recover_log_dir, recovery_steps, "rc"):
        assert records(c) == original
