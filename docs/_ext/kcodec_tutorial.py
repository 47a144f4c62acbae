"""``kcodec-run``, ``kcodec-output``, ``kcodec-report``, ``kcodec-topic`` and ``kcodec-file``: a page made
from real runs at build time.

The tutorial explains ``kcodec advise``'s terminal output block by block.  Pasted output
would drift from what the command prints, so the page holds commands, not output: each
``kcodec-run`` runs its command once per build, each ``kcodec-output`` shows one block of that
run's output (the lines from the one starting with its title to the next blank line), and
``kcodec-report`` shows a screenshot of the run's HTML report taken by headless Chromium.  The
runs' folder is ``tutorial-run`` beside the output folder, never inside it, so nothing a run
writes is published.  A block the page names that the run did not print is a build warning,
so ``sphinx -W`` fails when the page and the output disagree.

The cluster step reads a cluster: the first ``kcodec-topic`` starts a Tansu broker on a free loopback
port, each produces records into a topic of it with a real producer and says so on the page, and a
run's ``{bootstrap}`` is shown and run as that broker's address.  ``kcodec-file`` shows a file a run
wrote (``--emit``'s configuration).  A broker that cannot start is one build warning naming why, and
the page says the step was not run: it never shows output the build did not make.  Only the report's
screenshot is left out without a warning where no Chromium is found, with a note on the page.

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
from tutorial_runs import (
    BOOTSTRAP,
    PRODUCE_RATE,
    TutorialBroker,
    block_titled,
    produce_step,
    run_kcodec,
    with_bootstrap,
    written_file,
)

LOG = logging.getLogger(__name__)


class _Run(NamedTuple):
    command: str
    stdout: str
    returncode: int


def _runs(env) -> Dict[str, _Run]:
    if not hasattr(env, "kcodec_tutorial_runs"):
        env.kcodec_tutorial_runs = {}
    return env.kcodec_tutorial_runs


def _failed(env) -> Dict[str, str]:
    """What could not be done (a run's id, or "broker") -> why; the build warned once for each."""
    if not hasattr(env, "kcodec_tutorial_failed"):
        env.kcodec_tutorial_failed = {}
    return env.kcodec_tutorial_failed


def _not_run(why: str) -> nodes.Node:
    note = nodes.warning()
    note += nodes.paragraph(text=f"This build did not run this step: {why}.")
    return note


def _broker(directive: SphinxDirective) -> Optional[TutorialBroker]:
    """The page's broker, started on first use (kept on the app: a process does not pickle with the env)."""
    app = directive.env.app
    if getattr(app, "kcodec_broker", None) is None and "broker" not in _failed(directive.env):
        try:
            app.kcodec_broker = TutorialBroker().start()
        except (RuntimeError, OSError) as exc:
            _failed(directive.env)["broker"] = str(exc).splitlines()[0]
            LOG.warning(f"tutorial: {_failed(directive.env)['broker']}", location=directive.get_location())
    return getattr(app, "kcodec_broker", None)


def _stop_broker(app, _exc) -> None:
    broker = getattr(app, "kcodec_broker", None)
    if broker is not None:
        broker.stop()
        app.kcodec_broker = None


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
        args = shlex.split(self.arguments[0])
        runs = _runs(self.env)
        run_id = self.options["id"]
        bootstrap = None
        if any(BOOTSTRAP in a for a in args):
            broker = _broker(self)
            if broker is None:
                _failed(self.env)[run_id] = _failed(self.env)["broker"]
                return [_not_run(_failed(self.env)["broker"])]
            bootstrap = broker.bootstrap
        # the command as run, the broker's address in place: what the page shows is what ran
        command = shlex.join(with_bootstrap(args, bootstrap))
        if run_id not in runs:
            LOG.info(f"tutorial: running kcodec {command}")
            done = run_kcodec(with_bootstrap(args, bootstrap), _workdir(self.env))
            runs[run_id] = _Run(command, done.stdout, done.returncode)
            if done.returncode != 0:
                _failed(self.env)[run_id] = f"exited {done.returncode}"
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
        if self.options["run"] in _failed(self.env):
            return []  # its run's failure was the build's warning
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


#: the screenshot is cut in a blank band of at least this many rows (a gap between blocks, not lines) ...
_CUT_GAP_PX = 16
#: ... found within this many rows past the height asked for, so no line of text is cut in half
_CUT_SEARCH_PX = 800


def _cut_between_lines(shot: Path, height: int) -> None:
    """Cut ``shot`` at its first blank band (rows of the page's background only) at or past ``height``."""
    try:
        from PIL import Image  # matplotlib's, which the report's charts need
    except ImportError:
        return
    with Image.open(shot) as image:
        gray = image.convert("L")
        width, rows = gray.size
        background = gray.getpixel((width - 1, 0))
        run = 0
        for y in range(min(height, rows), rows):
            low, high = gray.crop((0, y, width, y + 1)).getextrema()
            run = run + 1 if low == high == background else 0
            if run >= _CUT_GAP_PX:
                image.crop((0, 0, width, y + 1)).save(shot)
                return


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
            return [nodes.note("", nodes.paragraph(
                text=f"The screenshot of {self.arguments[0]}/report.html is taken by headless Chromium when "
                     "the site is built, and this build found no Chromium."))]
        shot = report.parent / "report-1280.png"
        height = self.options.get("height", 1400)
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--window-size=1280,{height + _CUT_SEARCH_PX}", f"--screenshot={shot}", report.as_uri()],
                       capture_output=True, timeout=120, check=False)
        if not shot.is_file():
            LOG.warning(f"Chromium wrote no screenshot of {report}", location=self.get_location())
            return []
        _cut_between_lines(shot, height)
        # images are copied to the output from the source folder's relative paths
        static = Path(self.env.srcdir) / "_generated"
        static.mkdir(exist_ok=True)
        target = static / f"{self.env.docname.replace('/', '-')}-{Path(self.arguments[0]).name}.png"
        shutil.copyfile(shot, target)
        image = nodes.image(uri=f"/_generated/{target.name}", alt=self.options.get("alt", "the HTML report"))
        self.env.note_dependency(str(target))
        return [image]


