"""Each module's stated boundary: ``__all__`` is declared, lists no name twice, and every name exists."""
from __future__ import annotations

import importlib

import pytest

MODULES = ["kcodec.log.cleaner", "kcodec.log.recovery", "kcodec.log.offset_map", "kcodec.log.segment",
           "kcodec.log.index", "kcodec.log.retention", "kcodec.log.recompress", "kcodec.log.filter",
           "kcodec.compression.gzip", "kcodec.compression.snappy", "kcodec.compression.lz4",
           "kcodec.compression.zstd", "kcodec.advise.cost", "kcodec.advise.recommend"]


@pytest.mark.parametrize("name", MODULES)
def test_all_names_exist(name):
    module = importlib.import_module(name)
    public = module.__all__
    assert public and len(set(public)) == len(public)
    assert [n for n in public if not hasattr(module, n)] == []
    star: dict = {}
    exec(f"from {name} import *", star)
    assert set(star) - {"__builtins__"} == set(public)
