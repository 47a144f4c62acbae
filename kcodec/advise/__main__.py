import argparse
import sys

from kcodec.advise.cli import _arguments, run
from kcodec.errors import KcodecError

parser = argparse.ArgumentParser(prog="python -m kcodec.advise")
_arguments(parser)
try:
    sys.exit(run(parser.parse_args()))
except KcodecError as exc:
    print(f"kcodec advise: {exc}", file=sys.stderr)
    sys.exit(1)
