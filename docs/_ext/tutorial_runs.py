"""The tutorial's runs without Sphinx: the page's declared runs, a run, and the blocks of its output.

``kcodec_tutorial`` (the Sphinx directives) and ``tests/test_docs.py`` share these, so the build and the
test read the page and the output the same way; this module needs no docutils, which the test suite lacks.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

#: a run's whole terminal output may take this long (a Spark start and a sample's measure)
RUN_TIMEOUT_S = 900


class Step(NamedTuple):
    """One ``kcodec-run`` of a page: its id, its ``kcodec`` arguments and the blocks it explains."""

    run: str
    args: List[str]
    blocks: List[str]


_FENCE = re.compile(r"^```\{(kcodec-run|kcodec-output)\}\s*(.*)$")
_OPTION = re.compile(r"^:(\w+):\s*(.*)$")


def tutorial_steps(page: str) -> List[Step]:
    """The runs a Markdown page declares, in order, each with the block titles it shows."""
    steps: Dict[str, Step] = {}
    lines = page.splitlines()
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        i += 1
        if not match:
            continue
        kind, argument = match.groups()
        options: Dict[str, str] = {}
        while i < len(lines) and lines[i].strip() != "```":
            option = _OPTION.match(lines[i].strip())
            if option:
                options[option.group(1)] = option.group(2)
            i += 1
        if kind == "kcodec-run":
            steps[options["id"]] = Step(options["id"], shlex.split(argument), [])
        else:
            steps[options["run"]].blocks.append(argument.strip())
    return list(steps.values())


def output_blocks(text: str) -> List[List[str]]:
    """A terminal output as its blocks: runs of non-blank lines."""
    blocks: List[List[str]] = []
    current: List[str] = []
    for line in text.splitlines():
        if line.strip():
            current.append(line.rstrip())
        elif current:
            blocks.append(current)
            current = []
    if current:
        blocks.append(current)
    return blocks


def block_titled(text: str, title: str) -> Optional[List[str]]:
    """The block of ``text`` whose first line starts with ``title``, or None."""
    for block in output_blocks(text):
        if block[0].startswith(title):
            return block
    return None


def kcodec_environment() -> Dict[str, str]:
    """The environment a run needs to import the kcodec this build documents."""
    import kcodec

    root = str(Path(kcodec.__file__).resolve().parent.parent)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def run_kcodec(args: List[str], cwd: Path, timeout: float = RUN_TIMEOUT_S) -> subprocess.CompletedProcess:
    """``kcodec ARGS`` as a user types it, in ``cwd``, with this interpreter."""
    return subprocess.run([sys.executable, "-m", "kcodec.cli", *args], cwd=cwd, env=kcodec_environment(),
                          capture_output=True, text=True, timeout=timeout)
