"""Measure: build a setting's batches with kcodec's builder, read them back, and take the CPU time of both.

What is timed is what a producer and a consumer run: the batches of the
replay's cuts built with Kafka's framing by kcodec's native builder
(``encode_columnar`` with the cuts, then one ``compressed_batch`` per batch:
the path of :func:`kcodec.from_arrow`, the ``MemoryRecordsBuilder``
counterpart for columns), and read by :func:`kcodec.to_arrow`.  All of a
chunk's batches of one setting are built in one native call, so a replay of
thousands of one-record batches pays no Python step per record and only a
call per batch, as the builder alone does.

The clock is the calling thread's CPU time (``time.thread_time_ns``), never
wall time: a busy machine stretches wall time by the time other processes
run, thread CPU time only by their effect on caches.  Neither the builder
nor the reader hands work to another thread on this path
(``to_arrow(use_threads=False)``; compression runs on the calling thread with
the GIL released).  Each chunk is timed once, on the build whose batches
advise keeps, so measuring costs no more than building and reading.  Java's
ratio estimate needs every batch compressed as it closes: those batches are
kept (:class:`BatchBodies`, each timed as it is made) and the build frames
them instead of compressing them again (:meth:`BatchEncoder.framed`).  Where
the measurement is billed (``--cpu-cost measured``, or a codec the cost model
does not cover), work shorter than :data:`MIN_REP_SECONDS` is repeated until
it is long enough to time; where it is only shown beside the model's speeds,
each build and read is timed once, so that measuring adds no work to the
replay's own.  The spread of a setting's speed is its spread over the sampled
chunks.

These CPU times are what the report shows as this machine's speeds.  They
still move with load: on a shared 2-core machine the same build moved by
15-45% with busy processes beside it.  A measured number of that kind can be
rounded, but wherever the rounding cuts, a measurement near the cut falls on
either side from run to run, so no rounding of it makes a bill identical to
the cent.  The bill and the rule therefore take their CPU costs from
:mod:`kcodec.advise.cpu`, a cost model of this same builder and reader
(calibrated with ``bench/advise_measure.py``) applied to each setting's bytes,
batches and records, which depend only on the data and the flags.
"""
from __future__ import annotations

import functools
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple, TypeVar, Union

import numpy as np

from kcodec._native.columnar import BatchBodies, BatchRatios, BatchSizer, compressed_batch_list, encode_columnar
from kcodec._native.native_codec import native_of
from kcodec.records.framing import RECORD_BATCH_OVERHEAD, iter_entries

__all__ = ["CpuTime", "BatchEncoder", "cpu_time", "measure_build", "measure_read", "REPS", "MIN_REP_SECONDS",
           "ONE_BATCH", "ZSTD_EMPTY_LAST_BLOCK", "zstd_empty_last_blocks", "zstd_one_shot_bytes"]

REPS = 1
MIN_REP_SECONDS = 0.005
ONE_BATCH = 2 ** 31 - 1
#: from_arrow's header fields of an uncompressed batch (``encode_columnar``'s ``direct``): attributes 0,
#: no producer id, epoch, sequence or leader epoch, create time
_PLAIN_HEADER = (0, -1, -1, -1, -1, -1)

T = TypeVar("T")

#: The clock of every measurement: nanoseconds of CPU time of the calling thread.
Clock = Callable[[], int]


@dataclass(frozen=True)
class CpuTime:
    """CPU seconds of one piece of work: the median of ``reps`` repetitions, half their range, the fastest."""

    seconds: float
    spread: float
    reps: int
    best: float


