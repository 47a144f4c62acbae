"""``kcodec advise``: per Kafka topic, which compression and batching to set and what it saves, with Spark.

The pipeline, a module a stage (Kafka's counterpart where there is one):

- ``inputs``: one module per input kind behind one interface (log directories, a live cluster, record
  files, the generated sample), each yielding chunks of whole batches (``chunks``); ``cluster`` reads a
  cluster (``Fetch``), ``records`` batches records as today's producer would, ``sample`` generates them;
- ``profile``: today's batches, from their headers (``kcodec.records.batch_header``'s layout);
- ``replay``: where each producer cuts batches (``RecordAccumulator``, ``CompressionRatioEstimator``,
  ``Sender``; librdkafka's rules), a package of one module per part of a producer;
- ``measure``: those batches built (``MemoryRecordsBuilder``'s work, as ``kcodec.from_arrow`` does it) and read,
  in thread CPU time;
- ``task``: one Spark task's pass of a chunk through profile, replay and measure;
- ``today``: each topic's profile of today, summed over its chunks on the driver, as ``topic_profile``'s typed
  values; ``aggregate``: with one summed line per setting (``TopicAggregate``), what the rule reads;
- ``cpu``: the CPU cost model the bill uses; ``cost``: the bill; ``recommend``: the rule;
- ``report``, ``charts``: the renderings; ``job``, ``cli``: the Spark application and the command.
"""
from kcodec.advise.grid import Setting, parse_batch_sizes, parse_codecs, parse_lingers

__all__ = ["Setting", "parse_codecs", "parse_batch_sizes", "parse_lingers", "run_advise"]


def run_advise(*args, **kwargs):
    from kcodec.advise.job import run_advise as _run
    return _run(*args, **kwargs)
