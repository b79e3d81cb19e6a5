"""The module view: boxes per nn.Module, repeated blocks rolled up, the odd block apart."""

from __future__ import annotations

import pytest

import hierviz as hv
from hierviz.drawing import layout

from .helpers import check_golden, parse_svg
from .stack_models import captured, even_partition, odd_partition


@pytest.fixture(scope="module")
def odd() -> hv.Partition:
    return odd_partition(captured())


def test_golden_rolled_up_with_odd_block(odd, regen_golden):
    g = odd.render("modules")
    check_golden(g.source, "modules_stack_odd.dot", regen_golden)
    assert g.info["rolled_up"] == ["blocks.0\u20131 \u00d72", "blocks.3\u20134 \u00d72"]


def test_golden_depth_one(odd, regen_golden):
    check_golden(odd.render("modules", depth=1).source, "modules_stack_odd_depth1.dot", regen_golden)


def test_identical_blocks_roll_up_into_one():
    g = even_partition(captured()).render("modules", depth=1)
    assert g.info["rolled_up"] == ["blocks.0\u20134 \u00d75"]
    assert "blocks.2" not in g.source  # drawn once, under the range name


def test_odd_block_is_drawn_apart_with_its_backend_shares(odd, needs_dot):
    svg = layout(odd.render("modules", depth=1), "svg").decode()
    _, groups = parse_svg(svg)
    texts = {g.title: " ".join(g.texts) for g in groups if g.kind == "node"}
    odd_box = [t for t in texts.values() if t.startswith("blocks.2 ")]
    assert len(odd_box) == 1
    # blocks.2 has 5 compute ops (layer_norm, 2 linear, relu, add); its relu runs in PyTorch
    assert "Block \u00b7 5 ops" in odd_box[0] and "tensorrt 80% \u00b7 torch 20%" in odd_box[0]
    rolled = [t for t in texts.values() if t.startswith("blocks.0\u20131 \u00d72")]
    assert rolled and "5 ops each" in rolled[0] and "tensorrt 100%" in rolled[0]


def test_focus_draws_a_modules_inside(odd):
    g = odd.render("modules", focus="blocks.2")
    assert g.info["focus"] == "blocks.2"
    for child in ("norm", "fc1", "fc2", "blocks.2 (own ops)"):
        assert f"<B>{child}</B>" in g.source
    assert "blocks.0" not in g.source


def test_focus_view_on_a_module_path_is_the_module_view(odd):
    """focus= takes a node, a subgraph or a module (API): a module draws its inside."""
    for g in (odd.render(focus="blocks.2"), odd.render("focus", focus="blocks.2", depth=1)):
        assert g.info["view"] == "modules" and g.info["focus"] == "blocks.2"
    assert odd.render(focus="relu_2").info["view"] == "focus"  # a node name stays the focus view


def test_default_depth_stays_under_the_budget(odd):
    deep = odd.render("modules")
    assert deep.info["depth"] == 2
    small = odd.render("modules", max_nodes=6)
    assert small.info["depth"] == 1 and small.info["boxes"] + small.info["clusters"] <= 6


def test_same_dot_twice_and_partition_untouched(odd):
    before = odd.graph.code
    assert odd.render("modules").source == odd.render("modules").source
    assert odd.graph.code == before


@pytest.mark.parametrize("kwargs,words", [
    (dict(view="modules", depth=0), "depth must be a positive integer"),
    (dict(view="modules", depth="2"), "depth must be a positive integer"),
    (dict(view="full", depth=2), "depth= is for view='modules'"),
    (dict(view="modules", focus="blocks.9"), "Did you mean"),
    (dict(view="modules", focus="fc1"), "matches 5 modules"),
    (dict(view="modules", focus=3), "module path"),
])
def test_wrong_arguments_say_what_to_do(odd, kwargs, words):
    with pytest.raises(hv.RenderError, match=words):
        odd.render(**kwargs)


def test_graph_without_modules_is_refused_with_advice():
    p = hv.partition(hv.zoo.synthetic(60))
    with pytest.raises(hv.RenderError, match="view='collapsed'"):
        p.render("modules")


@pytest.mark.slow
def test_zoo_llama_layers_roll_up(zoo_cache, needs_dot):
    """The zoo's Llama with SDPA and sigmoid in PyTorch: its decoder layers are drawn once."""
    gm = zoo_cache.capture("llama")
    p = hv.partition(gm, torch_executed_ops={"torch.ops.aten.sigmoid.default"})
    g = p.render("modules")
    assert "model.layers.0\u20131 \u00d72" in g.info["rolled_up"]  # the full path
    svg = layout(g, "svg").decode()
    assert "LlamaDecoderLayer" in svg and "torch" in svg


def test_named_numbered_blocks_roll_up_like_container_items():
    """regnet's trunk_output.block3.block3-1 ... block3-5: same class and pattern, names that
    are not container indices, rolled up as 'block3-1…5 ×5'; fc1/fc2 (two layers) are not."""
    import collections

    import torch
    from torch import nn

    from .stack_models import Block

    torch.manual_seed(0)
    blocks = nn.Sequential(collections.OrderedDict((f"block3-{i}", Block()) for i in range(1, 6)))
    model = nn.Sequential(collections.OrderedDict([("inp", nn.Linear(8, 16)), ("block3", blocks)])).eval()
    p = hv.partition(model, (torch.randn(2, 8),))
    g = p.render("modules", depth=2)
    assert g.info["rolled_up"] == ["block3.block3-1\u20265 \u00d75"]
    assert "block3-3" not in g.source  # drawn once, under the range name
    assert p.render("modules").info["rolled_up"] == ["block3.block3-1\u20265 \u00d75"]  # fc1, fc2 inside: apart
