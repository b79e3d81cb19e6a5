"""The graph-by-graph picture says why each graph starts, opens with an overview, and aligns its
frames on one axis (issue 42; drawing/frames.py, align.py).

- Before every frame but the first, a start marker says why that graph starts (the capture's
  `starts`): dynamo resumes a frame after a break, or a new frame is called from Python that
  dynamo ran eagerly. Two graphs that meet with no break between them are not called a break.
- Under the legend, an overview: one row per graph with its ops, a bar of its ops' backends
  (segments in proportion to the partition's counts) and what follows it; in an SVG each row
  links to its frame.
- The frames' left edges (and the markers') are on one vertical line.
"""

from __future__ import annotations

import html
import re
import xml.etree.ElementTree as ET

import pytest
import torch

import hierviz as hv
from hierviz.drawing import palette
from hierviz.drawing.by_graph.overview import BAR_PT
from tests.dynamo_models import BreakInALoop, ThreeGraphs, break_line, load

from .helpers import SVG, outline_edges, parse_svg


@pytest.fixture(scope="module")
def three():
    model, inputs = load("three_graphs")
    return hv.partition(model, inputs, ir="torch_compile")


@pytest.fixture(scope="module")
def looped():
    torch.manual_seed(0)
    return hv.partition(BreakInALoop().eval(), (torch.randn(2, 8),), ir="torch_compile", min_block_size=1)


def _label(part, node: str) -> str:
    src = part.render("collapsed").source
    m = re.search(rf"^\t{node} \[label=<(.*?)>, shape=", src, re.M)
    assert m, f"{node} not drawn"
    return re.sub(r"<[^>]+>", " ", m.group(1))


def test_a_resumed_graph_says_so_at_its_boundary(three, capsys):
    capsys.readouterr()
    src = three.render("collapsed").source
    # the break marker right above each frame says why it starts: one box, not two
    assert re.findall(r"^\t(start\d+) \[", src, re.M) == []
    for j, what in enumerate(("print", "if")):
        line = break_line(ThreeGraphs, what)
        marker = _label(three, f"break{j}")
        assert f"graph break {j + 1}: " in marker and f"tests/dynamo_models.py:{line} in forward" in marker
        assert f"then g{j + 1} starts: dynamo resumes forward (tests/dynamo_models.py:{line + 1})" in marker
        assert "/work/" not in marker and "after the graph break" not in marker  # that break is this marker
    assert src.count('hv-start hv-resumed"') == 2 and len(re.findall(r'class="hv-break ', src)) == 2


def test_graphs_that_meet_without_a_break_are_not_called_one(looped):
    assert len(looped.graphs) == 2 and [b.after_graph for b in looped.breaks] == [-1]
    src = looped.render("collapsed").source
    start = _label(looped, "start1")
    assert "g1 starts: a new frame: forward (tests/dynamo_models.py:" in start
    assert "called from Python that dynamo ran eagerly" in start
    assert "no graph break between g0 and g1" in start
    assert "hv-start hv-new-frame" in src
    # the one break (before any graph: the loop's frame runs in Python) is drawn once, above g0
    assert re.findall(r"^\t(break\d+(?= \[)|start\d+(?= \[)|subgraph cluster_g\d+(?= \{))", src, re.M) == [
        "break0", "subgraph cluster_g0", "start1", "subgraph cluster_g1"]


def test_start_markers_in_the_svg_and_html_a_user_opens(three, looped, tmp_path, needs_dot):
    svg = looped.save(tmp_path / "looped.svg").read_text(encoding="utf-8")
    _, groups = parse_svg(svg)
    starts = [g for g in groups if "hv-start" in g.classes]
    assert [g.title for g in starts] == ["start1"]
    text = " ".join(starts[0].texts)
    assert "g1 starts: a new frame: forward" in text and "no graph break between g0 and g1" in text
    assert "called from Python that dynamo ran eagerly" in starts[0].tooltip
    tops = outline_edges(svg, 1)
    assert tops["cluster_g0"] < tops["start1"] < tops["cluster_g1"]  # y grows downward: above g1, below g0
    page = three.save(tmp_path / "three.html").read_text(encoding="utf-8")
    assert "then g1 starts: dynamo resumes forward" in page  # in the picture
    table = page.split('<h2 id="graphs">', 1)[1].split("<h2", 1)[0]
    assert "<th>starts</th>" in table and "dynamo resumes forward (tests/dynamo_models.py:" in table


