# BatchBuilderCore: Kafka's MemoryRecordsBuilder for magic v2 (appending records,
# compressing and sealing the batch).
# Part of kcodec._native.records (included by records.pyx).

_REENTERED = ("the builder was called again from Python code it was running "
              "(a header pair, a buffer export, its codec or its pool)")

cdef enum:
    # An uncompressed batch takes its CRC over values of at least this many bytes as it
    # copies them: each byte is read once, from the cache, not again when the batch is sealed.
    _CRC_WHILE_COPYING = 512
    # Values of _STREAM_VALUE_MIN bytes or more, once the records pass _STREAM_AFTER bytes
    # (more than a core's cache keeps), are written with non-temporal stores: the destination
    # lines are not fetched only to be overwritten.  Shorter values lose more to the lines
    # they share with the record around them than streaming saves.
    _STREAM_AFTER = 262144
    _STREAM_VALUE_MIN = 8192


cdef class BatchBuilderCore(BuilderBuffer):
    """Native state and per-record work of :class:`~kcodec.records.RecordBatchBuilder`.

    The batch grows in the buffer of :class:`BuilderBuffer`.  Per record,
    nothing is allocated unless a header key or value is neither ``str``
    nor ``bytes``.
    """

    def __cinit__(self, *args, **kwargs):
        self._slots.ptr = NULL
        self._slots.len = NULL
        self._slots.cap = 0

    def __dealloc__(self):
        free(self._slots.ptr)
        free(self._slots.len)

    def __init__(self, magic=2, compression=0, level=None, int64_t base_offset=0,
                 timestamp_type=0, log_append_time=None, int64_t producer_id=-1,
                 int16_t producer_epoch=-1, int32_t base_sequence=-1, bint is_transactional=False,
                 bint is_control=False, int32_t partition_leader_epoch=-1, delete_horizon_ms=None,
                 write_limit=None, pool=None, float estimated_compression_ratio=1.0):
        cdef Py_ssize_t initial
        if magic != 2:
            raise RecordBuilderError(f"RecordBatchBuilder writes magic 2, not {magic!r}; "
                                     "kcodec.batch_builder(magic=...) makes a builder for any magic")
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        if self._store != NULL or self._block:  # __init__ called again: start over
            if self._exports:
                raise BufferError("the records are exported (a memoryview of the builder is alive); "
                                  "release it before starting over")
            self._drop_store()
        if _is_none_codec(compression) and level is None:
            self._codec = None
            self._compression = 0
            self.compression_id = 0
            self.level = None
        else:
            codec = get_codec(compression)
            self._codec = codec
            self._compression = compression
            self.compression_id = codec.id
            self.level = codec.resolve_level(level)
            codec.check_magic(2)
        tt = timestamp_type if type(timestamp_type) is int else int(timestamp_type)
        if tt == 1:
            if log_append_time is None:
                raise RecordBuilderError("a LOG_APPEND_TIME batch needs log_append_time")
            self._lat = True
            self._log_append_time = log_append_time
        elif tt == 0:
            self._lat = False
            self._log_append_time = 0
        else:
            raise RecordBuilderError("magic v2 batches need CREATE_TIME or LOG_APPEND_TIME")
        if not estimated_compression_ratio > 0:
            raise RecordBuilderError(
                f"estimated_compression_ratio must be positive, not {estimated_compression_ratio!r}")
        self._ratio = estimated_compression_ratio
        self.base_offset = base_offset
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.base_sequence = base_sequence
        self.is_transactional = is_transactional
        self.is_control = is_control
        self.partition_leader_epoch = partition_leader_epoch
        if delete_horizon_ms is not None and delete_horizon_ms >= 0:
            self._has_dh = True
            self._delete_horizon = delete_horizon_ms
        else:
            self._has_dh = False
            self._delete_horizon = 0
        if write_limit is None:
            self._write_limit = -1
            initial = 16384
        else:
            if write_limit < 0:
                raise RecordBuilderError(f"write_limit must be non-negative, got {write_limit}")
            self._write_limit = min(write_limit, INT32_MAX_)
            initial = min(max(<Py_ssize_t>self._write_limit, 256), 1 << 20)
        self.pool = pool
        self._size = 0
        self._crc = 0
        self._crc_done = 0
        self._count = 0
        self._exports = 0
        self._last_offset = _NO_LAST
        self._first_ts = NO_TIMESTAMP
        self._max_ts = NO_TIMESTAMP
        self._has_records = False
        self._built = False
        self._has_override = False
        self._last_override = 0
        self.compression_ratio = None
        # The records of a compressed batch go to the codec, never to the caller: without a
        # pool they are written in a reused block (see builder_cache()).
        self._use_block = self.compression_id != 0
        self._new_store(KC_BATCH_OVERHEAD + initial)

    # -- state -----------------------------------------------------------------
    @property
    def codec(self):
        """The codec that compresses this batch (looked up on first use for NONE)."""
        if self._codec is None:
            self._codec = get_codec(self._compression)
        return self._codec

    @property
    def timestamp_type(self):
        return TimestampType.LOG_APPEND_TIME if self._lat else TimestampType.CREATE_TIME

    @property
    def log_append_time(self):
        return self._log_append_time if self._lat else None

    @property
    def delete_horizon_ms(self):
        return self._delete_horizon if self._has_dh else None

    @property
    def write_limit(self):
        return None if self._write_limit < 0 else self._write_limit

    @property
    def estimated_compression_ratio(self) -> float:
        return self._ratio

    @property
    def record_count(self) -> int:
        return self._count

    @property
    def uncompressed_size(self) -> int:
        """Bytes of the batch if written uncompressed."""
        return KC_BATCH_OVERHEAD + self._size

    @property
    def estimated_size(self) -> int:
        """Kafka's ``estimatedBytesWritten()`` (see the class documentation)."""
        return self._estimated()

    @property
    def next_offset(self) -> int:
        return self._last_offset + 1 if self._has_records else self.base_offset

    @property
    def last_offset(self):
        return self._last_offset if self._has_records else None

    @property
    def max_timestamp(self) -> int:
        return self._max_ts

    cdef int64_t _estimated(self):
        cdef float f
        if self.compression_id == 0:
            return KC_BATCH_OVERHEAD + self._size
        # Java multiplies in float: (int) (written * estimatedCompressionRatio * 1.05f)
        f = <float>self._size
        f = f * self._ratio
        f = f * <float>1.05
        if f >= <float>INT32_MAX_:
            return KC_BATCH_OVERHEAD + <int64_t>INT32_MAX_
        return KC_BATCH_OVERHEAD + <int64_t>f

    def is_full(self) -> bool:
        """Kafka's ``isFull()``: built, or a write limit the estimated size has reached."""
        return self._built or (self._write_limit >= 0 and self._count > 0
                               and self._write_limit <= self._estimated())

    # -- records ---------------------------------------------------------------
    def append(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        """Append a data record; returns its offset.

        ``None`` key/value is null, ``b""`` is empty (both round-trip).
        ``timestamp`` defaults to now (CREATE_TIME) or the log append time;
        ``offset`` defaults to the next offset and may leave gaps but must
        increase.  ``headers`` are ``(str, bytes | None)`` pairs.
        """
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        return self._add(key, value, timestamp, headers, offset)

    def _append_raw(self, key, value, timestamp=None, headers=(), offset=None) -> int:
        # Without the data/control check: the control records of a control batch.
        return self._add(key, value, timestamp, headers, offset)

    def append_many(self, keys, values, timestamps=None, headers=None) -> int:
        """Append records from parallel sequences (lists, tuples, numpy object arrays).

        As many records are appended as ``keys`` and ``values`` both have;
        ``timestamps`` and ``headers`` are optional sequences with at least
        as many items (RecordBuilderError when one runs out, after the
        records before it are appended).  Returns how many were appended.
        """
        cdef Py_ssize_t n = 0
        if self.is_control:
            raise RecordBuilderError("Control records can only be appended to control batches; "
                                     "use append_control() on this control batch")
        if _list_or_tuple(keys) and _list_or_tuple(values) and \
                (timestamps is None or _list_or_tuple(timestamps)) and (headers is None or _list_or_tuple(headers)):
            # Indexed directly, without iterator objects; sizes are read again at
            # every step (as list iterators do), since a key's buffer or a
            # timestamp's __index__ may run code that changes the lists.
            while n < PySequence_Fast_GET_SIZE(keys) and n < PySequence_Fast_GET_SIZE(values):
                ts = None if timestamps is None else _item_of(timestamps, n, "timestamps")
                if ts is not None and type(ts) is not int:
                    ts = int(ts)
                hs = () if headers is None else _item_of(headers, n, "headers")
                if n >= PySequence_Fast_GET_SIZE(keys) or n >= PySequence_Fast_GET_SIZE(values):
                    break  # int() above ran code that shortened them
                # Owned references: _add may run code (a headers iterable) that empties the lists.
                key = <object>PySequence_Fast_GET_ITEM(keys, n)
                value = <object>PySequence_Fast_GET_ITEM(values, n)
                self._add(key, value, ts, () if hs is None else hs, None)
                n += 1
            return n
        ts_iter = iter(timestamps) if timestamps is not None else None
        h_iter = iter(headers) if headers is not None else None
        for key, value in zip(keys, values):
            ts = _next_of(ts_iter, n, "timestamps") if ts_iter is not None else None
            hs = _next_of(h_iter, n, "headers") if h_iter is not None else ()
            self._add(key, value, None if ts is None else int(ts), hs if hs is not None else (), None)
            n += 1
        return n

    cdef int64_t _add(self, key, value, timestamp, headers, offset) except? -9223372036854775807:
        cdef Py_buffer kb, vb
        cdef int32_t klen = -1, vlen = -1, hcount = 0, j
        cdef int64_t hsize = 0, body, off, delta, ts, base
        cdef const uint8_t *kp = NULL
        cdef const uint8_t *vp = NULL
        cdef uint8_t *p
        cdef uint8_t *records
        cdef bint have_k = False, have_v = False
        cdef list keep = None
        if self._built:
            raise RecordBuilderError("this builder has already built its batch")
        if offset is None:
            off = self._last_offset + 1 if self._has_records else self.base_offset
        else:
            off = offset
            if self._has_records and off <= self._last_offset:
                raise RecordBuilderError(
                    f"Illegal offset {off} following previous offset {self._last_offset} "
                    "(Offsets must increase monotonically).")
        delta = off - self.base_offset
        if delta > INT32_MAX_ or delta < -INT32_MAX_ - 1:
            raise RecordBuilderError(
                f"Maximum offset delta exceeded, base offset: {self.base_offset}, last offset: {off}")
        if self._count == INT32_MAX_ - 1:
            raise RecordBuilderError("Maximum number of records per batch exceeded, max records: 2147483647")
        if timestamp is None:
            ts = self._log_append_time if self._lat else _now_ms()
        else:
            ts = timestamp
            if ts < 0 and ts != NO_TIMESTAMP:
                raise RecordBuilderError(f"Invalid negative timestamp {ts}")
        if self._has_dh:
            base = self._delete_horizon
        elif self._has_records:
            base = self._first_ts
        else:
            base = ts
        if self._busy:
            # Python code run by this builder (a header pair to unpack, a buffer to export,
            # its pool) called it again: the scratch header arrays and the offsets above
            # are in use, and the store may be between two buffers.
            raise RecordBuilderError(_REENTERED)
        self._busy = True
        try:
            keep = _scan_headers(&self._slots, headers, &hcount, &hsize)
            _key_value(key, &kb, &have_k, &kp, &klen)
            _key_value(value, &vb, &have_v, &vp, &vlen)
            body = kc_record_body_size(ts - base, <int32_t>delta, klen, vlen, hcount, hsize)
            if body > INT32_MAX_ - 5:
                raise RecordBuilderError(f"record of {body} bytes is too large")
            self._grow(KC_BATCH_OVERHEAD + self._size + body + 5, True)
            p = self._buf + KC_BATCH_OVERHEAD + self._size
            if vlen >= _CRC_WHILE_COPYING and self.compression_id == 0:
                # The batch's CRC is taken over a large value while it is in registers, and
                # once the batch has outgrown the cache the value is written past it.
                p += kc_write_record_head(p, body, ts - base, <int32_t>delta, kp, klen, vlen)
                records = self._buf + KC_BATCH_OVERHEAD
                self._crc = kc_crc32c(self._crc, records + self._crc_done, (p - records) - self._crc_done)
                self._crc = kc_crc32c_copy(self._crc, p, vp, <size_t>vlen,
                                           vlen >= _STREAM_VALUE_MIN and self._size >= _STREAM_AFTER)
                p += vlen
                self._crc_done = p - records
                p += kc_write_varint(p, hcount)
            else:
                p += kc_write_record_sized(p, body, ts - base, <int32_t>delta, kp, klen, vp, vlen, hcount)
            for j in range(hcount):
                p += kc_write_header(p, <const uint8_t *>self._slots.ptr[2 * j], <int32_t>self._slots.len[2 * j],
                                     <const uint8_t *>self._slots.ptr[2 * j + 1], <int32_t>self._slots.len[2 * j + 1])
        finally:
            self._busy = False
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        self._size = p - (self._buf + KC_BATCH_OVERHEAD)
        self._count += 1
        if not self._has_records:
            self._first_ts = ts
            self._has_records = True
        if ts > self._max_ts:
            self._max_ts = ts
        self._last_offset = off
        return off

    def has_room_for(self, key, value, headers=(), timestamp=None) -> bool:
        """Kafka's ``hasRoomFor``: whether this record keeps the batch within ``write_limit``.

        The first record always fits.  After it, the estimated size (see
        :attr:`estimated_size`) plus the record's uncompressed size must not
        exceed the limit; like Kafka, the new record is not scaled by the
        compression estimate.
        """
        cdef Py_buffer kb, vb
        cdef bint have_k = False, have_v = False
        cdef const uint8_t *kp
        cdef const uint8_t *vp
        cdef int32_t klen = -1, vlen = -1, hcount = 0
        cdef list keep = None
        cdef int64_t hsize = 0, ts, tsd, body
        cdef int32_t offd
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        if self.is_full():
            return False
        if self._count == 0 or self._write_limit < 0:
            return True
        ts = _now_ms() if timestamp is None else timestamp
        # Kafka sizes the delta from the first record's timestamp, whatever the base timestamp.
        tsd = ts - self._first_ts
        offd = <int32_t>(self._last_offset - self.base_offset + 1)
        keep = _scan_headers(&self._slots, headers, &hcount, &hsize)
        try:
            _key_value(key, &kb, &have_k, &kp, &klen)
            _key_value(value, &vb, &have_v, &vp, &vlen)
        finally:
            if have_k:
                PyBuffer_Release(&kb)
            if have_v:
                PyBuffer_Release(&vb)
        body = kc_record_body_size(tsd, offd, klen, vlen, hcount, hsize)
        return self._write_limit >= self._estimated() + kc_record_size(body)

    def _set_last_offset(self, int64_t offset) -> None:
        # Kafka's overrideLastOffset (see RecordBatchBuilder.override_last_offset).
        if self._has_records and offset < self._last_offset:
            raise RecordBuilderError(
                f"last offset {offset} is below the last appended offset {self._last_offset}")
        self._has_override = True
        self._last_override = offset

    # -- building --------------------------------------------------------------
    cdef bint _compress_native(self) except -1:
        # A codec with native functions (kcodec/codec.h: every built-in, and
        # plugins that have them) writes the frame, without the GIL, after
        # room for the header in a new bytes object that becomes the batch:
        # the compressed payload is then never copied.
        cdef NativeCodec native = native_of(self.codec)
        if native is None:
            return False
        out = native.compress_after(self._buf + KC_BATCH_OVERHEAD, self._size,
                                    0 if self.level is None else self.level, 2, KC_BATCH_OVERHEAD)
        if PyBytes_GET_SIZE(out) > INT32_MAX_:
            raise RecordBuilderError(f"batch of {PyBytes_GET_SIZE(out)} bytes exceeds the int32 size field")
        self._drop_store()
        self._store = <PyObject *>out
        Py_INCREF(out)
        self._buf = <uint8_t *>PyBytes_AS_STRING(out)
        self._cap = PyBytes_GET_SIZE(out)
        return True

    def build(self):
        """Write header, CRC-32C and (compressed) records.

        Without a pool the result is ``bytes`` owned by the caller (the
        builder's own buffer, handed over without a copy).  With a pool it is
        a :class:`~kcodec.records.PooledBuffer` to ``release()`` after use.
        """
        if self._busy:
            raise RecordBuilderError(_REENTERED)
        self._busy = True  # the codec and the pool run Python code
        try:
            return self._build()
        finally:
            self._busy = False

    cdef object _build(self):
        cdef Py_buffer pv
        cdef Py_ssize_t plen, total
        cdef int16_t attributes
        cdef int64_t base_ts, max_ts, last
        cdef float ratio
        cdef object out
        cdef object store
        cdef object detached = None
        cdef uint8_t *dst = NULL
        cdef int exports
        if self._built:
            raise RecordBuilderError("build() was already called")
        if self._count == 0:
            raise RecordBuilderError("cannot build a batch without records (Kafka writes nothing)")
        if self._has_dh:
            base_ts = self._delete_horizon
        else:
            base_ts = self._first_ts
        if base_ts < 0 and base_ts != NO_TIMESTAMP:
            raise RecordBuilderError(f"Invalid message timestamp {base_ts}")
        attributes = <int16_t>self.compression_id
        if self._lat:
            attributes |= 0x08
            max_ts = self._log_append_time
        else:
            max_ts = self._max_ts
        if self.is_transactional:
            attributes |= 0x10
        if self.is_control:
            attributes |= 0x20
        if self._has_dh:
            attributes |= 0x40
        last = self._last_override if self._has_override else self._last_offset
        # A live view of the records (memoryview(builder)) keeps this builder and its
        # store alive and must keep seeing valid memory: the batch is then assembled
        # in a separate buffer (`detached`) and the store stays until the builder goes.
        if self.compression_id == 0:
            plen = self._size
        elif self.pool is None and self._exports == 0 and self._compress_native():
            plen = self._cap - KC_BATCH_OVERHEAD
        else:
            exports = self._exports
            payload = self.codec.compress(self, self.level, magic=2)
            if self._exports > exports:
                # The codec's result (or something it kept) views the records: work from a copy.
                payload = bytes(payload)
                if self._exports > exports:
                    raise BufferError(f"codec {self.codec.name!r} kept a view of the records it compressed")
            PyObject_GetBuffer(payload, &pv, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
            try:
                plen = pv.len
                if KC_BATCH_OVERHEAD + plen > INT32_MAX_:
                    raise RecordBuilderError(f"batch of {KC_BATCH_OVERHEAD + plen} bytes exceeds the int32 size field")
                if self._exports or self._block:
                    detached = self._detached(KC_BATCH_OVERHEAD + plen)
                    dst = _data_of(detached)
                else:
                    # The records are in the payload now: their memory takes the compressed bytes.
                    self._grow(KC_BATCH_OVERHEAD + plen, False)
                    dst = self._buf
                memcpy(dst + KC_BATCH_OVERHEAD, pv.buf, plen)
            finally:
                PyBuffer_Release(&pv)
            del payload
        ratio = <float>plen / <float>(self._size if self._size > 0 else 1)
        self.compression_ratio = ratio
        total = KC_BATCH_OVERHEAD + plen
        if total > INT32_MAX_:
            raise RecordBuilderError(f"batch of {total} bytes exceeds the int32 size field")
        if detached is None:
            if self._exports:
                detached = self._detached(total)
                dst = _data_of(detached)
                memcpy(dst + KC_BATCH_OVERHEAD, self._buf + KC_BATCH_OVERHEAD, plen)
            else:
                dst = self._buf
        # The CRC: what copying long values already took, the rest read here (without the GIL
        # when it is long).  A compressed batch has none taken.
        kc_batch_write_fields(dst, total, self.base_offset, self.partition_leader_epoch, attributes,
                              <int32_t>(last - self.base_offset), base_ts, max_ts, self.producer_id,
                              self.producer_epoch, self.base_sequence, self._count)
        if total - self._crc_done < 65536:
            kc_batch_seal_from(dst, total, self._crc, <size_t>self._crc_done)
        else:
            with nogil:
                kc_batch_seal_from(dst, total, self._crc, <size_t>self._crc_done)
        self._built = True
        if detached is not None:
            if self._block and not self._exports:
                self._drop_store()  # back to the cache for the next batch
            return detached if self.pool is None else PooledBuffer(detached, total, self.pool)
        if self.pool is None:
            kc_bytes_shrink(&self._store, total)
            out = <object>self._store
            Py_DECREF(out)
            self._store = NULL
        else:
            store = <object>self._store
            Py_DECREF(store)
            self._store = NULL
            out = PooledBuffer(store, total, self.pool)
        self._buf = NULL
        self._cap = 0
        return out
