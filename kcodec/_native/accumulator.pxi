# The producer's batch cuts (RecordAccumulator), replayed one batch per step in C.
#
# kcodec.advise.replay.accumulator.form_batches prepares the columns and the client's rules; this
# loop only decides where each batch ends.  Its arithmetic is the Python reading's, step for step:
# the fit test in double precision, Java's ratio estimate in float (CompressionRatioEstimator).
# x86-64 without FMA flags evaluates both as written, so the cuts are the same bits.

from libc.math cimport floor


cdef inline float _update_estimate(float est, float obs) noexcept nogil:
    # CompressionRatioEstimator.updateEstimation: worse jumps up by at least the deteriorate step,
    # better creeps down by the improving step but never below what was seen.
    cdef float step
    if obs > est:
        step = est + <float>0.05
        return step if step >= obs else obs
    if obs < est:
        step = est - <float>0.005
        return step if step >= obs else obs
    return est


def update_estimate_f32(double estimate, double observed) -> float:
    """Java's ratio estimate after a batch of ratio ``observed`` closed (float arithmetic)."""
    return _update_estimate(<float>estimate, <float>observed)


cdef inline int64_t _first_above(const int64_t *cum, int64_t lo, int64_t hi, int64_t x) noexcept nogil:
    # bisect_right over cum[lo:hi]: the first index whose value exceeds x
    cdef int64_t mid
    while lo < hi:
        mid = lo + (hi - lo) // 2
        if cum[mid] > x:
            hi = mid
        else:
            lo = mid + 1
    return lo


def replay_cuts(const int64_t[::1] cum, const int64_t[::1] next_size, const int64_t[::1] upper,
                const double[::1] arrival, const double[::1] closes, int64_t batch_size, int64_t overhead,
                bint estimated, bint learns, int64_t max_records, double estimate, object close):
    """(starts, estimate): the cuts of ``form_batches`` and the ratio estimate after the last batch.

    ``cum`` is the running sum of record sizes from 0 (n + 1 values); ``next_size`` what each
    record adds to the fit test; ``arrival``/``closes`` are empty when linger does not apply.
    ``close(a, b)``, when not None, is called as each batch closes and returns its ratio, which
    updates the estimate when ``learns``.
    """
    cdef Py_ssize_t n = next_size.shape[0]
    if cum.shape[0] != n + 1 or upper.shape[0] != n:
        raise ValueError("replay_cuts: cum needs one value more than the records, upper one per record")
    cdef bint timed = arrival.shape[0] > 0
    if timed and (arrival.shape[0] != n or closes.shape[0] != n):
        raise ValueError("replay_cuts: arrival and closes need one value per record")
    out = np.empty(n + 1, dtype=np.int64)
    cdef int64_t[::1] starts = out
    cdef int64_t a = 0, b, lo, hi, limit, room, base, count = 0
    cdef double factor, close_a, total, q
    cdef double est = estimate  # rounded to float only by an update, as the Python reading does
    while a < n:
        starts[count] = a
        count += 1
        factor = est * 1.05 if learns else 1.0
        limit = batch_size
        if estimated and upper[a] > limit:
            limit = upper[a]
        # past hi even a record of 0 bytes would not fit
        q = floor(<double>(limit - overhead) / factor)
        # an estimate near 0 would make room past any log; NaN fails both tests and is clamped too
        room = <int64_t>q if -4e18 < q < 4e18 else (<int64_t>-4e18 if q <= -4e18 else <int64_t>4e18)
        hi = _first_above(&cum[0], 0, n + 1, cum[a] + room)
        if hi < a + 1:
            hi = a + 1
        if hi > n:
            hi = n
        if hi > a + max_records:
            hi = a + max_records
        b = hi
        base = cum[a]
        close_a = closes[a] if timed else 0.0
        lo = a + 1
        while lo < hi:
            total = <double>overhead + <double>(cum[lo] - base) * factor
            total = total + <double>next_size[lo]
            if total > <double>limit or (timed and not (arrival[lo] < close_a)):
                b = lo
                break
            lo += 1
        if close is not None:
            ratio = close(a, b)
            if learns:
                est = _update_estimate(<float>est, <float><double>ratio)
        a = b
    starts[count] = n
    return out[:count + 1], est
