"""The graph-by-graph picture (MultiGraphPartition.render / save, drawing/frames.py): every dynamo
graph a frame in execution order, a graph-break marker between frames with dynamo's reason and
the user's file:line, every file format, and a saved one loaded back.

Most tests draw ThreeGraphs (tests/dynamo_models.py): three graphs, two breaks (a `print` whose
code line holds quotes, braces, `<>` and `&`, then a data-dependent `if`). The goldens are
regenerated with `pytest tests/drawing --regen-golden`.
"""

from __future__ import annotations

import html
import json
import re
import xml.etree.ElementTree as ET

import pytest

import hierviz as hv
from tests.dynamo_models import ThreeGraphs, break_line, load

from .helpers import GOLDEN, check_golden, outline_edges, parse_svg

ROOT = GOLDEN.parents[1]  # the checkout: its path is in the tooltips, not in the goldens


@pytest.fixture(scope="module")
def three():
    model, inputs = load("three_graphs")
    part = hv.partition(model, inputs, ir="torch_compile")
    return model, inputs, part


@pytest.fixture(scope="module")
def three_mbs1(three):
    return hv.partition(three[2], min_block_size=1)  # re-partitioned from its capture


def portable(source: str) -> str:
    return source.replace(str(ROOT), "<repo>")


@pytest.mark.parametrize("view", ["full", "collapsed"])
def test_dot_matches_golden(three, view, regen_golden):
    check_golden(portable(three[2].render(view).source), f"graphs_three_{view}.dot", regen_golden)


def test_same_picture_twice_and_from_a_recapture(three):
    part = three[2]
    assert part.render().source == part.render().source
    assert hv.partition(part.capture).render().source == part.render().source


def test_svg_has_frames_in_order_and_break_markers_between(three, needs_dot, tmp_path):
    part = three[2]
    svg = part.save(tmp_path / "three.svg").read_text(encoding="utf-8")
    _, groups = parse_svg(svg)
    frames = {g.title: g for g in groups if g.kind == "cluster" and "hv-frame" in g.classes}
    assert sorted(frames) == ["cluster_g0", "cluster_g1", "cluster_g2"]
    markers = {g.title: g for g in groups if g.kind == "node" and "hv-break" in g.classes}
    assert sorted(markers) == ["break0", "break1"]
    first, second = (" ".join(markers[k].texts) for k in ("break0", "break1"))
    # the reason, the user's file:line and code line, verbatim (quotes, braces, <>, &), and what runs between
    assert "graph break 1: Failed to trace builtin operator" in first
    assert f"tests/dynamo_models.py:{break_line(ThreeGraphs, 'print')} in forward" in first
    assert "print('<y> {\"shape\": %s} & \\'done\\''" in first
    assert "graph break 2: Data-dependent branching" in second
    assert f"tests/dynamo_models.py:{break_line(ThreeGraphs, 'if')} in forward" in second
    assert "if y.mean() > 0:" in second
    assert all("runs eagerly in PyTorch" in " ".join(m.texts) for m in markers.values())
    # dynamo's whole text and the full path are in the marker's tooltip
    assert part.breaks[1].explanation[:60] in markers["break1"].tooltip
    assert part.breaks[1].file in markers["break1"].tooltip
    # top to bottom: g0, break 1, g1, break 2, g2
    top = outline_edges(svg, 1)
    tops = [top[k] for k in ("cluster_g0", "break0", "cluster_g1", "break1", "cluster_g2")]
    assert tops == sorted(tops) and len(set(tops)) == 5
    # each frame says its graph and where it comes from; the legend explains the marker
    assert "g0 \u00b7 forward \u00b7 tests/dynamo_models.py:" in " ".join(frames["cluster_g0"].texts)
    assert "left whole in PyTorch" in " ".join(frames["cluster_g0"].texts)  # 3 supported ops < min_block_size 5
    legend = " ".join(ET.fromstring(svg).itertext())
    assert ": dynamo's reason" in legend and "the Python after it runs" in legend




def test_breaks_in_a_row_at_one_line_share_one_marker(three):
    """A loop that breaks at one line again and again (fasterrcnn's poolers: five times) draws one
    marker that counts them, not five."""
    import dataclasses

    part = three[2]
    first, second = part.breaks
    again = dataclasses.replace(second, ended_graph=False)
    repeated = dataclasses.replace(part.capture, breaks=(first, second, again, again, again))
    src = hv.MultiGraphPartition._made(repeated, part.graphs, part.config).render("collapsed").source
    assert re.findall(r"^\t(break\d+) \[", src, re.M) == ["break0", "break1", "break2"]
    assert "graph break 3–5 (×3, one after another): Data-dependent branching" in src
    assert src.count("ended no graph") == 1