class TopicDirective(SphinxDirective):
    """Records a real producer writes into a topic of the page's broker, and a sentence saying so."""

    required_arguments = 1  # the topic
    option_spec = {"records": directives.positive_int, "producer": directives.unchanged,
                   "producer-file": directives.unchanged, "topic-config": directives.unchanged}

    def run(self) -> List[nodes.Node]:
        step = produce_step(self.arguments[0], {k: str(v) for k, v in self.options.items()})
        if "broker" in _failed(self.env):
            return [_not_run(_failed(self.env)["broker"])]
        broker = _broker(self)
        if broker is None:
            return [_not_run(_failed(self.env)["broker"])]
        first = step.topic not in broker.produced
        try:
            config = broker.produce(step, _workdir(self.env))
        except (RuntimeError, OSError, ValueError) as exc:
            _failed(self.env)["broker"] = str(exc).splitlines()[0]
            LOG.warning(f"tutorial: producing to {step.topic}: {_failed(self.env)['broker']}",
                        location=self.get_location())
            return [_not_run(_failed(self.env)["broker"])]
        settings = ", ".join(f"{k}={v}" for k, v in config.items()) or "its defaults"
        if first:
            made = f"created {step.topic}" + (
                f" ({', '.join(f'{k}={v}' for k, v in step.topic_config.items())})" if step.topic_config else "")
            text = (f"For this page, the build started a Tansu broker at {broker.bootstrap}, {made}, and "
                    f"produced {step.records:,} of the sample's clicks records into it with {broker.client} "
                    f"(confluent-kafka) at {settings}, {PRODUCE_RATE:,.0f} records a second.")
        else:
            source = f" from {written_file(step.config_file, _workdir(self.env)).name}" if step.config_file else ""
            text = (f"The build then produced {step.records:,} more records into {step.topic} with "
                    f"{broker.client}, configured{source}: {settings}.")
        return [nodes.paragraph(text=text)]


class FileDirective(SphinxDirective):
    """A file a run wrote, named by a glob in the runs' folder."""

    required_arguments = 1

    def run(self) -> List[nodes.Node]:
        if _failed(self.env):
            return []  # a run before it failed, and the build said so
        try:
            path = written_file(self.arguments[0], _workdir(self.env))
        except FileNotFoundError as exc:
            LOG.warning(str(exc), location=self.get_location())
            return []
        text = path.read_text().rstrip("\n")
        caption = nodes.caption(text=path.name)
        literal = nodes.literal_block(text, text)
        literal["language"] = "properties" if path.suffix == ".properties" else "text"
        container = nodes.container("", caption, literal, literal_block=True)
        return [container]


def setup(app):
    app.add_directive("kcodec-run", RunDirective)
    app.add_directive("kcodec-output", OutputDirective)
    app.add_directive("kcodec-report", ReportDirective)
    app.add_directive("kcodec-topic", TopicDirective)
    app.add_directive("kcodec-file", FileDirective)
    app.connect("build-finished", _stop_broker)
    return {"parallel_read_safe": False, "parallel_write_safe": True}
