"""Saving by suffix, the notebook display, a missing `dot`, and the auto view's size guard."""

from __future__ import annotations

import hashlib
import re
import json
import shutil
import xml.etree.ElementTree as ET

import pytest
import torch

import hierviz as hv
import hierviz.drawing
from hierviz.drawing import graphviz_run, palette, views
from hierviz.drawing import check_dot, notebook_html, to_svg
from hierviz.partitioner import FALLBACK_REASONS

from .helpers import dot_statements, parse_svg


@pytest.fixture
def part(transformer_parts):
    return transformer_parts["split"]


MAGIC = {".svg": b"<?xml", ".png": b"\x89PNG\r\n\x1a\n", ".pdf": b"%PDF"}


@pytest.mark.parametrize("suffix", [".svg", ".png", ".pdf"])
def test_save_images_by_suffix(part, tmp_path, suffix, needs_dot):
    path = part.save(tmp_path / "sub" / f"diagram{suffix}")
    assert path == tmp_path / "sub" / f"diagram{suffix}"
    assert path.read_bytes().startswith(MAGIC[suffix])
    if suffix == ".svg":
        ET.parse(path)


def test_save_dot_json_html(part, tmp_path, needs_dot):
    dot = part.save(tmp_path / "d.dot")
    assert dot.read_text(encoding="utf-8") == part.render().source
    assert part.save(tmp_path / "d.gv", view="collapsed").read_text(encoding="utf-8") == part.render("collapsed").source

    data = json.loads(part.save(tmp_path / "d.json").read_text(encoding="utf-8"))
    assert data["config"] == part.config.to_dict()
    assert [s["tag"] for s in data["subgraphs"]] == [s.tag for s in part.subgraphs]
    assert data["stats"]["subgraphs"] == len(part.subgraphs)
    by_name = {n["name"]: n for n in data["nodes"]}
    assert len(by_name) == len(part.graph.graph.nodes)
    for sg in part.subgraphs:
        for name in sg.nodes:
            row = by_name[name]
            assert (row["backend"], row["tag"]) == (sg.backend, sg.tag)
            assert row["reason"] == part.reason_of(name)
            assert row["reason_code"] == part.reason_code_of(name)
    assert data["colors"]["tensorrt"] == palette.TENSORRT

    page = part.save(tmp_path / "d.html").read_text(encoding="utf-8")
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    for section in ('id="diagram"', 'id="config"', 'id="subgraphs"', 'id="ops"', 'id="report"'):
        assert section in page
    for sg in part.subgraphs:
        assert sg.tag in page
    assert "Dry-Run Results" in page  # the text report
    assert "http://" not in page.replace('xmlns="http://www.w3.org/2000/svg"', "").replace(
        'xmlns:xlink="http://www.w3.org/1999/xlink"', "").replace("http://www.w3.org/Graphics/SVG/1.1/DTD", "")


def test_save_unknown_suffix(part, tmp_path):
    with pytest.raises(hv.RenderError, match=r"\.svg .*\.html"):
        part.save(tmp_path / "diagram.jpeg")


def test_save_passes_view_options(part, tmp_path):
    text = part.save(tmp_path / "f.dot", view="focus", focus=part.subgraphs[1].tag).read_text(encoding="utf-8")
    assert text.startswith("// hierviz focus view")


@pytest.fixture
def no_dot(monkeypatch):
    """A machine without graphviz: `dot` is not on PATH."""
    monkeypatch.setenv("PATH", "/nonexistent")
    real_which = shutil.which
    monkeypatch.setattr(shutil, "which", lambda cmd, *a, **k: None if cmd == "dot" else real_which(cmd, *a, **k))
    graphviz_run._layout_cached.cache_clear()
    yield
    graphviz_run._layout_cached.cache_clear()


