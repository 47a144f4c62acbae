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

from itertools import repeat
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


class CPythonFloor(Adapter):
    """CPython's own built-ins handing out the same keys and values: a reference, not a reader.

    peerbench's read hands the application each record's key and value as
    ``bytes``.  Here those objects are cut in C (``bytes`` slicing through
    ``map``) out of one buffer per batch that ``setup`` prepared, untimed, and
    the timed loop is the adapter's counting loop over them: no CRC, no
    decompression, no decoding at all.  Where the Java client reads a cell
    faster than this (plus codec-raw's decompression, for a codec), plain
    CPython doing nothing but handing out the bytes is already behind Java:
    the interpreter's objects and loop, not the decoding, set the pace there.
    It is not a strict lower bound: a reader that makes its objects in one C
    pass (as kcodec's does) can beat it, but not by the margin Java leads by.

    Its build is the adapter loop's per-record work alone: each record is
    unpacked, packed into one tuple and appended to a list, one C call per
    record as a builder's ``append`` is, with nothing encoded, checksummed or
    compressed.  A build cell is compared with it plus codec-raw's compression.
    """

    name = f"{__name__}:CPythonFloor"
    kind = "reference"
    codecs = ("none",)

    def __init__(self) -> None:
        self._reads: list = []

    def info(self) -> dict:
        return {"version": "CPython", "code_path": "a bytes per key and value cut in C, the adapter's loop"}

    def setup(self, workload, codec: str) -> None:
        self._reads = []
        for recs in workload.batches:
            parts, kslices, vslices, pos = [], [], [], 0
            for _, key, value, _ in recs:
                for data, out in ((key, kslices), (value, vslices)):
                    if data is None:
                        out.append(None)
                    else:
                        parts.append(data)
                        out.append(slice(pos, pos + len(data)))
                        pos += len(data)
            buf = b"".join(parts)
            self._reads.append((buf, self._spec(kslices), self._spec(vslices)))

    @staticmethod
    def _spec(slices: list):
        # Decided untimed: keys or values all null (W2's and W3's keys) are one shared None each.
        if all(s is None for s in slices):
            return len(slices)
        return slices, any(s is None for s in slices)

    @staticmethod
    def _cut(buf: bytes, spec):
        if type(spec) is int:
            return repeat(None, spec)
        slices, some_null = spec
        if not some_null:
            return map(buf.__getitem__, slices)
        get = buf.__getitem__
        return [None if s is None else get(s) for s in slices]

    def read(self, batches: List[bytes]):
        n = nbytes = 0
        cut = self._cut
        for buf, keys, values in self._reads:
            for key, value in zip(cut(buf, keys), cut(buf, values)):
                n += 1
                if key is not None:
                    nbytes += len(key)
                if value is not None:
                    nbytes += len(value)
        return n, nbytes

    def build(self, batches: List[List[Record]], codec: str, max_batch_bytes: int) -> list:
        out = []
        for recs in batches:
            packed = []
            append = packed.append
            for ts, key, value, headers in recs:
                append((key, value, ts, headers))
            out.append(packed)
        return out
