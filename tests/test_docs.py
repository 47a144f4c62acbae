"""The documentation cannot drift from the code.

* README.md's and docs/'s Python examples run, page by page, in an empty folder;
* every ``<!-- sample-output: COMMAND -->`` block is what COMMAND prints there now;
* every ``<!-- output -->`` block is what the Python example just before it prints;
* every CLI subcommand and flag has help text (the CLI reference is made from it);
* the Sphinx site builds with warnings as errors (when the ``docs`` extra is installed).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Tuple

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
PAGES = sorted([ROOT / "README.md", *DOCS.glob("*.md")])

_FENCE = re.compile(r"^```(\w*)\s*$")
_SKIP = re.compile(r"^<!-- skip: .+ -->$")
_SAMPLE = re.compile(r"^<!-- sample-output: (kcodec .+) -->$")
_OUTPUT = re.compile(r"^<!-- output -->$")

pytestmark = pytest.mark.skipif(not DOCS.is_dir(), reason=f"{DOCS} is not here (the docs ship in the sdist)")


def blocks(text: str) -> List[Tuple[str, str, str]]:
    """Each fenced block as (language, body, the non-empty line before it)."""
    out, lines, i, before = [], text.splitlines(), 0, ""
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m and m.group(1):
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith("```"))
            out.append((m.group(1), "\n".join(lines[i + 1:end]) + "\n", before))
            i, before = end + 1, ""
            continue
        if lines[i].strip():
            before = lines[i].strip()
        i += 1
    return out


def python_examples(page: Path) -> List[str]:
    return [body for lang, body, before in blocks(page.read_text()) if lang == "python" and not _SKIP.match(before)]


def printed_outputs(text: str) -> List[Tuple[int, str]]:
    """(index among the runnable Python examples, what it prints) of each ``<!-- output -->`` block."""
    found: List[Tuple[int, str]] = []
    runnable, last = -1, ""
    for lang, body, before in blocks(text):
        if _OUTPUT.match(before):
            assert lang == "text" and last == "python", \
                f"an output block must be a text block right after a Python example:\n{body}"
            found.append((runnable, body))
        if lang == "python" and not _SKIP.match(before):
            runnable += 1
        last = lang if lang != "python" or not _SKIP.match(before) else "skipped"
    return found


def samples(page: Path) -> List[Tuple[str, str]]:
    """(command, expected output) of each sample-output block of a page."""
    found = []
    for lang, body, before in blocks(page.read_text()):
        m = _SAMPLE.match(before)
        if m:
            assert lang == "text", f"{page.name}: the sample of {m.group(1)!r} is not a text block"
            found.append((m.group(1), body))
    return found


def run_kcodec(command: str, cwd: Path, timeout: float) -> str:
    argv = shlex.split(command)
    assert argv[0] == "kcodec"
    proc = subprocess.run([sys.executable, "-m", "kcodec.cli", *argv[1:]], cwd=cwd, capture_output=True,
                          text=True, timeout=timeout)
    assert proc.returncode == 0, f"{command} failed:\n{proc.stderr}"
    return proc.stdout


def _needs_spark(command: str) -> bool:
    return command.startswith("kcodec advise")


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", [p for p in PAGES if python_examples(p) or samples(p)], ids=_page_id)
def test_examples_run_and_samples_match(page, tmp_path, monkeypatch, capsys):
    """The page's Python examples run in order in one namespace; then its samples are rerun there."""
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__docs__"}
    printed = dict(printed_outputs(page.read_text()))
    for n, body in enumerate(python_examples(page), 1):
        capsys.readouterr()
        try:
            exec(compile(body, f"{_page_id(page)} example {n}", "exec"), namespace)
        except Exception as exc:  # the example and its error, not only a traceback into exec
            pytest.fail(f"{_page_id(page)} example {n} raised {exc!r}:\n{body}")
        if n - 1 in printed:
            assert capsys.readouterr().out == printed[n - 1], f"{_page_id(page)} example {n} prints otherwise"
    capsys.readouterr()
    for command, expected in samples(page):
        if _needs_spark(command):
            continue  # test_advise_sample runs those
        assert run_kcodec(command, tmp_path, timeout=120) == expected, f"{_page_id(page)}: {command}"


