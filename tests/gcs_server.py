"""A real Google Cloud Storage API server for the tests: gcp-storage-emulator on 127.0.0.1, reached by gcsfs."""
from __future__ import annotations

import os
import subprocess
import sys
import uuid

import pytest

from s3_server import BucketServer, _free_port, wait_until_serving

# gcsfs otherwise first asks each bucket over gRPC whether it is a hierarchical-namespace
# bucket, which an HTTP-only emulator cannot answer (a 60 s timeout per bucket).
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")


class GcsServer(BucketServer):
    # the emulator answers puts issued together about a second late each time: one after another
    concurrent_puts = False

    @property
    def storage_options(self) -> dict:
        return {"endpoint_url": self.endpoint, "token": "anon", "project": "kcodec-test"}

    def _new_filesystem(self):
        import gcsfs
        return gcsfs.GCSFileSystem(skip_instance_cache=True, **self.storage_options)

    def new_bucket(self) -> str:
        name = "kc-" + uuid.uuid4().hex[:12]
        self.filesystem().mkdir(name)
        return name



@pytest.fixture(scope="session")
def gcs():
    pytest.importorskip("gcsfs")
    pytest.importorskip("gcp_storage_emulator")
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "gcp_storage_emulator", "start", "-H", "127.0.0.1",
                             "--port", str(port), "--in-memory", "-q"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    endpoint = f"http://127.0.0.1:{port}"
    wait_until_serving(proc, endpoint + "/storage/v1/b?project=kcodec-test", "the GCS emulator")
    server = GcsServer(endpoint, proc)
    yield server
    server.stop()
