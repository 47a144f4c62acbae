"""kcodec-isal: Kafka's gzip (compression id 1) with Intel ISA-L's deflate.

Installing this distribution makes kcodec use :class:`IsalGzipCodec` for gzip,
through the ``kcodec.codecs`` entry point named ``gzip``.  The framing is
kcodec's own (Java's header bytes, one member, the JDK's reading rules); only
the deflate engine changes, so the output is readable by Kafka's Java client
and by any gzip reader, though its bytes differ from zlib's.

ISA-L has four levels, 0 (fastest) to 3 (smallest).  Kafka's levels map onto
them by intent:

=============  ==========
Kafka level    ISA-L level
=============  ==========
1              0
2, 3, 4        1
5, 6, -1       2 (ISA-L's default, as -1 is zlib's default 6)
7, 8, 9        3
=============  ==========
"""
from __future__ import annotations

from kcodec.compression.gzip import GzipCodec

__all__ = ["IsalGzipCodec", "ISAL_LEVELS", "__version__"]

__version__ = "0.1.0"

#: Kafka gzip level -> ISA-L level.
ISAL_LEVELS = {1: 0, 2: 1, 3: 1, 4: 1, 5: 2, 6: 2, -1: 2, 7: 3, 8: 3, 9: 3}


class IsalGzipCodec(GzipCodec):
    """gzip in Kafka's framing, deflated and inflated by ISA-L (``isal.isal_zlib``)."""

    requires = "isal"
    engine_module = "isal.isal_zlib"
    engine_package = "isal"

    def engine_level(self, level: int) -> int:
        return ISAL_LEVELS[level]