def _masked(text: str) -> List[str]:
    """The lines with every figure as N and runs of spaces as one.

    Measured figures (MB/s, and the CPU dollars and totals made from them, whose saving may
    have either sign) move with the machine, and columns are padded to their width; the words
    and their order may not move.
    """
    return [" ".join(re.sub(r"-?\$?\d+(\.\d+)?", "N", line).split()) for line in text.splitlines()]


def matches_sample(out: str, expected: str, exact: bool = False) -> bool:
    """Whether a run's output is the sample's; a sample ending in a line "..." is its first lines.

    ``exact``: every figure too, not only the words (advise's summary, whose settings and dollars
    depend only on the data and the flags).
    """
    want, got = (expected.splitlines(), out.splitlines()) if exact else (_masked(expected), _masked(out))
    if want and want[-1] == "...":
        want, got = want[:-1], got[:len(want) - 1]
    return got == want


ADVISE_SAMPLES = [(p, c, e) for p in PAGES for c, e in samples(p) if _needs_spark(c)]


@pytest.mark.spark
@pytest.mark.parametrize("page,command,expected", ADVISE_SAMPLES,
                         ids=[f"{_page_id(p)}: {c}" for p, c, _ in ADVISE_SAMPLES])
def test_advise_sample(page, command, expected, tmp_path):
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    out = run_kcodec(command, tmp_path, timeout=900)
    assert matches_sample(out, expected, exact=True), f"{_page_id(page)}: {command} printed\n{out}"


def test_a_changed_sample_is_found():
    sample = ("clicks\n  today      none 100%; 18 records/batch\n  set        compression.type=lz4\n"
              "  saves      $29/month ($44 -> $16: CPU -$0.50)\n...\n")
    assert matches_sample("clicks\n  today      none 100%; 7 records/batch\n  set        compression.type=lz4\n"
                          "  saves      $5.41/month ($12 -> $6.76: CPU $0.32)\nmore\n", sample)
    assert not matches_sample("clicks\n  today none 100%; 7 records/batch\n  set        keep today's settings\n",
                              sample)
    assert not matches_sample("clicks\n", sample)


def test_an_output_block_belongs_to_the_example_before_it():
    page = ("```python\nprint(1)\n```\n\n<!-- output -->\n```text\n1\n```\n\n<!-- skip: x -->\n```python\nx\n```\n\n"
            "```python\nprint(2)\n```\n<!-- output -->\n```text\n2\n```\n")
    assert printed_outputs(page) == [(0, "1\n"), (1, "2\n")]
    with pytest.raises(AssertionError, match="right after a Python example"):
        printed_outputs("<!-- skip: x -->\n```python\nprint(1)\n```\n<!-- output -->\n```text\n1\n```\n")


def test_every_page_has_what_it_is_checked_by():
    """The README shows a real advise run, and its code examples are real ones."""
    readme = ROOT / "README.md"
    assert any(_needs_spark(c) for c, _ in samples(readme))
    assert python_examples(readme)
    for command, expected in samples(readme):
        assert expected.strip() and "SAMPLE" not in expected


# ---- the CLI's help text, from which docs/cli.md is generated

def _subparsers(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name), sub


def missing_help(parser: argparse.ArgumentParser) -> List[str]:
    """Each subcommand without a summary or description, and each argument without help."""
    missing = []
    for name, summary, sub in _subparsers(parser):
        if not (summary or "").strip():
            missing.append(f"kcodec {name}: no help line")
        if not (sub.description or "").strip():
            missing.append(f"kcodec {name}: no description")
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                missing.append(f"kcodec {name} {'/'.join(action.option_strings) or action.dest}: no help")
    return missing


def test_every_subcommand_and_flag_has_help():
    from kcodec.cli import build_parser

    parser = build_parser()
    names = [name for name, _, _ in _subparsers(parser)]
    assert {"dump", "codecs", "advise", "recompress", "compact", "retain"} <= set(names)
    assert missing_help(parser) == []


def test_a_flag_without_help_is_found():
    parser = argparse.ArgumentParser(prog="kcodec")
    sub = parser.add_subparsers()
    p = sub.add_parser("thing", help="does a thing", description="Does a thing.")
    p.add_argument("--quiet", action="store_true")
    sub.add_parser("other")
    assert missing_help(parser) == ["kcodec thing --quiet: no help", "kcodec other: no help line",
                                    "kcodec other: no description"]


