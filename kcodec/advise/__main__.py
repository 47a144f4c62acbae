"""``python -m kcodec.advise`` for spark-submit: the same command line, and the same one-line errors, as
``kcodec advise``."""
import sys

from kcodec.cli import main

sys.exit(main(["advise", *sys.argv[1:]]))