def test_every_frame_holds_its_graphs_subgraphs(three_mbs1):
    part = three_mbs1
    src = part.render("collapsed").source
    for k, p in enumerate(part.graphs):
        frame = src[src.index(f"subgraph cluster_g{k} {{"):]
        frame = frame[:frame.index("\n\t}\n")]  # up to the frame's own closing brace
        assert {sg.tag for sg in p.subgraphs} == set(re.findall(r"<B>(_run_on_\w+)</B>", frame)), k


@pytest.mark.parametrize("suffix", ["svg", "png", "pdf"])
def test_images(three, suffix, tmp_path, needs_dot):
    data = three[2].save(tmp_path / f"three.{suffix}").read_bytes()
    head = {"svg": b"<?xml", "png": b"\x89PNG", "pdf": b"%PDF"}[suffix]
    assert data.startswith(head) and len(data) > 5000


def test_dot_json_html_and_model_explorer(three, tmp_path, needs_dot):
    part = three[2]
    assert part.save(tmp_path / "three.dot").read_text(encoding="utf-8") == part.render().source
    doc = json.loads(part.save(tmp_path / "three.json").read_text(encoding="utf-8"))
    assert doc["format"] == "hierviz-graphs/1" and len(doc["graphs"]) == 3 and len(doc["breaks"]) == 2
    assert [g["partition"]["stats"] for g in doc["graphs"]] == [p.stats for p in part.graphs]
    page = part.save(tmp_path / "three.html").read_text(encoding="utf-8")
    for b in part.breaks:
        assert f"tests/dynamo_models.py:{b.line}" in page and b.short in page
    for k, p in enumerate(part.graphs):
        assert f"<td>g{k}</td>" in page
        assert all(sg.tag in page for sg in p.subgraphs)
    assert page.count("<svg") == 1 and "cluster_g2" in page
    me = json.loads(part.save(tmp_path / "me.json", format="model_explorer").read_text(encoding="utf-8"))
    assert [g["id"] for g in me["graphs"]] == [f"g{k} {v}" for k in range(3) for v in ("modules", "subgraphs")]
    assert "graph break at" in me["graphs"][0]["groupNodeAttributes"][""]["then"]
    names = {n["id"] for n in me["graphs"][2]["nodes"]}
    assert names == {name for name, kind in zip(part.graphs[1].records.name, part.graphs[1].records.kind)
                     if kind != "get_attr"}


def test_views_and_the_shared_budget(three):
    part = three[2]
    assert part.render("full").info["views"] == ["full"] * 3
    assert part.render("modules").info["views"] == ["collapsed"] * 3  # dynamo's graphs here have no submodules
    # auto shares max_nodes over the graphs: with a budget below the biggest graph it draws that one collapsed
    sizes = [sum(1 for kind in p.records.kind if kind != "get_attr") for p in part.graphs]
    small = part.render(max_nodes=min(sizes) + 1).info
    assert "collapsed" in small["views"] and "full" in small["views"]
    assert small["views"][sizes.index(min(sizes))] == "full"


def test_overlays_per_graph_and_clear_errors(three, three_mbs1):
    part = three[2]
    src = part.render("collapsed", against=three_mbs1).source
    assert "\u2192" in src  # a backend change marked (torch -> tensorrt in the graph left whole)
    with pytest.raises(hv.RenderError, match="against= of a graph-by-graph partition"):
        part.render(against=part.graphs[0])
    with pytest.raises(hv.RenderError, match="one value per graph"):
        part.render(measurement=object())
    with pytest.raises(hv.RenderError, match="has 2 graph"):
        part.render(measurement=[None, None])
    with pytest.raises(hv.RenderError, match=r"part.graphs\[k\].render\(focus="):
        part.render(focus="g1/add")
    with pytest.raises(hv.RenderError, match="numerics="):
        part.render(numerics=object())
    with pytest.raises(hv.ConfigError, match="did you mean 'max_nodes'"):
        part.render(max_node=3)
    with pytest.raises(hv.RenderError, match="unknown suffix"):
        part.save("three.txt")
    src = part.render("full", highlight="blockers").source
    assert "hv-frame" in src


class WholeModelTimes:
    """What hv.measure of a graph-by-graph partition returns, as far as drawing reads it: one
    per_subgraph table for the whole model, with the graph each subgraph belongs to."""

    device = "cpu"

    def __init__(self, part, ms: float = 1.5) -> None:
        import pandas as pd

        rows = [{"graph": k, "calls": 1, "tag": sg.tag, "backend": sg.backend, "asked": sg.backend, "status": "ok",
                 "median_ms": ms * (k + 1), "share": 0.0, "error": None}
                for k, p in enumerate(part.graphs) for sg in p.subgraphs]
        rows[-1].update(status="fallback", backend="torch", error="no GPU here")
        self.per_subgraph = pd.DataFrame(rows)

    def nothing_accelerated_text(self) -> str:
        return ""


