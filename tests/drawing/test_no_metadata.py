"""A hand-built torch.fx graph has no meta['val'] / 'tensor_meta' and no nn_module_stack: every
view and export draws it, with no empty HTML-label element (graphviz 2.42 rejects an empty
<FONT>) and unlabelled edges where no spec is known. Node names are adversarial too."""

from __future__ import annotations

import html.parser
import json
import re
import xml.etree.ElementTree as ET

import pytest
import torch
from torch.fx import Graph, GraphModule

import hierviz as hv
from .helpers import check_golden, parse_svg

NAME = 'w<{|}>"\\\n&name'
aten = torch.ops.aten
EMPTY_ELEMENT = re.compile(r"<(FONT|B|I|U|SUB|SUP|S)(\s[^>]*)?>\s*</\1>")  # graphviz rejects these empty


@pytest.fixture(scope="module")
def bare() -> hv.Partition:
    """x, y -> add -> frac (no TensorRT converter) -> relu -> mul(y) -> output, no metadata."""
    g = Graph()
    x, y = g.placeholder("x"), g.placeholder("y")
    a = g.call_function(aten.add.Tensor, (x, y))
    f = g.call_function(aten.frac.default, (a,))
    r = g.call_function(aten.relu.default, (f,))
    m = g.call_function(aten.mul.Tensor, (r, y))
    g.output(m)
    x.name, a.name, f.name = NAME, "add" + NAME, NAME + "_frac"
    gm = GraphModule(torch.nn.Module(), g)
    assert not any(n.meta for n in gm.graph.nodes)
    return hv.partition(gm, min_block_size=1)


def test_record_of_a_bare_graph(bare):
    df = bare.nodes()
    assert list(df["name"]) == [NAME, "y", "add" + NAME, NAME + "_frac", "relu_default", "mul_tensor", "output"]
    assert df["dtype"].isna().all() and df["shape"].isna().all()
    assert (df["module_path"] == "").all()
    assert list(df["backend"]) == ["graph", "graph", "tensorrt", "torch", "tensorrt", "tensorrt", "graph"]


@pytest.mark.parametrize("view", ["full", "collapsed", "focus"])
def test_golden_dot_of_a_bare_graph(bare, view, regen_golden):
    kw = {"focus": NAME + "_frac"} if view == "focus" else {}
    source = bare.render(view, **kw).source
    assert not EMPTY_ELEMENT.search(source), EMPTY_ELEMENT.search(source).group(0)
    edges = [line for line in source.splitlines() if "->" in line and "hv-boundary" in line]
    assert edges, "frac's subgraph boundary is drawn"
    assert not any(re.search(r"(?<!x)label=|xlabel=", line) for line in edges)  # no spec, no label
    assert '"value"' not in source and ">value<" not in source
    check_golden(source, f"render_bare_{view}.dot", regen_golden)


def test_modules_view_says_what_it_needs(bare):
    with pytest.raises(hv.RenderError, match=r"no submodules to group by.*Use view='collapsed'"):
        bare.render("modules")


@pytest.mark.parametrize("view", ["full", "collapsed", "focus"])
def test_every_view_lays_out_to_svg(bare, view, needs_dot):
    kw = {"focus": "add" + NAME} if view == "focus" else {}
    svg = hv.drawing.to_svg(bare, view, **kw)
    root, groups = parse_svg(svg)  # valid XML
    texts = [t for g in groups for t in g.texts]
    if view != "collapsed":  # the name shown as it is, its newline as a visible \n
        assert 'addw<{|}>"\\\\n&name' in texts
    assert all(t.strip() for t in texts)


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf", ".html", ".json", ".dot"])
def test_every_export_of_a_bare_graph(bare, suffix, tmp_path, needs_dot):
    path = bare.save(tmp_path / f"bare{suffix}")
    data = path.read_bytes()
    magic = {".png": b"\x89PNG", ".pdf": b"%PDF", ".svg": b"<"}
    if suffix in magic:
        assert data.startswith(magic[suffix])
    if suffix == ".svg":
        ET.fromstring(data)
    if suffix == ".html":
        page = data.decode("utf-8")
        assert "<svg" in page and "graphviz's dot failed" not in page
        html.parser.HTMLParser().feed(page)
    if suffix == ".json":
        doc = json.loads(data)
        assert [n["name"] for n in doc["nodes"]][:3] == [NAME, "y", "add" + NAME]
        assert all(n["shape"] is None and n["dtype"] is None for n in doc["nodes"])


def test_model_explorer_export_of_a_bare_graph(bare, tmp_path):
    doc = json.loads(bare.save(tmp_path / "bare_me.json", format="model_explorer").read_text(encoding="utf-8"))
    nodes = doc["graphs"][0]["nodes"]
    assert {n["id"] for n in nodes} >= {NAME, "add" + NAME, NAME + "_frac"}
