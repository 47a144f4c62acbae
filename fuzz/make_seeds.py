"""Write the seed corpus: ``fuzz/corpus/<target>/`` from kcodec's own builders and the test fixtures.

    python fuzz/make_seeds.py [OUT]     (OUT defaults to fuzz/corpus)

Deterministic: the same files every run.  Seeds stay small (4 KiB or less
each) so that mutations reach every header field quickly; a long campaign
grows its own corpus from them in another folder.
"""
from __future__ import annotations

import hashlib
import random
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

import kcodec  # noqa: E402
from kcodec.log import LogWriter  # noqa: E402
from kcodec.records.framing import iter_entries  # noqa: E402

MAX_SEED = 4096
FIXTURES = ROOT / "tests" / "fixtures" / "oracle"
CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _prefix(data: bytes) -> bytes:
    """The whole batches at the start of ``data`` that fit a seed (at least the first)."""
    end = 0
    for e in iter_entries(data):
        if end and e.position + e.size > MAX_SEED:
            break
        end = e.position + e.size
    return data[:end]


def fixture_sets():
    """Record sets the Java client wrote (tests/fixtures/oracle), cut to whole batches."""
    for path in sorted(FIXTURES.glob("*.bin")):
        data = _prefix(path.read_bytes())
        if 0 < len(data) <= 2 * MAX_SEED:
            yield path.stem, data


def built_sets():
    """Batches kcodec writes: every codec and magic, headers, control and transactional batches."""
    rng = random.Random(7)
    for magic in (0, 1, 2):
        for codec in CODECS:
            if codec == "zstd" and magic < 2:
                continue
            if magic == 2:
                b = kcodec.RecordBatchBuilder(magic=2, compression=codec, base_offset=rng.randint(0, 1000),
                                              producer_id=5, producer_epoch=1, base_sequence=0,
                                              is_transactional=codec == "lz4")
                for i in range(4):
                    b.append(timestamp=1_700_000_000_000 + i, key=None if i == 2 else b"key-%d" % i,
                             value=bytes(rng.getrandbits(8) for _ in range(20)) * 2,
                             headers=[("h", b"v%d" % i)] if i % 2 else ())
            else:
                b = kcodec.LegacyRecordBatchBuilder(magic, codec, base_offset=rng.randint(0, 1000))
                for i in range(4):
                    b.append(b"key-%d" % i, b"value %d " % i * 5, timestamp=1_700_000_000_000 + i)
            yield f"built_v{magic}_{codec}", bytes(b.build())
    marker = kcodec.RecordBatchBuilder(magic=2, base_offset=9, producer_id=5, producer_epoch=1,
                                       is_transactional=True, is_control=True)
    marker.append_control(kcodec.EndTransactionMarker(kcodec.ControlRecordType.COMMIT, 3), timestamp=1)
    yield "built_control", bytes(marker.build())


def codec_payloads():
    """``choice byte + payload`` for the codecs target: frames each codec writes, and Java's."""
    sample = b"".join(b"record %d of a Kafka topic; " % i for i in range(60))
    for i, name in enumerate(("gzip", "snappy", "lz4", "zstd")):
        codec = kcodec.get_codec(name)
        for magic in (0, 1, 2) if name != "zstd" else (2,):
            choice = i | (magic << 2) | 0x80
            yield f"{name}_v{magic}", bytes([choice]) + codec.compress(sample, magic=magic)
            yield f"{name}_v{magic}_empty", bytes([choice & 0x7F]) + codec.compress(b"", magic=magic)
    for stem, data in fixture_sets():
        for e in iter_entries(data):
            if e.magic == 2:
                codec_id = data[e.position + 22] & 7
                if 1 <= codec_id <= 4:
                    yield f"java_{stem}", bytes([(codec_id - 1) | (2 << 2)]) + data[e.position + 61:e.position + e.size]
                break


def segment_inputs():
    """Provider layout of the segment target: start, index, time index, then the .log."""
    with tempfile.TemporaryDirectory() as tmp:
        for n, (codec, interval) in enumerate((("none", 0), ("zstd", 100), ("gzip", 0), ("lz4", 200))):
            folder = Path(tmp) / f"t-{n}"
            with LogWriter(folder, index_interval_bytes=interval) as w:
                for i in range(6):
                    b = kcodec.RecordBatchBuilder(magic=2, compression=codec, base_offset=100 + i * 3)
                    for j in range(3):
                        b.append(timestamp=1_700_000_000_000 + i * 10 + j, key=b"k", value=b"v%d" % j * 7)
                    w.append(bytes(b.build()))
            name = "%020d" % 100
            log = (folder / f"{name}.log").read_bytes()
            index = (folder / f"{name}.index").read_bytes()[:64]
            times = (folder / f"{name}.timeindex").read_bytes()[:48]
            yield f"segment_{codec}", bytes([n * 5, len(index)]) + index + bytes([1, len(times)]) + times + log
            yield f"segment_{codec}_no_timeindex", bytes([n * 7, len(index)]) + index + bytes([0]) + log


def provider_noise(count: int, seed: int):
    """Plain bytes for the targets that split their input into many small choices."""
    rng = random.Random(seed)
    for i in range(count):
        yield f"noise_{i}", bytes(rng.getrandbits(8) for _ in range(rng.randint(16, 400)))


def seeds():
    sets = list(fixture_sets()) + list(built_sets())
    return {
        "to_arrow": sets,
        "records": sets,
        "codecs": list(codec_payloads()),
        "segment": list(segment_inputs()),
        "convert": [(f"{stem}_to{m}_{c}", bytes([m | (c << 2)]) + data)
                    for k, (stem, data) in enumerate(sets) for m, c in [(k % 3, k % 6)]],
        "builder": list(provider_noise(40, 1)),
        "advise": list(provider_noise(30, 2)),
    }


def main(out: Path) -> None:
    total = 0
    for target, items in seeds().items():
        folder = out / target
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.iterdir():
            old.unlink()
        for name, data in items:
            # Named by content, as libFuzzer names what it adds, with the origin in front.
            digest = hashlib.sha1(data).hexdigest()[:12]
            (folder / f"{name}-{digest}").write_bytes(data)
            total += len(data)
        print(f"{target}: {len(items)} seeds")
    print(f"{total} bytes in all")


if __name__ == "__main__":
    main(Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "corpus")
