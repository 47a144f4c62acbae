"""cffi build script of ``kcodec_libdeflate._kafka_gzip`` (run by setup.py's ``cffi_modules``).

Compiles kafka_gzip.c against the system's libdeflate (Debian: ``libdeflate-dev``)
and kcodec's native codec interface header, version 1, which the package ships in
``include/kcodec/codec.h``: the build does not import kcodec, so pip's isolated build
needs no kcodec from an index.  kcodec refuses a capsule of another interface version.
"""
import os

from cffi import FFI

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
    include_dirs=[HERE, os.path.join(HERE, "include")],
    libraries=["deflate"],
    extra_compile_args=["-O2"],
)

if __name__ == "__main__":
    ffibuilder.compile(verbose=True)
