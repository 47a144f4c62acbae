"""A real S3 API server for the tests: moto in server mode on 127.0.0.1, reached over HTTP by s3fs."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
import uuid

import pytest

# Fake credentials: moto accepts any, and the tests check they never reach a message.
KEY = "AKIAKCODECTESTFAKE01"
SECRET = "kcodec/fake+secret/0123456789abcdefSECRET"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_until_serving(proc: subprocess.Popen, probe_url: str, what: str, timeout: float = 120) -> None:
    """Return once ``probe_url`` answers; kill ``proc`` and raise if it exits or ``timeout`` passes first.

    A server that exits fails at once; one still starting gets two minutes, since importing moto on a
    machine whose cores are all busy (a mutation run beside the suite) took more than 30 s."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            urllib.request.urlopen(probe_url, timeout=1).read()
            return
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                raise RuntimeError(f"{what} did not start")
            time.sleep(0.1)


class BucketServer:
    """An object-store server for the tests at ``endpoint``, run by ``proc``: its file system
    (``filesystem()``) and storage options."""

    #: whether ``upload_dir`` issues its puts together (moto: in well under half the time)
    concurrent_puts = True

    def __init__(self, endpoint: str, proc: subprocess.Popen) -> None:
        self.endpoint = endpoint
        self.proc = proc
        self._fs = None

    def filesystem(self):
        """The tests' own client of the server (never fsspec's cached instance, which kcodec's calls
        share), made once: each new one costs a client session, about 0.2 s of CPU, and the crash
        tests upload a fresh copy of a partition before every crash point."""
        if self._fs is None:
            self._fs = self._new_filesystem()
        return self._fs

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()

    def upload_dir(self, local: str, url: str) -> None:
        """Copy a local folder tree to ``url`` (scheme://bucket/prefix), one put per file, the puts
        issued together where the server takes them so (:attr:`concurrent_puts`)."""
        base = url.split("://", 1)[1].rstrip("/")
        objects = {}
        for root, _dirs, files in os.walk(local):
            for name in files:
                rel = os.path.relpath(os.path.join(root, name), local)
                with open(os.path.join(root, name), "rb") as f:
                    objects[f"{base}/{rel}"] = f.read()
        fs = self.filesystem()
        if self.concurrent_puts and objects:
            fs.pipe(objects)
        else:
            for key, data in objects.items():
                fs.pipe_file(key, data)


class S3Server(BucketServer):
    @property
    def storage_options(self) -> dict:
        return {"key": KEY, "secret": SECRET, "endpoint_url": self.endpoint,
                "client_kwargs": {"region_name": "us-east-1"}}

    def _new_filesystem(self):
        import s3fs
        return s3fs.S3FileSystem(skip_instance_cache=True, use_listings_cache=False, **self.storage_options)

    def new_bucket(self) -> str:
        name = "kc-" + uuid.uuid4().hex[:12]
        if getattr(self, "_client", None) is None:  # a boto3 client, like a file system, is costly to make
            import boto3
            self._client = boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=KEY,
                                        aws_secret_access_key=SECRET, region_name="us-east-1")
        self._client.create_bucket(Bucket=name)
        return name



def start_server() -> S3Server:
    pytest.importorskip("s3fs")
    pytest.importorskip("moto.server")
    port = _free_port()
    env = dict(os.environ, AWS_ACCESS_KEY_ID=KEY, AWS_SECRET_ACCESS_KEY=SECRET)
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    endpoint = f"http://127.0.0.1:{port}"
    wait_until_serving(proc, endpoint + "/moto-api/", "the moto S3 server")
    return S3Server(endpoint, proc)


@pytest.fixture(scope="session")
def s3():
    server = start_server()
    yield server
    server.stop()
