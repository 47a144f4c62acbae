"""One module per producer client beyond Java and librdkafka: its batching rules, its configuration
names and the framing it writes, as one :class:`~kcodec.advise.replay.client.ClientRules` named ``RULES``
that :mod:`kcodec.advise.replay.registry` lists."""
from kcodec.advise.replay.clients import aiokafka, kafka_python, sarama

__all__ = ["aiokafka", "kafka_python", "sarama"]
