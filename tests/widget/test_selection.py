"""Clicking in the explorer's diagram, driven from Python: `Explorer.selected` (as a click
sets it), the selection panel's text and its buttons (run the op in PyTorch, undo, focus here,
show its rows in Ops, clear). The click in a real page is tests/widget/test_selection_browser.py."""

from __future__ import annotations

import html

import pytest
import torch

import hierviz as hv
from tests.drawing.test_element_ids import Alternating  # 12 subgraphs, a "(top level)" box
from hierviz.partitioner import partition as hv_partition
from hierviz.widget import Explorer, explore
from hierviz.widget.controls import tab_index

CONV = "torch.ops.aten.convolution.default"


def layout(p) -> list[tuple]:
    return [(sg.tag, sg.backend, sg.nodes) for sg in p.subgraphs]


@pytest.fixture
def ex(small, tmp_path) -> Explorer:
    model, inputs, _ = small
    return explore(model, inputs, debounce=0, output_dir=tmp_path / "out")


def panel(ex: Explorer) -> str:
    return ex.selection.html.value


def test_nothing_is_selected_at_first_and_the_panel_says_what_to_click(ex: Explorer) -> None:
    assert ex.selected is None and ex.panels["diagram"].selected == {}
    assert "Click a node or a subgraph" in panel(ex)
    assert all(ex.selection.buttons[k].disabled for k in ("run_in_pytorch", "undo", "focus", "show_rows", "clear"))


def test_selecting_a_node_shows_its_op_backend_subgraph_reason_module_and_source_line(ex: Explorer) -> None:
    part = ex.partition
    assert part.backend_of("convolution_1") == "tensorrt"
    ex.selected = "convolution_1"
    assert ex.selected == "convolution_1"
    assert ex.panels["diagram"].selected == {"kind": "node", "name": "convolution_1"}  # the page outlines it
    text = panel(ex)
    assert CONV in text and "TensorRT (tensorrt)" in text
    assert part.tag_of("convolution_1") in text
    assert part.reason_of("convolution_1").replace("<", "&lt;") in text
    assert "conv2" in text and "Conv2d" in text
    assert not ex.selection.buttons["run_in_pytorch"].disabled and ex.selection.buttons["undo"].disabled


