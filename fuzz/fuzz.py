"""Run one fuzz target under atheris, or replay inputs without it.

    python fuzz/fuzz.py TARGET [libFuzzer options] [corpus directories]
    python fuzz/fuzz.py --replay TARGET FILE...

TARGET is one of targets.TARGETS.  Under atheris, kcodec's Python modules
are instrumented for coverage; its native extensions add theirs when they
were built with ``KCODEC_SANITIZE=address,fuzzer-no-link`` (see README.md).
"""
from __future__ import annotations

import importlib
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

from targets import TARGETS  # noqa: E402

#: kcodec's modules the targets reach, imported under instrumentation (kcodec loads most on first use).
MODULES = ("kcodec", "kcodec.arrow", "kcodec.records", "kcodec.records.convert", "kcodec.records.legacy_batch",
           "kcodec.records.legacy_builder",
           "kcodec.compression", "kcodec.compression.zstd", "kcodec.compression.lz4", "kcodec.compression.snappy",
           "kcodec.compression.gzip", "kcodec.log", "kcodec.log.selection", "kcodec.log.arrow_reader",
           "kcodec.log.validator", "kcodec.dump", "kcodec.spark.datasource", "kcodec.advise.measure",
           "kcodec.advise.task")


def _target(name: str):
    if name not in TARGETS:
        sys.exit(f"fuzz.py: unknown target {name!r}; one of {', '.join(TARGETS)}")
    return importlib.import_module(f"targets.{name}")


def replay(name: str, paths) -> int:
    """Run each input once; 1 if any raised (its traceback printed)."""
    target = _target(name)
    failed = 0
    for path in paths:
        with open(path, "rb") as f:
            data = f.read()
        try:
            target.test_one_input(data)
            print(f"{path}: ok")
        except Exception:  # a finding: show it whole
            failed = 1
            print(f"{path}: FINDING")
            traceback.print_exc()
    return failed


def main(argv) -> int:
    if len(argv) >= 2 and argv[1] == "--replay":
        if len(argv) < 4:
            sys.exit(__doc__)
        return replay(argv[2], argv[3:])
    if len(argv) < 2:
        sys.exit(__doc__)
    import atheris

    with atheris.instrument_imports(include=["kcodec"]):
        for module in MODULES:
            try:
                importlib.import_module(module)
            except ModuleNotFoundError as exc:
                if (exc.name or "").startswith("kcodec"):
                    raise
                sys.exit(f"fuzz.py: {module} needs {exc.name}; the targets need kcodec's extras: "
                         "pip install \".[test,spark]\"")
        target = _target(argv[1])
    for codec in ("gzip", "snappy", "lz4", "zstd"):  # load the codec libraries before the first input
        __import__("kcodec").get_codec(codec).load()
    atheris.Setup([argv[0]] + argv[2:], target.test_one_input)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
