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


def time_cut_count(const double[::1] arrival, const double[::1] closes, int64_t max_records) -> int:
    """Batches of a time-only replay (``kcodec.advise.replay.sender.time_cuts``): each batch takes the
    records arriving before its close time, at most ``max_records`` (0: no limit).

    A record out of order joins the batch its position gives it: a batch ends at the first record
    at which the running maximum of arrivals reaches its close time (as a bisection over that
    maximum finds it), and never before the record after the one that opened it.  A close time
    that is not a number takes every record after it.  The sender's calibration asks this for
    dozens of delays per chunk; a walk from each batch's first record is one pass over the chunk.
    """
    cdef Py_ssize_t n = arrival.shape[0]
    if closes.shape[0] != n:
        raise ValueError("time_cut_count: arrival and closes need one value per record")
    if max_records < 0:
        raise ValueError(f"time_cut_count: max_records must not be negative, got {max_records}")
    if n == 0:
        return 0
    cdef double *most = <double *>malloc(n * sizeof(double))
    if most == NULL:
        raise MemoryError()
    cdef Py_ssize_t a = 0, b, i
    cdef int64_t batches = 0
    cdef double c
    try:
        with nogil:
            most[0] = arrival[0]
            for i in range(1, n):
                # arrivals come from integer timestamps: never NaN
                most[i] = arrival[i] if arrival[i] > most[i - 1] else most[i - 1]
            while a < n:
                c = closes[a]
                if c != c:
                    b = n
                else:
                    b = a + 1
                    while b < n and most[b] < c:
                        b += 1
                if max_records > 0 and b > a + max_records:
                    b = a + max_records
                a = b
                batches += 1
    finally:
        free(most)
    return batches


def replay_cuts(const int64_t[::1] cum, const int64_t[::1] next_size, const int64_t[::1] upper,
                const double[::1] arrival, const double[::1] closes, int64_t batch_size, int64_t overhead,
                bint estimated, bint learns, int64_t max_records, double estimate, object close):
    """(starts, estimate): the cuts of ``form_batches`` and the ratio estimate after the last batch.

    ``cum`` is the running sum of record sizes from 0 (n + 1 values); ``next_size`` what each
    record adds to the fit test; ``arrival``/``closes`` are empty when linger does not apply.
    ``close(a, b)``, when not None, is called as each batch closes and returns its ratio, which
    updates the estimate when ``learns``.
    """
    # A BatchRatios is asked without a Python call per batch: the replay asks tens of thousands of them.
    cdef BatchRatios ratios = close if isinstance(close, BatchRatios) else None
    if ratios is not None:
        ratios.sizer.begin(ratios.bodies)
    try:
        return _replay_cuts(cum, next_size, upper, arrival, closes, batch_size, overhead, estimated, learns,
                            max_records, estimate, close, ratios)
    finally:
        if ratios is not None:
            ratios.sizer.end()


cdef tuple _replay_cuts(const int64_t[::1] cum, const int64_t[::1] next_size, const int64_t[::1] upper,
                        const double[::1] arrival, const double[::1] closes, int64_t batch_size, int64_t overhead,
                        bint estimated, bint learns, int64_t max_records, double estimate, object close,
                        BatchRatios ratios):
    cdef Py_ssize_t n = next_size.shape[0]
    cdef double observed
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
        if ratios is not None:
            observed = ratios.ratio(a, b)
            if learns:
                est = _update_estimate(<float>est, <float>observed)
        elif close is not None:
            ratio = close(a, b)
            if learns:
                est = _update_estimate(<float>est, <float><double>ratio)
        a = b
    starts[count] = n
    return out[:count + 1], est


cdef class BatchBodies


