"""``kcodec advise`` on an s3:// estate (a moto S3 server on 127.0.0.1, reached over HTTP by s3fs) gives the
per-topic profile and recommendation it gives on the local copy, in the broker and tiered-storage layouts."""
from __future__ import annotations

import base64
import json
import shutil
import sys
import uuid
from pathlib import Path

import pytest

from kcodec.cli import main
from kcodec.storage import io_stats
from s3_server import KEY, SECRET, s3  # noqa: F401  (the session fixture)

# CPU priced at zero, no throughput floor and one batch.size: the recommendation then follows from ratios
# and batching alone (settings of equal cost are told apart by measured speed, which varies from run to run).
FLAGS = ["--codecs", "zstd:1,lz4", "--batch-sizes", "16k", "--linger-ms", "0,100", "--sample", "1MiB",
         "--vcpu-hour", "0", "--min-compress-mbps", "0", "--min-read-mbps", "0", "--no-progress"]
# what a run measures by the clock, left out of the comparison
# this run's measured CPU speeds; the bill's speeds and dollars must match
TIMED = {"measured_compress_mbps", "measured_compress_spread", "measured_read_mbps", "measured_read_spread"}


@pytest.fixture(scope="module")
def estate(tmp_path_factory):
    sys.path.insert(0, str(Path(__file__).parent))
    from advise_estate import build_estate

    root = tmp_path_factory.mktemp("estate")
    build_estate(root)
    return root


@pytest.fixture(scope="module")
def local_advice(spark, s3, estate, tmp_path_factory):
    """advise on the local estate, once for both tests: the reference profiles for the s3:// runs, and
    what ``--write s3://...`` puts through the S3 server; (profiles, report folder, written URL)."""
    out = tmp_path_factory.mktemp("local-advise")
    url = f"s3://{s3.new_bucket()}/written"
    opts = [f"--storage-option=key={KEY}", f"--storage-option=secret={SECRET}",
            f"--storage-option=endpoint_url={s3.endpoint}"]
    assert main(["advise", str(estate), "--write", url] + opts + FLAGS + ["--out", str(out)]) == 0
    return _profiles(json.loads((out / "results.json").read_text())), out, url


def _kafka_uuid() -> str:
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def tiered_copy(estate: Path, dest: Path) -> Path:
    """The estate laid out as LocalTieredStorage names it: <topic>-<partition>-<topic id>/<offset>-<segment id>.*"""
    for folder in sorted(estate.iterdir()):
        target = dest / f"{folder.name}-{_kafka_uuid()}"
        target.mkdir(parents=True)
        ids = {}
        for f in sorted(folder.iterdir()):
            stem, suffix = f.name.split(".", 1)
            seg_id = ids.setdefault(stem, _kafka_uuid())
            shutil.copyfile(f, target / f"{stem}-{seg_id}.{suffix}")
    return dest


def _profiles(doc):
    def strip(m):
        return None if m is None else {k: v for k, v in m.items() if k not in TIMED}

    return {t["topic"]: {"partitions": t["partitions"], "codec_mix": t["codec_mix"], "profile": t["profile"],
                         "today": strip(t["today"]), "recommended": strip(t["recommended"]), "config": t["config"],
                         "timestamps": t["timestamps"], "stored_per_day": t["stored_per_day"],
                         "settings": [strip(m) for m in t["settings"]]}
            for t in doc["topics"]}


def _advise(args, out: Path, capsys):
    assert main(["advise"] + args + FLAGS + ["--out", str(out)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    return _profiles(json.loads((out / "results.json").read_text()))


def test_advise_on_s3_matches_local(spark, s3, estate, local_advice, tmp_path, capsys):
    local = local_advice[0]
    assert len(local) == 6 and sum(1 for p in local.values() if p["recommended"]) >= 3
    bucket = s3.new_bucket()
    s3.upload_dir(str(estate), f"s3://{bucket}/kafka")
    s3.upload_dir(str(tiered_copy(estate, tmp_path / "tiered")), f"s3://{bucket}/tiered")
    opts = [f"--storage-option=key={KEY}", f"--storage-option=secret={SECRET}",
            f"--storage-option=endpoint_url={s3.endpoint}"]
    io_stats.reset()
    remote = _advise([f"s3://{bucket}/kafka"] + opts, tmp_path / "remote", capsys)
    # the driver plans from listings and index objects: no .log is fetched on the driver
    assert io_stats.bytes_read < sum(f.stat().st_size for f in estate.rglob("*.index")) + \
        sum(f.stat().st_size for f in estate.rglob("*.timeindex")) + 35 * len(list(estate.iterdir()))
    assert remote == local
    tiered = _advise([f"s3://{bucket}/tiered"] + opts, tmp_path / "tiered-report", capsys)
    assert tiered == local
    report = (tmp_path / "remote" / "results.json").read_text() + (tmp_path / "remote" / "report.html").read_text()
    assert SECRET not in report


def test_advise_names_a_missing_s3_input(s3, capsys):
    bucket = s3.new_bucket()
    args = ["advise", f"s3://{bucket}/nothing", f"--storage-option=key={KEY}", f"--storage-option=secret={SECRET}",
            f"--storage-option=endpoint_url={s3.endpoint}", "--no-progress"]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert f"s3://{bucket}/nothing: no such file or directory" in err and SECRET not in err
    assert main(["advise", "s3://b/x", "--storage-option", "nokeyvalue"]) == 1
    assert "--storage-option" in capsys.readouterr().err


def test_advise_writes_each_topic_to_s3(spark, s3, estate, local_advice):
    """``--write s3://...`` puts each recommended topic's segments through the S3 server: the topic's
    records as Spark reads them from the local estate, in the recommended codec, read back from the bucket."""
    from kcodec import get_codec
    from kcodec.log import open_log_dir

    profiles, report, url = local_advice
    assert SECRET not in (report / "results.json").read_text() + (report / "report.html").read_text()
    chosen = {t: p["recommended"]["codec"] for t, p in profiles.items() if p["recommended"]}
    assert chosen
    written = open_log_dir(url, storage_options=s3.storage_options)
    assert {t for t, _ in written} == set(chosen)
    counts = {r["topic"]: r["count"] for r in spark.read.format("kafka-log").load(str(estate))
              .groupBy("topic").count().collect()}
    for topic, codec in chosen.items():
        batches = [b for (t, _), p in written.items() if t == topic for b in p.batches()]
        assert {b.compression_id for b in batches if not b.is_control} == {get_codec(codec).id}, topic
        assert sum(b.record_count for b in batches if not b.is_control) == counts[topic], topic
    assert not list(Path.cwd().glob("s3:*"))  # nothing went to a local folder named like the URL
