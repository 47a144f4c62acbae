"""The replay: how each producer would have cut today's records into batches under another setting.

Each module follows one part of a producer:

========================  ==============================================================
module                    Kafka / librdkafka counterpart
========================  ==============================================================
``accumulator``           ``RecordAccumulator``, ``ProducerBatch``, ``MemoryRecordsBuilder``,
                          ``CompressionRatioEstimator``; ``rd_kafka_msgset_writer``
``sender``                ``Sender`` / ``RecordAccumulator.ready`` (when a batch is taken),
                          calibrated on today's batches
``client``                a client's rules, configuration names and framing marks; Java's and
                          librdkafka's
``clients``               one module per other client: kafka-python, aiokafka, sarama
``registry``              the clients known, and which of them wrote a topic's batches
``partitioner``           ``BuiltInPartitioner`` (the sticky partitioner of keyless records)
``producers``             one ``KafkaProducer`` each: records split by the batches' producer id
``starts``                one producer's cuts of one partition under a setting, Java's ratio learnt
                          from the batches the caller builds
========================  ==============================================================

Every function takes numpy columns and returns batch boundaries; nothing here builds a batch.
"""
from kcodec.advise.replay.accumulator import (
    BATCH_OVERHEAD,
    ESTIMATION_FACTOR,
    LIMIT_ITEMS,
    LIMITS,
    form_batches,
    record_sizes,
    record_upper_bounds,
    time_limits,
    update_estimate,
    varint_sizes,
    warm_estimate,
    warm_records,
)
from kcodec.advise.replay.client import JAVA, LIBRDKAFKA, ClientRules, client_config
from kcodec.advise.replay.partitioner import assign_partitions
from kcodec.advise.replay.producers import producer_groups
from kcodec.advise.replay.registry import (
    CLIENTS,
    DEFAULT_CLIENT,
    NOT_RECOGNISED,
    client_rules,
    clients_help,
    detect_client,
)
from kcodec.advise.replay.sender import Calibration, SenderModel, arrival_ms, calibrate, time_cuts
from kcodec.advise.replay.starts import Ratios, replay_starts

__all__ = ["BATCH_OVERHEAD", "ESTIMATION_FACTOR", "LIMITS", "LIMIT_ITEMS", "form_batches", "record_sizes",
           "record_upper_bounds", "time_limits", "update_estimate", "varint_sizes", "warm_estimate", "warm_records",
           "CLIENTS", "JAVA",
           "LIBRDKAFKA", "ClientRules", "client_config", "client_rules", "detect_client", "NOT_RECOGNISED",
           "DEFAULT_CLIENT", "clients_help",
           "assign_partitions", "producer_groups", "Calibration", "SenderModel", "arrival_ms", "calibrate", "time_cuts",
           "Ratios", "replay_starts"]