cdef class BatchSizer:
    """Records ``a:b`` of Arrow columns encoded and compressed as one v2 batch's records region, into
    a :class:`BatchBodies` (``keep_body``).

    The replay asks this of every batch it closes, to learn Java's ratio.  The columns are those
    of ``encode_columnar``; records are numbered from 0 within the batch, as ``encode_columnar``
    numbers a batch built from offset ``a``.
    """
    cdef list keep
    cdef _Col ck, cv, chl, chk, chv
    cdef bint has_key, has_h
    cdef const int64_t *ts
    cdef Py_ssize_t n
    cdef int32_t *bodies
    cdef uint8_t *records
    cdef Py_ssize_t records_cap
    # A thread CPU clock reading costs a system call (about half a microsecond, a third of a small
    # lz4 batch), so each kept batch is timed on the monotonic clock (no system call) and the calls
    # that make batches read the thread CPU clock once each: at the end of such a call its batches'
    # times are scaled by the call's CPU time over its wall time.
    cdef int64_t cpu0, wall0
    cdef BatchBodies group
    cdef Py_ssize_t group_first

    def __cinit__(self, Py_ssize_t n, key, value, hdr_list, hkey, hval, timestamps):
        cdef const int64_t[::1] ts = timestamps
        if ts.shape[0] != n:
            raise ValueError("BatchSizer: one timestamp per record")
        self.keep = [timestamps]
        self.n = n
        memset(&self.ck, 0, sizeof(_Col))
        memset(&self.chl, 0, sizeof(_Col))
        memset(&self.chk, 0, sizeof(_Col))
        memset(&self.chv, 0, sizeof(_Col))
        self.has_key = key is not None
        self.has_h = hdr_list is not None
        if self.has_key:
            _col_from(key, &self.ck, self.keep)
        _col_from(value, &self.cv, self.keep)
        if self.has_h:
            _col_from(hdr_list, &self.chl, self.keep)
            _col_from(hkey, &self.chk, self.keep)
            _col_from(hval, &self.chv, self.keep)
        self.ts = &ts[0] if n else NULL
        self.bodies = <int32_t *>malloc(max(n, 1) * sizeof(int32_t))
        if self.bodies == NULL:
            raise MemoryError()

    def __dealloc__(self):
        free(self.bodies)
        free(self.records)

    cdef int _grow(self, uint8_t **buf, Py_ssize_t *cap, Py_ssize_t want) except -1:
        cdef uint8_t *p
        if want <= cap[0]:
            return 0
        want = max(want, 2 * cap[0], 4096)
        p = <uint8_t *>realloc(buf[0], want)
        if p == NULL:
            raise MemoryError()
        buf[0] = p
        cap[0] = want
        return 0

    cdef int64_t _encode(self, Py_ssize_t a, Py_ssize_t b) except -1:
        # records a:b's region into self.records: its length
        if not (0 <= a < b <= self.n):
            raise ValueError(f"BatchSizer: records {a}:{b} of {self.n}")
        cdef Py_ssize_t i, j, h0, h1
        cdef int32_t kl, vl, hkl, hc
        cdef int64_t hs, body, total = 0
        cdef int64_t first_ts = self.ts[a]
        cdef Py_ssize_t bad = -1
        with nogil:
            for i in range(a, b):
                kl = kc_col_len(&self.ck, i) if self.has_key else -1
                vl = kc_col_len(&self.cv, i)
                hs = 0
                hc = 0
                if self.has_h and kc_bit_valid(self.chl.valid, self.chl.voff, i):
                    h0 = kc_off(&self.chl, i)
                    h1 = kc_off(&self.chl, i + 1)
                    hc = <int32_t>(h1 - h0)
                    for j in range(h0, h1):
                        hkl = kc_col_len(&self.chk, j)
                        if hkl < 0:
                            bad = i
                            break
                        hs += kc_header_size(hkl, kc_col_len(&self.chv, j))
                if bad >= 0:
                    break
                body = kc_record_body_size(self.ts[i] - first_ts, <int32_t>(i - a), kl, vl, hc, hs)
                self.bodies[i] = <int32_t>body
                total += kc_varint_size(<int32_t>body) + body
        if bad >= 0:
            raise RecordBuilderError(f"row {bad}: header keys must not be null")
        self._grow(&self.records, &self.records_cap, total)
        with nogil:
            kc_encode_rows(self.records, a, b, self.bodies, &self.ck, self.has_key, &self.cv, &self.chl,
                           self.has_h, &self.chk, &self.chv, self.ts, first_ts, NULL, 0, a)
        return total

    cdef void begin(self, BatchBodies into) noexcept:
        """A call that may make batches into ``into`` starts: the clocks are read."""
        self.group, self.group_first = into, into.count
        self.cpu0, self.wall0 = _thread_ns(), _wall_ns()

    cdef void end(self) noexcept:
        """The call ends: the batches it made are given their share of its thread CPU time."""
        cdef BatchBodies g = self.group
        cdef int64_t cpu = _thread_ns() - self.cpu0, wall = _wall_ns() - self.wall0
        cdef double scale = <double>cpu / <double>wall if wall > 0 else 1.0
        cdef Py_ssize_t i
        if g is None:
            return
        if scale > 1.0:   # CPU time never exceeds this thread's wall time; the clocks' granularity can
            scale = 1.0
        for i in range(self.group_first, g.count):
            g.v[i].cost_ns = <int64_t>(<double>g.v[i].cost_ns * scale)
        self.group = None

    cdef Py_ssize_t keep_body(self, Py_ssize_t a, Py_ssize_t b, BatchBodies into) except -1:
        """Records ``a:b`` compressed into ``into``, timed: the index of its body there.

        Its time is wall time until the call that asked for it ends (``end``)."""
        cdef int64_t total, bound, written, t0 = _wall_ns()
        cdef char err[256]
        err[0] = 0
        total = self._encode(a, b)
        with nogil:
            bound = into.codec.api.compress_bound(into.codec.api.state, total, into.level, 2)
        if bound < 0:
            raise into.codec._error(bound, err, True)
        into._room(bound)
        with nogil:
            written = into.codec.call_compress(self.records, total, into.arena + into.used, bound, into.level, 2,
                                               err, sizeof(err))
        if written < 0 or written > bound:
            raise into.codec._error(written if written < 0 else KCODEC_CODEC_DST_TOO_SMALL, err, True)
        return into._add(a, b, written, _wall_ns() - t0)


