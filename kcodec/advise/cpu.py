"""The CPU a setting costs in the bill: a model of kcodec's builder and reader, the same on every run.

Why a model and not this run's measurement: the bill must be identical to the
cent whatever else the machine is doing, and a measured CPU time is not.  On a
shared 2-core machine the thread CPU time of one build moved by 15-45% (median
of 7 runs) and by 10-17% (their minimum) with busy processes beside it, and
rounding a measurement does not help: a value near a rounding step lands on
either side of it from run to run.  So the bill and the rule take the CPU of
each setting from a model of the very builder and reader advise measures
(:mod:`kcodec.advise.measure`), applied to what the data and the replay
determine, per codec and level, once for building and once for reading::

    seconds = a x payload + b x stored + c x batches + d x records + e x payload x ln(payload / stored)

``payload`` is the key, value and header bytes, ``stored`` the batches' bytes,
``batches`` and ``records`` their counts; the per-batch and per-record terms
make tiny batches dear, and the last term lets a codec's work per byte follow
how compressible the data is.  Every coefficient is non-negative (:func:`fit`),
so no input makes a modelled time negative, and no modelled time is below
what ``none`` costs for the same batches, since copying is the least any
codec does.

The coefficients (:data:`MODEL`) were fitted by ``python bench/advise_measure.py
--fit-only`` (non-negative least squares of relative errors, :func:`fit`) on the generated
sample's three topics (JSON events, log lines, random binary payloads) at 1 to
1000 records per batch, from thread CPU time, on :data:`REFERENCE`.  Their error
over those measurements is :data:`MODEL_ERROR` (relative, 90th percentile):
every CPU figure of the bill carries it, and two settings whose costs differ by
less than their combined uncertainty are treated as equal
(:mod:`kcodec.advise.recommend`).  The levels outside the default grid (gzip's 2
to 5, 7 and 8, zstd's 10 to 19) were fitted apart, in one run of their own on the
same sample at half its records, and carry that run's error (:data:`LEVEL_ERROR`),
so that ``--codecs zstd:1-19,gzip:1-9`` is billed, and raced, from the model.
The report prints this run's measured speeds beside the model's, and
``--cpu-cost measured`` bills those instead (then the dollars move with the
machine's load).

A codec or level the model does not cover (a plugin; a level of snappy or lz4,
or zstd's negative ones) is billed from this run's measurement, and the advice
says so.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Dict, Optional, Sequence, Tuple

import numpy as np

__all__ = ["MODEL", "MODEL_ERROR", "LEVEL_ERROR", "REFERENCE", "THROUGHPUT_NOTES", "FEATURES", "CpuCost", "cpu_cost",
           "modelled", "fastest_mbps", "features", "fit"]

REFERENCE = ("one vCPU of a 2-vCPU x86-64 KVM machine shared with other jobs (load average 6-8), "
             "kcodec 0.1's native builder and reader, 2026-11-26")

#: What the MB/s of the report's tables are, one short line each.
THROUGHPUT_NOTES = ("MB/s: key, value and header bytes per CPU second of one core",
                    f"the bill's: kcodec's CPU model, fitted on {REFERENCE}",
                    "beside it: this run's measured thread CPU time")

FEATURES = ("payload bytes", "stored bytes", "batches", "records", "payload x ln(payload / stored)")

Coefficients = Tuple[float, float, float, float, float]  # ns per FEATURES unit

#: (codec, level as given in --codecs, None for the codec's default) -> (build, read) coefficients.
MODEL: Dict[Tuple[str, Optional[int]], Tuple[Coefficients, Coefficients]] = {
    ('none', None): ((0.2296, 0, 254.3, 26.98, 0), (0, 0.2448, 298.2, 31.8, 1.014)),  # largest error 52%
    ('gzip', None): ((0, 34.47, 9845, 529.3, 6.776), (1.855, 2.692, 695.5, 275.6, 0)),  # largest error 75%
    ('snappy', None): ((1.118, 0, 4902, 167.3, 0.221), (0.2206, 0, 455.3, 130.1, 0.4987)),  # largest error 26%
    ('lz4', None): ((1.291, 0, 2775, 50.52, 0.627), (0.2055, 0, 462.2, 42.58, 0.4391)),  # largest error 47%
    ('zstd', None): ((4.08, 8.435, 1.119e+04, 188.2, 0), (0, 0, 1515, 198.9, 0.505)),  # largest error 69%
    ('gzip', 1): ((0, 28.51, 1.546e+04, 0, 1.732), (3.348, 1.277, 769.7, 53.2, 0)),  # largest error 76%
    ('gzip', 6): ((6.065, 29.18, 9348, 619.6, 1.883), (1.622, 3.152, 486, 181.2, 0)),  # largest error 81%
    ('gzip', 9): ((0, 35.65, 8029, 0, 11.83), (1.495, 2.084, 0, 332.3, 0)),  # largest error 82%
    ('zstd', 1): ((3.348, 1.777, 7249, 0, 0), (0.1629, 0, 669.6, 184.5, 0.3361)),  # largest error 81%
    ('zstd', 2): ((0, 6.263, 8775, 0, 1.414), (0.3737, 0, 1371, 73.39, 0.4316)),  # largest error 64%
    ('zstd', 3): ((0, 11.51, 7346, 149.5, 0.5592), (0.2051, 0, 1329, 132, 0.2097)),  # largest error 58%
    ('zstd', 4): ((0, 19.88, 6097, 147.4, 0), (0.2885, 0, 1369, 109.7, 0.2248)),  # largest error 62%
    ('zstd', 5): ((10.05, 8.539, 8999, 552, 0), (0.1118, 0, 1366, 110.8, 0.3603)),  # largest error 63%
    ('zstd', 6): ((17.78, 2.373, 8508, 0, 0), (0.2712, 0, 721.1, 63.57, 0.3892)),  # largest error 81%
    ('zstd', 7): ((13.63, 13, 5862, 1134, 0), (0.1264, 0, 648.6, 171.9, 0.1662)),  # largest error 76%
    ('zstd', 8): ((20.82, 0, 1.065e+04, 203.3, 0.3208), (0, 0, 1050, 118.8, 0.2382)),  # largest error 71%
    ('zstd', 9): ((21.39, 7.367, 7272, 272.9, 0), (0.05694, 0, 708.5, 112.9, 0.3539)),  # largest error 80%
    # fitted apart: python bench/advise_measure.py --fit-only --records 30000 --codecs "gzip:2-5,7,8,zstd:10-19"
    ('gzip', 2): ((3.541, 19.15, 1.338e+04, 200.6, 0), (1.925, 1.729, 0, 286.7, 0)),  # largest error 92%
    ('gzip', 3): ((5.387, 17.28, 1.363e+04, 167, 0), (2.166, 1.782, 0, 239.3, 0)),  # largest error 93%
    ('gzip', 4): ((4.737, 20.8, 1.196e+04, 660.6, 0), (1.242, 2.374, 0, 404.7, 0)),  # largest error 94%
    ('gzip', 5): ((3.894, 27.49, 1.301e+04, 82.14, 3.667), (2.058, 2.061, 0, 294, 0)),  # largest error 93%
    ('gzip', 7): ((0, 29.67, 1.313e+04, 0, 8.668), (1.827, 2.466, 0, 255.4, 0)),  # largest error 95%
    ('gzip', 8): ((0, 25.9, 1.575e+04, 8.6, 13.34), (2.519, 1.446, 0, 354.7, 0)),  # largest error 87%
    ('zstd', 10): ((26.73, 5.777, 1.044e+04, 738.2, 0), (0, 0, 537, 165.9, 0.4355)),  # largest error 86%
    ('zstd', 11): ((20.79, 31.36, 3737, 1850, 0), (0, 0, 553.2, 179.2, 0.2845)),  # largest error 80%
    ('zstd', 12): ((15.81, 51.41, 7269, 412.3, 9.37), (0, 0, 659.1, 176.2, 0.4414)),  # largest error 79%
    ('zstd', 13): ((33.14, 47.37, 0, 0, 3.122), (0, 0, 834.9, 159.7, 0.3183)),  # largest error 79%
    ('zstd', 14): ((0, 75.21, 0, 923.1, 16.65), (0, 0, 562, 152.7, 0.397)),  # largest error 81%
    ('zstd', 15): ((0, 78.26, 0, 0, 17.61), (0.1332, 0, 531.7, 175.7, 0.1159)),  # largest error 80%
    ('zstd', 16): ((0, 86.8, 0, 0, 88.26), (0, 0, 642.2, 185.8, 0.2823)),  # largest error 79%
    ('zstd', 17): ((0, 77.05, 0, 0, 84.07), (0.04878, 0, 635.7, 145.7, 0.261)),  # largest error 77%
    ('zstd', 18): ((12.66, 114.3, 3218, 0, 152.4), (0, 0, 534.8, 186.9, 0.2817)),  # largest error 83%
    ('zstd', 19): ((0, 176.6, 5900, 951.1, 356.9), (0.1337, 0, 684.9, 155.7, 0.2846)),  # largest error 76%
}

#: Relative uncertainty of a modelled CPU time: the fit's 90th percentile error over its measurements (median 12%).
MODEL_ERROR = 0.49

#: The same for the levels fitted apart (their run's 90th percentile, median 17%): a wider margin than the default
#: grid's, not a refit of the default grid's levels, whose answers stay as they were.
LEVEL_ERROR: Dict[Tuple[str, Optional[int]], float] = {
    **{("gzip", level): 0.60 for level in (2, 3, 4, 5, 7, 8)},
    **{("zstd", level): 0.60 for level in range(10, 20)},
}


@dataclass(frozen=True)
class CpuCost:
    """CPU seconds to build and to read some batches, and where the figures come from."""

    compress_seconds: float
    read_seconds: float
    source: str  # "model" or "measured"
    error: float = MODEL_ERROR  # the model's relative error for this codec and level

    @property
    def uncertainty(self) -> Optional[float]:
        """Relative uncertainty of both figures; None for a measurement (it moves with load)."""
        return self.error if self.source == "model" else None


def features(payload: float, stored: float, batches: float, records: float) -> np.ndarray:
    """The model's inputs (:data:`FEATURES`) for batches holding these bytes and counts."""
    payload, stored = float(payload), float(max(stored, 1))
    spread = payload * math.log(payload / stored) if payload > 0 else 0.0
    return np.array([payload, stored, float(batches), float(records), spread])


