"""docs/cli.md shows each command's --help as the parser prints it: a flag added, renamed or
reworded without `python scripts/make_cli_docs.py` fails here."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = importlib.util.spec_from_file_location("make_cli_docs", ROOT / "scripts" / "make_cli_docs.py")
assert SPEC is not None and SPEC.loader is not None
make_cli_docs = importlib.util.module_from_spec(SPEC)
SPEC.loader.exec_module(make_cli_docs)


def test_the_cli_page_shows_every_command_and_its_current_help():
    page = make_cli_docs.PAGE.read_text()
    texts = make_cli_docs.help_texts()
    shown = re.findall(r"<!-- help: (\w+) -->", page)
    assert sorted(shown) == sorted(texts)
    assert make_cli_docs.rendered(page, texts) == page, "run: .venv/bin/python scripts/make_cli_docs.py"


def test_a_stale_block_is_seen():
    page = make_cli_docs.PAGE.read_text()
    texts = make_cli_docs.help_texts()
    stale = page.replace("smallest accelerated subgraph kept", "smallest subgraph kept", 1)
    assert make_cli_docs.rendered(stale, texts) != stale
