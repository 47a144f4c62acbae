import argparse
import sys

from kcodec.advise.cli import _arguments, run

parser = argparse.ArgumentParser(prog="python -m kcodec.advise")
_arguments(parser)
sys.exit(run(parser.parse_args()))
