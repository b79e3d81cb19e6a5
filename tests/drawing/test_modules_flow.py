"""The module view along the data flow: boxes in the order their ops run, own ops where they
run, no edges between copies of a rolled-up block, skip edges and edges against the flow
not deciding the ranks, cluster titles as nodes above every child, labels placed by the
layout, roll-ups named by their full path. Checked on the DOT (golden) and on dot's layout."""

from __future__ import annotations

import json
import re

import pytest

import hierviz as hv
from hierviz.drawing import layout

from .helpers import check_golden, dot_statements
from .models import tiny_transformer
from .stack_models import captured, odd_partition


@pytest.fixture(scope="module")
def odd() -> hv.Partition:
    return odd_partition(captured())


@pytest.fixture(scope="module")
def transformer() -> hv.Partition:
    model, inputs = tiny_transformer()
    return hv.partition(model, inputs)


def boxes(source: str) -> dict[str, str]:
    """Box id -> its bold name."""
    return {s.name: m.group(1) for s in dot_statements(source)
            if re.fullmatch(r"[mt]\w+", s.name) and (m := re.search(r"<B>(.*?)</B>", s.attrs.get("label", "")))}


def edges(source: str) -> list[tuple[str, str, str]]:
    return [(m.group(1), m.group(2), m.group(3)) for m in re.finditer(r"\n\t*(\w+) -> (\w+) \[([^\n]*)\]", source)]


def test_golden_transformer_module_view(transformer, regen_golden):
    check_golden(transformer.render("modules").source, "modules_transformer_flow.dot", regen_golden)


def test_own_ops_are_drawn_where_they_run(odd):
    src = odd.render("modules").source
    names = boxes(src)
    by_name: dict[str, list[str]] = {}
    for box, name in names.items():
        by_name.setdefault(name, []).append(box)
    # blocks.2's own ops are its relu (between fc1 and fc2) and its residual add (after fc2):
    # two boxes, each on the path where its ops run
    own = by_name["blocks.2 (own ops)"]
    assert len(own) == 2
    pairs = {(a, b) for a, b, _ in edges(src)}
    relu_box, add_box = own
    fc1 = next(b for b in by_name["fc1"] if (b, relu_box) in pairs)
    fc2 = next(b for b in by_name["fc2"] if (relu_box, b) in pairs)
    assert (fc2, add_box) in pairs and (fc1, relu_box) in pairs


def test_rolled_up_block_has_no_edge_to_its_own_copies(odd):
    src = odd.render("modules").source
    names = boxes(src)
    pairs = {(a, b) for a, b, _ in edges(src)}
    inp = next(b for b, n in names.items() if n == "inp")
    add = next(b for b, n in names.items() if n == "blocks.0\u20131 \u00d72 (own ops)" and (inp, b) in pairs)
    norm = next(b for b, n in names.items() if n == "norm" and (inp, b) in pairs)  # blocks.0-1's norm
    # blocks.0's add feeds blocks.1's norm; both copies are drawn once, so that edge is left out
    assert (add, norm) not in pairs
    # ... and the add of the last copy feeds the next block: that edge is drawn
    assert any(a == add and names.get(b) == "norm" for a, b in pairs)


def test_skip_edges_do_not_decide_ranks(odd):
    src = odd.render("modules").source
    names = boxes(src)
    inp = next(b for b, n in names.items() if n == "inp")
    # inp feeds blocks.0's norm and (the residual) blocks.0's add: the residual is loose
    out = {names.get(b, b): attrs for a, b, attrs in edges(src) if a == inp}
    assert 'constraint="false"' in out["blocks.0\u20131 \u00d72 (own ops)"]
    assert "constraint" not in out["norm"]
    # every other edge runs along the flow and keeps its constraint
    assert sum('constraint="false"' in attrs for *_, attrs in edges(src)) <= 3


def test_edge_labels_are_placed_by_the_layout(transformer):
    src = transformer.render("modules").source
    drawn = [attrs for *_, attrs in edges(src) if "invis" not in attrs]
    assert drawn and all(" label=" in f" {attrs}" or attrs.startswith("label=") for attrs in drawn)
    assert "xlabel=" not in src


def test_rolled_up_names_are_full_paths(odd):
    g = odd.render("modules")
    assert g.info["rolled_up"] == ["blocks.0\u20131 \u00d72", "blocks.3\u20134 \u00d72"]
    assert "<B>blocks.0\u20131 \u00d72</B>" in g.source


def _positions(graph) -> tuple[dict[str, tuple[float, float, float, float]], dict[str, list[str]]]:
    """Node name -> box (x0, y0, x1, y1), cluster name -> its node names, from dot's layout."""
    g = json.loads(layout(graph, "json"))
    nodes = {}
    for obj in g["objects"]:
        if "pos" in obj:
            x, y = (float(v) for v in obj["pos"].split(","))
            w, h = float(obj["width"]) * 36, float(obj["height"]) * 36
            nodes[obj["name"]] = (x - w, y - h, x + w, y + h)
    names = {obj["_gvid"]: obj["name"] for obj in g["objects"]}
    clusters = {obj["name"]: [names[n] for n in obj.get("nodes", ())] for obj in g["objects"] if "pos" not in obj}
    return nodes, clusters


def test_cluster_titles_sit_above_every_child(odd, transformer, needs_dot):
    for part in (odd, transformer):
        nodes, clusters = _positions(part.render("modules"))
        assert clusters
        for name, members in clusters.items():
            title = "t" + name[len("cluster_"):]
            assert title in members
            top = nodes[title][1]  # the title's bottom edge (dot's y grows upward)
            assert all(nodes[m][3] <= top + 0.5 for m in members if m != title), name


def test_data_flows_down(odd, transformer, needs_dot):
    """Every drawn edge of the module view points down the page."""
    for part in (odd, transformer):
        g = part.render("modules")
        nodes, _ = _positions(g)
        for a, b, attrs in edges(g.source):
            if "invis" in attrs:
                continue
            assert (nodes[a][1] + nodes[a][3]) / 2 > (nodes[b][1] + nodes[b][3]) / 2, (a, b)
