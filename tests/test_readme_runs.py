"""The README's Python blocks run as written, top to bottom, in one namespace: a renamed function, a
dropped argument or a node name the zoo model no longer has fails here."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCK = re.compile(r"```python\n(.*?)```", re.S)


def test_the_readme_has_its_quickstart():
    blocks = BLOCK.findall((ROOT / "README.md").read_text())
    assert any("hv.partition(" in b and "hv.explore(" in b for b in blocks)


@pytest.mark.slow  # captures, builds and sweeps resnet18: tens of seconds of CPU
def test_every_python_block_of_the_readme_runs(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    for block in BLOCK.findall((ROOT / "README.md").read_text()):
        exec(compile(block, "README.md", "exec"), namespace)
    assert (tmp_path / "resnet18.html").read_text().startswith("<!DOCTYPE html>")
    assert namespace["part"].config.priority == ("inductor", "tensorrt")
