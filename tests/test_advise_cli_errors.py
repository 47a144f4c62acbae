"""The one-line promise of ``kcodec advise`` where Spark is involved: an unreachable ``--master``, Ctrl-C, and the
``python -m kcodec.advise`` entry spark-submit runs, all through the CLI's one error path."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time

import pytest

from broker import free_port


def _run(*argv, cwd):
    return subprocess.run([sys.executable, *argv], capture_output=True, text=True, cwd=cwd, timeout=120)


def test_an_unreachable_master_is_one_line_before_spark(tmp_path):
    port = free_port()  # nothing listens there
    proc = _run("-m", "kcodec.cli", "advise", "--master", f"spark://127.0.0.1:{port}", cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.strip().splitlines() == [
        f"kcodec advise: --master spark://127.0.0.1:{port}: no Spark master answers (127.0.0.1:{port}: "
        f"Connection refused)"]
    assert "starting Spark" not in proc.stdout
    proc = _run("-m", "kcodec.cli", "advise", "--master", "spark://nohost", cwd=tmp_path)
    assert proc.stderr.strip() == "kcodec advise: --master spark://nohost: 'nohost' is not HOST:PORT"



def test_an_output_folder_that_cannot_be_made_is_one_line_before_spark(tmp_path):
    """--emit's and --out's folders are refused before a long run, not when the run ends and writes them."""
    (tmp_path / "a-file").write_text("")
    cases = [(("--emit", "a-file"), "--emit a-file: not a directory"),
             (("--emit", "a-file/configs"), "--emit a-file/configs: a-file is not a directory"),
             (("--out", "a-file/report"), "--out a-file/report: a-file is not a directory")]
    if sys.platform.startswith("linux"):  # procfs refuses every new folder, even root's
        cases.append((("--emit", "/proc/kcodec-emit"),
                      "--emit /proc/kcodec-emit: cannot make the folder: No such file or directory"))
    for argv, line in cases:
        proc = _run("-m", "kcodec.cli", "advise", *argv, cwd=tmp_path)
        assert (proc.returncode, proc.stderr.strip().splitlines()) == (1, [f"kcodec advise: {line}"]), argv
        assert "starting Spark" not in proc.stdout
    # a flag refused after --emit's check: the folder was made by the check, before any run
    proc = _run("-m", "kcodec.cli", "advise", "--emit", "new/configs", "--since", "1h", cwd=tmp_path)
    assert proc.stderr.strip() == "kcodec advise: --since 1h: only with --check"
    assert (tmp_path / "new" / "configs").is_dir()

def test_the_spark_submit_entry_has_the_clis_errors(tmp_path):
    bad = tmp_path / "in\x1b[31mred"
    for entry in (("-m", "kcodec.advise"), ("-m", "kcodec.cli", "advise")):
        proc = _run(*entry, str(bad), cwd=tmp_path)
        assert proc.returncode == 1
        assert "\x1b" not in proc.stderr  # the file name's escape sequence is not passed to the terminal
        assert proc.stderr.startswith("kcodec advise: ") and "no such file or directory" in proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1
    assert _run("-m", "kcodec.advise", "--help", cwd=tmp_path).stdout.startswith("usage: kcodec advise")


@pytest.mark.spark
@pytest.mark.parametrize("after", ["starting", "measuring"])
def test_ctrl_c_is_one_line_and_leaves_nothing_running(tmp_path, after):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    proc = subprocess.Popen([sys.executable, "-m", "kcodec.cli", "advise", "--records", "300000", "--no-progress",
                             "--out", str(tmp_path / "r")], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, cwd=tmp_path, start_new_session=True)
    try:
        assert proc.stdout.readline().endswith("starting Spark ...\n")
        # while the JVM starts, or once the Spark job runs (the session takes seconds to make)
        time.sleep(1 if after == "starting" else 15)
        os.killpg(proc.pid, signal.SIGINT)  # as Ctrl-C: to the whole process group
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, err
    assert err.strip().splitlines()[-1] == "kcodec advise: interrupted"
    assert "Traceback" not in err and "ERROR" not in err, err
    deadline = time.monotonic() + 20  # the JVM ends with its process group
    while time.monotonic() < deadline:
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.2)
    else:
        pytest.fail("a process of the advise run is still running")