def _overview_rows(source: str) -> list[tuple[int, list[tuple[int, str]], str]]:
    """(graph, [(width, color)] of its bar, its `then` text) per overview row of the DOT."""
    rows = []
    parts = re.split(r'<TR><TD ALIGN="LEFT" HREF="#frame_g(\d+)"', source)
    for k, body in zip(parts[1::2], parts[2::2]):
        bar, rest = body.split("</TABLE>", 1)  # the row's bar (a table of its own), then the `then` cell
        cells = [(int(w), c) for w, c in re.findall(r'<TD WIDTH="(\d+)" HEIGHT="9" FIXEDSIZE="TRUE" BGCOLOR="(#\w+)">',
                                                     bar)]
        then = re.search(r'<TD ALIGN="LEFT"[^>]*>(.*?)</TD></TR>', rest)
        assert then, rest[:200]
        rows.append((int(k), cells, html.unescape(re.sub(r"<[^>]+>", "", then.group(1)))))
    return rows


def test_the_overview_has_a_row_per_graph_with_its_backend_bar(three):
    # one graph mixes TensorRT and PyTorch: relu forced to run in PyTorch
    part = hv.partition(three, min_block_size=1, torch_executed_ops={"torch.ops.aten.relu.default"})
    rows = _overview_rows(part.render("collapsed").source)
    assert [k for k, _, _ in rows] == [0, 1, 2]
    for k, cells, _ in rows:
        nodes = part.graphs[k].nodes()  # the partition's own table: the backend each compute op runs in
        counts = {b: int(((nodes.backend == b) & nodes.compute).sum()) for b in part.graphs[k].backends}
        counts = {b: n for b, n in counts.items() if n}
        assert sum(counts.values()) == part.graphs[k].stats["compute_ops"]
        assert sum(w for w, _ in cells) == BAR_PT
        assert [c for _, c in cells] == [palette.color(b) for b in counts]
        total = sum(counts.values())
        for (w, _), n in zip(cells, counts.values()):
            assert abs(w - BAR_PT * n / total) <= 1, (k, cells, counts)
    assert len(rows[0][1]) == 2  # g0's conv/bn run in TensorRT, its relu in PyTorch: two segments
    print_line, if_line = break_line(ThreeGraphs, "print"), break_line(ThreeGraphs, "if")
    assert rows[0][2] == (f"break 1: Failed to trace builtin operator (tests/dynamo_models.py:{print_line}) \u00b7 "
                          f"g1 starts: dynamo resumes forward (tests/dynamo_models.py:{print_line + 1})")
    assert rows[1][2].startswith(f"break 2: Data-dependent branching (tests/dynamo_models.py:{if_line})")
    assert rows[2][2] == ""  # the last graph: nothing follows


def test_the_overview_rows_link_to_their_frames_in_the_svg(three, needs_dot, tmp_path):
    svg = three.save(tmp_path / "three.svg").read_text(encoding="utf-8")
    root = ET.fromstring(svg)
    ids = {g.get("id") for g in root.iter(f"{SVG}g")}
    assert {f"frame_g{k}" for k in range(3)} <= ids
    links = [a.get("{http://www.w3.org/1999/xlink}href") for a in root.iter(f"{SVG}a")]
    assert {h for h in links if h and h.startswith("#frame_g")} == {"#frame_g0", "#frame_g1", "#frame_g2"}
    text = re.sub(r"\s+", " ", " ".join(root.itertext()))
    assert "overview : 3 graphs in execution order" in text


