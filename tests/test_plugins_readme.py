"""Each example plugin installs exactly as its README says, beside a kcodec installed from source.

The README's shell block runs in a fresh virtual environment that sees the
installed kcodec (and nothing of this test process) through a ``.pth`` file,
from the repository root, with pip's defaults: build isolation, the package
index for whatever kcodec does not provide.  kcodec itself is on no index, so
a plugin whose build asks for it cannot install this way.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kcodec
import plugin_util

ROOT = plugin_util.ROOT


def _readme_commands(plugin: str) -> list:
    """The lines of the first ``sh`` block of ``plugins/<plugin>/README.md``."""
    text = (ROOT / "plugins" / plugin / "README.md").read_text()
    block = re.search(r"^```sh\n(.*?)^```", text, re.S | re.M)
    assert block, f"plugins/{plugin}/README.md has no sh block"
    return [line for line in block.group(1).splitlines() if line.strip()]


def _installed_kcodec_site() -> Path:
    """The folder the installed kcodec distribution lies in.

    A kcodec run from its tree skips the test, except under .ci/run (KCODEC_TEST_INSTALLED=1), which
    installs kcodec first: there the check is never left out.
    """
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        site = Path(str(distribution("kcodec").locate_file(""))).resolve()
    except PackageNotFoundError:
        site = None
    if site != plugin_util.KCODEC_HOME:
        why = (f"kcodec is imported from {plugin_util.KCODEC_HOME}, not installed as a distribution there "
               f"(found: {site}); pip install . first")
        if os.environ.get("KCODEC_TEST_INSTALLED") == "1":
            pytest.fail(why)
        pytest.skip(why)
    return site


def _fresh_venv(where: Path, site: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", str(where)], check=True, capture_output=True, timeout=300)
    py = where / "bin" / "python"
    purelib = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                             check=True, capture_output=True, text=True).stdout.strip()
    # the installed kcodec and its dependencies, as a venv with kcodec installed from a clone has them
    Path(purelib, "installed-kcodec.pth").write_text(f"{site}\n")
    return py


@pytest.mark.parametrize("plugin, check", [
    # the README's check: the active gzip codec's backend
    ("kcodec-libdeflate", lambda out: re.fullmatch(r"libdeflate \d+\.\d+(\.\d+)? \(kcodec-libdeflate 0\.1\.0, cffi\)",
                                                   out)),
    # the README's check: gzip's implementations, the plugin's active and the built-in one not
    ("kcodec-isal", lambda out: out.startswith(
        "[CodecInfo(id=1, name='gzip', implementation='kcodec_isal:IsalGzipCodec', "
        "origin='entry point kcodec-isal 0.1.0', active=True)") and "origin='builtin', active=False)" in out),
])
def test_the_readme_installs_the_plugin(tmp_path, plugin, check):
    site = _installed_kcodec_site()
    if plugin == "kcodec-libdeflate" and not plugin_util.libdeflate_dev():
        pytest.skip("libdeflate-dev (libdeflate.h) is not installed: apt-get install libdeflate-dev")
    module = plugin.replace("-", "_")
    if plugin_util.installed_globally(plugin):
        pytest.skip(f"{plugin} is installed in this environment already")
    commands = _readme_commands(plugin)
    assert commands[0] == f"pip install ./plugins/{plugin}"
    venv = tmp_path / "venv"
    py = _fresh_venv(venv, site)
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "PYTHONHOME", "KCODEC_DISABLE_PLUGINS", "PIP_NO_INDEX", "PIP_TARGET")}
    env.update(PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}", VIRTUAL_ENV=str(venv),
               PIP_DISABLE_PIP_VERSION_CHECK="1")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", "\n".join(commands)], cwd=str(ROOT), env=env,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, f"{proc.stdout}\n{proc.stderr}"
    out = proc.stdout.strip().splitlines()[-1]
    assert check(out), out
    # installed into the fresh environment, not beside kcodec
    placed = subprocess.run([str(py), "-c", f"import {module}; print({module}.__file__)"], capture_output=True,
                            text=True, env=env, check=True).stdout.strip()
    assert Path(placed).resolve().is_relative_to(venv.resolve()), placed
    assert not (site / module).exists()


def test_the_libdeflate_plugin_ships_kcodecs_codec_header():
    # Its build reads its own copy of the header, version 1: the copy is kcodec's, byte for byte.
    shipped = ROOT / "plugins" / "kcodec-libdeflate" / "kcodec_libdeflate" / "include" / "kcodec" / "codec.h"
    assert shipped.read_bytes() == (Path(kcodec.get_include()) / "kcodec" / "codec.h").read_bytes()
    build = (ROOT / "plugins" / "kcodec-libdeflate" / "pyproject.toml").read_text()
    requires = re.search(r"^requires = \[(.*)\]$", build, re.M)
    assert requires and "kcodec" not in requires.group(1)
