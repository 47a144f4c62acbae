# Arrow C out: gathered columns as Arrow C data interface arrays, schemas and streams,
# handed over through the Arrow PyCapsule protocol without a copy and without pyarrow.


cdef struct _GatheredOwner:
    # The buffers of an accumulator, moved here when its columns are complete
    kc_arrow_owner_t base
    _Grow g[19]
    # Views: the objects holding the variadic buffers (a tuple, referenced), and the
    # Arrow buffer lists of key and value (validity, views, variadic buffers, their sizes)
    PyObject *sources
    const void **vbufs[2]
    int64_t *vsizes


cdef void _gathered_destroy(kc_arrow_owner_t *o) noexcept nogil:
    cdef _GatheredOwner *w = <_GatheredOwner *>o
    cdef int k
    for k in range(_G_COUNT):
        kc_cache_give(w.g[k].p, <size_t>w.g[k].cap)
    if w.sources != NULL:
        with gil:  # the last array may be released on any thread
            Py_DECREF(<object>w.sources)
    free(w.vbufs[0])
    free(w.vsizes)
    free(w)


cdef int _view_buffers(_GatheredOwner *own, const int64_t *nulls, tuple sources) except -1:
    """The key and value columns' Arrow buffer lists: variadic buffer 0 is the spill buffer, then ``sources``."""
    cdef Py_buffer view
    cdef Py_ssize_t j, nvar = 1 + len(sources), width = 3 + nvar
    cdef int k
    own.vsizes = <int64_t *>malloc(<size_t>(8 * nvar))
    own.vbufs[0] = <const void **>calloc(<size_t>(2 * width), sizeof(void *))
    if own.vsizes == NULL or own.vbufs[0] == NULL:
        raise MemoryError()
    own.vbufs[1] = own.vbufs[0] + width
    own.vsizes[0] = own.g[_G_SPILL].len
    for k in range(2):
        own.vbufs[k][0] = own.g[3 * k + 2].p if nulls[k] else NULL
        own.vbufs[k][1] = own.g[3 * k].p
        own.vbufs[k][2] = own.g[_G_SPILL].p
        own.vbufs[k][width - 1] = own.vsizes
    for j in range(1, nvar):
        PyObject_GetBuffer(sources[j - 1], &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        own.vsizes[j] = view.len
        for k in range(2):
            own.vbufs[k][2 + j] = view.buf
        PyBuffer_Release(&view)  # the memoryview in sources holds the export
    own.sources = <PyObject *>sources
    Py_INCREF(sources)
    return 0


cdef void _block_destroy(kc_arrow_owner_t *o) noexcept nogil:
    free(o)


cdef enum:
    _BLOCK_HEAD = 64  # the owner, then the block's bytes at an aligned distance


cdef kc_arrow_owner_t *_block(int64_t size, uint8_t **data) except NULL:
    """An owner of ``size`` zeroed bytes (one allocation with it), for columns made here."""
    cdef kc_arrow_owner_t *o = <kc_arrow_owner_t *>calloc(1, <size_t>(_BLOCK_HEAD + size + 1))
    if o == NULL:
        raise MemoryError()
    o.refs = 1
    o.destroy = _block_destroy
    data[0] = <uint8_t *>o + _BLOCK_HEAD
    return o


cdef int _java_header_keys(_Acc *a) except -1:
    """Header keys that are not valid UTF-8 decoded as Kafka's Java clients decode them.

    Arrow's string type must hold UTF-8; the rare malformed key gets U+FFFD
    where it is malformed, as in Java.  Rows and nulls are unchanged.
    """
    cdef const int32_t *offs = <const int32_t *>a.g[7].p
    cdef const uint8_t *data = a.g[6].p
    cdef int64_t i, total = 0
    keys = [java_utf8_decode(data[offs[i]:offs[i + 1]]).encode("utf-8") for i in range(a.nh)]
    ends = np.cumsum(np.fromiter(map(len, keys), np.int64, a.nh))
    if a.nh:
        total = ends[a.nh - 1]
    if total > 2147483647:
        raise LimitExceededError("more than 2 GiB in one Arrow column; convert fewer batches at a time")
    joined = b"".join(keys)
    a.g[6].len = 0
    if _reserve(&a.g[6], total + 1) < 0:
        raise MemoryError()
    memcpy(a.g[6].p, <const char *>joined, <size_t>total)
    a.g[6].len = total
    cdef int32_t *out = <int32_t *>a.g[7].p
    for i in range(a.nh):
        out[i + 1] = <int32_t>ends[i]
    return 0


cdef RecordChunk _chunk_of(_Acc *a, list sources=None):
    """The accumulator's columns as a RecordChunk, in Arrow's form; the accumulator is left empty.

    ``sources``: with views, the buffers the views reference (variadic buffer 1 onwards), held by the chunk.
    """
    cdef int k
    cdef Py_ssize_t bad
    cdef int64_t first_bad = -1
    with nogil:
        bad = kc_ms_to_us(<int64_t *>a.g[_G_TS].p, a.n)
    if bad >= 0:
        raise LimitExceededError(
            f"The record at offset {(<int64_t *>a.g[_G_OFFSET].p)[bad]} has timestamp "
            f"{(<int64_t *>a.g[_G_TS].p)[bad]} ms, outside the range of Arrow's timestamp('us')")
    if a.headers and a.nh:
        with nogil:
            if not kc_all_ascii(a.g[6].p, a.g[6].len):
                first_bad = kc_utf8_first_invalid(a.g[6].p, <const int32_t *>a.g[7].p, a.nh)
        if first_bad >= 0:
            _java_header_keys(a)
    for k in range(4):
        if a.nulls[k]:
            kc_nullmap_to_validity(a.g[3 * k + 2].p, a.n if k < 2 else a.nh)
    if a.hnulls:
        kc_nullmap_to_validity(a.g[_G_HNULL].p, a.n)
    for k in range(_G_COUNT):
        if a.g[k].p == NULL and _reserve(&a.g[k], 1) < 0:  # Arrow wants a real address even for no bytes
            raise MemoryError()
    cdef _GatheredOwner *own = <_GatheredOwner *>malloc(sizeof(_GatheredOwner))
    if own == NULL:
        raise MemoryError()
    own.base.refs = 1
    own.base.destroy = _gathered_destroy
    memcpy(own.g, a.g, sizeof(own.g))
    own.sources = NULL
    own.vbufs[0] = own.vbufs[1] = NULL
    own.vsizes = NULL
    cdef RecordChunk c = RecordChunk.__new__(RecordChunk)
    c.own = own
    memset(a.g, 0, sizeof(a.g))  # owned by the chunk from here on, also if the view lists fail
    c.views = a.views
    if a.views:
        # memoryviews hold an export each: a bytearray cannot be resized under its views
        keep = tuple(memoryview(s) for s in (sources or ()))
        c.nvar = 1 + len(keep)
        _view_buffers(own, a.nulls, keep)
    c.num_rows = a.n
    c.nh = a.nh
    c.hnulls = a.hnulls
    c.headers = a.headers
    for k in range(4):
        c.nulls[k] = a.nulls[k]
    memset(a.g, 0, sizeof(a.g))
    a.n = a.nh = a.hnulls = 0
    memset(a.nulls, 0, sizeof(a.nulls))
    return c


cdef class RecordChunk:
    """Records of whole batches gathered into Arrow buffers: one record batch of :class:`RecordColumns`."""
    cdef _GatheredOwner *own
    cdef readonly int64_t num_rows
    cdef int64_t nh, hnulls
    cdef int64_t nulls[4]
    cdef bint headers
    cdef bint views
    cdef Py_ssize_t nvar  # views: variadic buffers
    # batch-field columns (set_field) and the topic and partition columns (made on first export)
    cdef kc_arrow_owner_t *field_own[10]
    cdef const void *field_data[10]
    cdef int field_index[10]
    cdef int nfields
    cdef kc_arrow_owner_t *topic_own
    cdef kc_arrow_owner_t *partition_own
    cdef const uint8_t *topic_buf[3]
    cdef const uint8_t *partition_buf[2]
    cdef int64_t topic_nulls, partition_nulls

    def __dealloc__(self):
        cdef int k
        if self.own != NULL:
            kc_owner_unref(&self.own.base)
        for k in range(self.nfields):
            kc_owner_unref(self.field_own[k])
        kc_owner_unref(self.topic_own)
        kc_owner_unref(self.partition_own)

    def add_field(self, int index, values) -> None:
        """Append a batch-field column (``index`` into BATCH_FIELDS): the bytes of its Arrow data buffer."""
        cdef Py_buffer view
        cdef uint8_t *data
        cdef int64_t size
        if not 0 <= index < KC_BATCH_FIELD_COUNT or self.nfields == KC_BATCH_FIELD_COUNT:
            raise ValueError(f"no batch field {index}")
        fmt = BATCH_FIELD_FORMATS[index]
        size = (self.num_rows + 7) >> 3 if fmt == "b" else self.num_rows * {"l": 8, "i": 4, "s": 2, "c": 1}[fmt]
        PyObject_GetBuffer(values, &view, PyBUF_SIMPLE | PyBUF_ANY_CONTIGUOUS)
        try:
            if view.len != size:
                raise ValueError(f"batch field {BATCH_FIELDS[index]!r} needs {size} bytes for {self.num_rows} rows, "
                                 f"not {view.len}")
            self.field_own[self.nfields] = _block(view.len, &data)
            memcpy(data, view.buf, view.len)
        finally:
            PyBuffer_Release(&view)
        self.field_data[self.nfields] = data
        self.field_index[self.nfields] = index
        self.nfields += 1

    cdef int _constants(self, bytes topic, bint has_partition, int32_t partition) except -1:
        """The topic and partition columns: one value repeated, or all null."""
        cdef int64_t i, n = self.num_rows, t = 0 if topic is None else len(topic)
        cdef uint8_t *p
        cdef int32_t *offs
        if self.topic_own != NULL:
            return 0
        if t * n > 2147483647:
            raise LimitExceededError("more than 2 GiB in the topic column; convert fewer batches at a time")
        # topic: validity, int32 offsets, data
        self.topic_own = _block(((n + 7) >> 3) + 8 + 4 * (n + 1) + t * n, &p)
        self.topic_buf[0] = p if topic is None and n else NULL
        self.topic_nulls = n if topic is None else 0
        offs = <int32_t *>(p + ((n + 7) >> 3) + 8 - (((n + 7) >> 3) & 7))
        self.topic_buf[1] = <const uint8_t *>offs
        self.topic_buf[2] = <const uint8_t *>(offs + n + 1)
        if topic is not None:
            for i in range(n):
                offs[i + 1] = <int32_t>(t * (i + 1))
                memcpy(<uint8_t *>(offs + n + 1) + t * i, <const char *>topic, <size_t>t)
        self.partition_own = _block(((n + 7) >> 3) + 8 + 4 * n, &p)
        self.partition_buf[0] = p if not has_partition and n else NULL
        self.partition_nulls = 0 if has_partition else n
        offs = <int32_t *>(p + ((n + 7) >> 3) + 8 - (((n + 7) >> 3) & 7))
        self.partition_buf[1] = <const uint8_t *>offs
        if has_partition:
            for i in range(n):
                offs[i] = partition
        return 0

    cdef int _export(self, ArrowArray *out, bytes topic, bint has_partition, int32_t partition) except -1:
        """``out`` as a struct array of the schema's columns over this chunk's buffers (shared, not copied)."""
        cdef int k, err = 0, base = 8 if self.headers else 7
        cdef int64_t n = self.num_rows
        cdef _Grow *g = self.own.g
        cdef kc_arrow_owner_t *o = &self.own.base
        cdef ArrowArray **ch
        cdef ArrowArray *item
        self._constants(topic, has_partition, partition)
        if kc_array_init(out, NULL, n, 0, 1, NULL, NULL, NULL, base + self.nfields) < 0:
            raise MemoryError()
        ch = out.children
        for k in range(2):  # key, value
            if self.views:  # binary_view: validity, views, the variadic buffers and their sizes
                err |= kc_array_init(ch[k], o, n, self.nulls[k], 2, NULL, NULL, NULL, 0)
                if err == 0:
                    ch[k].buffers = self.own.vbufs[k]
                    ch[k].n_buffers = self.nvar + 3
            else:
                err |= kc_array_init(ch[k], o, n, self.nulls[k], 3, g[3 * k + 2].p if self.nulls[k] else NULL,
                                     g[3 * k + 1].p, g[3 * k].p, 0)
        err |= kc_array_init(ch[2], self.topic_own, n, self.topic_nulls, 3, self.topic_buf[0], self.topic_buf[1],
                             self.topic_buf[2], 0)
        err |= kc_array_init(ch[3], self.partition_own, n, self.partition_nulls, 2, self.partition_buf[0],
                             self.partition_buf[1], NULL, 0)
        err |= kc_array_init(ch[4], o, n, 0, 2, NULL, g[_G_OFFSET].p, NULL, 0)
        err |= kc_array_init(ch[5], o, n, 0, 2, NULL, g[_G_TS].p, NULL, 0)
        err |= kc_array_init(ch[6], o, n, 0, 2, NULL, g[_G_TYPE].p, NULL, 0)
        if self.headers and err == 0:
            err = kc_array_init(ch[7], o, n, self.hnulls, 2, g[_G_HNULL].p if self.hnulls else NULL, g[_G_HLIST].p,
                                NULL, 1)
            if err == 0:
                item = ch[7].children[0]
                err = kc_array_init(item, NULL, self.nh, 0, 1, NULL, NULL, NULL, 2)
                if err == 0:
                    for k in range(2, 4):  # header key, header value
                        err |= kc_array_init(item.children[k - 2], o, self.nh, self.nulls[k], 3,
                                             g[3 * k + 2].p if self.nulls[k] else NULL, g[3 * k + 1].p, g[3 * k].p, 0)
        for k in range(self.nfields):
            err |= kc_array_init(ch[base + k], self.field_own[k], n, 0, 2, NULL, self.field_data[k], NULL, 0)
        if err:
            out.release(out)
            raise MemoryError()
        return 0


cdef void _free_schema(object capsule) noexcept:
    cdef ArrowSchema *s = <ArrowSchema *>PyCapsule_GetPointer(capsule, "arrow_schema")
    if s.release != NULL:
        s.release(s)
    free(s)


cdef void _free_array(object capsule) noexcept:
    cdef ArrowArray *a = <ArrowArray *>PyCapsule_GetPointer(capsule, "arrow_array")
    if a.release != NULL:
        a.release(a)
    free(a)


cdef void _free_stream(object capsule) noexcept:
    cdef ArrowArrayStream *s = <ArrowArrayStream *>PyCapsule_GetPointer(capsule, "arrow_array_stream")
    if s.release != NULL:
        s.release(s)
    free(s)


cdef int _schema_into(ArrowSchema *s, bint headers, const int *fields, int nfields, bint views=False) except -1:
    if kc_kafka_schema(s, headers, fields, nfields, views) < 0:
        raise MemoryError()
    return 0


cdef object _schema_capsule(bint headers, const int *fields, int nfields, bint views=False):
    cdef ArrowSchema *s = <ArrowSchema *>calloc(1, sizeof(ArrowSchema))
    if s == NULL:
        raise MemoryError()
    try:
        _schema_into(s, headers, fields, nfields, views)
        return PyCapsule_New(s, "arrow_schema", _free_schema)
    except BaseException:
        if s.release != NULL:
            s.release(s)
        free(s)
        raise


#: The per-record batch header fields decoding can add (batch_fields=...), and their Arrow formats.
BATCH_FIELDS = tuple(kc_batch_field_names[k].decode() for k in range(KC_BATCH_FIELD_COUNT))
BATCH_FIELD_FORMATS = tuple(kc_batch_field_formats[k].decode() for k in range(KC_BATCH_FIELD_COUNT))


cdef int _field_list(tuple batch_fields, int *out) except -1:
    """The indices of the named batch fields into ``out`` (room for KC_BATCH_FIELD_COUNT); their count."""
    cdef int k = 0
    if len(batch_fields) > KC_BATCH_FIELD_COUNT:
        raise ValueError(f"at most {KC_BATCH_FIELD_COUNT} batch fields")
    for name in batch_fields:
        if name not in BATCH_FIELDS:
            raise ValueError(f"unknown batch field {name!r}; choose from {', '.join(BATCH_FIELDS)}")
        out[k] = BATCH_FIELDS.index(name)
        k += 1
    return k


def kafka_schema_capsule(bint headers=True, tuple batch_fields=(), bint views=False) -> object:
    """The Arrow schema of decoded records as an ``arrow_schema`` PyCapsule (key and value binary_view with ``views``)."""
    cdef int fields[10]
    return _schema_capsule(headers, fields, _field_list(batch_fields, fields), views)


cdef class RecordColumns:
    """Decoded Kafka records as Arrow columns, for any Arrow consumer: :func:`kcodec.decode_columns` makes them.

    The columns are those of :func:`kcodec.kafka_schema`, in one or more
    record batches (``num_chunks``; several when decoding ran on threads).
    They are handed over through the Arrow PyCapsule protocol
    (``__arrow_c_schema__``, ``__arrow_c_stream__``, and ``__arrow_c_array__``
    when there is one chunk) without a copy, so ``pyarrow.table(cols)``, ``polars.DataFrame(cols)``
    and DuckDB read them directly; decoding itself does not use pyarrow.
    The memory is freed when this object and every array taken from it are gone.
    """
    cdef list chunks
    cdef bytes topic_bytes
    cdef bint has_partition
    cdef int32_t partition_value
    cdef bint with_headers
    cdef readonly bint views
    cdef int fields[10]
    cdef int nfields
    cdef readonly int64_t num_rows

    def __init__(self):
        raise TypeError("RecordColumns are made by kcodec.decode_columns")

    @property
    def num_chunks(self) -> int:
        return len(self.chunks)

    @property
    def column_names(self) -> list:
        names = ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType"]
        if self.with_headers:
            names.append("headers")
        return names + list(self.batch_fields)

    @property
    def headers(self) -> bool:
        """Whether the columns include ``headers``."""
        return self.with_headers

    @property
    def batch_fields(self) -> tuple:
        return tuple(BATCH_FIELDS[self.fields[k]] for k in range(self.nfields))

    def __len__(self) -> int:
        return self.num_rows

    def __repr__(self) -> str:
        return (f"<RecordColumns: {self.num_rows} records in {len(self.chunks)} chunk(s); "
                f"{', '.join(self.column_names)}>")

    def __arrow_c_schema__(self) -> object:
        return _schema_capsule(self.with_headers, self.fields, self.nfields, self.views)

    def __arrow_c_stream__(self, requested_schema=None) -> object:
        """An ``arrow_array_stream`` capsule yielding each chunk as a record batch."""
        cdef Py_ssize_t k, count = len(self.chunks)
        cdef ArrowSchema schema
        cdef ArrowArrayStream *stream
        cdef ArrowArray *arrays = <ArrowArray *>calloc(count + 1, sizeof(ArrowArray))
        if arrays == NULL:
            raise MemoryError()
        schema.release = NULL
        try:
            for k in range(count):
                (<RecordChunk>self.chunks[k])._export(&arrays[k], self.topic_bytes, self.has_partition,
                                                      self.partition_value)
            _schema_into(&schema, self.with_headers, self.fields, self.nfields, self.views)
            stream = <ArrowArrayStream *>calloc(1, sizeof(ArrowArrayStream))
            if stream == NULL or kc_stream_init(stream, &schema, arrays, count) < 0:
                free(stream)
                raise MemoryError()
        except BaseException:
            for k in range(count):
                if arrays[k].release != NULL:
                    arrays[k].release(&arrays[k])
            free(arrays)
            if schema.release != NULL:
                schema.release(&schema)
            raise
        return PyCapsule_New(stream, "arrow_array_stream", _free_stream)


cdef class _OneChunkColumns(RecordColumns):
    """Records in one chunk, which can also be handed over as one array (``__arrow_c_array__``).

    Records in several chunks have no such method: consumers that prefer
    an array (Polars does) then read the stream.
    """

    def __arrow_c_array__(self, requested_schema=None) -> tuple:
        """``(schema, array)`` capsules of the records as one struct array (a record batch)."""
        return self.__arrow_c_schema__(), self._array_capsule()

    def _array_capsule(self) -> object:
        """The ``arrow_array`` capsule alone, for an importer that has the schema already."""
        cdef ArrowArray *a = <ArrowArray *>calloc(1, sizeof(ArrowArray))
        if a == NULL:
            raise MemoryError()
        try:
            (<RecordChunk>self.chunks[0])._export(a, self.topic_bytes, self.has_partition, self.partition_value)
        except BaseException:
            free(a)
            raise
        return PyCapsule_New(a, "arrow_array", _free_array)


def record_columns(list chunks, topic, partition, bint headers, tuple batch_fields, bint views=False) -> RecordColumns:
    """RecordColumns over decoded chunks (see kcodec.decode_columns)."""
    cls = _OneChunkColumns if len(chunks) == 1 else RecordColumns
    cdef RecordColumns r = cls.__new__(cls)
    cdef RecordChunk c
    r.chunks = chunks
    r.topic_bytes = None if topic is None else topic.encode("utf-8")
    r.has_partition = partition is not None
    r.partition_value = partition if partition is not None else 0
    r.with_headers = headers
    r.views = views
    r.nfields = _field_list(batch_fields, r.fields) if batch_fields else 0
    for c in chunks:
        r.num_rows += c.num_rows
        if c.headers != headers or c.nfields != r.nfields or c.views != views:
            raise ValueError("a chunk was decoded with other columns")
    return r


def array_address(object capsule) -> int:
    """The address of the ArrowArray in an ``arrow_array`` capsule (for pyarrow's ``_import_from_c``)."""
    return <Py_ssize_t>PyCapsule_GetPointer(capsule, "arrow_array")
