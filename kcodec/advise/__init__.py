"""``kcodec advise``: per Kafka topic, which compression and batching to set and what it saves, with Spark."""
from kcodec.advise.grid import Setting, parse_batch_sizes, parse_codecs, parse_lingers

__all__ = ["Setting", "parse_codecs", "parse_batch_sizes", "parse_lingers", "run_advise"]


def run_advise(*args, **kwargs):
    from kcodec.advise.job import run_advise as _run
    return _run(*args, **kwargs)
