"""kcodec.spark.get_session: Python workers import the driver's kcodec, whatever the working folder holds."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import kcodec
from kcodec.spark import session

DRIVER = """
    import sys
    import kcodec
    from kcodec.spark import get_session

    spark = get_session("local[1]", "kcodec-session-test")

    def where(_):
        import kcodec
        yield kcodec.__file__

    print("driver", kcodec.__file__)
    print("worker", spark.sparkContext.parallelize([0], 1).mapPartitions(where).collect()[0])
    spark.stop()
"""


def _decoy(folder: Path) -> None:
    """A source checkout's ``kcodec/`` without built extensions, as in a fresh clone."""
    (folder / "kcodec").mkdir()
    (folder / "kcodec" / "__init__.py").write_text("raise ImportError('the source folder was imported')\n")


def _env() -> dict:
    # the driver imports the kcodec these tests import (installed, or the tree's in-place build)
    return dict(os.environ, PYTHONPATH=str(Path(kcodec.__file__).resolve().parents[1]))


def test_no_worker_setting_without_another_kcodec_in_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert session.worker_environment() == {}
    monkeypatch.chdir(Path(kcodec.__file__).resolve().parents[1])  # the package's own folder
    assert session.worker_environment() == {}


def test_another_kcodec_in_the_working_folder_is_kept_off_the_workers_path(tmp_path, monkeypatch):
    _decoy(tmp_path)
    monkeypatch.chdir(tmp_path)
    if sys.version_info >= (3, 11):
        assert session.worker_environment() == {"PYTHONSAFEPATH": "1"}
    else:
        with pytest.raises(kcodec.KcodecError, match="run from another folder"):
            session.worker_environment()


@pytest.mark.spark
@pytest.mark.skipif(sys.version_info < (3, 11), reason="PYTHONSAFEPATH needs Python 3.11")
def test_workers_started_in_a_source_checkout_import_the_drivers_kcodec(tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    checkout, scripts = tmp_path / "checkout", tmp_path / "scripts"
    checkout.mkdir()
    scripts.mkdir()
    _decoy(checkout)
    driver = scripts / "driver.py"  # a script's own folder, not the working folder, is on the driver's path
    driver.write_text(textwrap.dedent(DRIVER))
    proc = subprocess.run([sys.executable, str(driver)], cwd=checkout, env=_env(),
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    lines = dict(line.split(" ", 1) for line in proc.stdout.splitlines() if line.startswith(("driver ", "worker ")))
    assert Path(lines["worker"]).resolve() == Path(lines["driver"]).resolve() == Path(kcodec.__file__).resolve()
