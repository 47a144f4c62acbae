"""Where one producer cuts its records of one partition: the replay's entry for a setting.

The producer's batching is :mod:`~kcodec.advise.replay.accumulator`'s; this module only
chooses between a replay that needs no ratio and Java's, which learns the compression ratio of
the batches it closed.  Those ratios come from whoever builds batches (the measuring stage's
encoder), passed in, so the replay itself never builds one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, Optional, Protocol

import numpy as np

from kcodec.advise.replay.accumulator import BATCH_OVERHEAD, form_batches, warm_estimate
from kcodec.advise.replay.client import JAVA, ClientRules
from kcodec.advise.replay.sender import SenderModel

if TYPE_CHECKING:
    from kcodec.advise.grid import Setting

__all__ = ["Ratios", "replay_starts"]


class Ratios(Protocol):
    """What builds the batches: the ratio of a batch of records ``a:b`` under a codec."""

    def ratios(self, codec: str, level, ends: np.ndarray, overhead: int) -> Callable[[int, int], float]: ...


def replay_starts(encoder: Ratios, cols: Dict[str, np.ndarray], setting: Setting,
                  client: ClientRules = JAVA, sender: Optional[SenderModel] = None) -> np.ndarray:
    """Where one producer would cut its records of one partition under ``setting``.

    Java cuts a compressed batch on its estimate of the compressed size, which
    follows the ratio of the batches it closed before: each such batch is built
    as it closes to learn its ratio.  A chunk is a slice of a running
    producer's stream, so the estimate is warmed up first, not started at 1.0.
    """
    compressed = setting.codec != "none"
    sizes = cols["sizes"]
    learns = compressed and client.learns_ratio

    if not learns:
        return form_batches(cols["ts"], sizes, cols["upper"], setting.batch_bytes, setting.linger_ms,
                            compressed=compressed, client=client, sender=sender)
    # the records' bytes from 0, so the ratio of a:b is two lookups: the replay asks for thousands of ranges
    ratio = encoder.ratios(setting.codec, setting.level, np.concatenate(([0], np.cumsum(sizes, dtype=np.int64))),
                           BATCH_OVERHEAD)
    estimate = warm_estimate(cols["ts"], sizes, cols["upper"], setting.batch_bytes, setting.linger_ms, ratio,
                             client, sender)
    return form_batches(cols["ts"], sizes, cols["upper"], setting.batch_bytes, setting.linger_ms,
                        compressed=compressed, close=ratio, client=client, sender=sender, estimate=estimate)

