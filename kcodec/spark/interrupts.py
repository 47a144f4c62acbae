"""Ctrl-C while a PySpark job runs, said as one ``KeyboardInterrupt`` instead of pages of py4j's errors.

PySpark's own SIGINT handler asks the JVM to cancel every job through the very connection the
interrupted call is waiting on, and py4j logs each broken call with its traceback; the JVM, in the
same process group, got the signal too and is ending.  :class:`Interrupts` stands beside the making
of a session (:func:`kcodec.spark.session.get_session`): it notes a Ctrl-C while the JVM starts and
raises it once the session is made; :func:`interrupted` finds a Ctrl-C behind the error a
collect ends in.
"""
from __future__ import annotations

import contextlib
import logging
from types import FrameType
from typing import Any, Iterator, Optional, Set

__all__ = ["Interrupts", "interrupted"]


class Interrupts:
    """Ctrl-C while Spark runs ends in one KeyboardInterrupt, said in one line by the CLI.

    PySpark's own SIGINT handler asks the JVM to cancel every job through the very
    connection the interrupted call is waiting on, and py4j logs each broken call with
    its traceback; the JVM, in the same process group, got the signal too and is ending.
    """

    def __init__(self) -> None:
        self._handler: Any = None
        self._quiet: Optional[logging.Handler] = None
        self.pending = False

    def starting(self) -> None:
        """While the JVM starts, a Ctrl-C is noted, not raised: the launch it would break (the JVM got the
        signal too) fails with Spark's own error, which :meth:`started` turns back into the interrupt."""
        import signal
        import threading

        if threading.current_thread() is not threading.main_thread():
            return

        def noted(signum: int, frame: Optional[FrameType]) -> None:
            self.pending = True

        previous = signal.signal(signal.SIGINT, noted)
        if self._handler is None:
            self._handler = previous

    @contextlib.contextmanager
    def keeping(self) -> Iterator[None]:
        """Keep the handler of :meth:`starting` while the session is made: SparkContext's constructor
        installs PySpark's own, which only :meth:`started` may replace."""
        import signal

        real = signal.signal

        def keep(signum: int, handler: Any) -> Any:
            return signal.getsignal(signum) if signum == signal.SIGINT else real(signum, handler)

        signal.signal = keep  # type: ignore[assignment]  # the same call, answering SIGINT with the handler kept
        try:
            yield
        finally:
            signal.signal = real

    def started(self, failure: Optional[BaseException] = None) -> None:
        """After the session is made (or failed with ``failure``): raise the Ctrl-C noted meanwhile, else
        let the next one raise."""
        import signal
        import threading

        if self.pending:
            raise KeyboardInterrupt
        if failure is not None:
            raise failure
        if threading.current_thread() is not threading.main_thread():
            return

        def interrupted(signum: int, frame: Optional[FrameType]) -> None:
            raise KeyboardInterrupt

        previous = signal.signal(signal.SIGINT, interrupted)
        if self._handler is None:
            self._handler = previous
        root = logging.getLogger()
        if not root.handlers:  # py4j logs broken calls on the root logger, which would print them
            self._quiet = logging.NullHandler()
            root.addHandler(self._quiet)

    def restore(self) -> None:
        """Put back the handler found before :meth:`starting`."""
        import signal

        if self._handler is not None:
            signal.signal(signal.SIGINT, self._handler)
            self._handler = None
        if self._quiet is not None:
            logging.getLogger().removeHandler(self._quiet)
            self._quiet = None


def interrupted(exc: BaseException) -> bool:
    """Whether ``exc`` was raised while handling a Ctrl-C: PySpark's Arrow collect ends its stream in a
    ``finally`` that asks the JVM, already ending, for its result, and that error replaces the interrupt."""
    seen: Set[int] = set()
    at: Optional[BaseException] = exc
    while at is not None and id(at) not in seen:
        if isinstance(at, KeyboardInterrupt):
            return True
        seen.add(id(at))
        at = at.__cause__ or at.__context__
    return False
