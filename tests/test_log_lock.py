"""Offline rewrites are safe on a broker's disks: its .lock, one rewrite per partition, no deletion without a policy."""
from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from builders import DAY, T0, batch, dir_records, kv, make_log
from kcodec.cli import main
from kcodec.log import LogWriter
from kcodec.log.lock import BROKER_LOCK, PARTITION_LOCK, LogDirInUseError, lock_file_for, rewrite_lock
from kcodec.log.recovery import recover_log_dir
from kcodec.log.retention import RetentionPolicy, RetentionPolicyError, retain
from kcodec.log.segment_list import list_segments

DIRLOCK_JAVA = Path(__file__).parent / "java" / "DirLock.java"
PY_HOLDER = textwrap.dedent("""
    import fcntl, os, sys
    fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT, 0o644)
    fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    print("locked", flush=True)
    sys.stdin.read()
""")


def partition(path, segments=4, records=10, ts=T0, value=b"x" * 100):
    """A partition folder of ``segments`` one-batch segments, segment i at ts + i days."""
    return make_log(path, [[batch(i * records, [kv("k%d" % j, value) for j in range(records)], ts=ts + i * DAY)]
                           for i in range(segments)])


def broker_log_dir(root) -> Path:
    """A log directory as a broker leaves it: meta.properties, checkpoints, two partitions."""
    root.mkdir()
    (root / "meta.properties").write_text("version=1\nnode.id=1\ncluster.id=AAAAAAAAAAAAAAAAAAAAAA\n")
    (root / "recovery-point-offset-checkpoint").write_text("0\n0\n")
    for p in range(2):
        partition(root / f"clicks-{p}")
    return root


def tree(root) -> dict:
    """Every file under ``root``: relative name -> (size, sha256)."""
    out = {}
    for dirpath, _dirs, files in os.walk(root):
        for name in files:
            p = os.path.join(dirpath, name)
            data = Path(p).read_bytes()
            out[os.path.relpath(p, root)] = (len(data), hashlib.sha256(data).hexdigest())
    return out


def kcodec_cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "kcodec.cli", *map(str, args)], capture_output=True, text=True,
                          timeout=120, env=env)


class Holder:
    """Another process holding a lock file: Python's fcntl.lockf, or Java's FileChannel.tryLock as a broker does."""

    def __init__(self, kind: str, path: Path) -> None:
        if kind == "java":
            if shutil.which("java") is None:
                pytest.skip("the JVM lock holder needs Java")
            cmd = ["java", str(DIRLOCK_JAVA), "hold", str(path)]
        else:
            cmd = [sys.executable, "-c", PY_HOLDER, str(path)]
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        line = self.proc.stdout.readline().strip()
        assert line == "locked", line

    def release(self) -> None:
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


@pytest.fixture(params=["python", "java"])
def holder_kind(request):
    return request.param


REWRITES = [
    ["recompress", "--codec", "zstd"],
    ["compact", "--force"],
    ["retain", "--retention-ms", "0"],
]


def test_rewrites_refused_while_a_broker_holds_the_log_dir(tmp_path, holder_kind):
    root = broker_log_dir(tmp_path / "data")
    holder = Holder(holder_kind, root / BROKER_LOCK)
    try:
        before = tree(root)
        for target in (root, root / "clicks-1"):
            for cmd in REWRITES:
                r = kcodec_cli(cmd[0], target, *cmd[1:])
                assert r.returncode == 1, (cmd, r.stdout, r.stderr)
                lines = r.stderr.strip().splitlines()
                assert len(lines) == 1, r.stderr
                assert str(root) in lines[0] and "running Kafka broker" in lines[0], lines[0]
                assert f"process {holder.proc.pid}" in lines[0]
                assert r.stdout == ""
                assert tree(root) == before, cmd
        # reading never takes the lock
        seg = root / "clicks-0" / "00000000000000000000.log"
        r = kcodec_cli("dump", seg)
        assert r.returncode == 0 and "baseOffset: 0" in r.stdout, r.stderr
        r = kcodec_cli("retain", root, "--retention-ms", "0", "--dry-run")
        assert r.returncode == 0 and "would delete 3 segments" in r.stdout, r.stderr
        r = kcodec_cli("recompress", root, "--codec", "lz4", "--dry-run")
        assert r.returncode == 0, r.stderr
        assert tree(root) == before
    finally:
        holder.release()
    # once the broker is gone the same command runs
    r = kcodec_cli("retain", root, "--retention-ms", "0")
    assert r.returncode == 0, r.stderr
    assert [s.base_offset for s in list_segments(str(root / "clicks-0"))] == [30]


