"""A small corrupt zstd batch costs memory in proportion to its size, not to the size limit.

A frame may declare a content size its blocks cannot hold, and a frame
without one has a block bound of 128 KiB per compressed block however short
the block is.  Readers size their first buffer from a declared size only
when the blocks can hold it, and otherwise from what the input can plausibly
hold, growing only as decoding actually produces bytes.
"""
import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

MAGIC = struct.pack("<I", 0xFD2FB528)


def _block(kind: int, size: int, last: bool = False) -> bytes:
    return ((size << 3) | (kind << 1) | last).to_bytes(3, "little")


#: zstd payloads of a few hundred bytes that cannot decode.
FRAMES = {
    # declares 250 MiB (under the 256 MiB limit), then one compressed block of noise
    "declared 250 MiB": (MAGIC + b"\x80\x58" + struct.pack("<I", 250 << 20) + _block(2, 400, True)
                         + bytes(range(256)) + bytes(144)),
    # 110 one-byte compressed blocks: a bound of 110 x 128 KiB
    "many short blocks": MAGIC + b"\x00\x70" + (_block(2, 1) + b"\xff") * 110 + _block(2, 1, True) + b"\xff",
    # a frame as Java writes it, its compressed block overwritten
    "corrupt Java frame": None,
}

#: The bound the test states: 64 MiB of address space and 4 MiB of Python memory over a warmed-up process.
ADDRESS_SPACE_MIB = 64
PYTHON_MIB = 4

SCRIPT = textwrap.dedent('''
    import json, resource, struct, sys, tracemalloc
    import kcodec
    from kcodec.records import batch_header

    def batch(payload):
        b = kcodec.RecordBatchBuilder(magic=2, compression="zstd")
        for i in range(5):
            b.append(timestamp=1, key=b"k", value=b"x" * 80)
        out = bytearray(b.build())
        if payload is None:  # noise over the compressed block, CRC made good
            out[70:120] = bytes(range(50))
        else:
            out = out[:61] + payload
        struct.pack_into(">i", out, 8, len(out) - 12)
        batch_header.seal(out, 0, len(out))
        return bytes(out)

    frames = {k: (bytes.fromhex(v) if v else None) for k, v in json.loads(sys.argv[1]).items()}
    codec = kcodec.get_codec("zstd")
    reads = {
        "to_arrow": lambda d: kcodec.to_arrow(d),
        "to_arrow views": lambda d: kcodec.to_arrow(d, views=True),
        "read_batches": lambda d: [r for b in kcodec.read_batches(d) for r in b],
        "decompress": lambda d: codec.decompress(d[61:]),
    }
    b = kcodec.RecordBatchBuilder(magic=2, compression="zstd")
    b.append(timestamp=1, key=b"k", value=b"v" * 1000)
    sound = bytes(b.build())
    for read in reads.values():  # every path warmed up on a sound batch first
        read(sound)

    def vm_kib():
        for line in open("/proc/self/status"):
            if line.startswith("VmSize:"):
                return int(line.split()[1])

    limit = (vm_kib() + int(sys.argv[2]) * 1024) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    tracemalloc.start()
    out = {}
    for name, frame in frames.items():
        data = batch(frame)
        for how, read in reads.items():
            tracemalloc.reset_peak()
            try:
                read(data)
                verdict = "read"
            except Exception as exc:
                verdict = type(exc).__name__
            out[f"{name} / {how}"] = [len(data), verdict, tracemalloc.get_traced_memory()[1]]
    print(json.dumps(out))
''')


def test_corrupt_batches_stay_small():
    frames = {k: (v.hex() if v else "") for k, v in FRAMES.items()}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(frames), str(ADDRESS_SPACE_MIB)],
                          capture_output=True, text=True, timeout=300, cwd=Path(__file__).parent)
    assert proc.returncode == 0, proc.stderr
    results = json.loads(proc.stdout)
    assert len(results) == 12
    for case, (size, verdict, peak) in results.items():
        assert size < 600, case
        assert verdict == "CorruptCompressedDataError", (case, verdict)  # MemoryError past the address space bound
        assert peak < PYTHON_MIB << 20, (case, peak)


@pytest.mark.parametrize("ratio_case", ["zeros", "text"])
def test_sound_frames_of_any_ratio_still_read(ratio_case):
    """Frames past the plausible first size (256 per compressed byte) grow to their bound and read whole."""
    import kcodec

    data = bytes(3 << 20) if ratio_case == "zeros" else b"".join(b"record %d;" % (i % 10) for i in range(300000))
    codec = kcodec.get_codec("zstd")
    frame = codec.compress(data)
    assert codec.decompress(frame) == data
    b = kcodec.RecordBatchBuilder(magic=2, compression="zstd")
    b.append(timestamp=1, key=None, value=data)
    batch = bytes(b.build())
    assert kcodec.to_arrow(batch)["value"][0].as_py() == data
    assert kcodec.to_arrow(batch, views=True)["value"][0].as_py() == data
    assert next(iter(next(iter(kcodec.read_batches(batch))))).value == data