def test_a_whole_model_measurement_is_drawn_on_each_frame(three, tmp_path, needs_dot):
    part = three[2]
    m = WholeModelTimes(part)
    src = part.render("collapsed", measurement=m).source
    for k in range(3):
        frame = src[src.index(f"subgraph cluster_g{k} {{"):]
        frame = frame[:frame.index("\n\t}\n")]
        assert f"{1.5 * (k + 1):.2f} ms" in frame, k  # graph k's own subgraph time, in its own frame
    last = src[src.index("subgraph cluster_g2 {"):]
    assert "fell back" in last and "no GPU here" in last  # the fallback said where it happened
    page = part.save(tmp_path / "measured.html", measurement=m).read_text(encoding="utf-8")
    assert '<h2 id="measured">Measured</h2>' in page and "no GPU here" in page


def test_notebook_shows_the_picture(three, needs_dot):
    page = three[2]._repr_html_()
    assert "hv.MultiGraphPartition" in page and "<svg" in page
    assert "graph break 2: Data-dependent branching" in html.unescape(page)


def test_saved_and_loaded_back(three, tmp_path, needs_dot):
    model, inputs, part = three
    loaded = hv.load_partition(part.save(tmp_path / "three.json"))
    assert isinstance(loaded, hv.MultiGraphPartition)
    assert loaded.stats == part.stats and loaded.breaks == part.breaks
    assert loaded.report() == part.report()
    assert portable(loaded.render().source) == portable(part.render().source)
    assert loaded.save(tmp_path / "again.png").read_bytes()[:4] == b"\x89PNG"
    assert loaded.reason_of("g1/add") == part.reason_of("g1/add")
    hv.check(loaded, max_subgraphs=part.stats["subgraphs"])
    with pytest.raises(hv.PartitionCheckError):
        hv.check(loaded, max_subgraphs=0)
    assert hv.diff(part, loaded).empty
    with pytest.raises(hv.SavedPartitionError, match="needs the model"):
        loaded.compile()
    with pytest.raises(hv.SavedPartitionError, match="re-partitioning needs the model's graphs"):
        hv.partition(loaded, min_block_size=2)
    with pytest.raises(hv.SavedPartitionError, match="has none"):
        hv.measure(loaded, inputs, device="cpu", model=model)


def test_loading_never_looks_op_names_up_here(three, tmp_path):
    part = hv.partition(three[2], torch_executed_ops={"torch.ops.aten.mul.Tensor"})
    text = part.save(tmp_path / "three.json").read_text(encoding="utf-8")
    missing = "torch.ops.hv_nowhere.gone.default"  # an op registered at run time where it was saved
    (tmp_path / "elsewhere.json").write_text(text.replace("torch.ops.aten.mul.Tensor", missing), encoding="utf-8")
    loaded = hv.load_partition(tmp_path / "elsewhere.json")
    assert loaded.config.torch_executed_ops == frozenset({missing})
    assert missing in loaded.report() and missing in loaded.graphs[2].ops().op.tolist()


def test_damaged_or_newer_files_say_what_to_do(three, tmp_path):
    doc = json.loads(three[2].save(tmp_path / "three.json").read_text(encoding="utf-8"))
    newer = {**doc, "format": "hierviz-graphs/9"}
    (tmp_path / "newer.json").write_text(json.dumps(newer), encoding="utf-8")
    with pytest.raises(hv.SavedPartitionError, match="newer hierviz"):
        hv.load_partition(tmp_path / "newer.json")
    del doc["graphs"][1]["partition"]["nodes"]
    (tmp_path / "damaged.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(hv.SavedPartitionError, match="nodes missing"):
        hv.load_partition(tmp_path / "damaged.json")


@pytest.mark.slow
def test_a_torchvision_detection_model(tmp_path, needs_dot, detection):
    """ssdlite320_mobilenet_v3_large, random weights: every graph drawn, readable, and round-tripped
    (its capture shared with the other tests through conftest's `detection`)."""
    part = hv.partition(detection.capture("ssdlite320_mobilenet_v3_large"))
    assert part.stats["graphs"] >= 2 and part.stats["graph_breaks"] >= 1
    d = part.render()
    assert d.info["graphs"] == part.stats["graphs"] and len(d.info["views"]) == part.stats["graphs"]
    assert d.info["nodes"] < 4 * 800  # the shared budget: big graphs are not drawn in full
    png = part.save(tmp_path / "ssdlite.png").read_bytes()
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert width < 32767 and height < 32767
    svg = part.save(tmp_path / "ssdlite.svg").read_text(encoding="utf-8")
    _, groups = parse_svg(svg)
    markers = [g for g in groups if "hv-break" in g.classes]
    assert 1 <= len(markers) <= part.stats["graph_breaks"]  # breaks in a row at one line share a marker
    shown = " ".join(" ".join(g.texts) for g in markers)
    assert all(f"{b.file.split('site-packages/')[-1]}:{b.line}" in shown for b in part.breaks)
    assert sum(1 for g in groups if "hv-frame" in g.classes) == part.stats["graphs"]
    loaded = hv.load_partition(part.save(tmp_path / "ssdlite.json"))
    assert loaded.stats == part.stats and loaded.report() == part.report()
