"""The Model Explorer export is built from Model Explorer's own schema, an optional extra: without
the package, saving in that format is refused with the install line and writes nothing, while
every other format still saves."""

from __future__ import annotations

import json
import sys

import pytest

import hierviz as hv

from .stack_models import captured, odd_partition


def test_without_model_explorer_the_export_says_how_to_install_it(tmp_path, monkeypatch):
    part = odd_partition(captured())
    monkeypatch.setitem(sys.modules, "model_explorer", None)  # as if it were not installed
    with pytest.raises(hv.RenderError, match=r'pip install "hierviz\[model-explorer\]"'):
        part.save(tmp_path / "part.json", format="model_explorer")
    assert not (tmp_path / "part.json").exists()
    doc = json.loads(part.save(tmp_path / "plain.json").read_text(encoding="utf-8"))
    assert doc["stats"] == json.loads(json.dumps(part.stats))
    assert [n["name"] for n in doc["nodes"]] == list(part.records.name)
