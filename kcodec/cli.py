"""The ``kcodec`` command: a thin dispatcher over kcodec's modules.

Exit codes: 0 success, 1 the input is corrupt or an operation failed, 2 usage.
"""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Callable, Optional, Sequence

from kcodec.errors import KcodecError
from kcodec.escape import terminal_text

__all__ = ["main", "build_parser"]

# Subcommands that live in other modules: name -> module with add_parser(sub) and run(args).
_PLUGGED = {
    "advise": "kcodec.advise.cli",
    "recompress": "kcodec.log.recompression",
    "compact": "kcodec.log.cleaner",
    "retain": "kcodec.log.retention",
}


def _add_dump(sub) -> None:
    p = sub.add_parser("dump", help="print the batches of .log files (and check .index/.timeindex)",
                       description="Print batch headers of Kafka .log segment files or raw batch files, "
                                   "in the spirit of kafka-dump-log.")
    p.add_argument("files", nargs="+",
                   help=".log, .index or .timeindex files, or any file of batches (paths or URLs)")
    p.add_argument("--deep-iteration", action="store_true", help="print every record, not only batches")
    p.add_argument("--print-data-log", action="store_true",
                   help="print keys, values and headers (implies --deep-iteration)")
    p.add_argument("--index-sanity-check", action="store_true",
                   help="for index files: only run the sanity check")
    p.add_argument("--skip-crc", action="store_true", help="do not verify checksums")
    p.add_argument("--json", action="store_true", help="one JSON object per batch on stdout")
    from kcodec.log.arguments import add_storage_option_argument
    add_storage_option_argument(p)
    p.set_defaults(func=lambda args: __import__("kcodec.dump", fromlist=["run"]).run(args))


def _add_codecs(sub) -> None:
    p = sub.add_parser("codecs", help="list the registered compression codecs",
                       description="List every codec implementation kcodec knows: built-ins, installed plugins "
                                   "and codecs registered in this process, which one is active for each id, "
                                   "and where it came from.")
    p.add_argument("--json", action="store_true", help="one JSON list of the codecs on stdout")

    def run(args) -> int:
        from kcodec.compression.registry import codecs
        rows = codecs()
        if args.json:
            print(json.dumps([r.__dict__ for r in rows], indent=1))
            return 0
        print(f"{'id':>2}  {'name':<8} {'active':<6}  {'implementation':<45} origin")
        for r in rows:
            print(f"{r.id:>2}  {r.name:<8} {'yes' if r.active else 'no':<6}  {r.implementation:<45} {r.origin}")
        return 0

    p.set_defaults(func=run)


def build_parser() -> argparse.ArgumentParser:
    from kcodec._version import __version__
    parser = argparse.ArgumentParser(prog="kcodec", description="Kafka record formats and compression.")
    parser.add_argument("--version", action="version", version=f"kcodec {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    _add_dump(sub)
    _add_codecs(sub)
    for name, module in _PLUGGED.items():
        try:
            mod = importlib.import_module(module)
        except ImportError:
            continue
        adder: Optional[Callable] = getattr(mod, "cli_add_parser", None) or getattr(mod, "add_parser", None)
        runner = getattr(mod, "cli_run", None) or getattr(mod, "run", None)
        if adder is None or runner is None:
            continue
        p = adder(sub)
        p.set_defaults(func=runner)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "func", None) is None:
        parser.print_help()
        return 2
    try:
        return int(args.func(args) or 0)
    except (KcodecError, FileNotFoundError, IsADirectoryError, PermissionError) as exc:
        # messages quote names from data (topics, file names): no control character reaches the terminal
        print(f"kcodec {args.command}: {terminal_text(exc)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        # Ctrl-C: one line; the Spark session and the JVM it started end with the interpreter
        print(f"kcodec {args.command}: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