def test_missing_dot_raises_with_install_commands(part, tmp_path, no_dot):
    with pytest.raises(hv.RenderError) as err:
        check_dot()
    message = str(err.value)
    for command in ("apt-get install graphviz", "conda install -c conda-forge graphviz", "brew install graphviz"):
        assert command in message
    for suffix in (".svg", ".png", ".pdf"):
        with pytest.raises(hv.RenderError, match="apt-get install graphviz"):
            part.save(tmp_path / f"x{suffix}")
    with pytest.raises(hv.RenderError, match="brew install graphviz"):
        to_svg(part)
    # DOT and JSON need no graphviz
    assert part.save(tmp_path / "x.dot").read_text(encoding="utf-8") == part.render().source
    assert json.loads(part.save(tmp_path / "x.json").read_text(encoding="utf-8"))["subgraphs"]
    # the HTML report still has everything but the diagram, and says why
    with pytest.warns(UserWarning, match="no diagram"):
        page = part.save(tmp_path / "x.html").read_text(encoding="utf-8")
    assert "apt-get install graphviz" in page and 'id="ops"' in page and "<svg" not in page
    # the notebook shows the message and the summary, not a traceback
    shown = part._repr_html_()
    assert "apt-get install graphviz" in shown and part.subgraphs[0].tag in shown


def test_notebook_html(part, needs_dot):
    shown = notebook_html(part)
    assert "<svg" in shown and "hv-scroll" in shown and "overflow:auto" in shown
    assert shown == shown.replace("<script", "")  # no script: works in untrusted notebooks
    for zoom in ("fit", "50%", "100%", "200%"):
        assert f">{zoom}</label>" in shown
    assert part._repr_html_().count("<svg") == 1


def test_weights_drawn_on_request(conv_parts):
    part = conv_parts["default"]
    plain, with_weights = part.render("full"), part.render("full", weights=True)
    weights = [n.name for n in part.graph.graph.nodes if n.op == "get_attr"]
    assert weights and with_weights.info["nodes"] == plain.info["nodes"] + len(weights)
    assert 'shape="note"' in with_weights.source and 'shape="note"' not in plain.source
    # without them, each op's tooltip lists the weights it reads
    assert "weights: conv1_weight float32[64, 3, 3, 3]" in plain.source


def test_to_svg_is_an_svg_element(part, needs_dot):
    svg = to_svg(part, "collapsed")
    assert svg.startswith("<svg")
    ET.fromstring(svg)


@pytest.mark.parametrize("view", ["full", "collapsed"])
def test_boundary_edge_labels_keep_a_gap_from_their_edge(part, view):
    """dot sets an edge's label right beside the edge, so the edge ran over the first character:
    each boundary label starts with a space, the gap between the edge and the text."""
    edges = [line for line in part.render(view).source.splitlines() if "->" in line and "hv-boundary" in line]
    labels = [m.group(1) for line in edges if (m := re.search(r'(?<!x)label="([^"]*)"', line))]
    assert labels, "the conv net's boundary tensors are labelled"
    assert all(text.startswith(" ") and not text.startswith("  ") for text in labels), labels


def test_edges_over_the_label_budget_keep_their_text_as_xlabels(part, needs_dot):
    """One mechanism decides label placement: above the layout budget (budget.py) boundary
    edges get xlabels, placed after layout, and the laid-out diagram still shows every text."""
    assert part.render("full").info["edge_labels"] == "label"
    graph = part.render("full", max_nodes=5)
    assert graph.info["edge_labels"] == "xlabel"
    edge_lines = [line for line in graph.source.splitlines() if "->" in line]
    assert any("xlabel=" in line for line in edge_lines)
    assert not any(re.search(r"(?<!x)label=", line) for line in edge_lines)
    root, groups = parse_svg(graphviz_run.layout(graph, "svg").decode())
    labelled = [g for g in groups if g.kind == "edge" and "hv-boundary" in g.classes]
    assert labelled and all(g.texts for g in labelled)


def test_layout_timeout_is_a_render_error(part, needs_dot):
    with pytest.raises(hv.RenderError, match="longer than"):
        graphviz_run._run_dot(check_dot(), part.render("full").source, "svg", 1e-4)


# ---------------------------------------------------------------------------- auto view
def test_auto_draws_small_graphs_in_full(part, conv_parts):
    assert part.render().info["view"] == "full"
    assert conv_parts["default"].render().info["view"] == "full"
    g = part.render(max_nodes=20)  # 33 drawn nodes > 20: the module view, and the title says why
    assert g.info["view"] == "modules"
    assert "module view \u00b7 chosen by auto" in g.source
    assert ("auto chose the module view: 33 drawn nodes (the nodes, the graph&#39;s inputs and output) &gt; "
            "max_nodes=20; view=&#39;full&#39; draws every node") in g.source


