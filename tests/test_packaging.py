"""What pip users get: a source distribution with every file the build reads and no build
output, and (where CI asks) tests that run against the installed package, not the tree.

The sdist checked is ``$KCODEC_TEST_SDIST`` when set (CI passes the one it built), otherwise
one built here from the source tree beside ``tests/``.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path, PurePosixPath
from typing import Dict, List, Set, Tuple

import pytest

import kcodec

ROOT = Path(__file__).resolve().parents[1]

#: Folders the compiler searches for quoted includes besides the including file's own
#: (setup.py's include_dirs, and the public header folder kcodec.get_include() returns).
INCLUDE_DIRS = ("csrc", "kcodec/include")
#: Headers from outside the sdist: Python's C API, numpy's, and zlib's (setup.py links the system zlib).
EXTERNAL_HEADER = re.compile(r"^(Python|structmember|pythread|numpy/\w+|zlib)\.h$")
C_INCLUDE = re.compile(r'^\s*#\s*include\s+(?:"([^"]+)"|<(kcodec/[^>]+)>)', re.M)
CYTHON_EXTERN = re.compile(r'^\s*cdef\s+extern\s+from\s+"([^"]+)"', re.M)
CYTHON_CIMPORT = re.compile(r"^\s*(?:from\s+(kcodec(?:\.\w+)+)\s+cimport|cimport\s+(kcodec(?:\.\w+)+))", re.M)
CYTHON_INCLUDE = re.compile(r'^\s*include\s+"([^"]+)"', re.M)
#: What setup.py compiles: every Cython module and every C file (it globs both folders).
BUILD_ROOTS = re.compile(r"^(csrc/[^/]+\.c|kcodec/_native/[^/]+\.pyx)$")
BUILD_OUTPUT = re.compile(r"(\.(so|pyd|o|a|pyc)$|(^|/)(build|__pycache__)/|^kcodec/_native/[^/]+\.(c|html)$)")


@pytest.fixture(scope="module")
def sdist(tmp_path_factory) -> Dict[str, bytes]:
    """The source distribution's files by path relative to its top folder."""
    given = os.environ.get("KCODEC_TEST_SDIST")
    if given:
        path = Path(given)
    else:
        if not (ROOT / "setup.py").exists():
            pytest.skip(f"no source tree at {ROOT} to build a source distribution from")
        pytest.importorskip("build", reason="building the sdist needs the 'build' package (kcodec[test])")
        out = tmp_path_factory.mktemp("sdist")
        # setuptools adds what an earlier build's egg-info lists, so build from a copy without it
        src = out / "src"
        shutil.copytree(ROOT, src, ignore=shutil.ignore_patterns(
            "*.egg-info", ".git", "build", "dist", "__pycache__", ".pytest_cache", ".hypothesis"))
        proc = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(out), str(src)],
                              capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
        (path,) = out.glob("kcodec-*.tar.gz")
    with tarfile.open(path) as tar:
        members = [m for m in tar.getmembers() if m.isfile()]
        top = PurePosixPath(members[0].name).parts[0]
        return {str(PurePosixPath(m.name).relative_to(top)): tar.extractfile(m).read() for m in members}


def _references(name: str, text: str) -> List[str]:
    """Source files ``name`` needs, as candidate paths (the first that exists is the one used)."""
    here = PurePosixPath(name).parent
    refs = []
    if name.endswith((".pyx", ".pxd", ".pxi")):
        headers = CYTHON_EXTERN.findall(text) + [q for q, _ in C_INCLUDE.findall(text) if q]
        for module in (a or b for a, b in CYTHON_CIMPORT.findall(text)):
            refs.append([module.replace(".", "/") + ".pxd"])
        refs.extend([str(here / included)] for included in CYTHON_INCLUDE.findall(text))
        # A module's own .pxd is read without being named: needed when the source tree has one.
        own = name[:-4] + ".pxd"
        if name.endswith(".pyx") and (ROOT / own).exists():
            refs.append([own])
    else:
        headers = [q or a for q, a in C_INCLUDE.findall(text)]
    for header in headers:
        if not EXTERNAL_HEADER.match(header):
            refs.append([str(here / header), *(f"{d}/{header}" for d in INCLUDE_DIRS)])
    return refs


