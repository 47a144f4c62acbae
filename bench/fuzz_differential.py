"""Differential check against Kafka's Java client over the fuzz corpus.

    python bench/fuzz_differential.py [--count N] [--seed S] [--corpus DIR ...] [--keep DIR]

Inputs are the record sets of the fuzz corpus (``fuzz/corpus/to_arrow``,
``records`` and ``convert``, or the folders given, such as a long campaign's
corpus), and as many mutants of them as ``--count`` asks: bytes flipped, set,
cut, spliced and repeated, half of them with their batch checksums made good
again so that both readers look past them.  Each input is decoded by the Java
client (the oracle in ``../shared/oracle``, all inputs in one JVM) and by
kcodec (``read_batches``, validating, rendered in the oracle's canonical JSON
by ``tests/canonical.py``).

The counts: *agree* (the same records, or both refuse), *documented* (a
deliberate difference listed in ``DOCUMENTED``) and *disagree*, grouped by
reason with one example input each (kept in ``--keep``).
"""
from __future__ import annotations

import argparse
import json
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
import zlib
from collections import Counter
from pathlib import Path
from typing import Dict, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
try:  # an installed kcodec (CI checks the sdist's), else this checkout's
    import kcodec  # noqa: F401
except ImportError:
    sys.path.insert(0, str(ROOT))

from canonical import render  # noqa: E402

from kcodec.errors import KcodecError  # noqa: E402
from kcodec.records import batch_header  # noqa: E402
from kcodec.records.framing import iter_entries  # noqa: E402

#: Where kcodec refuses what Java reads, deliberately: the words of kcodec's error.  An inner message
#: running past the end of its decompressed wrapper: Java ends the set there and drops it silently;
#: validating, kcodec raises (and read without validation, kcodec reads what Java reads).
DOCUMENTED = {"inner message overruns its wrapper": "of the decompressed wrapper has size"}
#: Where Java fails and kcodec reads: the Java exception's class and the start of its message.  A size
#: field within 12 of 2**31 - 1 overflows ByteBufferLogInputStream.nextBatch's int sum (size + 12), so
#: Java throws from ByteBuffer.limit where the batch is only a partial one at the end.
JAVA_FAILS = {"size field near 2**31 overflows Java's int": ("java.lang.IllegalArgumentException", "newLimit < 0")}


def _oracle_dir() -> Path:
    env = os.environ.get("KCODEC_ORACLE_DIR")
    for candidate in ([Path(env)] if env else []) + [ROOT.parent / "shared" / "oracle",
                                                      ROOT.parent.parent / "shared" / "oracle"]:
        if (candidate / "oracle.py").exists():
            return candidate
    raise SystemExit("no oracle: set KCODEC_ORACLE_DIR to ../shared/oracle")


def corpus(folders: List[Path]) -> List[bytes]:
    out = []
    for folder in folders:
        skip = 1 if folder.name == "convert" else 0  # its first byte picks the conversion
        for path in sorted(folder.iterdir()):
            if path.is_file():
                data = path.read_bytes()[skip:]
                if data:
                    out.append(data)
    return out


def _reseal(data: bytearray) -> None:
    """Make every whole batch's checksum (v2 CRC-32C, v0/v1 CRC-32) match its bytes again."""
    try:
        entries = list(iter_entries(bytes(data)))
    except KcodecError:
        return
    for e in entries:
        if e.magic == 2 and e.size >= 61:
            batch_header.seal(data, e.position, e.size)
        elif e.magic in (0, 1) and e.size >= 26:
            struct.pack_into(">I", data, e.position + 12, zlib.crc32(data[e.position + 16:e.position + e.size]))


def mutant(rng: random.Random, seeds: List[bytes]) -> bytes:
    data = bytearray(rng.choice(seeds))
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(6)
        if kind == 0 and data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[rng.randrange(len(data))] = rng.choice((0, 0x7F, 0x80, 0xFF, rng.randrange(256)))
        elif kind == 2 and len(data) > 1:
            del data[rng.randrange(1, len(data)):]
        elif kind == 3:
            other = rng.choice(seeds)
            data += other[rng.randrange(len(other)):]
        elif kind == 4 and len(data) > 4:
            at = rng.randrange(len(data) - 4)
            struct.pack_into(">i", data, at, rng.choice((-1, 0, 1, 2 ** 31 - 1, -2 ** 31, rng.randrange(1 << 16))))
        elif kind == 5 and data:
            at = rng.randrange(len(data))
            data[at:at] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
    if rng.random() < 0.5:
        _reseal(data)
    return bytes(data)


