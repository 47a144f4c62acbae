from setuptools import setup

# The C extension is built by cffi from kcodec_libdeflate/_build.py.
setup(cffi_modules=["kcodec_libdeflate/_build.py:ffibuilder"])
