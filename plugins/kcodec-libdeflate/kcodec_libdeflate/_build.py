"""cffi build script of ``kcodec_libdeflate._kafka_gzip`` (run by setup.py's ``cffi_modules``).

Compiles kafka_gzip.c against the system's libdeflate (Debian: ``libdeflate-dev``)
and kcodec's native codec interface header (``kcodec.get_include()``).
"""
import os

from cffi import FFI

import kcodec

HERE = os.path.dirname(os.path.abspath(__file__))

ffibuilder = FFI()
# The declarations are kafka_gzip.h's, without its preprocessor lines; the
# interface struct stays opaque to Python (kcodec reads it through the capsule).
with open(os.path.join(HERE, "kafka_gzip.h")) as header:
    declarations = [line for line in header if not line.lstrip().startswith("#")]
ffibuilder.cdef("typedef struct kcodec_codec_v1 kcodec_codec_v1;\n" + "".join(declarations))
ffibuilder.set_source(
    "kcodec_libdeflate._kafka_gzip",
    '#include "kafka_gzip.h"',
    # setuptools wants sources relative to setup.py
    sources=[os.path.relpath(os.path.join(HERE, "kafka_gzip.c"))],
    include_dirs=[HERE, kcodec.get_include()],
    libraries=["deflate"],
    extra_compile_args=["-O2"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