def test_writer_refuses_a_partition_in_a_held_log_dir(tmp_path):
    root = broker_log_dir(tmp_path / "data")
    holder = Holder("python", root / BROKER_LOCK)
    try:
        with pytest.raises(LogDirInUseError, match="running Kafka broker"):
            LogWriter.in_log_dir(str(root), "orders", 0)
        assert not (root / "orders-0").exists()
    finally:
        holder.release()
    LogWriter.in_log_dir(str(root), "orders", 0).close()


@pytest.mark.spark
def test_advise_reads_beside_a_running_broker(spark, tmp_path):
    from kcodec.advise.job import run_advise
    from kcodec.advise.options import Options

    root = broker_log_dir(tmp_path / "data")
    meta = metadata_log(tmp_path / "meta", {"clicks": {"retention.ms": str(2 * DAY)}})
    holder = Holder("python", root / BROKER_LOCK)
    try:
        before = tree(root)
        out = run_advise(Options(inputs=[str(root)], codecs="lz4", batch_sizes="16k", lingers="5",
                                 out_dir=str(tmp_path / "rep"), progress=False, metadata_log=str(meta)),
                         log=lambda s: None)
        assert tree(root) == before
    finally:
        holder.release()
    (advice,) = out["advice"]
    assert f"priced with retention.ms = 172800000 (topic config in the metadata log {meta})" in advice.notes
    assert f"priced with replication factor 3 (partition records in the metadata log {meta})" in advice.notes


def test_jvm_cannot_lock_while_kcodec_rewrites(tmp_path):
    if shutil.which("java") is None:
        pytest.skip("needs Java")
    root = broker_log_dir(tmp_path / "data")
    part = str(root / "clicks-0")
    assert lock_file_for(part) == root / BROKER_LOCK

    def java_try() -> str:
        return subprocess.run(["java", str(DIRLOCK_JAVA), "try", str(root / BROKER_LOCK)],
                              capture_output=True, text=True, timeout=60).stdout.strip()
    with rewrite_lock(part):
        with rewrite_lock(str(root / "clicks-1")):  # the same lock, shared within the process
            assert java_try() == "refused"
        assert java_try() == "refused"  # still held by the outer holder
    assert java_try() == "locked"


def test_archive_partition_uses_its_own_lock_and_leaves_nothing(tmp_path):
    part = partition(tmp_path / "archive" / "clicks-0")
    assert lock_file_for(part) == Path(part) / PARTITION_LOCK
    before = tree(part)
    with rewrite_lock(part):
        assert (Path(part) / PARTITION_LOCK).exists()
        r = kcodec_cli("compact", part, "--force")
        assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1
        assert "is being rewritten" in r.stderr and part in r.stderr
        assert tree(part) == {**before, PARTITION_LOCK: (0, hashlib.sha256(b"").hexdigest())}
    assert tree(part) == before  # the lock file goes with its holder
    records = dir_records(part)
    r = kcodec_cli("recompress", part, "--codec", "gzip")
    assert r.returncode == 0, r.stderr
    assert dir_records(part) == records and not (Path(part) / PARTITION_LOCK).exists()


