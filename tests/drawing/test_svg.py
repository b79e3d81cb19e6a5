"""The laid-out diagrams, read back from dot's SVG: clusters, colors, legend, edges, styles."""

from __future__ import annotations

import re

import pytest
import torch

import hierviz as hv
from hierviz.drawing import palette, to_svg
from hierviz.drawing.dot import clean
from .helpers import parse_svg

DTYPE_SHAPE = re.compile(r"^[a-z0-9]+\[[0-9,]*\]$")


def node_name(part, title: str) -> str:
    assert title.startswith("n"), title
    return part.records.name[int(title[1:])]


def crossing_edges(part) -> set[tuple[str, str]]:
    """(producer, consumer) pairs whose tensor crosses a subgraph boundary (weights excluded)."""
    nodes = list(part.graph.graph.nodes)
    position = {n: i for i, n in enumerate(nodes)}
    out = set()
    for j, node in enumerate(nodes):
        if node.op == "get_attr":
            continue
        for arg in node.all_input_nodes:
            a = position[arg]
            if arg.op != "get_attr" and part.tag_of(arg.name) != part.tag_of(node.name):
                out.add((f"n{a}", f"n{j}"))
    return out


@pytest.fixture(scope="module")
def full_svgs(transformer_parts, conv_parts, has_dot):
    if not has_dot:
        pytest.skip("graphviz `dot` is not installed")
    parts = {f"transformer-{k}": v for k, v in transformer_parts.items()}
    parts.update({f"conv-{k}": v for k, v in conv_parts.items()})
    return {k: (p, *parse_svg(to_svg(p, "full"))) for k, p in parts.items()}


CASES = ["transformer-default", "transformer-split", "transformer-fallback", "conv-split", "conv-fallback"]


@pytest.mark.parametrize("case", CASES)
def test_one_cluster_per_subgraph(full_svgs, case):
    part, _, groups = full_svgs[case]
    clusters = [g for g in groups if g.kind == "cluster"]
    assert sorted(g.title for g in clusters) == sorted(f"cluster_{k}" for k in range(len(part.subgraphs)))
    for g in clusters:
        sg = part.subgraphs[int(g.title.split("_")[1])]
        assert g.fills == [palette.cluster_fill(sg.backend).upper()]
        assert sg.tag in g.tooltip and sg.backend in g.tooltip
    # the label beside each cluster gives tag, backend and op count
    labels = {g.title: " ".join(g.texts) for g in groups if g.kind == "node" and g.title.startswith("h")}
    for k, sg in enumerate(part.subgraphs):
        assert sg.tag in labels[f"h{k}"] and sg.backend in labels[f"h{k}"]
        assert f"{sg.compute_ops} op" in labels[f"h{k}"]


@pytest.mark.parametrize("case", CASES)
def test_node_fill_matches_backend(full_svgs, case):
    part, _, groups = full_svgs[case]
    nodes = [g for g in groups if g.kind == "node" and re.fullmatch(r"n\d+", g.title)]
    drawn = [n for n in part.graph.graph.nodes if n.op != "get_attr"]
    assert len(nodes) == len(drawn)
    for g in nodes:
        backend = part.backend_of(node_name(part, g.title))
        assert g.fills and g.fills[0] == palette.fill(backend).upper(), (g.title, backend, g.fills)
        assert f"hv-{backend}" in g.classes


@pytest.mark.parametrize("case", CASES)
def test_legend_present(full_svgs, case):
    part, root, _ = full_svgs[case]
    # the legend is part of the graph label: drawn by the top-level graph group, outside
    # every node, cluster and edge group
    graph = root.find("{http://www.w3.org/2000/svg}g")
    assert "graph" in graph.get("class")
    top = list(graph)
    texts = " ".join("".join(t.itertext()) for t in top if t.tag.endswith("}text"))
    for heading in ("backends", "nodes", "edges"):
        assert heading in texts
    counts = part.stats["subgraphs_by_backend"]
    for backend in part.backends:
        n = counts.get(backend, 0)
        assert f"{backend} · {n} subgraph" in texts
    fills = {el.get("fill", "").upper() for el in top if el.tag.endswith("}polygon") or el.tag.endswith("}path")}
    for backend in part.backends:
        assert palette.fill(backend).upper() in fills


