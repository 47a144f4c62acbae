"""Build kcodec's compiled core: Cython modules in kcodec/_native over csrc/.

KCODEC_ONLY=mod1,mod2 with ``setup.py build_ext --inplace`` rebuilds only those
modules.  Set KCODEC_SANITIZE=address to build with AddressSanitizer (run the tests with
LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0, and
PYTHONMALLOC=malloc so that Python objects freed too early are caught as well);
``bash .ci/asan`` does all of that in a copy of the tree for the malformed-input tests.
KCODEC_SANITIZE=address,fuzzer-no-link adds libFuzzer's coverage counters for the fuzz
targets (fuzz/README.md); it needs clang: CC=clang.
"""
import glob
import os
import sys

import numpy
from Cython.Build import cythonize
from setuptools import Extension, setup

C_SOURCES = sorted(glob.glob("csrc/*.c"))
compile_args = ["-O3", "-fno-strict-aliasing"]
link_args = []
sanitize = os.environ.get("KCODEC_SANITIZE")
if sanitize and "fuzzer" in sanitize and "clang" not in os.environ.get("CC", ""):
    raise SystemExit(f"KCODEC_SANITIZE={sanitize} needs clang: set CC=clang")
if sanitize:
    compile_args = ["-O1", "-g", "-fno-omit-frame-pointer", f"-fsanitize={sanitize}"]
    link_args = [f"-fsanitize={sanitize}"]


#: System libraries a module links: zlib for the gzip codec's native functions.
LIBRARIES = {"codecs": ["z"]}


def ext(name: str) -> Extension:
    return Extension(
        f"kcodec._native.{name}",
        sources=[f"kcodec/_native/{name}.pyx", *C_SOURCES],
        include_dirs=["csrc", "kcodec/include", numpy.get_include()],
        libraries=LIBRARIES.get(name, []),
        define_macros=[("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")],
        extra_compile_args=compile_args,
        extra_link_args=link_args,
    )


MODULES = [os.path.basename(p)[:-4] for p in sorted(glob.glob("kcodec/_native/*.pyx"))]
# KCODEC_ONLY=records,columnar rebuilds just those modules (development aid).
if os.environ.get("KCODEC_ONLY"):
    MODULES = [m for m in MODULES if m in os.environ["KCODEC_ONLY"].split(",")]

# Cython's C depends on the numpy it was generated against (numpy's own .pxd), and Cython
# regenerates it only when the .pyx is newer: C generated for one Python's numpy and compiled
# against another's headers fails or, worse, compiles.  Each (Python, numpy) pair gets its own.
CYTHON_BUILD_DIR = os.path.join("build", "cython", f"{sys.implementation.cache_tag}-numpy{numpy.__version__}")

setup(
    ext_modules=cythonize(
        [ext(m) for m in MODULES],
        build_dir=CYTHON_BUILD_DIR,
        compiler_directives={"language_level": "3", "embedsignature": True},
    ),
)
