"""Compiled core of kcodec (Cython over the C sources in ``csrc/``)."""