cdef inline int64_t _wall_ns() noexcept nogil:
    cdef timespec t
    clock_gettime(CLOCK_MONOTONIC, &t)
    return <int64_t>t.tv_sec * 1000000000 + t.tv_nsec


cdef inline int64_t _thread_ns() noexcept nogil:
    # this thread's CPU time: what a build costs, whatever else the machine runs
    cdef timespec t
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
    return <int64_t>t.tv_sec * 1000000000 + t.tv_nsec


cdef struct _Body:
    int64_t off       # in the arena
    int64_t len       # of the compressed records region
    int64_t cost_ns   # thread CPU time of encoding and compressing it


cdef class BatchBodies:
    """The compressed records regions of the batches one native codec and level made of a chunk's records.

    Java's ratio estimate needs each batch compressed as it closes, and the build needs the same
    batches compressed: kept here, each batch is encoded and compressed once, and the build frames
    what the replay made.  Each body keeps the thread CPU time its encoding and compression took,
    so a build from kept bodies costs what building them would, measured when they were made.
    """
    cdef readonly NativeCodec codec
    cdef readonly int level
    cdef readonly int64_t stride   # records + 1: a range a:b is keyed a * stride + b
    cdef dict index
    cdef uint8_t *arena
    cdef Py_ssize_t used, cap
    cdef _Body *v
    cdef Py_ssize_t count, vcap

    def __cinit__(self, NativeCodec codec, int level, int64_t records):
        self.codec, self.level, self.stride = codec, level, records + 1
        self.index = {}

    def __dealloc__(self):
        free(self.arena)
        free(self.v)

    def __len__(self) -> int:
        return self.count

    @property
    def nbytes(self) -> int:
        """Bytes the kept bodies take."""
        return self.used

    @property
    def cost_seconds(self) -> float:
        """CPU seconds of making every kept body, as each was timed."""
        cdef int64_t total = 0
        cdef Py_ssize_t i
        for i in range(self.count):
            total += self.v[i].cost_ns
        return total * 1e-9

    cdef int _room(self, int64_t want) except -1:
        cdef uint8_t *p
        cdef Py_ssize_t cap
        if self.used + want <= self.cap:
            return 0
        cap = max(self.used + want, 2 * self.cap, 65536)
        p = <uint8_t *>realloc(self.arena, cap)
        if p == NULL:
            raise MemoryError()
        self.arena, self.cap = p, cap
        return 0

    cdef Py_ssize_t _add(self, int64_t a, int64_t b, int64_t length, int64_t cost_ns) except -1:
        cdef _Body *p
        cdef Py_ssize_t vcap
        if self.count == self.vcap:
            vcap = max(2 * self.vcap, 1024)
            p = <_Body *>realloc(self.v, vcap * sizeof(_Body))
            if p == NULL:
                raise MemoryError()
            self.v, self.vcap = p, vcap
        self.v[self.count].off = self.used
        self.v[self.count].len = length
        self.v[self.count].cost_ns = cost_ns
        self.used += length
        self.index[a * self.stride + b] = self.count
        self.count += 1
        return self.count - 1

    cdef Py_ssize_t body(self, BatchSizer sizer, int64_t a, int64_t b) except -1:
        """The index of records ``a:b``'s body, made now if no replay made it."""
        got = self.index.get(a * self.stride + b)
        return sizer.keep_body(a, b, self) if got is None else <Py_ssize_t>got

    def batch_size(self, BatchSizer sizer, Py_ssize_t a, Py_ssize_t b) -> int:
        """Bytes of records ``a:b`` as one batch (``BatchSizer.batch_size``), its body kept."""
        if not (0 <= a < b < self.stride):
            raise ValueError(f"BatchBodies: records {a}:{b} of {self.stride - 1}")
        if sizer.n != self.stride - 1:
            raise ValueError("BatchBodies: the sizer's records are not the bodies' records")
        sizer.begin(self)
        try:
            return KC_BATCH_OVERHEAD + self.v[self.body(sizer, a, b)].len
        finally:
            sizer.end()

    def frame(self, BatchSizer sizer, const int64_t[::1] starts, int16_t attributes):
        """(batches, count, CPU seconds): one v2 batch per ``starts[i]:starts[i+1]``, framed from the kept
        bodies one after another in one ``bytes``.

        The batches are ``compressed_batch_list``'s of ``encode_columnar`` with these cuts, byte for
        byte.  The CPU seconds are the bodies' encoding and compression, each timed when it was
        made, and this call's framing.
        """
        cdef Py_ssize_t nb = starts.shape[0] - 1, k, first
        cdef int64_t a, b, i, max_ts, t0, made = 0, used = 0, total = 0
        cdef uint8_t *q
        if sizer.n != self.stride - 1:
            raise ValueError("BatchBodies: the sizer's records are not the bodies' records")
        if nb < 0 or (nb > 0 and (starts[0] != 0 or starts[nb] != self.stride - 1)):
            raise ValueError("BatchBodies.frame: starts run from 0 to the record count")
        idx_arr = np.empty(max(nb, 1), dtype=np.intp)
        cdef Py_ssize_t[::1] idx = idx_arr
        sizer.begin(self)
        first = self.count
        try:
            t0 = sizer.cpu0
            for k in range(nb):
                a, b = starts[k], starts[k + 1]
                if not (a < b):
                    raise ValueError("BatchBodies.frame: starts must increase")
                idx[k] = self.body(sizer, a, b)
                total += KC_BATCH_OVERHEAD + self.v[idx[k]].len
        finally:
            sizer.end()
        for k in range(first, self.count):
            made += self.v[k].cost_ns
        cdef bytes out = PyBytes_FromStringAndSize(NULL, total)
        q = <uint8_t *>PyBytes_AS_STRING(out)
        with nogil:
            for k in range(nb):
                a, b = starts[k], starts[k + 1]
                used += self.v[idx[k]].cost_ns
                # MemoryRecordsBuilder's maxTimestamp starts at NO_TIMESTAMP (-1): records all before
                # 1970 leave it there, as encode_columnar does
                max_ts = -1
                for i in range(a, b):
                    if sizer.ts[i] > max_ts:
                        max_ts = sizer.ts[i]
                memcpy(q + KC_BATCH_OVERHEAD, self.arena + self.v[idx[k]].off, self.v[idx[k]].len)
                _write_batch(q, self.v[idx[k]].len, a, <int32_t>(b - 1 - a), sizer.ts[a], max_ts, <int32_t>(b - a),
                             attributes, -1, -1, -1, -1)
                q += KC_BATCH_OVERHEAD + self.v[idx[k]].len
        # the bodies made here are timed in their own costs; the rest of this call is framing
        return out, nb, (used + (_thread_ns() - t0 - made)) * 1e-9


