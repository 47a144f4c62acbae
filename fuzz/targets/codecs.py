"""Each codec's Kafka framing: the first byte picks codec, magic and limit, the rest is the payload.

Oracles: the Python codec (``Codec.decompress``) and its native functions
(the capsule the readers call) give one verdict and the same bytes, under
any size limit that holds the content; whatever a codec writes of the
input, it reads back.
"""
from common import OracleMismatch, same_verdict, verdict

from kcodec import get_codec
from kcodec._native.native_codec import native_of

CODECS = ("gzip", "snappy", "lz4", "zstd")
LIMITS = (1 << 10, 1 << 16, 1 << 22)


def test_one_input(data: bytes) -> None:
    if not data:
        return
    choice, payload = data[0], data[1:]
    name = CODECS[choice & 3]
    magic = 2 if name == "zstd" else (choice >> 2) % 3
    codec = get_codec(name)
    native = native_of(codec)
    verdicts = []
    for limit in LIMITS:
        py = verdict(lambda: bytes(codec.decompress(payload, magic=magic, max_size=limit)))
        if native is not None:
            same_verdict(f"{name} magic {magic} native (limit {limit})", py,
                         verdict(lambda: bytes(native.decompress(payload, magic, limit))))
        verdicts.append(py)
    # A content that fits a smaller limit reads the same under a larger one.
    for (small, _), (large, large_error) in zip(verdicts, verdicts[1:]):
        if small is not None and (large_error is not None or large != small):
            raise OracleMismatch(f"{name}: a larger limit changed the verdict")
    if choice & 0x80:
        frame = codec.compress(payload, magic=magic)
        if bytes(codec.decompress(frame, magic=magic, max_size=len(payload) + 1)) != payload:
            raise OracleMismatch(f"{name} magic {magic}: what it wrote does not read back")
        if native is not None and bytes(native.decompress(frame, magic, len(payload) + 1)) != payload:
            raise OracleMismatch(f"{name} magic {magic}: the native functions do not read back what it wrote")