def java_documents(inputs: List[bytes], work: Path) -> List[Dict]:
    oracle = _oracle_dir()
    cp = subprocess.run([sys.executable, str(oracle / "oracle.py"), "build"], capture_output=True, text=True,
                        check=True).stdout.strip().splitlines()[-1]
    classes = work / "classes"
    classes.mkdir()
    subprocess.run(["javac", "-nowarn", "-cp", cp, "-d", str(classes), str(ROOT / "bench" / "java" / "OracleMany.java")],
                   check=True)
    paths = []
    for i, data in enumerate(inputs):
        p = work / f"{i:06d}.bin"
        p.write_bytes(data)
        paths.append(p)
    subprocess.run(["java", "-XX:+UseSerialGC", "-Xmx1g", "-Xss4m", "-cp", f"{classes}{os.pathsep}{cp}", "OracleMany"],
                   input="\n".join(map(str, paths)), text=True, check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return [json.loads(Path(f"{p}.java.json").read_text()) for p in paths]


def compare(data: bytes, java: Dict) -> Tuple[str, str]:
    """(agree | documented | disagree, reason)."""
    java_ok = "error" not in java
    try:
        mine: Optional[Dict] = render(data)
        error = None
    except KcodecError as exc:
        mine, error = None, exc
    if java_ok and mine is not None:
        return ("agree", "same records") if mine == java else ("disagree", "both read, different records")
    if not java_ok and mine is None:
        return "agree", "both refuse"
    if java_ok:
        for name, marker in DOCUMENTED.items():
            if marker in error.message:
                try:
                    loose = render(data, validate=False)
                except KcodecError:
                    loose = None
                if loose == java:
                    return "documented", name
        return "disagree", f"Java reads, kcodec refuses: {type(error).__name__}: {error.message[:70]}"
    cause = java["error"].get("causes", [{}])[-1] if java["error"].get("causes") else java["error"]
    for name, (cls, start) in JAVA_FAILS.items():
        if cause.get("class") == cls and str(cause.get("message")).startswith(start):
            return "documented", name
    return "disagree", f"kcodec reads, Java refuses: {cause.get('class', '?')}: {str(cause.get('message'))[:70]}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--count", type=int, default=2000, help="inputs to check (corpus files first, then mutants)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--corpus", type=Path, nargs="*",
                    default=[ROOT / "fuzz" / "corpus" / t for t in ("to_arrow", "records", "convert")])
    ap.add_argument("--keep", type=Path, help="folder for one example input of each disagreement")
    args = ap.parse_args(argv)
    seeds = corpus(args.corpus)
    rng = random.Random(args.seed)
    inputs = seeds[:args.count] + [mutant(rng, seeds) for _ in range(max(0, args.count - len(seeds)))]
    started = time.time()
    with tempfile.TemporaryDirectory() as tmp:
        docs = java_documents(inputs, Path(tmp))
    java_s = time.time() - started
    counts: Counter = Counter()
    reasons: Counter = Counter()
    examples: Dict[str, bytes] = {}
    for data, doc in zip(inputs, docs):
        verdict, reason = compare(data, doc)
        counts[verdict] += 1
        reasons[(verdict, reason)] += 1
        examples.setdefault(reason, data)
    print(f"{len(inputs)} inputs ({len(seeds)} corpus files, the rest mutants); Java {java_s:.0f} s, "
          f"all {time.time() - started:.0f} s")
    for verdict in ("agree", "documented", "disagree"):
        print(f"{verdict}: {counts[verdict]}")
        for (v, reason), n in reasons.most_common():
            if v == verdict:
                print(f"    {n:7d}  {reason}")
    if args.keep:
        args.keep.mkdir(parents=True, exist_ok=True)
        for i, ((v, reason), _) in enumerate(reasons.most_common()):
            if v == "disagree":
                (args.keep / f"disagree-{i}.bin").write_bytes(examples[reason])
                (args.keep / f"disagree-{i}.txt").write_text(reason + "\n")
    return 1 if counts["disagree"] else 0


if __name__ == "__main__":
    sys.exit(main())
