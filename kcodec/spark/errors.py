"""kcodec's errors back from Spark tasks.

An exception raised in a Python worker reaches the driver as a
``PythonException`` whose text holds the worker's traceback, ending in
``kcodec.errors.<Class>: <message>``.  :func:`raising_kcodec_errors` turns it
back into that kcodec error, so a caller of :func:`kcodec.spark.write_log`
catches the same exception class a local run raises.
"""
from __future__ import annotations

import contextlib
import re
from typing import Iterator, Optional

import kcodec.errors as _errors

__all__ = ["raising_kcodec_errors", "kcodec_error_in"]

_LINE = re.compile(r"^kcodec\.errors\.(?P<cls>[A-Za-z]+): (?P<message>.*)$", re.M)


def kcodec_error_in(exc: BaseException) -> Optional[_errors.KcodecError]:
    """The kcodec error a Spark task raised, rebuilt from the text of ``exc`` (None if there is none)."""
    found = None
    for m in _LINE.finditer(str(exc)):
        found = m  # the last one: the error that ended the task
    if found is None:
        return None
    cls = getattr(_errors, found.group("cls"), None)
    if not (isinstance(cls, type) and issubclass(cls, _errors.KcodecError)):
        return None
    err = cls.__new__(cls)
    _errors.KcodecError.__init__(err, found.group("message"))
    return err


@contextlib.contextmanager
def raising_kcodec_errors() -> Iterator[None]:
    """Re-raise a kcodec error that failed a Spark job as itself (the Spark error is its cause)."""
    try:
        yield
    except Exception as exc:
        err = kcodec_error_in(exc)
        if err is None:
            raise
        raise err from exc
