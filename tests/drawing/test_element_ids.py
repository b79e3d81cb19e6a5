"""Every node, subgraph and module the diagram draws carries the id a click reads back
(`hv:<kind>:<name>`, the name percent-encoded as JavaScript's encodeURIComponent writes it):
the explorer's diagram widget selects what was clicked by it."""

from __future__ import annotations

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
    return set(re.findall(r'<g id="(hv:[^"]+)"', svg))


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