def build_inputs(files: Dict[str, bytes]) -> Tuple[Set[str], Set[str]]:
    """(files the build of an sdist reads, references it cannot resolve), ``files`` being its contents.

    Starts from what setup.py compiles and follows #include, ``cdef extern from``
    and ``cimport`` through the sdist's own copies, so a header that only another
    header includes is found missing too.
    """
    todo = [n for n in files if BUILD_ROOTS.match(n)]
    assert todo, "the sdist has no Cython module or C source at all"
    used, missing = set(todo), set()
    while todo:
        name = todo.pop()
        for candidates in _references(name, files[name].decode("utf-8", "replace")):
            found = next((c for c in candidates if c in files), None)
            if found is None:
                missing.add(f"{PurePosixPath(candidates[0]).name} (needed by {name})")
            elif found not in used:
                used.add(found)
                todo.append(found)
    return used, missing


def test_every_tracked_source_file_is_shipped(sdist):
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a git checkout (an unpacked sdist has no file list to compare with)")
    tracked = subprocess.run(["git", "-C", str(ROOT), "ls-files", "csrc", "kcodec", "plugins", "tests", "bench",
                              "docs", "fuzz", "LICENSE", "README.md", "CHANGELOG.md"],
                             capture_output=True, text=True, check=True).stdout.split()
    assert tracked
    assert sorted(set(tracked) - set(sdist)) == []


def test_no_build_output_is_shipped(sdist):
    assert sorted(n for n in sdist if BUILD_OUTPUT.search(n)) == []


def test_the_build_finds_every_file_it_reads(sdist):
    used, missing = build_inputs(sdist)
    assert sorted(missing) == []
    assert {"kcodec/_native/primitives.pxd"} <= used and any(n.startswith("csrc/") and n.endswith(".h") for n in used)


@pytest.mark.parametrize("kind", [".h", ".pxd", ".pxi"])
def test_a_file_left_out_is_found_missing(sdist, kind):
    # kc_copy.h was once left out: only other headers include it, so only following
    # includes from file to file finds it.
    used, _ = build_inputs(sdist)
    # A .pxd only its own module reads is read when present: leaving it out is no missing reference.
    cimported = {(a or b).replace(".", "/") + ".pxd" for n in used if n.endswith((".pyx", ".pxd", ".pxi"))
                 for a, b in CYTHON_CIMPORT.findall(sdist[n].decode("utf-8", "replace"))}
    needed = sorted(n for n in used if n.endswith(kind) and not BUILD_ROOTS.match(n)
                    and (kind != ".pxd" or n in cimported))
    assert needed
    for name in needed:
        _, missing = build_inputs({n: v for n, v in sdist.items() if n != name})
        assert any(m.startswith(PurePosixPath(name).name + " ") for m in missing), name


def test_tests_run_against_the_installed_package():
    if os.environ.get("KCODEC_TEST_INSTALLED") != "1":
        pytest.skip("KCODEC_TEST_INSTALLED=1 (set by .ci/run after installing the wheel) asks for this check")
    site_dirs = {Path(sysconfig.get_paths()[k]).resolve() for k in ("purelib", "platlib")}
    package = Path(kcodec.__file__).resolve().parent
    assert package.parent in site_dirs, f"kcodec was imported from {package}, not from {site_dirs}"
    from kcodec._native import records
    assert Path(records.__file__).resolve().parent == package / "_native"
    assert str(ROOT) not in sys.path and "" not in sys.path


def test_version_of_the_command_is_the_installed_distributions():
    from importlib import metadata

    try:
        expected = metadata.version("kcodec")
    except metadata.PackageNotFoundError:
        expected = kcodec.__version__
    if os.environ.get("KCODEC_TEST_INSTALLED") == "1":
        command = [str(Path(sys.executable).with_name("kcodec"))]  # the console script pip installed
    else:
        command = [sys.executable, "-m", "kcodec.cli"]
    proc = subprocess.run([*command, "--version"], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"kcodec {expected}" == f"kcodec {kcodec.__version__}"
