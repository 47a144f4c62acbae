"""A progress bar with an ETA for the Spark tasks of a long action (tqdm, polling Spark's status tracker)."""
from __future__ import annotations

import sys
import threading
from typing import Optional

__all__ = ["SparkProgress", "monotone_steps"]


_STEPS = 1000


def monotone_steps(shown: int, finished: int, total: int) -> int:
    """Thousandths of the work to show: the tasks finished of those known, never less than already shown,
    and short of the whole until the action returns."""
    if total <= 0:
        return shown
    return max(shown, min(_STEPS - 1, finished * _STEPS // total))


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
        # Drawn on a terminal only, so logs and CI output get no carriage-return spam.  The bar is in
        # thousandths of the work: a stage that starts later adds tasks to the total, and the share
        # done shown never goes back when it does.
        bar = tqdm(total=_STEPS, desc=self.what, file=sys.stderr, dynamic_ncols=True,
                   disable=not sys.stderr.isatty(),
                   bar_format="{desc}: {percentage:3.0f}%|{bar}| {postfix} [{elapsed}<{remaining}]")
        done: dict = {}
        total = 0
        try:
            while not self._stop.wait(self.interval):
                for sid in tracker.getActiveStageIds():
                    info = tracker.getStageInfo(sid)
                    if info is None:
                        continue
                    if sid not in done:
                        total += info.numTasks
                    done[sid] = max(done.get(sid, 0), info.numCompletedTasks)
                finished = sum(done.values())
                bar.set_postfix_str(f"{finished}/{total} tasks", refresh=False)
                shown = monotone_steps(bar.n, finished, total)
                if shown > bar.n:
                    bar.update(shown - bar.n)
                bar.refresh()
            bar.update(_STEPS - bar.n)
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