def fit(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Coefficients (seconds per feature unit) for ``x @ c ~ y``, least squares of relative errors, ``c >= 0``.

    Every subset of the features is tried and the best solution without a
    negative coefficient kept: a negative one would fit the reference data by
    cancelling another and then predict less than nothing for data unlike it.
    """
    from itertools import combinations

    x, y = np.asarray(x, float), np.asarray(y, float)
    w = 1 / y
    best, best_err = np.zeros(x.shape[1]), float("inf")
    for k in range(1, x.shape[1] + 1):
        for cols in combinations(range(x.shape[1]), k):
            sub, *_ = np.linalg.lstsq(x[:, cols] * w[:, None], y * w, rcond=None)
            if np.any(sub < 0):
                continue
            c = np.zeros(x.shape[1])
            c[list(cols)] = sub
            err = float(np.sum((x @ c * w - 1) ** 2))
            if err < best_err:
                best, best_err = c, err
    return best


def modelled(codec: str, level: Optional[int]) -> bool:
    """Whether :data:`MODEL` covers ``codec`` at ``level``."""
    return (codec, level) in MODEL


def _fewest_ns(coef: Sequence[float]) -> float:
    """The fewest ns per payload byte ``coef`` gives any batches: with ``r`` = payload / stored, a byte costs
    ``c0 + c1 / r + c4 ln r`` plus its share of the batch and record terms, which are never negative."""
    c0, c1, _, _, c4 = coef
    if c4 > 0:
        # lowest at r = c1 / c4; without a stored-bytes term it falls without bound as r -> 0
        return c0 + c4 + c4 * math.log(c1 / c4) if c1 > 0 else -math.inf
    return c0  # c1 / r -> 0 as r grows


def fastest_mbps(codec: str, level: Optional[int]) -> Optional[Tuple[float, float]]:
    """The most MB/s (payload per CPU second) the model gives ``codec``/``level`` building and reading, on
    any data at any batch size (inf where it sets no bound); None where the model does not cover it.

    A setting whose most is below the rule's limit is outside the rule whatever a sample holds, so the race
    can leave it out before measuring it.
    """
    coef = MODEL.get((codec, level))
    if coef is None:
        return None
    out = []
    for side, floor in zip(coef, MODEL[("none", None)]):
        # cpu_cost bills the larger of the codec's and none's: either one's fewest is a floor of it
        ns = max(_fewest_ns(side), _fewest_ns(floor))
        out.append(1e3 / ns if ns > 0 else math.inf)
    return out[0], out[1]


def _seconds(coef: Sequence[float], x: np.ndarray) -> float:
    return float(np.dot(np.asarray(coef) * 1e-9, x))


def cpu_cost(codec: str, level: Optional[int], payload_bytes: int, stored_bytes: int, batches: int, records: int,
             measured_compress: float, measured_read: float, measured: bool = False) -> CpuCost:
    """The CPU of building and reading ``batches`` of ``codec``/``level`` holding the given bytes.

    ``measured=True`` (``--cpu-cost measured``), or a codec the model does not
    cover, gives this run's measurement instead.
    """
    coef = MODEL.get((codec, level))
    if coef is None or measured:
        return CpuCost(measured_compress, measured_read, "measured")
    x = features(payload_bytes, stored_bytes, batches, records)
    floor_c, floor_r = MODEL[("none", None)]
    build = max(_seconds(coef[0], x), _seconds(floor_c, x))
    read = max(_seconds(coef[1], x), _seconds(floor_r, x))
    return CpuCost(build, read, "model", LEVEL_ERROR.get((codec, level), MODEL_ERROR))
