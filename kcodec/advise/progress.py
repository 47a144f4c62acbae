"""A progress bar with an ETA for the Spark tasks of a long action (tqdm, polling Spark's status tracker)."""
from __future__ import annotations

import sys
import threading
from typing import Optional

__all__ = ["SparkProgress"]


class SparkProgress:
    """``with SparkProgress(spark, "measuring"): df.count()`` shows tasks done of all tasks, and an ETA."""

    def __init__(self, spark, what: str, *, enabled: bool = True, interval: float = 0.5) -> None:
        self.sc = spark.sparkContext
        self.what = what
        self.enabled = enabled
        self.interval = interval
        self._stop = threading.Event()
        self._thread: Optional[threading.Thread] = None

    def _poll(self) -> None:
        from tqdm import tqdm

        tracker = self.sc.statusTracker()
        # drawn on a terminal only, so logs and CI output get no carriage-return spam
        bar = tqdm(total=0, desc=self.what, unit="task", file=sys.stderr, dynamic_ncols=True,
                   disable=not sys.stderr.isatty(),
                   bar_format="{desc}: {percentage:3.0f}%|{bar}| {n_fmt}/{total_fmt} tasks "
                              "[{elapsed}<{remaining}]")
        done: dict = {}
        try:
            while not self._stop.wait(self.interval):
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is None:
                        continue
                    if sid not in done:
                        bar.total += info.numTasks
                        done[sid] = 0
                    step = info.numCompletedTasks - done[sid]
                    if step > 0:
                        bar.update(step)
                        done[sid] = info.numCompletedTasks
                bar.refresh()
            bar.update(bar.total - bar.n)
        finally:
            bar.close()

    def __enter__(self) -> "SparkProgress":
        if self.enabled:
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