def test_lock_file_removed_by_its_holder_is_not_locked(tmp_path, monkeypatch):
    """A process that locks a lock file its holder removed meanwhile starts again on the file now named."""
    import kcodec.log.lock as lock_module

    part = partition(tmp_path / "clicks-0", segments=1)
    lock = Path(part) / PARTITION_LOCK
    real_open = lock_module._open_lock_file
    opened = []

    def racing_open(path, subject):
        fd = real_open(path, subject)
        if not opened:
            # the holder releases and removes it between our open and our lock (renamed here, so that
            # the next file cannot reuse its inode number)
            os.rename(path, str(path) + ".gone")
        opened.append(os.fstat(fd).st_ino)
        return fd
    monkeypatch.setattr(lock_module, "_open_lock_file", racing_open)
    with rewrite_lock(part) as held:
        assert held == lock and len(opened) == 2 and opened[0] != opened[1]
        assert os.stat(lock).st_ino == opened[1]
    assert not lock.exists()
    os.unlink(str(lock) + ".gone")


SLOW_REWRITE = textwrap.dedent("""
    import sys, time
    from kcodec.log.files import FileOps
    op, path = sys.argv[1], sys.argv[2]
    first = [True]
    def hook(kind, name):
        if first[0]:
            first[0] = False
            print("started", flush=True)
            sys.stdin.readline()  # holds the lock, one change made, until the test says go
        time.sleep(0.03)
    ops = FileOps(hook=hook)
    if op == "recompress":
        from kcodec.log.recompression import recompress
        recompress(path, sys.argv[3], ops=ops)
    else:
        from kcodec.log.retention import retain
        retain(path, retention_bytes=int(sys.argv[3]), ops=ops)
    print("done", flush=True)
""")


