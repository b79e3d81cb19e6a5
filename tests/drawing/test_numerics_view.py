"""render(numerics=...): each subgraph's border coloured by its isolated error, in every view,
with the scale in the legend; the HTML report's Numerics section."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.drawing import layout
from hierviz.drawing.accuracy import SCALE, colour
from hierviz.drawing.dot import html
from hierviz.latency import CompileCache, register_compiler, unregister_compiler
from hierviz.latency.compiling.backend_compilers import perturbing

from .helpers import parse_svg

RELU = torch.ops.aten.relu.default
CONV = "torch.ops.aten.convolution.default"


@pytest.fixture(scope="module")
def checked():
    """(partition, numerics): tiny_conv with conv and relu on the bumping backend."""
    register_compiler("bumped", perturbing(RELU, 0.5))  # 0.5 added to each relu output
    try:
        model, x = hv.zoo.load("tiny_conv")
        part = hv.partition(model, x, priority=("bumped",), min_block_size=1,
                            support={"bumped": hv.support.ops([CONV, "torch.ops.aten.relu.default"])})
        result = hv.numerics(part, x, cache=CompileCache())
    finally:
        unregister_compiler("bumped")
    return part, result


def _expected(part, result):
    t = result.per_subgraph.set_index("tag")
    return {sg.tag: colour(t.loc[sg.tag, "isolated_ratio"]) for sg in part.subgraphs}


def test_the_scale_orders_errors_by_tolerance():
    assert colour(0.0) == SCALE[0][1] and colour(0.05) == SCALE[1][1] and colour(0.5) == SCALE[2][1]
    assert colour(3.0) == SCALE[3][1] and colour(1e6) == colour(float("inf")) == SCALE[4][1]


def test_collapsed_boxes_take_the_colour_of_their_error(checked):
    part, result = checked
    assert result.culprit is not None and result.culprit != part.subgraphs[0].tag
    src = part.render("collapsed", numerics=result).source
    _, groups = parse_svg(layout(part.render("collapsed", numerics=result), "svg").decode())
    boxes = {g.title: g for g in groups if g.kind == "node"}
    expected = _expected(part, result)
    for k, sg in enumerate(part.subgraphs):
        assert expected[sg.tag].lower() in boxes[f"s{k}"].strokes, sg.tag
    assert expected[part.subgraphs[0].tag] == SCALE[0][1]          # before the culprit: exact
    assert expected[result.culprit] in (SCALE[3][1], SCALE[4][1])  # the culprit fails
    assert "error starts here" in src and "isolated error against eager / tolerance" in src
    for _, _, text in SCALE:
        assert html(text) in src


@pytest.mark.parametrize("view", ["full", "focus", "modules"])
def test_every_view_marks_the_culprit(checked, view):
    part, result = checked
    kwargs = {"focus": result.culprit} if view == "focus" else {}
    g = part.render(view, numerics=result, **kwargs)
    src = g.source
    bad = colour(result.per_subgraph.set_index("tag").loc[result.culprit, "isolated_ratio"])
    assert f'color="{bad}"' in src or f"color={bad}" in src
    assert "error starts here" in src
    assert "isolated error against eager / tolerance" in src
    if view == "full":
        _, groups = parse_svg(layout(g, "svg").decode())
        k = [sg.tag for sg in part.subgraphs].index(result.culprit)
        cluster = next(x for x in groups if x.kind == "cluster" and x.title == f"cluster_{k}")
        assert bad.lower() in cluster.strokes


def test_numerics_of_another_partition_is_a_render_error(checked):
    part, result = checked
    other = hv.partition(part.graph, priority=("inductor",), support={"inductor": hv.support.ops([CONV])},
                         min_block_size=1)
    with pytest.raises(hv.RenderError, match="numerics= must be a check of this partition"):
        other.render("collapsed", numerics=result)
    with pytest.raises(hv.RenderError, match="numerics= takes the result of hv.numerics"):
        part.render("collapsed", numerics=object())


def test_html_report_has_a_numerics_section(checked, tmp_path):
    part, result = checked
    path = part.save(tmp_path / "report.html", numerics=result)
    text = path.read_text()
    assert '<h2 id="numerics">Numerics</h2>' in text
    assert f"the error starts in {result.culprit}" in text
    assert "isolated_max_abs" in text and result.culprit in text
    assert '<h2 id="numerics">' not in part.save(tmp_path / "plain.html").read_text()


@pytest.mark.parametrize("view", ["full", "collapsed", "focus", "modules"])
def test_the_three_overlays_together_in_every_view(checked, view):
    """measurement=, numerics= and against= at once, through the one overlay interface: each
    view carries the time, the error and the diff, and each overlay's legend row."""
    from .test_cost_overlay import fake_measurement

    part, result = checked
    other = hv.partition(part.graph, priority=("bumped",), min_block_size=1,
                         support={"bumped": hv.support.ops([CONV])})
    m = fake_measurement(part, [1.0] * len(part.subgraphs))
    kwargs = {"focus": result.culprit} if view == "focus" else {}
    src = part.render(view, measurement=m, numerics=result, against=other, **kwargs).source
    assert "of time" in src and "time: measured median per subgraph" in src
    assert "error starts here" in src and "isolated error against eager / tolerance" in src
    assert f"against {other.config.label()}" in src and "diff: " in src


def test_model_explorer_export_carries_the_numerics(checked, tmp_path):
    """The Model Explorer export reads the same interface: each node gets its subgraph's
    isolated error, and part.numerics.json holds the per-node values (error / tolerance)."""
    import json

    from hierviz.drawing.model_explorer import node_data_path

    part, result = checked
    path = part.save(tmp_path / "part.json", format="model_explorer", numerics=result)
    ratio = result.per_subgraph.set_index("tag")["isolated_ratio"]
    values = json.loads(node_data_path(path, ".numerics.json").read_text())["subgraphs"]["results"]
    assert {name: v["value"] for name, v in values.items()} == {
        n: pytest.approx(float(ratio[sg.tag])) for sg in part.subgraphs for n in sg.nodes}
    doc = json.loads(path.read_text())
    culprit = next(sg for sg in part.subgraphs if sg.tag == result.culprit)
    node = next(n for n in doc["graphs"][0]["nodes"] if n["id"] == culprit.nodes[0])
    assert {"key": "isolated_ratio", "value": f"{float(ratio[culprit.tag]):.3g}"} in node["attrs"]
    assert not node_data_path(path).exists()  # no measurement: no latency file