def test_the_cli_reference_names_every_flag():
    pytest.importorskip("docutils",
                        reason="the CLI reference's builder needs the docs extra: pip install 'kcodec[docs]'")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from kcodec_cli import cli_rst
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    from kcodec.cli import build_parser

    text = "\n".join(cli_rst(build_parser()))
    for name, _, sub in _subparsers(build_parser()):
        assert f"kcodec {name}\n" in text
        for action in sub._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            for flag in action.option_strings:
                assert flag in text, f"kcodec {name} {flag}"


# ---- the tutorial: a page made from real runs

def _tutorial():
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        import tutorial_runs
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    return tutorial_runs


def uncovered_blocks(output: str, titles: List[str]) -> List[str]:
    """The first line of each output block that no title of the page starts."""
    return [block[0] for block in _tutorial().output_blocks(output)
            if not any(block[0].startswith(title) for title in titles)]


def test_the_tutorial_declares_its_runs():
    tutorial = _tutorial()
    steps = tutorial.tutorial_steps((DOCS / "tutorial.md").read_text())
    runs = [s for s in steps if isinstance(s, tutorial.Step)]
    assert [s.run for s in runs] == ["sample", "logs", "cluster", "check"]
    assert runs[0].args[0] == "advise" and "estate:" in runs[0].blocks
    # the cluster step: records produced before the run, its --emit file shown, records produced
    # with that file's settings, then --check on the first run's results
    kinds = [type(s).__name__ for s in steps]
    assert kinds == ["Step", "Step", "Produce", "Step", "ShowFile", "Produce", "Step"]
    first, after = (s for s in steps if isinstance(s, tutorial.Produce))
    assert first.config == {"compression.type": "lz4", "linger.ms": "5"} and first.config_file is None
    assert after.config is None and after.config_file == steps[4].pattern
    assert runs[2].args[:3] == ["advise", "--bootstrap-server", tutorial.BOOTSTRAP] and "--emit" in runs[2].args
    assert runs[3].args[runs[3].args.index("--check") + 1] == "cluster-run/results.json"
    assert tutorial.needs_broker(steps) and not tutorial.needs_broker(steps[:2])


def test_a_tutorial_topic_and_its_producer_settings_are_read():
    tutorial = _tutorial()
    page = ("```{kcodec-topic} t\n:records: 50\n:producer: linger.ms=5 compression.type=lz4\n"
            ":topic-config: retention.ms=1000\n```\n\n```{kcodec-run} advise --bootstrap-server {bootstrap}\n"
            ":id: x\n```\n\n```{kcodec-file} out/*.properties\n```\n")
    produce, run, shown = tutorial.tutorial_steps(page)
    assert produce == tutorial.Produce("t", 50, {"linger.ms": "5", "compression.type": "lz4"}, None,
                                       {"retention.ms": "1000"})
    assert tutorial.with_bootstrap(run.args, "127.0.0.1:9") == ["advise", "--bootstrap-server", "127.0.0.1:9"]
    with pytest.raises(ValueError, match="needs the page's broker"):
        tutorial.with_bootstrap(run.args, None)
    assert shown == tutorial.ShowFile("out/*.properties")
    with pytest.raises(ValueError, match="one of :producer: and :producer-file:"):
        tutorial.produce_step("t", {"records": "5"})
    with pytest.raises(ValueError, match="not name=value"):
        tutorial.produce_step("t", {"records": "5", "producer": "lz4"})


def test_a_written_file_is_found_once_and_its_properties_read(tmp_path):
    tutorial = _tutorial()
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "01-zstd.librdkafka.properties").write_text(
        "# saves $1/month\n! also a comment\ncompression.type=zstd\n\nlinger.ms = 100\n")
    path = tutorial.written_file("out/*.librdkafka.properties", tmp_path)
    assert tutorial.properties(path) == {"compression.type": "zstd", "linger.ms": "100"}
    with pytest.raises(FileNotFoundError, match="names 0 files"):
        tutorial.written_file("out/*.java.properties", tmp_path)
    (tmp_path / "out" / "02-lz4.librdkafka.properties").write_text("")
    with pytest.raises(FileNotFoundError, match="names 2 files"):
        tutorial.written_file("out/*.librdkafka.properties", tmp_path)