class Scaled(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(x) * 2


def test_a_node_shows_the_users_source_line_that_made_it() -> None:
    ex = Explorer(Scaled(), (torch.randn(2, 3),), debounce=0)
    ex.selected = "sigmoid"
    assert "test_selection.py:" in panel(ex) and "return torch.sigmoid(x) * 2" in panel(ex)


class Blocked(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.block(x) + 1


def test_the_source_line_is_the_models_and_a_module_says_its_class() -> None:
    ex = Explorer(Blocked(), (torch.randn(2, 3),), debounce=0)
    ex.selected = "relu"  # run by nn.ReLU's forward: the line shown is the model's own
    assert "return self.block(x) + 1" in panel(ex) and "activation.py" not in panel(ex)
    ex.selected = "block"  # a module with no op of its own
    assert "Sequential" in panel(ex) and "ReLU" not in panel(ex)


def test_a_click_in_the_page_selects_as_python_does(ex: Explorer) -> None:
    ex.panels["diagram"].selected = {"kind": "node", "name": "sigmoid"}  # what the page's script sends
    assert ex.selected == "sigmoid"
    assert "torch.ops.aten.sigmoid.default" in panel(ex)


def test_run_in_pytorch_forces_the_op_and_undo_restores_the_partition(ex: Explorer, small) -> None:
    _, _, gm = small
    before = layout(ex.partition)
    ex.selected = "convolution_1"
    ex.selection.buttons["run_in_pytorch"].click()
    assert list(ex.controls["torch_executed_ops"].value) == [CONV]
    part = ex.partition
    assert part.config.torch_executed_ops == frozenset({CONV})
    assert layout(part) == layout(hv_partition(gm, torch_executed_ops={CONV})) != before
    assert part.backend_of("convolution_1") == "torch"
    assert "PyTorch (torch)" in panel(ex) and "in torch_executed_ops" in panel(ex)  # the panel follows
    assert ex.selection.buttons["run_in_pytorch"].disabled and not ex.selection.buttons["undo"].disabled
    assert len(ex.history) == 2

    ex.selection.buttons["undo"].click()
    assert list(ex.controls["torch_executed_ops"].value) == []
    assert layout(ex.partition) == before
    assert "TensorRT (tensorrt)" in panel(ex)
    assert ex.selection.buttons["undo"].disabled


def test_undo_keeps_the_ops_the_user_forced(small) -> None:
    model, inputs, _ = small
    relu = "torch.ops.aten.relu.default"
    cfg = hv.Config(torch_executed_ops={relu})
    ex = Explorer(model, inputs, cfg, debounce=0)
    ex.selected = "sigmoid"
    assert ex.selection.run_in_pytorch() == "torch.ops.aten.sigmoid.default"
    assert ex.partition.config.torch_executed_ops == {relu, "torch.ops.aten.sigmoid.default"}
    assert ex.selection.undo() == "torch.ops.aten.sigmoid.default"
    assert ex.partition.config.torch_executed_ops == {relu}
    assert cfg.torch_executed_ops == {relu}  # what the user passed is never changed
    assert ex.selection.undo() is None


def test_focus_here_draws_the_focus_view_of_the_selection(ex: Explorer) -> None:
    tag = ex.partition.tag_of("sigmoid")
    ex.selected = tag
    ex.selection.buttons["focus"].click()
    assert ex.controls["view"].value == "focus" and ex.controls["focus"].value == tag
    assert "focus" in ex.svg and "hv:subgraph:" + tag in ex.svg
    assert ex.selected == tag and tag in panel(ex)  # still selected, in the new picture


def test_selecting_a_subgraph_lists_its_ops_inputs_and_outputs(ex: Explorer) -> None:
    sg = next(s for s in ex.partition.subgraphs if s.backend == "tensorrt")
    ex.selected = sg.tag
    assert ex.panels["diagram"].selected == {"kind": "subgraph", "name": sg.tag}
    text = panel(ex)
    assert "TensorRT (tensorrt)" in text and f"{sg.compute_ops} compute op(s)" in text
    for name in sg.nodes:
        assert name in text
    for spec in (*sg.inputs, *sg.outputs):
        assert str(spec) in text
    assert ex.selection.buttons["run_in_pytorch"].disabled  # a subgraph has no one op


def test_a_built_subgraph_shows_its_build_row(ex: Explorer, monkeypatch) -> None:
    tags = [sg.tag for sg in ex.partition.subgraphs]
    builds = hv.Builds(rows=(hv.BuildRow(subgraph=tags[1], ops=5, stage="built", engine_bytes=123456),
                             hv.BuildRow(subgraph=tags[0], ops=4, stage="build", error="no converter for x")),
                       builder="TensorRT-RTX", on_cpu=True)
    monkeypatch.setattr(ex.controller, "builds_of", lambda part: builds)  # as "build engines" leaves them
    ex.selected = tags[1]
    assert "built, 123,456 bytes" in panel(ex)
    ex.selected = tags[0]
    assert "build: no converter for x" in panel(ex)
    ex.selected = tags[2]
    assert "123,456" not in panel(ex) and "no converter" not in panel(ex)


def test_selecting_a_module_and_showing_its_rows_in_ops(ex: Explorer) -> None:
    ex.selected = "conv2"
    assert ex.panels["diagram"].selected == {"kind": "module", "name": "conv2"}
    assert "Conv2d" in panel(ex)
    everything = ex.panels["ops"].value
    ex.selected = "sigmoid"
    ex.selection.buttons["show_rows"].click()
    assert ex.tabs.selected_index == tab_index("ops")
    rows = ex.panels["ops"].value
    assert "torch.ops.aten.sigmoid.default" in rows and CONV not in rows and "the rows of node" in rows
    ex.selection.buttons["clear"].click()
    assert ex.selected is None and ex.panels["ops"].value == everything


def test_a_name_not_in_the_partition_says_what_to_pass(ex: Explorer) -> None:
    with pytest.raises(hv.HiervizError, match="takes a node name .* a subgraph tag .* None clears"):
        ex.selected = "no_such_node"
    with pytest.raises(hv.HiervizError, match="not int 3"):
        ex.selected = 3
    assert ex.selected is None
    ex.selected = "sigmoid"
    ex.selected = None
    assert ex.selected is None and "Click a node" in panel(ex)


def test_a_bad_click_is_shown_never_raised(ex: Explorer) -> None:
    ex.panels["diagram"].selected = {"kind": "node", "name": "no_such_node"}
    assert "no_such_node is not in the shown partition" in panel(ex)
    ex.panels["diagram"].selected = {"kind": "banana", "name": "x"}
    assert "a selection is {'kind'" in ex.errors["action"]
    assert not ex.internal_errors




@pytest.fixture
def grouped(tmp_path) -> Explorer:
    return Explorer(Alternating(), (torch.randn(2, 4),), min_block_size=1, view="collapsed", max_nodes=10,
                    debounce=0, output_dir=tmp_path / "out")


def test_a_group_of_the_collapsed_view_is_selected_as_its_box_is_clicked(grouped: Explorer) -> None:
    ex = grouped
    subs = ex.partition.subgraphs
    assert len(subs) == 12 and 'hv:group:subgraphs%202' in ex.svg  # the box "subgraphs 2-3" a click reads back
    ex.panels["diagram"].selected = {"kind": "group", "name": "subgraphs 2-3"}  # what the page's script sends
    assert ex.selected == "subgraphs 2-3"
    text = panel(ex)
    assert "group" in text and "subgraphs 2-3" in text
    for sg in subs[2:4]:
        assert sg.tag in text
    for sg in (*subs[:2], *subs[4:]):
        assert sg.tag not in text
    assert "TensorRT (tensorrt)" in text and "PyTorch (torch)" in text
    b = ex.selection.buttons
    assert b["run_in_pytorch"].disabled and not b["focus"].disabled and not b["show_rows"].disabled


def test_a_group_set_from_python_shows_its_rows_and_focuses_on_its_first_subgraph(grouped: Explorer) -> None:
    ex = grouped
    subs = ex.partition.subgraphs
    ex.selected = "subgraphs 4-5"
    assert ex.panels["diagram"].selected == {"kind": "group", "name": "subgraphs 4-5"}
    ex.selection.buttons["show_rows"].click()
    assert ex.tabs.selected_index == tab_index("ops")
    rows = ex.panels["ops"].value
    ops = {ex.partition.record(n).op for sg in subs[4:6] for n in sg.nodes}
    assert "the rows of group" in rows and f"({len(ops)} of {len(ex.partition.ops())} ops)" in rows
    assert "torch.ops.aten.special_i0e.default" in rows and "torch.ops.aten.linear.default" not in rows
    ex.selection.buttons["focus"].click()
    assert ex.controls["view"].value == "focus" and ex.controls["focus"].value == subs[4].tag
    assert "hv:subgraph:" + subs[4].tag in ex.svg


def test_the_top_level_box_selects_the_nodes_outside_any_module(grouped: Explorer) -> None:
    ex = grouped
    ex.controls["view"].value = "modules"
    assert "hv:top:(top%20level)" in ex.svg
    ex.panels["diagram"].selected = {"kind": "top", "name": "(top level)"}
    assert ex.selected == "(top level)"
    text = panel(ex)
    outside = [n for n in ex.partition.nodes()["name"] if ex.partition.record(n).module_path == ""
               and ex.partition.record(n).tag]
    assert len(outside) == 18  # 6 x (relu, add, i0e)
    assert "18: relu_1, add, special_i0e" in text and "linear" not in text
    b = ex.selection.buttons
    assert b["focus"].disabled and not b["show_rows"].disabled and b["run_in_pytorch"].disabled
    with pytest.raises(hv.HiervizError, match="no one place to focus on: select one of its nodes"):
        ex.selection.focus_here()
    ex.selection.buttons["show_rows"].click()
    rows = ex.panels["ops"].value
    assert "torch.ops.aten.special_i0e.default" in rows and "torch.ops.aten.linear.default" not in rows
    ex.selected = None
    ex.selected = "(top level)"  # as Python names it
    assert ex.panels["diagram"].selected == {"kind": "top", "name": "(top level)"}


def test_a_group_the_partition_lacks_says_what_to_pass(grouped: Explorer) -> None:
    for name in ("subgraphs 11-12", "subgraphs 3-2", "subgraphs 02-3"):
        with pytest.raises(hv.HiervizError, match="a group of the collapsed view"):
            grouped.selected = name
    grouped.panels["diagram"].selected = {"kind": "group", "name": "subgraphs 11-12"}
    assert "subgraphs 11-12 is not in the shown partition" in panel(grouped)
    assert not grouped.internal_errors


def test_a_rolled_up_run_of_the_module_view_selects_every_copy(tmp_path) -> None:
    from tests.drawing.stack_models import odd_partition, stack

    model, inputs = stack()
    part = odd_partition(hv.capture(model, inputs))
    ex = Explorer(part, view="modules", debounce=0, output_dir=tmp_path / "out")
    assert "hv:repeat:blocks.3%20%C3%972" in ex.svg  # the box "blocks.3–4 ×2"
    ex.panels["diagram"].selected = {"kind": "repeat", "name": "blocks.3 \u00d72"}
    assert ex.selected == "blocks.3 \u00d72"
    text = panel(ex)
    assert "repeated modules" in text and "2 Block: blocks.3, blocks.4" in text
    names = [n for n in part.nodes()["name"] if part.record(n).module_path.startswith(("blocks.3", "blocks.4"))]
    assert len(names) == 12 and f"{len(names)}: {names[0]}, " in text
    assert "blocks.2" not in text
    b = ex.selection.buttons
    assert not b["focus"].disabled and not b["show_rows"].disabled and b["run_in_pytorch"].disabled
    ex.selection.buttons["focus"].click()
    assert ex.controls["focus"].value == "blocks.3" and "inside blocks.3 (Block)" in html.unescape(ex.svg)
    for name in ("blocks.0 \u00d76", "inp \u00d72", "blocks.0 \u00d71", "blocks.0 \u00d702"):
        with pytest.raises(hv.HiervizError, match="a repeat of the module view"):
            ex.selected = name


NOTES = ("hv&#45;stub", "hv&#45;outside", "hv&#45;input&#45;ref")  # plain text beside the boxes ("2 more inputs")


def test_every_box_each_view_draws_is_one_a_click_selects() -> None:
    """Each drawn box or cluster (not the plain-text notes beside them) carries an hv: id, and
    each id names what the shown partition has (selection.has), in every view the explorer draws."""
    import re
    from urllib.parse import unquote

    from hierviz.drawing import to_svg
    from hierviz.widget.selection import has
    from tests.drawing.stack_models import odd_partition, stack

    model, inputs = stack()
    parts = [hv.partition(Alternating(), (torch.randn(2, 4),), min_block_size=1),
             odd_partition(hv.capture(model, inputs))]
    kinds: set[str] = set()
    for part in parts:
        for view, kw in (("full", {}), ("collapsed", {}), ("collapsed", {"max_nodes": 10}), ("modules", {"depth": 1}),
                         ("modules", {"depth": 2}), ("focus", {"focus": part.subgraphs[1].tag})):
            svg = to_svg(part, view=view, **kw)
            boxes = re.findall(r'<g id="([^"]+)" class="((?:node|cluster)[^"]*)"', svg)
            drawn = [d for d, klass in boxes if not any(note in klass for note in NOTES)]
            assert drawn and all(d.startswith("hv:") for d in drawn), (view, kw, drawn)
            for element in map(html.unescape, drawn):
                head, name = element[3:].split(":", 1)
                kind = head.split("~")[0]
                kinds.add(kind)
                assert has(part, kind, unquote(name)), (view, kw, element)
    assert kinds == {"node", "subgraph", "module", "group", "repeat", "top"}


def test_the_top_level_of_a_model_whose_ops_all_run_in_modules_says_there_is_none() -> None:
    ex = Explorer(torch.nn.Sequential(torch.nn.Linear(3, 3), torch.nn.ReLU()), (torch.randn(2, 3),), debounce=0)
    with pytest.raises(hv.HiervizError, match=r"every op of this model runs inside a module: there is no '\(top"):
        ex.selected = "(top level)"