def slow_rewrite(*args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", SLOW_REWRITE, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def go(proc: subprocess.Popen) -> None:
    proc.stdin.write("go\n")
    proc.stdin.flush()


@pytest.mark.parametrize("where", ["archive", "log dir"])
def test_two_rewrites_of_one_partition_one_refuses_even_when_killed(tmp_path, where):
    if where == "archive":
        part = partition(tmp_path / "clicks-0", segments=6)
    else:
        part = str(broker_log_dir(tmp_path / "data") / "clicks-0")
    records = dir_records(part)
    rng = random.Random(26)
    codecs = ["gzip", "lz4", "zstd", "snappy", "none"]
    for round_ in range(5):
        first = slow_rewrite("recompress", part, codecs[round_ % len(codecs)])
        assert first.stdout.readline().strip() == "started"  # it holds the lock and has changed a file
        second = kcodec_cli("recompress", part, "--codec", "gzip")
        assert second.returncode == 1 and len(second.stderr.strip().splitlines()) == 1, second.stderr
        assert ("being rewritten" if where == "archive" else "in use") in second.stderr
        go(first)
        time.sleep(rng.uniform(0.0, 0.3))
        first.send_signal(signal.SIGKILL)
        first.wait(timeout=30)
        # nothing lost: recovery settles what the killed run left, and the records are all there
        recover_log_dir(part)
        assert dir_records(part) == records, round_
    assert kcodec_cli("recompress", part, "--codec", "lz4").returncode == 0
    assert dir_records(part) == records


def test_concurrent_retains_never_delete_twice(tmp_path):
    part = partition(tmp_path / "clicks-0", segments=8)
    sizes = [s.size for s in list_segments(part)]
    limit = sum(sizes[3:])  # exactly the three oldest segments must go
    expected = retain(part, retention_bytes=limit, dry_run=True)
    assert expected.deleted == [0, 10, 20]
    survivors = [r for r in dir_records(part) if r[0] >= 30]
    rng = random.Random(7)
    for _ in range(3):
        first = slow_rewrite("retain", part, limit)
        line = first.stdout.readline().strip()
        second = kcodec_cli("retain", part, "--retention-bytes", limit)
        if line == "started":  # not once the three segments are gone: nothing is left to delete
            assert second.returncode == 1 and "being rewritten" in second.stderr, second.stderr
            go(first)
            time.sleep(rng.uniform(0.0, 0.1))
            first.send_signal(signal.SIGKILL)
        else:
            assert second.returncode == 0 and "deleted 0 segments" in second.stdout, second.stderr
        first.wait(timeout=30)
        recover_log_dir(part)
        assert [s.base_offset for s in list_segments(part)][-5:] == [30, 40, 50, 60, 70]
        assert [r for r in dir_records(part) if r[0] >= 30] == survivors
    retain(part, retention_bytes=limit)
    assert [s.base_offset for s in list_segments(part)] == [30, 40, 50, 60, 70]
    assert dir_records(part) == survivors


# ---------------------------------------------------------------------------------------------
# retention only by a policy the user gave

def old_partition(tmp_path):
    # timestamps from years ago: any default time limit would delete these segments
    return partition(tmp_path / "archive" / "app-logs-0", segments=4, ts=T0 - 900 * DAY)


def test_retain_without_a_policy_refuses_and_changes_nothing(tmp_path, capsys):
    part = old_partition(tmp_path)
    before = tree(tmp_path)
    assert main(["retain", part]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no retention policy given" in err[0] and part in err[0]
    assert "--retention-ms" in err[0] and "--retention-bytes" in err[0]
    with pytest.raises(RetentionPolicyError, match="no retention policy"):
        retain(part)
    assert tree(tmp_path) == before


def test_size_limit_alone_applies_no_time_limit(tmp_path, capsys):
    part = old_partition(tmp_path)
    sizes = [s.size for s in list_segments(part)]
    assert main(["retain", part, "--retention-bytes", str(sum(sizes))]) == 0
    assert [s.base_offset for s in list_segments(part)] == [0, 10, 20, 30]
    assert "deleted 0 segments" in capsys.readouterr().out
    assert main(["retain", part, "--retention-bytes", str(sum(sizes[2:]))]) == 0
    out = capsys.readouterr().out
    assert [s.base_offset for s in list_segments(part)] == [20, 30]
    assert "deleted 2 segments" in out and "retention.ms" not in out.split("[")[0]
    assert out.count("by retention.bytes") == 2


def test_dry_run_lists_each_segment_and_why(tmp_path, capsys):
    part = old_partition(tmp_path)
    before = tree(tmp_path)
    now = T0 - 900 * DAY + 2 * DAY + DAY // 2
    assert main(["retain", part, "--retention-ms", str(DAY), "--now-ms", str(now), "--dry-run"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith(f"{part}: would delete 2 segments") and "retention.ms 86400000 (--retention-ms)" in out[0]
    assert out[1].startswith("  00000000000000000000.log (") and "by retention.ms: largest timestamp" in out[1]
    assert out[2].startswith("  00000000000000000010.log (") and "more than retention.ms 86400000" in out[2]
    assert len(out) == 3
    assert tree(tmp_path) == before


def test_rules_run_in_kafkas_order_and_respect_cleanup_policy(tmp_path):
    part = old_partition(tmp_path)
    now = T0 - 900 * DAY + 10 * DAY
    policy = RetentionPolicy(retention_ms=DAY, retention_bytes=1, log_start_offset=25)
    r = retain(part, policy=policy, now_ms=now, dry_run=True)
    # deleteRetentionMsBreachedSegments comes first, so it names every segment it alone would delete
    assert r.deleted == [0, 10, 20] and r.reasons == ["retention.ms"] * 3
    compact_only = RetentionPolicy(retention_ms=0, retention_bytes=1, log_start_offset=15, cleanup_policy="compact",
                                   sources={"cleanup.policy": "topic config"})
    r = retain(part, policy=compact_only, now_ms=now, dry_run=True)
    assert r.deleted == [0] and r.reasons == ["log start offset"]
    assert "only the log start offset applies" in compact_only.describe()
    both = RetentionPolicy(retention_ms=DAY, cleanup_policy="compact,delete")
    assert retain(part, policy=both, now_ms=now, dry_run=True).deleted == [0, 10, 20]


def test_tiered_topic_is_refused(tmp_path):
    part = old_partition(tmp_path)
    before = tree(tmp_path)
    with pytest.raises(RetentionPolicyError, match="remote.storage.enable"):
        retain(part, policy=RetentionPolicy(retention_ms=0, remote_storage=True))
    assert tree(tmp_path) == before


def test_metadata_log_is_never_rewritten(tmp_path, capsys):
    root = broker_log_dir(tmp_path / "data")
    meta = partition(root / "__cluster_metadata-0", segments=2)
    before = tree(root)
    assert main(["retain", meta, "--retention-ms", "0"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "KRaft metadata log" in err[0] and meta in err[0]
    assert tree(root) == before
    assert main(["retain", str(root), "--retention-ms", "0"]) == 0
    captured = capsys.readouterr()
    assert "skipped" in captured.err and "__cluster_metadata-0" in captured.err
    assert "__cluster_metadata" not in captured.out
    assert tree(root)["__cluster_metadata-0/00000000000000000000.log"] == before[
        "__cluster_metadata-0/00000000000000000000.log"]


# ---------------------------------------------------------------------------------------------
# each topic's own policy, from a KRaft metadata log

def metadata_log(root, topics) -> Path:
    """A metadata log holding ``topics``: name -> {config: value}, each with one partition on 3 replicas."""
    import uuid

    import kraft_metadata as km

    records = []
    for i, (name, configs) in enumerate(topics.items()):
        tid = uuid.UUID(int=i + 1)
        records += [km.topic_record(name, tid), km.partition_record(tid, 0, [1, 2, 3])]
        records += [km.config_record(km.TOPIC, name, k, v) for k, v in configs.items()]
    folder = root / "__cluster_metadata-0"
    km.write_segment(folder, 0, km.log_batches(records))
    return folder


def test_retain_follows_each_topics_own_policy_from_the_metadata_log(tmp_path, capsys):
    meta = metadata_log(tmp_path / "meta", {
        "short": {"retention.ms": str(2 * DAY)},
        "sized": {"retention.bytes": "1"},
        "plain": {},
        "compacted": {"cleanup.policy": "compact", "retention.ms": "0"},
    })
    logs = tmp_path / "archive"
    for name in ("short", "sized", "plain", "compacted"):
        partition(logs / f"{name}-0", ts=T0)
    now = T0 + 5 * DAY
    assert main(["retain", str(logs), "--metadata-log", str(meta), "--now-ms", str(now)]) == 0
    out = capsys.readouterr().out
    remaining = {name: [s.base_offset for s in list_segments(str(logs / f"{name}-0"))]
                 for name in ("short", "sized", "plain", "compacted")}
    # segment i's newest timestamp is T0 + i days + 9 ms: older than 2 days at T0 + 5 days for i <= 2
    assert remaining == {"short": [30], "sized": [30], "plain": [0, 10, 20, 30], "compacted": [0, 10, 20, 30]}
    assert f"retention.ms 172800000 (topic config in the metadata log {meta})" in out
    assert f"retention.bytes 1 (topic config in the metadata log {meta})" in out
    assert "plain-0: retention.ms is not set in the metadata log" in out and "plain-0: kept" in out
    assert "cleanup.policy compact (topic config in the metadata log" in out
    # a flag wins over the topic's own value, and says so
    partition(logs / "short2-0", ts=T0)
    meta2 = metadata_log(tmp_path / "meta2", {"short2": {"retention.ms": str(2 * DAY)}})
    assert main(["retain", str(logs / "short2-0"), "--metadata-log", str(meta2), "--retention-ms", str(100 * DAY),
                 "--now-ms", str(now)]) == 0
    assert "retention.ms 8640000000 (--retention-ms)" in capsys.readouterr().out
    assert [s.base_offset for s in list_segments(str(logs / "short2-0"))] == [0, 10, 20, 30]


def test_metadata_log_refusals_change_nothing(tmp_path, capsys):
    meta = metadata_log(tmp_path / "meta", {"tiered": {"remote.storage.enable": "true", "retention.ms": "0"},
                                            "fine": {"retention.ms": "0"}})
    logs = tmp_path / "archive"
    partition(logs / "fine-0")
    partition(logs / "tiered-0")
    partition(logs / "unknown-0")
    before = tree(tmp_path)
    for target, expect in ((logs, "remote.storage.enable=true"), (logs / "unknown-0", "unknown")):
        assert main(["retain", str(target), "--metadata-log", str(meta)]) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expect in err[0].lower(), err
        assert tree(tmp_path) == before
    assert main(["retain", str(logs), "--metadata-log", str(tmp_path / "nowhere")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--metadata-log" in err[0] and "nowhere" in err[0]
    assert tree(tmp_path) == before


def test_compact_takes_each_topics_settings_from_the_metadata_log(tmp_path, capsys):
    meta = metadata_log(tmp_path / "meta", {
        "users": {"cleanup.policy": "compact", "delete.retention.ms": "0", "segment.bytes": "1048576"},
        "events": {},
    })
    logs = tmp_path / "archive"
    for name in ("users", "events"):
        # every key written in each of four segments: a clean keeps the last of each
        make_log(logs / f"{name}-0", [[batch(i * 3, [kv("a", "v%d" % i), kv("b", "w%d" % i), kv("c", None)])]
                                     for i in range(4)])
    before_events = tree(logs / "events-0")
    assert main(["compact", str(logs), "--metadata-log", str(meta), "--force", "--now-ms", str(T0 + DAY)]) == 0
    out = capsys.readouterr().out
    assert f"delete.retention.ms = 0 (topic config in the metadata log {meta})" in out
    assert "segment.bytes = 1048576 (topic config in the metadata log)" in out
    assert "events-0: not compacted: cleanup.policy = delete (Kafka default)" in out
    assert tree(logs / "events-0") == before_events
    kept = dir_records(str(logs / "users-0"))
    # the first round keeps c's tombstone and stamps its delete horizon (KIP-534); the active segment stays
    assert [(k, v) for off, k, v in kept if off < 9] == [(b"a", b"v2"), (b"b", b"w2"), (b"c", None)]
    # a second round one second later drops it: the topic's delete.retention.ms is 0 (Kafka's default is a day)
    assert main(["compact", str(logs / "users-0"), "--metadata-log", str(meta), "--force",
                 "--now-ms", str(T0 + DAY + 1000)]) == 0
    capsys.readouterr()
    assert [(k, v) for off, k, v in dir_records(str(logs / "users-0")) if off < 9] == [(b"a", b"v2"), (b"b", b"w2")]
    assert main(["compact", str(logs / "users-0"), "--metadata-log", str(meta), "--delete-retention-ms", "5",
                 "--dry-run"]) == 0
    assert "delete.retention.ms 5 (--delete-retention-ms)" in capsys.readouterr().out


def test_advise_prices_each_topic_with_its_metadata(tmp_path):
    from kcodec.advise.cost import TopicEconomics
    from kcodec.advise.topic_config import price_topic, read_metadata

    meta = read_metadata(str(metadata_log(tmp_path, {"kept-2d": {"retention.ms": str(2 * DAY)},
                                                     "forever": {"retention.ms": "-1"}, "plain": {}})))
    defaults = TopicEconomics(retention_days=7, replication_factor=3)

    def priced(topic, defaults, flags=frozenset(), per_topic=None):
        p = price_topic(topic, defaults, per_topic or {}, flags, meta)
        return p.economics, p.notes

    econ, notes = priced("kept-2d", defaults)
    assert econ.retention_days == 2 and econ.replication_factor == 3 and len(notes) == 2
    econ, notes = priced("kept-2d", TopicEconomics(retention_days=30), {"retention_days"})
    assert econ.retention_days == 30 and "from --retention-days" in notes[0]
    econ, notes = priced("forever", defaults)
    assert econ.retention_days == 7 and "kept forever" in notes[0]
    econ, notes = priced("plain", defaults)
    assert econ.retention_days == 7 and "not set in the metadata log" in notes[0]
    econ, notes = priced("absent", defaults)
    assert econ == defaults and "not in the metadata log" in notes[0]
    given = TopicEconomics(retention_days=1, replication_factor=1)
    assert priced("kept-2d", defaults, per_topic={"kept-2d": given}) == (given, [])