def test_a_tutorial_that_leaves_a_block_out_is_found():
    output = "kcodec advise: x\n\nestate: 3 topics\n\nwhat to set: one line\n  3 zstd\n"
    assert uncovered_blocks(output, ["kcodec advise:", "estate:", "what to set:"]) == []
    assert uncovered_blocks(output, ["kcodec advise:", "estate:"]) == ["what to set: one line"]


def test_the_report_screenshot_is_cut_in_a_gap_between_blocks(tmp_path):
    """Not through a line of text: the first band of 16 background rows at or past the height asked for."""
    pytest.importorskip("sphinx", reason="the tutorial's directives need the docs extra: pip install 'kcodec[docs]'")
    image_module = pytest.importorskip("PIL.Image")
    sys.path.insert(0, str(DOCS / "_ext"))
    try:
        from kcodec_tutorial import _cut_between_lines
    finally:
        sys.path.remove(str(DOCS / "_ext"))
    image = image_module.new("RGB", (40, 300), "white")
    # lines of text 10 rows high with 8 blank rows between them, and a block gap of 26 rows (154-179)
    for top in [*range(0, 160, 18), *range(180, 300, 18)]:
        image.paste((0, 0, 0), (2, top, 38, min(top + 10, 300)))
    shot = tmp_path / "shot.png"
    image.save(shot)
    _cut_between_lines(shot, 100)
    with image_module.open(shot) as cut:
        assert cut.size == (40, 154 + 16)  # the gap's first 16 rows kept
    image.save(shot)
    _cut_between_lines(shot, 200)  # no block gap after row 200: the screenshot is kept whole
    with image_module.open(shot) as cut:
        assert cut.size == (40, 300)


@pytest.mark.spark
def test_the_tutorial_explains_every_block_its_runs_print(tmp_path):
    """docs/tutorial.md's steps, in order and in one folder as a reader makes them, the cluster's on a
    Tansu broker of their own: every block a run prints is one the page shows and explains, every
    block the page shows is printed, and every file it shows was written."""
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("Spark needs Java")
    tutorial = _tutorial()
    broker = None
    try:
        for step in tutorial.tutorial_steps((DOCS / "tutorial.md").read_text()):
            if broker is None and tutorial.needs_broker([step]):
                missing = tutorial.tansu_missing()
                if missing:  # the steps before the cluster's were checked
                    pytest.skip(missing)
                broker = tutorial.TutorialBroker().start()
            if isinstance(step, tutorial.Produce):
                config = broker.produce(step, tmp_path)
                assert broker.produced[step.topic] > 0 and config
                continue
            if isinstance(step, tutorial.ShowFile):
                assert tutorial.properties(tutorial.written_file(step.pattern, tmp_path)), step.pattern
                continue
            args = tutorial.with_bootstrap(step.args, broker.bootstrap if broker else None)
            done = tutorial.run_kcodec(args, tmp_path)
            assert done.returncode == 0, f"kcodec {shlex.join(args)}: {done.stderr[-2000:]}"
            missing = [t for t in step.blocks if tutorial.block_titled(done.stdout, t) is None]
            assert not missing, f"the page shows blocks that kcodec {shlex.join(args)} no longer prints: {missing}"
            unexplained = uncovered_blocks(done.stdout, step.blocks)
            assert not unexplained, f"kcodec {shlex.join(args)} prints blocks the page does not show: {unexplained}"
    finally:
        if broker is not None:
            broker.stop()


# ---- the site itself

# The site's tutorial runs advise on Spark while it builds; CI builds the site with -W itself.
@pytest.mark.spark
def test_docs_build_without_warnings(tmp_path):
    for module in ("sphinx", "myst_parser"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"{module} is not installed: pip install 'kcodec[docs]'")
    proc = subprocess.run([sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html",
                           "-d", str(tmp_path / "doctrees"), str(DOCS), str(tmp_path / "html")],
                          cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-4000:]
    assert (tmp_path / "html" / "cli.html").is_file() and (tmp_path / "html" / "api.html").is_file()