def cpu_time(fn: Callable[[], T], reps: int = REPS, min_seconds: float = MIN_REP_SECONDS,
             clock: Optional[Clock] = None) -> Tuple[T, CpuTime]:
    """``fn()``'s result and its thread CPU time: the median of ``reps`` repetitions of at least ``min_seconds``.

    The first call is timed and its result kept.  Work shorter than
    ``min_seconds`` is run again, more times per repetition, until a
    repetition is long enough to time.
    """
    clock = clock or time.thread_time_ns
    t0 = clock()
    result = fn()
    ns = clock() - t0
    calls = 1
    took: List[float] = []
    if ns >= min_seconds * 1e9:
        took.append(ns / 1e9)
    while len(took) < reps:
        if not took:
            # Too short to time: grow the repetition until it is not.
            calls = calls * 2 if ns <= 0 else max(calls + 1, int(calls * min_seconds * 1e9 / ns * 1.2))
        t0 = clock()
        for _ in range(calls):
            fn()
        ns = clock() - t0
        if not took and ns < min_seconds * 1e9 and calls < 1 << 20:
            continue
        took.append(ns / calls / 1e9)
    took.sort()
    return result, CpuTime(float(np.median(took)), (took[-1] - took[0]) / 2, len(took), took[0])


@functools.lru_cache(maxsize=None)
def _codec(name: str, level):
    from kcodec.compression import get_codec

    c = get_codec(name)
    return c, c.resolve_level(level)


#: a zstd frame's empty last block: block header only, last-block flag set, raw, 0 bytes
ZSTD_EMPTY_LAST_BLOCK = b"\x01\x00\x00"


def zstd_empty_last_blocks(batches: Sequence[Union[bytes, memoryview]]) -> int:
    """How many of the batches (each buffer one batch or several back to back) hold a zstd frame that
    ends with an empty last block, as Java's stream closes one after a flush."""
    count = 0
    for buf in batches:
        view = memoryview(buf).cast("B")
        for e in iter_entries(view):
            end = e.position + e.size
            if e.size >= RECORD_BATCH_OVERHEAD + 3 and view[end - 3:end] == ZSTD_EMPTY_LAST_BLOCK:
                count += 1
    return count


def zstd_one_shot_bytes(batches: Sequence[Union[bytes, memoryview]], level: Optional[int]) -> int:
    """Stored bytes of the zstd batches (each buffer one batch or several back to back) with each batch's
    records compressed in one call that knows their size, as a client compressing a whole buffer at once
    does (zstandard's ``compress``, cramjam's, libzstd's ``ZSTD_compressCCtx``): a frame that states its
    content size, with parameters chosen for that size, instead of Java's stream."""
    import zstandard

    compressor = zstandard.ZstdCompressor(level=3 if level is None else level)
    total = 0
    for buf in batches:
        view = memoryview(buf).cast("B")
        for e in iter_entries(view):
            body = view[e.position + RECORD_BATCH_OVERHEAD:e.position + e.size]
            plain = zstandard.ZstdDecompressor().decompressobj().decompress(body)
            total += RECORD_BATCH_OVERHEAD + len(compressor.compress(plain))
    return total