@pytest.mark.parametrize("case", CASES)
def test_boundary_edges_stand_out_and_are_labelled(full_svgs, case):
    part, _, groups = full_svgs[case]
    edges = {}
    for g in groups:
        if g.kind == "edge":
            tail, head = g.title.split("->")
            if tail.startswith("ref"):  # a reference to an input with many users
                tail = "n" + tail[3:].split("_")[0]
            edges[(tail, head)] = g
    boundary = {k: g for k, g in edges.items() if "hv-boundary" in g.classes}
    assert set(boundary) == crossing_edges(part)
    assert boundary, "these configs all have boundary tensors"
    for (tail, _head), g in boundary.items():
        producer = list(part.graph.graph.nodes)[int(tail[1:])]
        val = producer.meta["val"]
        assert len(g.texts) == 1, g.texts
        assert g.texts[0].startswith(" "), g.texts  # the gap between the edge and its text
        text = g.texts[0][1:]
        if isinstance(val, torch.Tensor):
            assert DTYPE_SHAPE.match(text), g.texts
            assert text.endswith("[" + ",".join(str(d) for d in val.shape) + "]")
        else:  # a tuple/list value (split, max.dim) crossing as a whole: its kind and length
            assert text == f"{type(val).__name__}({len(val)})"
    for g in edges.values():
        if "hv-boundary" not in g.classes and not g.title.startswith("h"):
            assert not g.texts  # internal edges carry no label


def test_legend_draws_octagon_nodes_as_octagons(transformer_parts, has_dot):
    """The legend's samples of the octagon reasons (unsupported, validator rejected) are octagons
    in the SVG, as their nodes are, not the rectangles an HTML-label cell draws."""
    if not has_dot:
        pytest.skip("graphviz `dot` is not installed")
    svg = to_svg(transformer_parts["fallback"], "full")
    octagon_codes = [code for code, st in palette.STYLES.items() if st.shape == "octagon" and st.legend]
    assert len(octagon_codes) == 2
    for code in octagon_codes:
        group = re.search(rf'<g id="a_hv:legend:octagon:{code}">(.*?)</g>', svg, re.S)
        assert group, code
        shapes = re.findall(r'<polygon [^>]*points="([^"]*)"', group.group(1))
        assert shapes, code
        assert all(len(points.split()) == 9 for points in shapes), shapes  # 8 corners, closed
        assert palette.STYLES[code].legend.split(" (")[0] in group.group(1)
        assert "<a " not in group.group(1)  # the legend is not a link


def test_fallback_reasons_drawn_distinctly_with_reason_tooltips(full_svgs):
    part, _, groups = full_svgs["transformer-fallback"]
    nodes = {node_name(part, g.title): g for g in groups if g.kind == "node" and re.fullmatch(r"n\d+", g.title)}
    by_code: dict[str, list] = {}
    for name, g in nodes.items():
        code = part.reason_code_of(name)
        by_code.setdefault(code, []).append(g)
        assert clean(part.reason_of(name)) in g.tooltip
        assert f"hv-{code}" in g.classes
    for code in ("torch_executed_ops", "unsupported", "validator_rejected", "demoted"):
        assert by_code.get(code), f"no {code} node in the fallback config"
        assert all(part.backend_of(node_name(part, g.title)) == "torch" for g in by_code[code])
    # Each reason has its own look (corners, dashed, outlines): box with a double border,
    # octagon, dashed octagon, dashed rounded box; ops that run where supported: rounded box.
    looks = {code: {g.look for g in by_code[code]} for code in by_code if code != "follows_producer"}
    assert looks["torch_executed_ops"] == {(4, False, 2)}
    assert looks["unsupported"] == {(8, False, 1)}
    assert looks["validator_rejected"] == {(8, True, 1)}
    assert looks["demoted"] == {(-1, True, 1)}
    assert looks["supported"] == {(-1, False, 1)}
    # a demoted node's border is the color of the backend it was eligible for
    for g in by_code["demoted"]:
        eligible = part.eligible_backend_of(node_name(part, g.title))
        assert palette.color(eligible).lower() in g.strokes