class Deep(torch.nn.Module):
    """A chain of 150 small Linear-ReLU blocks: few nodes, but a full view ~40,000 px tall."""

    def __init__(self, blocks: int = 150) -> None:
        super().__init__()
        self.blocks = torch.nn.Sequential(*[torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())
                                            for _ in range(blocks)])

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.blocks(x)


def laid_out_px(graph) -> tuple[float, float]:
    """(width, height) of dot's layout in pixels at 96 dpi (a .png's size)."""
    bb = json.loads(graphviz_run.layout(graph, "json0"))["bb"].split(",")
    return float(bb[2]) * 96 / 72, float(bb[3]) * 96 / 72


def test_auto_never_draws_a_picture_taller_than_8000_px(needs_dot, tmp_path):
    torch.manual_seed(0)
    part = hv.partition(hv.capture(Deep(), (torch.randn(2, 4),)))
    assert part.records and len(part.subgraphs) == 1 and part.stats["nodes"] < views.DEFAULT_MAX_NODES
    full = part.render("full")
    assert laid_out_px(full)[1] > 8000  # the full view is too tall ...
    g = part.render()
    assert g.info["view"] == "modules"  # ... so auto draws the module view, and says so
    assert "auto chose the module view: the full view would be about" in g.source
    assert "draws every node" in g.source
    width, height = laid_out_px(g)
    assert height <= 8000 and width <= 4000
    # save follows auto
    png = part.save(tmp_path / "deep.png")
    with png.open("rb") as f:
        head = f.read(24)
    assert int.from_bytes(head[20:24], "big") <= 8000 and int.from_bytes(head[16:20], "big") <= 4000


def test_auto_collapses_large_graphs_within_dot_budget():
    part = hv.partition(hv.zoo.synthetic(20_000), support={"inductor": hv.support.inductor()})
    g = part.render()
    info = g.info
    assert info["view"] == "collapsed" and info["grouped"]
    assert info["nodes"] <= views.DEFAULT_MAX_NODES
    boxes = [s for s in dot_statements(g.source) if re.fullmatch(r"s\d+", s.name) and "label" in s.attrs]
    assert len(boxes) == info["boxes"]
    # every subgraph is in exactly one box
    covered = 0
    for box in boxes:
        lo, hi = box.label_head.split("subgraphs ", 1)[1].split("</B>", 1)[0].split("-")
        covered += int(hi) - int(lo) + 1
    assert covered == len(part.subgraphs)
    # a graph of long skip edges gets collapsed even under max_nodes: dot would take seconds
    small = hv.partition(hv.zoo.synthetic(400), support={"inductor": hv.support.inductor()})
    assert small.render().info["view"] == "collapsed"
    assert small.render("full").info["edge_labels"] == "xlabel"


def test_auto_view_of_large_graph_lays_out(needs_dot):
    part = hv.partition(hv.zoo.synthetic(5_000), support={"inductor": hv.support.inductor()})
    root = ET.fromstring(to_svg(part))
    assert root.tag.endswith("svg")


def test_palette_fixed_and_custom_colors():
    assert palette.color("tensorrt") == "#009E73"
    assert palette.color("inductor") == "#0072B2"
    assert palette.color("torch") == "#D55E00"
    # custom backends: a stable hash (sha256), not Python's per-process hash()
    digest = hashlib.sha256(b"my_backend").digest()
    assert palette.color("my_backend") == palette.EXTRA[int.from_bytes(digest[:4], "big") % len(palette.EXTRA)]
    assert palette.color("my_backend") == "#882255"  # the same in every process and release
    assert len({palette.color(f"backend{i}") for i in range(40)}) == len(palette.EXTRA)
    for b in ("tensorrt", "inductor", "torch", "x"):
        assert palette.fill(b) != palette.cluster_fill(b) != palette.color(b)
    styles = {(s.shape, s.style, s.peripheries) for c, s in palette.STYLES.items() if c in FALLBACK_REASONS}
    assert len(styles) == len(FALLBACK_REASONS)
