"""Every node, subgraph and module the diagram draws carries the id a click reads back
(`hv:<kind>:<name>`, the name percent-encoded as JavaScript's encodeURIComponent writes it):
the explorer's diagram widget selects what was clicked by it."""

from __future__ import annotations

import html
import re
from urllib.parse import unquote

import torch

import hierviz as hv
from hierviz.drawing import to_svg
from hierviz.drawing.dot import element_id


class Odd(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.special.i0e(self.block(x)) + 1


def ids(svg: str) -> set[str]:
    return {html.unescape(i) for i in re.findall(r'<g id="(hv:[^"]+)"', svg)}  # as the page reads them


def test_names_of_any_text_read_back_whole() -> None:
    for name in ("relu", 'a<b>"c&d\\N', "layer1.0.conv1", "caf\u00e9 \u2192 x", "50% ~ (x)"):
        made = element_id("node", name)
        assert made.startswith("hv:node:") and not re.search(r'[\s<>"&\\]', made)
        assert unquote(made[len("hv:node:"):]) == name
    assert element_id("subgraph", "t", "label") == "hv:subgraph~label:t"


def test_each_view_draws_the_ids_of_what_it_shows() -> None:
    p = hv.partition(Odd(), (torch.randn(2, 4),), min_block_size=1)
    nodes = p.nodes()
    names = list(nodes[nodes["kind"] != "get_attr"]["name"])  # weights are drawn with weights=True only
    assert "x" in names and "output" in names
    full = ids(to_svg(p, view="full"))
    assert {element_id("node", n) for n in names} <= full
    assert {element_id("subgraph", sg.tag) for sg in p.subgraphs} <= full
    collapsed = ids(to_svg(p, view="collapsed"))
    assert {element_id("subgraph", sg.tag) for sg in p.subgraphs} <= collapsed
    modules = ids(to_svg(p, view="modules"))
    assert {element_id("module", "block"), element_id("module", "block.0")} <= modules
    focus = ids(to_svg(p, view="focus", focus=p.subgraphs[0].tag))
    assert {element_id("node", n) for n in p.subgraphs[0].nodes} <= focus


class Alternating(torch.nn.Module):
    """A module, then i0e (no TensorRT converter) between TensorRT runs: 12 subgraphs, and an
    add and i0e outside any module (the module view's "(top level)" box)."""

    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.block(x)
        for _ in range(6):
            x = torch.special.i0e(torch.relu(x) + 1)
        return x


def boxes_without_ids(svg: str) -> list[str]:
    """The classes of the drawn boxes (nodes and clusters, not edges or the title) whose id is
    not one a click reads back."""
    return [klass for gid, klass in re.findall(r'<g id="([^"]+)" class="((?:node|cluster)[^"]*)"', svg)
            if not gid.startswith("hv:")]


def test_a_grouped_box_of_the_collapsed_view_carries_its_group_id() -> None:
    p = hv.partition(Alternating(), (torch.randn(2, 4),), min_block_size=1)
    assert len(p.subgraphs) == 12
    svg = to_svg(p, view="collapsed", max_nodes=10)  # 2 subgraphs a box
    assert "subgraphs 0-1" in html.unescape(svg)  # the box's label is the name a click selects
    groups = {element_id("group", f"subgraphs {s}-{s + 1}") for s in range(0, 12, 2)}
    assert groups <= ids(svg)
    assert boxes_without_ids(svg) == []


def test_the_module_views_top_level_box_carries_its_id() -> None:
    p = hv.partition(Alternating(), (torch.randn(2, 4),), min_block_size=1)
    svg = to_svg(p, view="modules")
    assert "(top level)" in html.unescape(svg)
    assert element_id("top", "(top level)") in ids(svg)
    assert boxes_without_ids(svg) == []


def test_a_rolled_up_run_of_the_module_view_carries_the_id_of_the_whole_run() -> None:
    from .stack_models import odd_partition, stack

    model, inputs = stack()
    p = odd_partition(hv.capture(model, inputs))
    for depth in (1, 2):  # rolled-up boxes, then rolled-up clusters
        svg = to_svg(p, view="modules", depth=depth)
        assert "blocks.0\u20131 \u00d72" in html.unescape(svg)
        found = ids(svg)
        assert {element_id("repeat", "blocks.0 \u00d72"), element_id("repeat", "blocks.3 \u00d72")} <= found
        assert element_id("module", "blocks.2") in found  # the odd block stands apart
        assert not {element_id("module", f"blocks.{k}") for k in (0, 1, 3, 4)} & found
        assert boxes_without_ids(svg) == []
