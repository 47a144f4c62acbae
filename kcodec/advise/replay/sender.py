"""When a producer sends an open batch: ``linger.ms`` after it opened, plus how long the sender takes.

Kafka's ``Sender`` drains a batch once ``RecordAccumulator.ready`` finds it ready: full, or
``linger.ms`` waited.  Java waits on its millisecond clock (``time.milliseconds()`` both stamps the
record and dates the batch), so a batch opened during millisecond ``t`` is ready when the clock
reaches ``t + linger.ms``; librdkafka counts ``linger.ms`` in microseconds from the first message.
Records keep joining until the sender actually takes the batch, which it does a little later: the
*sender delay*.  It has two values.  At ``linger.ms=0`` an append wakes the sender at once, and an
idle sender takes the batch within a small fraction of a millisecond, so most records go alone; a
busy one takes longer and batches fill.  At ``linger.ms`` above 0 the sender sleeps until the linger
timer, and waking from that sleep takes longer (a poll timeout in whole milliseconds).

Timestamps carry milliseconds only.  Within a millisecond the replay spaces the records evenly,
as a steady stream arrives, from an offset of their own: record ``j`` of the ``k`` of the ``r``-th
run of one millisecond arrives at ``t + (j + u_r) / k``, where ``u_r`` is the fractional part of
``(r + 1)`` times the golden ratio's conjugate.  Where in its millisecond a run began is not
recorded; spreading the offsets evenly over [0, 1) makes a sender delay below a millisecond take
in its share of the next millisecond's records, so the calibration below can fit today's batches
instead of jumping between whole steps, and the same timestamps always give the same arrivals.

The delay is calibrated per chunk on today's batches: at today's ``linger.ms`` it is the delay for
which the time-only replay (no size limit) cuts as many batches as the producer did.  Today's
batches calibrate the delay of today's kind (``linger.ms=0`` or above) directly; the other is the
client's idle default plus the same excess over idle, since a sender busy enough to take its
timed batches late is as late with the ones an append hands it.  Calibration only holds where
time, not size, cut today's batches: where even a
zero delay gives fewer batches than today's (batches cut by ``batch.size`` or
``batch.num.messages``), or there is only one batch, the calibration does not apply, the client's
default delays are used, and the result says so.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from kcodec._native.columnar import time_cut_count
from kcodec.advise.replay.client import ClientRules

__all__ = ["arrival_ms", "SenderModel", "Calibration", "time_cuts", "calibrate", "MAX_DELAY_MS"]

MAX_DELAY_MS = 1000.0  # a sender that takes longer than this is not a linger question any more
_GOLDEN = (5 ** 0.5 - 1) / 2  # the golden ratio's conjugate: each run's offset within its millisecond


def arrival_ms(ts: np.ndarray) -> np.ndarray:
    """Each record's arrival in fractional milliseconds, records of one millisecond spaced evenly from
    their run's offset (see the module's note)."""
    ts = np.asarray(ts, dtype=np.int64)
    n = len(ts)
    if n == 0:
        return np.zeros(0, np.float64)
    # Runs of equal timestamps in arrival order (a clock going back starts a new run).
    new = np.empty(n, bool)
    new[0] = True
    np.not_equal(ts[1:], ts[:-1], out=new[1:])
    run_start = np.flatnonzero(new)
    run_len = np.diff(np.append(run_start, n))
    owner = np.repeat(np.arange(len(run_start)), run_len)
    j = np.arange(n) - run_start[owner]
    # Where in its millisecond a run starts is not recorded: each run gets its own offset, spread over
    # [0, 1) by the golden ratio's sequence, so that a sender delay below a millisecond takes in a share
    # of the next millisecond's records in proportion to itself, run after run, on every replay alike.
    phase = np.modf((np.arange(len(run_start)) + 1) * _GOLDEN)[0]
    return ts + (j + phase[owner]) / run_len[owner]


@dataclass(frozen=True)
class SenderModel:
    """When a batch opened by a record is taken by the sender, for one client.

    ``delay_ms`` applies at ``linger.ms`` above 0, ``immediate_delay_ms`` at ``linger.ms=0``
    (None: the client's default).
    """

    client: ClientRules
    delay_ms: float
    immediate_delay_ms: Optional[float] = None

    @classmethod
    def default(cls, client: ClientRules) -> "SenderModel":
        return cls(client, client.default_delay_ms, client.default_immediate_delay_ms)

    def delay_at(self, linger_ms: float) -> float:
        if linger_ms > 0:
            return self.delay_ms
        return self.client.default_immediate_delay_ms if self.immediate_delay_ms is None else self.immediate_delay_ms

    def close_times(self, arrival: np.ndarray, ts: np.ndarray, linger_ms: float) -> np.ndarray:
        """The time a batch opened by each record would be taken (fractional ms)."""
        delay = self.delay_at(linger_ms)
        if self.client.millisecond_clock:
            # RecordAccumulator.ready: waitedTimeMs >= lingerMs on whole milliseconds; at linger 0 the
            # batch is ready at once and the sender takes it after its delay.
            ready = np.maximum(np.asarray(ts, np.float64) + linger_ms, arrival)
        else:
            ready = arrival + linger_ms
        return ready + delay


def time_cuts(arrival: np.ndarray, close: np.ndarray, max_records: Optional[int] = None) -> int:
    """Batches of a time-only replay: each batch takes the records arriving before its close time.

    Arrival is non-decreasing within a producer's records; a record out of order joins the batch
    its position in the sequence gives it (the batch ends where the running maximum of arrivals
    reaches its close).  One native pass (``time_cut_count``): the calibration asks it dozens of
    times per chunk.
    """
    return time_cut_count(np.ascontiguousarray(arrival, dtype=np.float64),
                          np.ascontiguousarray(close, dtype=np.float64), int(max_records or 0))


@dataclass(frozen=True)
class Calibration:
    """How the sender delay was found from today's batches, and how well the replay then fits them."""

    delay_ms: float  #: the calibrated delay (or the default where ``applies`` is False)
    applies: bool
    today_batches: int
    replay_batches: int
    linger_ms: float  #: today's linger.ms, given or inferred
    note: str = ""

    def model(self, client: ClientRules) -> SenderModel:
        """The sender: the calibrated delay for today's kind of linger, and for the other kind the
        client's idle default plus the calibrated delay's excess over its own idle default."""
        if not self.applies:
            return SenderModel.default(client)
        idle_timed, idle_now = client.default_delay_ms, client.default_immediate_delay_ms
        if self.linger_ms > 0:
            return SenderModel(client, self.delay_ms, max(idle_now, self.delay_ms - idle_timed + idle_now))
        return SenderModel(client, max(idle_timed, self.delay_ms - idle_now + idle_timed), self.delay_ms)

    @property
    def error(self) -> float:
        """Replayed records per batch against today's, as a share (0.02 = replay 2% fuller)."""
        return self.today_batches / max(1, self.replay_batches) - 1.0


def calibrate(ts: np.ndarray, today_batches: int, linger_ms: Optional[float], client: ClientRules) -> Calibration:
    """The sender delay that makes a time-only replay at today's ``linger_ms`` cut ``today_batches``.

    ``linger_ms=None`` (logs and clusters do not record it): the window that fits today's batches
    is found with linger 0; a window of a millisecond or more is read as ``linger.ms`` of its whole
    milliseconds plus a delay below one, and fitted again so.
    """
    arrival = arrival_ms(ts)
    n = len(arrival)
    if n == 0 or today_batches <= 1:
        return Calibration(client.default_delay_ms, False, today_batches, today_batches,
                           float(linger_ms or 0), "one batch: nothing to calibrate the sender on")
    if linger_ms is None:
        fit = _fit(arrival, ts, today_batches, 0.0, client)
        if not fit.applies or fit.delay_ms < 1.0:
            return fit
        again = _fit(arrival, ts, today_batches, float(np.floor(fit.delay_ms)), client)
        return again if again.applies else fit
    return _fit(arrival, ts, today_batches, float(linger_ms), client)


def _fit(arrival: np.ndarray, ts: np.ndarray, today_batches: int, linger: float, client: ClientRules) -> Calibration:
    def cuts(delay: float) -> int:
        return time_cuts(arrival, SenderModel(client, delay, delay).close_times(arrival, ts, linger),
                         client.max_records)

    if cuts(0.0) < today_batches:
        d = SenderModel.default(client).delay_at(linger)
        return Calibration(d, False, today_batches, cuts(d), linger,
                           f"today's batches are smaller than linger.ms={linger:g} alone makes them (cut by "
                           f"batch.size or batch.num.messages): sender delay not calibrated, {d:g} ms assumed")
    if cuts(MAX_DELAY_MS) > today_batches:
        return Calibration(MAX_DELAY_MS, True, today_batches, cuts(MAX_DELAY_MS), linger,
                           f"today's batches are larger than a {MAX_DELAY_MS:g} ms sender delay makes them")
    # Fewer cuts with a longer delay: bisect to the shortest delay that is not above today's count,
    # and to the longest that is not below it; timestamps in whole milliseconds leave a range of
    # delays that fit equally, and its middle is taken.
    lo, hi = _bisect(cuts, lambda c: c > today_batches, 0.0, MAX_DELAY_MS)
    shortest = hi if abs(cuts(hi) - today_batches) <= abs(cuts(lo) - today_batches) else lo
    lo2, _ = _bisect(cuts, lambda c: c >= today_batches, shortest, MAX_DELAY_MS)
    middle = (shortest + lo2) / 2
    delay = middle if cuts(middle) == cuts(shortest) else shortest
    return Calibration(delay, True, today_batches, cuts(delay), linger,
                       f"sender delay {delay:.3g} ms at linger.ms={linger:g}")


def _bisect(cuts, above, lo: float, hi: float):
    """The delays around where ``above(cuts(delay))`` turns false (it holds at ``lo``, not at ``hi``)."""
    if not above(cuts(lo)):
        return lo, lo
    while hi - lo > 1e-3:
        mid = (lo + hi) / 2
        if above(cuts(mid)):
            lo = mid
        else:
            hi = mid
    return lo, hi