def test_one_graph_has_no_overview():
    model = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU()).eval()
    part = hv.partition(model, (torch.randn(2, 4),), ir="torch_compile")
    src = part.render().source
    assert len(part.graphs) == 1 and "overview" not in src and "starts:" not in src




def test_frames_and_markers_are_aligned_on_one_axis(three, needs_dot, tmp_path):
    # a narrow graph between wide ones: dot alone centres each frame where its own layout puts it
    svg = three.save(tmp_path / "three.svg").read_text(encoding="utf-8")
    left = outline_edges(svg, 0)
    items = ["cluster_g0", "break0", "cluster_g1", "break1", "cluster_g2"]
    lefts = [left[k] for k in items]
    assert max(lefts) - min(lefts) < 1.0, dict(zip(items, lefts))
    # the frames keep their content: each frame's nodes lie inside it
    right = {t: -v for t, v in outline_edges(_mirror(svg), 0).items()}
    for k in range(3):
        inside = [t for t in left if t.startswith(f"g{k}_") or t.startswith(f"cluster_g{k}_")]
        assert inside and all(left[f"cluster_g{k}"] < left[t] and right[t] < right[f"cluster_g{k}"] for t in inside)


def _mirror(svg: str) -> str:
    """The SVG with every x negated (so the smallest x found is the largest right edge)."""
    def flip(m: re.Match) -> str:
        nums = re.findall(r"-?\d+(?:\.\d+)?", m.group(2))
        pairs = [f"{-float(x)},{y}" for x, y in zip(nums[::2], nums[1::2])]
        return f'{m.group(1)}="{" ".join(pairs)}"'
    return re.sub(r'(points|d)="([^"]*)"', flip, svg)


@pytest.mark.slow
def test_a_detection_model_opens_with_its_overview(detection, needs_dot, tmp_path):
    """fasterrcnn_mobilenet_v3_large_320_fpn (random weights): 20 graphs, some meeting with no
    break between them; the overview lists every graph, each frame but the first has its start
    marker, and the frames share one left edge."""
    part = hv.partition(detection.capture("fasterrcnn_mobilenet_v3_large_320_fpn"))
    n = len(part.graphs)
    assert n >= 10
    rows = _overview_rows(part.render().source)
    assert [k for k, _, _ in rows] == list(range(n))
    svg = part.save(tmp_path / "det.svg").read_text(encoding="utf-8")
    _, groups = parse_svg(svg)
    said = [" ".join(g.texts) for g in groups if "hv-start" in g.classes]  # start markers, breaks saying it
    for k in range(1, n):
        assert part.capture.graphs[k].starts and sum(f"g{k} starts: " in text for text in said) == 1, k
    assert any("no graph break between" in text for text in said)
    left = outline_edges(svg, 0)
    lefts = [left[f"cluster_g{k}"] for k in range(n)]
    assert max(lefts) - min(lefts) < 1.0
    png = part.save(tmp_path / "det.png").read_bytes()
    assert png[:4] == b"\x89PNG" and int.from_bytes(png[20:24], "big") < 32767


def test_how_a_graph_starts_is_a_kind_its_capture_and_saved_file_keep(three, looped, tmp_path):
    """DynamoGraph.start_kind, not the start's words, gives the start marker its class; a
    saved graph-by-graph partition keeps it, so its picture is the same."""
    assert [g.start_kind for g in three.capture.graphs] == ["", "resumed", "resumed"]
    assert [g.start_kind for g in looped.capture.graphs] == ["", "new-frame"]
    for part, kind in ((three, "hv-start hv-resumed"), (looped, "hv-start hv-new-frame")):
        loaded = hv.load_partition(part.save(tmp_path / f"{len(part.graphs)}.json"))
        assert [g.start_kind for g in loaded.capture.graphs] == [g.start_kind for g in part.capture.graphs]
        assert kind in loaded.render("collapsed").source
