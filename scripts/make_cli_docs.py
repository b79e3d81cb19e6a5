"""Rewrites the help blocks of docs/cli.md from the command line's own parser: each block between
`<!-- help: NAME -->` and `<!-- /help -->` becomes `hierviz NAME --help` (`hierviz --help` for `main`),
formatted 100 columns wide. tests/cli/test_cli_docs.py fails when a block differs from the parser.

    .venv/bin/python scripts/make_cli_docs.py
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parents[1] / "docs" / "cli.md"
BLOCK = re.compile(r"(<!-- help: (\w+) -->\n)```text\n.*?```\n(<!-- /help -->)", re.S)
WIDTH = "100"


def help_texts() -> dict[str, str]:
    """`main` and every subcommand's name -> its --help text."""
    os.environ["COLUMNS"] = WIDTH
    from hierviz.cli.commands import build_parser

    parser = build_parser()
    texts = {"main": parser.format_help()}
    for action in parser._actions:  # argparse keeps its subcommands' parsers only here
        if isinstance(action, argparse._SubParsersAction):
            texts.update({name: sub.format_help() for name, sub in action.choices.items()})
    return texts


def rendered(page: str, texts: dict[str, str]) -> str:
    """`page` with each help block replaced by its command's help."""
    def block(m: re.Match[str]) -> str:
        return f"{m.group(1)}```text\n{texts[m.group(2)].rstrip()}\n```\n{m.group(3)}"
    return BLOCK.sub(block, page)


def main() -> int:
    page = PAGE.read_text()
    PAGE.write_text(rendered(page, help_texts()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
