"""``.. kcodec-cli::``: the CLI reference, written from ``kcodec.cli.build_parser()`` at build time.

The page is made from the same argparse parsers the ``kcodec`` command runs, so a flag
added, renamed or removed changes the reference with it.
"""
from __future__ import annotations

import argparse
from typing import List

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective


def _subcommands(parser: argparse.ArgumentParser):
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield name, helps.get(name) or "", sub


def _flag(action: argparse.Action) -> str:
    if not action.option_strings:
        return action.metavar or action.dest
    names = ", ".join(action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or action.dest.upper()
    return f"{names} {metavar}"


def _escape(text: str) -> str:
    # argparse help is plain text: nothing in it is RST markup
    return text.replace("\\", "\\\\").replace("*", "\\*").replace("`", "\\`").replace("|", "\\|")


def cli_rst(parser: argparse.ArgumentParser) -> List[str]:
    """The reference as RST lines: one section per subcommand, its usage and every flag."""
    lines: List[str] = []
    for name, summary, sub in _subcommands(parser):
        title = f"kcodec {name}"
        lines += [title, "-" * len(title), "", _escape(summary[:1].upper() + summary[1:]) + ".", ""]
        if sub.description:
            lines += [_escape(sub.description), ""]
        usage = sub.format_usage().replace("usage: ", "", 1).rstrip()
        lines += [".. code-block:: text", ""] + ["   " + u for u in usage.splitlines()] + [""]
        for group in sub._action_groups:
            actions = [a for a in group._group_actions if not isinstance(a, argparse._HelpAction)]
            if not actions:
                continue
            if group.title not in _UNTITLED:  # a command's own groups, as its --help shows them
                lines += [f".. rubric:: {_escape(group.title[:1].upper() + group.title[1:])}", ""]
                if group.description:
                    lines += [_escape(group.description[:1].upper() + group.description[1:]) + ".", ""]
            for action in actions:
                lines += [f"``{_flag(action)}``", "   " + _escape(action.help or ""), ""]
    return lines


# argparse's default groups: their flags are listed without a heading
_UNTITLED = ("options", "optional arguments", "positional arguments")


class KcodecCli(SphinxDirective):
    has_content = False

    def run(self):
        from kcodec.cli import build_parser

        container = nodes.section()
        container.document = self.state.document
        self.state.nested_parse(StringList(cli_rst(build_parser()), source="kcodec.cli.build_parser()"),
                                self.content_offset, container, match_titles=True)
        return container.children


def setup(app):
    app.add_directive("kcodec-cli", KcodecCli)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
