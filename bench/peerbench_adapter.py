"""kcodec adapters for peerbench (/work/shared/peerbench), used with ``--impl``.

    cd /work/shared/peerbench
    PYTHONPATH=/work/main/bench python3 peerbench/run.py \\
        --impl peerbench_adapter:KcodecAdapter,peerbench_adapter:KcodecArrowAdapter,aiokafka ...

peerbench runs in its own venv: install kcodec there first
(``/opt/peerbench-venv/bin/pip install -e /work/main``).

``KcodecAdapter`` is the object API (``RecordBatchBuilder`` / ``read_batches``),
the like-for-like comparison with the other clients.  ``KcodecArrowAdapter`` is
the columnar API: ``read`` returns the records as Arrow columns (keys and values
in contiguous buffers, no Python ``bytes`` per record), ``build`` converts the
given Python records to an Arrow table inside the timed region and encodes it
with ``from_arrow`` one batch per input batch (so the conversion is paid for).
"""
from __future__ import annotations

from typing import List, Sequence, Tuple

try:  # run inside peerbench
    from peerbench.adapters.base import Adapter, dist_version
except ImportError:  # imported on its own (tests, compare.py)
    class Adapter:  # type: ignore[no-redef]
        name = "?"
        kind = "impl"
        codecs: Tuple[str, ...] = ("none", "gzip", "snappy", "lz4", "zstd")

        def info(self) -> dict:
            return {}

        def setup(self, workload, codec: str) -> None:
            pass

    def dist_version(name: str) -> str:
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version(name)
        except PackageNotFoundError:
            return "not installed"

Record = Tuple[int, "bytes | None", "bytes | None", Sequence[Tuple[str, "bytes | None"]]]


def _codec_info(kcodec) -> dict:
    out = {}
    for name in ("gzip", "snappy", "lz4", "zstd"):
        ct = kcodec.CompressionType.of(name)
        out[name] = f"kcodec default level {ct.default_level}"
    return out


class KcodecAdapter(Adapter):
    """kcodec's object API: one ``RecordBatchBuilder`` per batch, ``read_batches`` to read."""

    # peerbench files results under the --impl string, so the name is that "module:Class" spec.
    name = f"{__name__}:KcodecAdapter"

    def __init__(self) -> None:
        import kcodec  # ImportError -> peerbench reports the implementation as skipped
        self.k = kcodec

    def info(self) -> dict:
        return {"version": dist_version("kcodec"), "code_path": "C extension (Cython)",
                "codecs": _codec_info(self.k)}

    def build(self, batches: List[List[Record]], codec: str, max_batch_bytes: int) -> list:
        Builder = self.k.RecordBatchBuilder
        out = []
        for recs in batches:
            b = Builder(compression=codec, base_offset=0)
            append = b.append
            for ts, key, value, headers in recs:
                append(key, value, ts, headers)
            out.append(b.build())
        return out

    def read(self, batches: List[bytes]) -> Tuple[int, int]:
        n = nbytes = 0
        read_batches = self.k.read_batches
        for buf in batches:
            for batch in read_batches(buf, validate=True):
                for rec in batch:
                    key, value = rec.key, rec.value
                    n += 1
                    if key is not None:
                        nbytes += len(key)
                    if value is not None:
                        nbytes += len(value)
        return n, nbytes


class KcodecArrowAdapter(KcodecAdapter):
    """kcodec's columnar API: ``to_arrow`` to read, ``from_arrow`` to build."""

    name = f"{__name__}:KcodecArrowAdapter"

    def __init__(self) -> None:
        super().__init__()
        import pyarrow as pa
        import pyarrow.compute as pc
        self.pa, self.pc = pa, pc
        self.headers_type = self.k.kafka_schema().field("headers").type

    def build(self, batches: List[List[Record]], codec: str, max_batch_bytes: int) -> list:
        pa = self.pa
        out = []
        for recs in batches:
            table = pa.table({
                "key": pa.array([r[1] for r in recs], pa.binary()),
                "value": pa.array([r[2] for r in recs], pa.binary()),
                "timestamp": pa.array([r[0] for r in recs], pa.int64()),
                "headers": pa.array([[{"key": k, "value": v} for k, v in r[3]] or None for r in recs],
                                    self.headers_type),
            })
            # The workload fixes the boundaries: no limit, so each input batch stays one batch.
            out.extend(self.k.from_arrow(table, compression=codec, max_batch_bytes=2**31 - 1))
        return out

    def read(self, batches: List[bytes]) -> Tuple[int, int]:
        n = nbytes = 0
        for buf in batches:
            table = self.k.to_arrow(buf)
            n += table.num_rows
            for name in ("key", "value"):
                nbytes += self.pc.sum(self.pc.binary_length(table.column(name))).as_py() or 0
        return n, nbytes
