"""``kcodec-run``, ``kcodec-output`` and ``kcodec-report``: a page made from a real run at build time.

The tutorial explains ``kcodec advise``'s terminal output block by block.  Pasted output
would drift from what the command prints, so the page holds commands, not output: each
``kcodec-run`` runs its command once per build, each ``kcodec-output`` shows one block of that
run's output (the lines from the one starting with its title to the next blank line), and
``kcodec-report`` shows a screenshot of the run's HTML report taken by headless Chromium.  The
runs' folder is ``tutorial-run`` beside the output folder, never inside it, so nothing a run
writes is published.  A block the page names that the run did not print is a build warning,
so ``sphinx -W`` fails when the page and the output disagree.

The page's parsing and the runs are :mod:`tutorial_runs`'s, which the docs test shares.
"""
from __future__ import annotations

import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Dict, List, NamedTuple, Optional

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from tutorial_runs import block_titled, run_kcodec

LOG = logging.getLogger(__name__)


class _Run(NamedTuple):
    command: str
    stdout: str
    returncode: int


def _runs(env) -> Dict[str, _Run]:
    if not hasattr(env, "kcodec_tutorial_runs"):
        env.kcodec_tutorial_runs = {}
    return env.kcodec_tutorial_runs


def _workdir(env) -> Path:
    path = Path(env.app.outdir).resolve().parent / "tutorial-run"
    path.mkdir(parents=True, exist_ok=True)
    return path


class RunDirective(SphinxDirective):
    """Runs ``kcodec ARGS`` and shows the command as typed."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"id": directives.unchanged_required}

    def run(self) -> List[nodes.Node]:
        command = self.arguments[0]
        runs = _runs(self.env)
        run_id = self.options["id"]
        if run_id not in runs:
            LOG.info(f"tutorial: running kcodec {command}")
            done = run_kcodec(shlex.split(command), _workdir(self.env))
            runs[run_id] = _Run(command, done.stdout, done.returncode)
            if done.returncode != 0:
                LOG.warning(f"tutorial run {run_id!r} (kcodec {command}) exited {done.returncode}: "
                            f"{done.stderr.strip().splitlines()[-1:]}", location=self.get_location())
        block = nodes.literal_block(f"kcodec {command}", f"kcodec {command}")
        block["language"] = "sh"
        return [block]


class OutputDirective(SphinxDirective):
    """One block of a run's terminal output, found by the start of its first line."""

    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"run": directives.unchanged_required}

    def run(self) -> List[nodes.Node]:
        run = _runs(self.env).get(self.options["run"])
        if run is None:
            LOG.warning(f"kcodec-output before its run {self.options['run']!r}", location=self.get_location())
            return []
        block = block_titled(run.stdout, self.arguments[0])
        if block is None:
            LOG.warning(f"the run of kcodec {run.command} printed no block starting {self.arguments[0]!r}",
                        location=self.get_location())
            return []
        text = "\n".join(block)
        literal = nodes.literal_block(text, text)
        literal["language"] = "text"
        return [literal]


def _chromium() -> Optional[str]:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


class ReportDirective(SphinxDirective):
    """A screenshot, at 1280 px, of the HTML report a run wrote (its ``--out`` folder)."""

    required_arguments = 1  # the report's folder, relative to the run's folder
    option_spec = {"alt": directives.unchanged, "height": directives.nonnegative_int}

    def run(self) -> List[nodes.Node]:
        report = _workdir(self.env) / self.arguments[0] / "report.html"
        if not report.is_file():
            LOG.warning(f"no report at {report}", location=self.get_location())
            return []
        browser = _chromium()
        if browser is None:
            LOG.info("tutorial: no Chromium here, so the report's screenshot is left out")
            return []
        shot = report.parent / "report-1280.png"
        height = self.options.get("height", 1400)
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size=1280,{height}", f"--screenshot={shot}", report.as_uri()],
                       capture_output=True, timeout=120, check=False)
        if not shot.is_file():
            LOG.warning(f"Chromium wrote no screenshot of {report}", location=self.get_location())
            return []
        # images are copied to the output from the source folder's relative paths
        static = Path(self.env.srcdir) / "_generated"
        static.mkdir(exist_ok=True)
        target = static / f"{self.env.docname.replace('/', '-')}-{Path(self.arguments[0]).name}.png"
        shutil.copyfile(shot, target)
        image = nodes.image(uri=f"/_generated/{target.name}", alt=self.options.get("alt", "the HTML report"))
        self.env.note_dependency(str(target))
        return [image]


def setup(app):
    app.add_directive("kcodec-run", RunDirective)
    app.add_directive("kcodec-output", OutputDirective)
    app.add_directive("kcodec-report", ReportDirective)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