class BatchEncoder:
    """Real Kafka v2 batches of a table's records cut where the caller says.

    The columns are prepared once; :meth:`build` makes every batch of a list
    of cuts in one native call, :meth:`batch` one batch (the replay's step,
    which needs each compressed batch's size before it cuts the next).
    """

    def __init__(self, table) -> None:
        from kcodec.arrow.columns import as_binary, binary_spec, column, header_specs, timestamps_ms

        n = table.num_rows
        self.n = n
        key = column(table, "key")
        self.key = binary_spec(as_binary(key, "key")) if key is not None else None
        self.value = binary_spec(as_binary(column(table, "value")))
        self.hdrs = self.hkey = self.hval = None
        hdrs = column(table, "headers")
        if hdrs is not None and hdrs.null_count < n:
            self.hdrs, self.hkey, self.hval = header_specs(hdrs, refuse_null_entries=False)
        self.ts = np.ascontiguousarray(timestamps_ms(column(table, "timestamp"), n), dtype=np.int64)
        # per native codec and level: the compressed batches the replay and the builds made (BatchRatios
        # shares them); per other codec: batch bytes of records a:b, keyed a * (n + 1) + b
        self._bodies: Dict[Tuple[str, Any], BatchBodies] = {}
        self._sizes: Dict[Tuple[str, Any], Dict[int, int]] = {}
        self._sizer = BatchSizer(n, self.key, self.value, self.hdrs, self.hkey, self.hval, self.ts)
        # uncompressed framed builds are written here, one after another (see framed)
        self._scratch = bytearray()

    def _kept(self, codec: str, level) -> Optional[BatchBodies]:
        """The kept batches of a native codec and level, or None for a codec without a native capsule."""
        got = self._bodies.get((codec, level))
        if got is None:
            c, lvl = _codec(codec, level)
            native = native_of(c) if c.id != 0 else None
            if native is None:
                return None
            got = self._bodies[(codec, level)] = BatchBodies(native, 0 if lvl is None else lvl, self.n)
        return got

    def forget(self, codec: str, level) -> None:
        """Let go of the batches kept for ``codec``/``level`` (they are made again if asked for)."""
        self._bodies.pop((codec, level), None)
        self._sizes.pop((codec, level), None)

    def batch_bytes(self, a: int, b: int, codec: str, level) -> int:
        """The size of records ``a:b`` as one batch, built once per codec and level.

        The replay asks again and again: warming Java's ratio estimate replays the same records in
        rounds, and the settings of one codec and level cut many of the same batches.
        """
        kept = self._kept(codec, level)
        if kept is not None:
            return kept.batch_size(self._sizer, a, b)
        sizes = self._sizes.setdefault((codec, level), {})
        key = a * (self.n + 1) + b
        size = sizes.get(key)
        if size is None:
            size = sizes[key] = len(self.batch(a, b, codec, level))
        return size

    def ratios(self, codec: str, level, ends: np.ndarray, overhead: int) -> Callable[[int, int], float]:
        """``close(a, b)`` for the replay: ``(batch bytes - overhead) / (ends[b] - ends[a])`` of records
        ``a:b`` (at least 1 below), with the sizes of :meth:`batch_bytes`.

        For a native codec it is a :class:`BatchRatios`, which the native replay asks without a
        Python call per batch.
        """
        ends = np.ascontiguousarray(ends, dtype=np.int64)
        kept = self._kept(codec, level)
        if kept is not None and len(ends) == self.n + 1:
            return BatchRatios(self._sizer, kept, ends, overhead)
        bounds = ends.tolist()

        def ratio(a: int, b: int) -> float:
            return (self.batch_bytes(a, b, codec, level) - overhead) / max(1, bounds[b] - bounds[a])

        return ratio

    def framed(self, starts: np.ndarray, codec: str, level) -> Optional[Tuple[Union[bytes, memoryview], int, float]]:
        """(batches, count, CPU seconds): :meth:`build`'s batches one after another in one buffer,
        made from the batches the replay kept, or, uncompressed, written into it at once.

        Uncompressed, the buffer is a view of one this encoder writes again at its next such call
        (memory already touched, not a fresh allocation each time): read it before then.

        Java's ratio estimate made each batch its replay closed, so the build frames those instead
        of compressing them again; each kept batch's encoding and compression was timed as it was
        made.  None for a codec without a native capsule.
        """
        c, _ = _codec(codec, level)
        if c.id == 0:
            # Uncompressed batches have nothing kept to frame: they are written, timed, straight into
            # one buffer, with no object per batch.
            cuts = np.ascontiguousarray(starts, dtype=np.int64)
            cols = self._columns(self.n, self.key, self.value, self.hdrs, self.ts, 0, False)
            t0 = time.thread_time_ns()
            self._scratch, size, count = encode_columnar(*cols, direct=_PLAIN_HEADER, cuts=cuts, joined=True,
                                                          into=self._scratch)
            seconds = (time.thread_time_ns() - t0) / 1e9
            return memoryview(self._scratch)[:size], count, seconds
        kept = self._kept(codec, level)
        if kept is None:
            return None
        return kept.frame(self._sizer, np.ascontiguousarray(starts, dtype=np.int64), c.id)

    @staticmethod
    def _slice(spec, a: int, b: int):
        return None if spec is None else (spec[0], spec[1] + a, spec[2][a:b + 1], spec[3])

    def batch(self, a: int, b: int, codec: str, level) -> bytes:
        """Records ``a:b`` as one batch."""
        return self._encode(b - a, self._slice(self.key, a, b), self._slice(self.value, a, b),
                            self._slice(self.hdrs, a, b), self.ts[a:b], a, None, codec, level)[0]

    def raw_snappy_bytes(self, starts: np.ndarray) -> int:
        """Stored bytes of :meth:`build`'s snappy batches as librdkafka frames them: each batch's
        records as one raw snappy block (no snappy-java stream header, no 32 KiB chunks)."""
        from kcodec._native.codecs import snappy_compress_raw

        total = 0
        for batch in self.build(starts, "none", None):
            total += RECORD_BATCH_OVERHEAD + len(snappy_compress_raw(memoryview(batch)[RECORD_BATCH_OVERHEAD:]))
        return total

    def build(self, starts: np.ndarray, codec: str, level) -> List[bytes]:
        """One batch per ``starts[i]:starts[i+1]`` (``starts`` from 0 to the record count), in one native call."""
        cuts = np.ascontiguousarray(starts, dtype=np.int64)
        return self._encode(self.n, self.key, self.value, self.hdrs, self.ts, 0, cuts, codec, level)

    def _columns(self, n: int, key, value, hdrs, ts, base_offset: int, compressed: bool) -> tuple:
        # encode_columnar's positional arguments: the batches are cut where told, never by a limit
        return (n, key, value, hdrs, self.hkey, self.hval, ts, None, base_offset, ONE_BATCH, 1.0, compressed)

    def _encode(self, n: int, key, value, hdrs, ts, base_offset: int, cuts, codec: str, level) -> List[bytes]:
        from kcodec.arrow.encode import compressed_batches

        c, lvl = _codec(codec, level)
        cols = self._columns(n, key, value, hdrs, ts, base_offset, c.id != 0)
        if c.id == 0:
            return encode_columnar(*cols, direct=_PLAIN_HEADER, cuts=cuts)
        native = native_of(c)
        if native is None:
            return list(compressed_batches(encode_columnar(*cols, cuts=cuts), c, lvl))
        # from_arrow's batches with its default header fields, every batch in one native call
        return compressed_batch_list(native, encode_columnar(*cols, cuts=cuts), 0 if lvl is None else lvl, c.id,
                                     -1, -1, -1, -1)


def measure_build(encoder: BatchEncoder, starts: np.ndarray, codec: str, level,
                  clock: Optional[Clock] = None, min_seconds: float = MIN_REP_SECONDS) -> Tuple[List[bytes], CpuTime]:
    """The batches of ``starts`` in ``codec``/``level`` and the CPU time of building them
    (repeated to ``min_seconds``; 0 times the one build)."""
    return cpu_time(lambda: encoder.build(starts, codec, level), clock=clock, min_seconds=min_seconds)


def measure_read(batches: Sequence[Union[bytes, memoryview]], clock: Optional[Clock] = None,
                 min_seconds: float = MIN_REP_SECONDS) -> CpuTime:
    """CPU time of what a consumer pays for ``batches``: CRC check, decompression and decoding into Arrow."""
    from kcodec.arrow.decode import to_arrow

    # one buffer (a framed build) is read where it lies
    data = batches[0] if len(batches) == 1 else b"".join(batches)
    return cpu_time(lambda: to_arrow(data, use_threads=False), clock=clock, min_seconds=min_seconds)[1]
