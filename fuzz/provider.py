"""Splitting one fuzz input into typed values, the same way with or without atheris,
so that a finding replays anywhere."""
from __future__ import annotations


class Provider:
    """Values taken from the front of the input; the rest is what is left."""

    def __init__(self, data: bytes) -> None:
        self._data = data
        self._pos = 0

    def _take(self, n: int) -> bytes:
        out = self._data[self._pos:self._pos + n]
        self._pos += len(out)
        return out

    def int(self, lo: int, hi: int) -> int:
        span = hi - lo + 1
        width = max(1, (span.bit_length() + 7) // 8)
        raw = int.from_bytes(self._take(width).ljust(width, b"\0"), "little")
        return lo + raw % span

    def bool(self) -> bool:
        return bool(self.int(0, 1))

    def bytes(self, n: int) -> bytes:
        return self._take(n)

    def rest(self) -> bytes:
        return self._take(len(self._data) - self._pos)
