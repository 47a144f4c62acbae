"""The generated sample (:mod:`kcodec.advise.inputs.generated.traffic`) as an input: no paths given.

Its records are generated in Spark tasks, ``--records`` in all from ``--seed``, and
batched today as the --current-* flags say; its three topics are known by name.
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional

from kcodec.advise.inputs.replayed import ReplayedSource
from kcodec.advise.inputs.source import Sampling

__all__ = ["GeneratedSource"]

#: where the generated sample's time starts, in epoch milliseconds
START_MS = 1_700_000_000_000


class GeneratedSource(ReplayedSource):
    """Three topics of generated traffic."""

    real_time = False  # its timestamps are made up: a short span says nothing of a daily volume

    def __init__(self, storage_options: Optional[Dict[str, Any]] = None) -> None:
        super().__init__("generated sample", storage_options)

    def known_topics(self) -> List[str]:
        from kcodec.advise.inputs.generated.traffic import TOPICS

        return sorted(TOPICS)

    def records(self, spark, sampling: Sampling):
        from kcodec.advise.inputs.replayed import RECORD_DDL

        tasks = sampling.tasks
        per_task = max(1, sampling.records // tasks)

        def generate(batches, per_task=per_task, seed=sampling.seed):
            from pyspark import TaskContext

            from kcodec.advise.inputs.generated.traffic import generate_traffic

            for _ in batches:
                pass
            part = TaskContext.get().partitionId()
            table = generate_traffic(per_task, seed=seed + part, start_ms=START_MS + part * per_task * 2)
            yield from table.to_batches()

        return self.only_topics(spark.range(0, tasks, 1, tasks).mapInArrow(generate, RECORD_DDL))