def test_collapsed_view_one_box_per_subgraph(transformer_parts, needs_dot):
    part = transformer_parts["split"]
    root, groups = parse_svg(to_svg(part, "collapsed"))
    boxes = {g.title: g for g in groups if g.kind == "node" and re.fullmatch(r"s\d+", g.title)}
    assert sorted(boxes) == sorted(f"s{k}" for k in range(len(part.subgraphs)))
    for title, g in boxes.items():
        sg = part.subgraphs[int(title[1:])]
        assert g.fills == [palette.fill(sg.backend).upper()]
        text = " ".join(g.texts)
        assert sg.tag in text and f"{sg.compute_ops} op" in text
    edges = [g for g in groups if g.kind == "edge"]
    assert edges and all(g.texts for g in edges)
    names = {g.title for g in groups if g.kind == "node"}
    assert any(t.startswith("in") for t in names) and any(t.startswith("out") for t in names)


def test_focus_on_node_and_subgraph(transformer_parts, needs_dot):
    part = transformer_parts["fallback"]
    g = part.render(focus="_softmax", radius=1)
    assert g.info["view"] == "focus" and g.info["focus_kind"] == "node"
    _, groups = parse_svg(to_svg(part, "focus", focus="_softmax", radius=1))
    shown = {node_name(part, x.title) for x in groups if x.kind == "node" and re.fullmatch(r"n\d+", x.title)}
    assert shown == {"_softmax", "mul", "matmul_1"}
    stubs = [x for x in groups if x.kind == "node" and x.title.startswith("stub_")]
    assert stubs  # mul has more inputs, matmul_1 more users: shown as counts

    tag = part.subgraphs[1].tag
    _, groups = parse_svg(to_svg(part, "focus", focus=tag))
    shown = {node_name(part, x.title) for x in groups if x.kind == "node" and re.fullmatch(r"n\d+", x.title)}
    inside = set(part.subgraphs[1].nodes)
    assert inside <= shown
    boundary = {t.name for t in part.subgraphs[1].inputs}
    assert boundary <= shown
    clusters = [x for x in groups if x.kind == "cluster"]
    assert any(x.title == "cluster_1" for x in clusters)


def test_inputs_with_many_users_drawn_as_references(needs_dot):
    """An input feeding every layer gets one edge and a small reference beside each other
    user: no curtain of long edges, and dot's layout stays fast."""
    import torch
    from torch.fx import Graph, GraphModule

    g = Graph()
    x, mask = g.placeholder("x"), g.placeholder("mask")
    cur = x
    for _ in range(8):
        cur = g.call_function(torch.ops.aten.relu.default, (cur,))
        cur = g.call_function(torch.ops.aten.add.Tensor, (cur, mask))
    g.output(cur)
    for node in g.nodes:
        node.meta["val"] = torch.empty(2, 3)
    part = hv.partition(GraphModule(torch.nn.Module(), g), min_block_size=1,
                        torch_executed_ops={"torch.ops.aten.relu.default"})
    _, groups = parse_svg(to_svg(part, "full"))
    refs = [x for x in groups if x.kind == "node" and x.title.startswith("ref")]
    assert len(refs) == 7 and all(x.texts == ["mask"] for x in refs)
    mask_edges = [x for x in groups if x.kind == "edge" and x.title.startswith("n1->")]
    assert len(mask_edges) == 1


def test_focus_errors(transformer_parts):
    part = transformer_parts["split"]
    with pytest.raises(hv.RenderError, match="Did you mean"):
        part.render(focus="_sotfmax")
    with pytest.raises(hv.RenderError, match="needs focus"):
        part.render("focus")
    with pytest.raises(hv.RenderError, match="unknown view"):
        part.render("everything")
    with pytest.raises(hv.RenderError, match="max_nodes"):
        part.render(max_nodes=0)
    with pytest.raises(hv.RenderError, match="focus view"):
        part.render("collapsed", focus="_softmax")
    with pytest.raises(hv.RenderError, match="radius"):
        part.render(focus="_softmax", radius=-1)