cdef class BatchRatios:
    """Java's observed ratio of records ``a:b`` built as one batch by one native codec at one level.

    ``(batch bytes - overhead) / (ends[b] - ends[a])``, each range's batch made once by ``sizer``
    and kept in ``bodies`` (shared with whoever else sizes or builds ranges of this codec and
    level).  Callable as ``close(a, b)``; ``replay_cuts`` asks it without a Python call, since
    warming up and replaying one chunk asks tens of thousands.
    """
    cdef BatchSizer sizer
    cdef BatchBodies bodies
    cdef const int64_t[::1] ends
    cdef int64_t stride
    cdef int64_t overhead

    def __cinit__(self, BatchSizer sizer, BatchBodies bodies, const int64_t[::1] ends, int64_t overhead):
        if ends.shape[0] < 1:
            raise ValueError("BatchRatios: ends start at 0, one more than the records")
        if bodies.stride != ends.shape[0] or sizer.n != ends.shape[0] - 1:
            raise ValueError("BatchRatios: the sizer's, the bodies' and the ends' records differ")
        self.sizer, self.bodies, self.ends = sizer, bodies, ends
        self.stride = ends.shape[0]
        self.overhead = overhead

    cdef double ratio(self, int64_t a, int64_t b) except? -1.0:
        if not (0 <= a < b < self.stride):
            raise ValueError(f"BatchRatios: records {a}:{b} of {self.stride - 1}")
        cdef int64_t size = KC_BATCH_OVERHEAD + self.bodies.v[self.bodies.body(self.sizer, a, b)].len
        cdef int64_t raw = self.ends[b] - self.ends[a]
        # the Python reading's true division of two exact integers: the same double
        return <double>(size - self.overhead) / <double>(raw if raw > 1 else 1)

    def __call__(self, int64_t a, int64_t b) -> float:
        self.sizer.begin(self.bodies)
        try:
            return self.ratio(a, b)
        finally:
            self.sizer.end()
