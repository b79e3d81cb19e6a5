"""The builds overlay with builds from `with_repros()`: the nodes of a failed engine's smallest
failing part get their own border in the full view, and the engine's label and tooltip say how
many they are (the collapsed view too)."""

from __future__ import annotations

import re

import pytest
import torch

import hierviz as hv
from hierviz import trt
from hierviz.drawing.build_marks import FAILED, REPRO
from tests.building.models import FusedQKV, made
from tests.drawing.helpers import dot_statements

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


@pytest.fixture
def failing(monkeypatch, tmp_path):
    """FusedQKV's partition whose every graph holding aten.split fails at build (the rest is
    built for real, in a build cache of its own), and its builds with their repros."""
    monkeypatch.setenv("HIERVIZ_CACHE_DIR", str(tmp_path))
    real = trt.convert_and_build

    def fake(gm: torch.fx.GraphModule, settings: object = None, **options: object) -> trt.EngineBuild:
        if any(n.target is torch.ops.aten.split.Tensor for n in gm.graph.nodes):
            return trt.EngineBuild("build", 1, 0.0, 0.0, exception="RuntimeError",
                                   error="the builder refused aten.split")
        return real(gm, settings, **options)

    monkeypatch.setattr(trt, "convert_and_build", fake)
    part = hv.partition(*made(FusedQKV, 1, 16, 64), min_block_size=1)
    builds = part.build(fix=False)
    return part, builds, builds.with_repros()


def _node_lines(source: str) -> dict[str, str]:
    """DOT node statements by node name (the label's first line)."""
    return {m.group(0): s.line for s in dot_statements(source)
            if re.fullmatch(r"n\d+", s.name) and (m := re.match(r"[^<]+", s.attrs.get("label", "")))}


def test_the_full_view_outlines_the_repros_nodes_and_the_engine_says_how_many(failing):
    part, _, builds = failing
    found = builds.repro_for("_run_on_acc_tensorrt_0")
    assert found.nodes == ("split",)
    source = part.render("full", builds=builds).source
    nodes = _node_lines(source)
    assert f'color="{REPRO}"' in nodes["split"] and "in the smallest failing part" in nodes["split"]
    assert "in the smallest failing part of _run_on_acc_tensorrt_0: 1 node that fail" in nodes["split"]
    outlined = sorted(name for name, line in nodes.items() if REPRO in line)
    assert outlined == ["split"]
    cluster = next(x for x in source.splitlines() if "graph [" in x and f'color="{FAILED}"' in x)
    assert "the smallest failing part: 1 node (split); 1 of 16 nodes of _run_on_acc_tensorrt_0 fail at build" in cluster
    assert ">the smallest failing part: 1 node</FONT>" in source  # the engine's label line
    assert "in its smallest failing part</FONT>" in source  # the legend


def test_the_collapsed_view_says_it_in_the_label_and_tooltip(failing):
    part, _, builds = failing
    source = part.render("collapsed", builds=builds).source
    box = next(x for x in source.splitlines() if x.strip().startswith("s0 ["))
    assert ">the smallest failing part: 1 node</FONT>" in box
    assert "tooltip=" in box and "the smallest failing part: 1 node (split)" in box.split("tooltip=", 1)[1]


def test_without_repros_nothing_is_outlined(failing):
    part, plain, _ = failing
    source = part.render("full", builds=plain).source
    assert REPRO not in source and "smallest failing part" not in source
    assert f'color="{FAILED}"' in source  # the failed engine is still marked
