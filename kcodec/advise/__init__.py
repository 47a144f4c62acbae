"""``kcodec advise``: measure Kafka codecs, levels and batch sizes on your data, with Spark."""
from kcodec.advise.grid import Setting, parse_batch_sizes, parse_codecs
from kcodec.advise.report import recommend

__all__ = ["Setting", "parse_codecs", "parse_batch_sizes", "recommend", "run_advise"]


def run_advise(*args, **kwargs):
    from kcodec.advise.job import run_advise as _run
    return _run(*args, **kwargs)
