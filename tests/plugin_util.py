"""Installing the plugins of ``plugins/`` as real distributions, for the tests that use them.

A plugin is pip-installed into a temporary directory (never into the running
environment, where it would change a codec for every other test) and that
directory is put on ``sys.path`` only inside the tests that ask for it.
"""
from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterator, Sequence

import pytest

import kcodec
from kcodec.compression import registry

ROOT = Path(__file__).resolve().parents[1]
# the folder this kcodec was imported from: site-packages, or the tree with in-place builds
KCODEC_HOME = Path(kcodec.__file__).resolve().parents[1]


def libdeflate_dev() -> bool:
    """Whether a C compiler finds libdeflate's header (Debian: libdeflate-dev)."""
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return False
    proc = subprocess.run([cc, "-E", "-x", "c", "-"], input="#include <libdeflate.h>\n", capture_output=True,
                          text=True)
    return proc.returncode == 0


def install(name: str, work: Path) -> Path:
    """``plugins/<name>`` installed by pip into ``work/site`` (no network, no build isolation).

    The build sees the kcodec the tests import.
    """
    src = work / "src"
    shutil.copytree(ROOT / "plugins" / name, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    target = work / "site"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(KCODEC_HOME), os.environ.get("PYTHONPATH", "")]))
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(target), str(src)],
        capture_output=True, text=True, timeout=300, env=env)
    if proc.returncode != 0:
        pytest.fail(f"pip could not install {name}:\n{proc.stdout}\n{proc.stderr}")
    return target


def forget(module: str) -> None:
    """Drop ``module`` and the codec registry's discoveries, so the next lookup starts afresh."""
    for name in [m for m in sys.modules if m == module or m.startswith(module + ".")]:
        del sys.modules[name]
    importlib.invalidate_caches()
    registry._reset_for_tests()


@contextlib.contextmanager
def active(site: Path, module: str) -> Iterator[Path]:
    """The plugin installed in ``site`` found by kcodec for the duration of the block."""
    sys.path.insert(0, str(site))
    forget(module)
    try:
        yield site
    finally:
        sys.path.remove(str(site))
        forget(module)


def installed_globally(distribution: str) -> bool:
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import distribution as find
    try:
        find(distribution)
    except PackageNotFoundError:
        return False
    return True


def run(code: str, site: Path, **env: str) -> subprocess.CompletedProcess:
    """``code`` in a fresh interpreter that sees the plugin in ``site`` and the kcodec the tests import."""
    full_env = {k: v for k, v in os.environ.items() if k != "KCODEC_DISABLE_PLUGINS"}
    full_env.update(env)
    full_env["PYTHONPATH"] = os.pathsep.join([str(site), str(KCODEC_HOME), full_env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=full_env, cwd=str(KCODEC_HOME), timeout=120)


def missing_library_error(site: Path, blocked: Sequence[str], codec_class: str) -> str:
    """The error gzip's plugin codec gives when the modules ``blocked`` cannot be imported."""
    proc = run(f"""
        import sys
        for name in {list(blocked)!r}:
            sys.modules[name] = None
        import kcodec
        codec = kcodec.get_codec("gzip")
        assert type(codec).__name__ == {codec_class!r} and not codec.available()
        try:
            codec.compress(b"x")
        except kcodec.CodecLibraryMissingError as exc:
            print(exc)
    """, site)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def check_lazy_import(site: Path, plugin_module: str, library_module: str) -> None:
    """Listing codecs and looking gzip up import the plugin, and its library only on first use."""
    proc = run(f"""
        import sys
        import kcodec
        kcodec.codecs()
        codec = kcodec.get_codec("gzip")
        assert {plugin_module!r} in sys.modules and {library_module!r} not in sys.modules
        codec.compress(b"now")
        assert {library_module!r} in sys.modules
        print("ok")
    """, site)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr
