"""Kafka batches to Arrow tables and back, without a Python object per record.

:func:`decode_columns` gathers the columns of Spark's Kafka source: a native
pass over each (decompressed) records region copies keys, values and headers
straight into contiguous Arrow buffers, handed to any Arrow consumer through
the Arrow C data interface; :func:`to_arrow` imports them into a
``pyarrow.Table``.  :func:`from_arrow` encodes records
straight from a table's Arrow buffers into batches.  Legacy v0/v1 batches
(pre-0.11 data, rare) go through their Record objects.

The modules, each with one job:

* ``decode`` -- :func:`to_arrow` and :func:`decode_columns` (a consumer's
  ``Fetcher`` turning ``MemoryRecords`` into records, as columns);
* ``options`` -- :class:`~kcodec.arrow.options.DecodeOptions` and
  :class:`~kcodec.arrow.options.EncodeOptions`, what a decode or an encode was asked for;
* ``cascade`` -- which path takes a buffer: the native pass over uncompressed
  v2 batches, then over compressed ones, then the general path;
* ``gather`` -- the general path: batches of any magic and codec from the
  batch reader, one at a time, and the per-record batch fields;
* ``threads`` -- a large buffer cut into parts converted on threads;
* ``schema`` -- :func:`kafka_schema`, the schema of Spark's Kafka source;
* ``encode`` -- :func:`from_arrow` and :func:`from_arrow_iter`
  (``MemoryRecordsBuilder``'s work, from columns);
* ``columns`` -- reading a user's key, value, headers and timestamp columns
  as the encoders take them: the helpers advise and the partitioner use too;
* ``views`` -- :func:`filter_rows` for ``binary_view`` tables.
"""
from kcodec.arrow.decode import RecordColumns, column_cache, decode_columns, to_arrow
from kcodec.arrow.encode import from_arrow, from_arrow_iter
from kcodec.arrow.schema import BATCH_FIELDS, kafka_schema
from kcodec.arrow.threads import MIN_THREAD_MEAN_BATCH as MIN_THREAD_MEAN_BATCH  # named in to_arrow's docstring
from kcodec.arrow.threads import MIN_THREAD_PART as MIN_THREAD_PART
from kcodec.arrow.views import filter_rows

__all__ = ["kafka_schema", "decode_columns", "RecordColumns", "to_arrow", "from_arrow", "from_arrow_iter",
           "column_cache", "filter_rows", "BATCH_FIELDS"]
