"""Issue 58 item 2: the min_block_size slider reaches every small value on any graph (the box
beside it takes any other), and the op box takes op names as the README and Python do."""

from __future__ import annotations

import html
import re

import pytest

import hierviz as hv
from hierviz.widget import Explorer, explore

TANH = "torch.ops.aten.tanh"


@pytest.fixture
def ex(small) -> Explorer:
    model, inputs, _ = small
    return explore(model, inputs, debounce=0)


@pytest.fixture(scope="module")
def big() -> Explorer:
    return explore(hv.zoo.synthetic(120), debounce=0)


def test_slider_is_bounded_so_each_small_value_is_a_step(big: Explorer) -> None:
    slider, box = big.min_block_size_slider, big.min_block_size_box
    nodes = sum(big.controller.graph_ops.values())
    assert nodes > 100
    assert (slider.min, slider.max) == (1, 30)  # 30 steps across the slider, not one per node
    assert box.max >= nodes
    for value in range(1, 11):  # each by the slider (a drag or an arrow key moves one step)
        slider.value = value
        assert box.value == value and big.partition.config.min_block_size == value
    box.value = 75  # beyond the slider: the box takes it, the slider rests at its end
    assert big.partition.config.min_block_size == 75
    assert slider.value == 30 and box.value == 75
    slider.value = 4
    assert box.value == 4 and big.partition.config.min_block_size == 4


def test_slider_on_a_small_graph_spans_the_graph(ex: Explorer) -> None:
    nodes = sum(ex.controller.graph_ops.values())
    assert nodes < 30
    assert ex.min_block_size_slider.max == nodes


def test_slider_refuses_a_value_past_its_end_and_says_where_to_type_it(big: Explorer) -> None:
    big.min_block_size_box.value = 5
    big.min_block_size_slider.value = 40
    message = big.errors["control"]
    assert "40" in message and "box beside it" in message
    assert html.escape(message) in big.panels["error"].value
    assert big.min_block_size_slider.value == 5 and big.partition.config.min_block_size == 5


@pytest.mark.parametrize("typed", ["tanh", "aten.tanh", "aten.tanh.default", "torch.ops.aten.tanh.default"])
def test_op_box_takes_short_and_qualified_names(ex: Explorer, small, typed: str) -> None:
    _, _, gm = small
    teo = ex.controls["torch_executed_ops"]
    assert list(teo.allowed_tags) == []  # the browser commits any typed name (Enter or Tab); Python checks it
    teo.value = [typed]
    want = hv.Config(torch_executed_ops={typed}).torch_executed_ops  # the same resolver as Config's
    assert ex.partition.config.torch_executed_ops == want
    assert list(teo.value) == sorted(want)
    assert "control" not in ex.errors
    assert ex.partition.stats == hv.partition(gm, torch_executed_ops={typed}).stats
    assert want == {TANH} or want == {TANH + ".default"}
    assert re.search(r"tanh(\.default)? &times;1", ex.teo_counts.value)  # a packet counts each overload's nodes


@pytest.mark.parametrize("typed,hint", [("tnah", "tanh"), ("torch.relu", "torch.ops.aten.relu.default")])
def test_op_box_refuses_an_unknown_name_and_says_what_to_type(ex: Explorer, typed: str, hint: str) -> None:
    teo = ex.controls["torch_executed_ops"]
    teo.value = ["aten.tanh.default"]
    before = ex.partition
    teo.value = ["torch.ops.aten.tanh.default", typed]  # a tag typed after the one there
    message = ex.errors["control"]
    assert typed in message and hint in message and "Enter" in message
    assert html.escape(message) in ex.panels["error"].value
    assert list(teo.value) == ["torch.ops.aten.tanh.default"]  # kept what it had
    assert ex.partition is before and ex.error is None


def test_op_picker_says_how_to_type_and_adds_what_is_typed(ex: Explorer) -> None:
    placeholder = ex.op_pick.placeholder
    assert "topk" in placeholder and "Enter" in placeholder
    ex.op_pick.value = "tanh"  # Enter or Tab in the browser sends the text
    assert list(ex.controls["torch_executed_ops"].value) == ["torch.ops.aten.tanh"] and ex.op_pick.value == ""
    ex.op_pick.value = "tnah"  # refused: the text stays to be corrected, the tags as they were
    assert "unknown op name 'tnah'" in ex.errors["control"] and ex.op_pick.value == "tnah"
    assert list(ex.controls["torch_executed_ops"].value) == ["torch.ops.aten.tanh"]
