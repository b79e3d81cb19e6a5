"""What blocks the most, in the explorer's selection panel: with nothing selected it says which
op keeps the most nodes out (the Blockers tab's first ranked row, made once in the worker in the
background), marks its nodes in the diagram and offers "select it"; a selected node that a row
keeps out shows that row and "apply its fix", which applies the row's what-if as clicking it in
the Blockers tab does ("back" restores). The same flow in a real page is
tests/widget/test_blockers_browser.py."""

from __future__ import annotations

import threading

import pytest
import torch

import hierviz as hv
from hierviz.errors import ConfigError
from hierviz.widget.worker import WorkerError
from hierviz.widget import controls as ctl
from hierviz.widget import long_work
from hierviz.widget.long_work import LongWork
from tests.partitioner.test_blockers import Blocked

WAIT_S = 120


@pytest.fixture()
def graph() -> torch.fx.GraphModule:
    return hv.capture(Blocked(), (torch.randn(2, 8),))


@pytest.fixture(autouse=True)
def in_kernel(monkeypatch) -> None:
    """The explorer's jobs run in this process (a background thread, as in the worker), so no test
    here starts a worker process but the one that says so."""
    monkeypatch.setattr(long_work, "IN_WORKER", False)


def open_explorer(graph: torch.fx.GraphModule) -> hv.Explorer:
    return hv.explore(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"}, debounce=0)


@pytest.fixture()
def ex(graph) -> hv.Explorer:
    explorer = open_explorer(graph)
    assert explorer.what_if.job.wait(WAIT_S)
    yield explorer
    explorer.close()


def blocker_text(ex: hv.Explorer) -> str:
    return ex.selection.blocker_html.value


def marked_names(ex: hv.Explorer, level: int, kind: str) -> list[str]:
    """The names of `kind` the diagram outlines in red at `level` (0 nodes, 1 boxes, 2 modules)."""
    return [name for k, name in ex.panels["diagram"].marked["levels"][level] if k == kind]


def shown(ex: hv.Explorer, key: str) -> bool:
    button = ex.selection.buttons[key]
    return button.layout.display != "none" and not button.disabled


def test_with_nothing_selected_the_panel_says_what_blocks_the_most_and_marks_its_nodes(ex, graph) -> None:
    top = ex.partition.blockers().iloc[0]  # hypot: no converter, 2 nodes
    text = blocker_text(ex)
    assert "What blocks the most" in text and "<code>hypot</code> (no TensorRT converter)" in text
    assert "keeps 2 node(s) out of TensorRT" in text
    assert (f"{int(top.subgraphs_saved)} subgraph(s) fewer ({int(top.subgraphs_if_fixed)} in all), "
            f"{int(top.accelerated_ops_gained)} more op(s) accelerated: <b>{top.verdict}</b>") in text
    hypots = [n for n, op in zip(ex.partition.nodes()["name"], ex.partition.nodes()["op"]) if "hypot" in str(op)]
    marked = ex.panels["diagram"].marked
    assert sorted(marked_names(ex, 0, "node")) == sorted(hypots) and len(hypots) == 2
    assert sorted(marked_names(ex, 1, "subgraph")) == sorted({ex.partition.tag_of(n) for n in hypots})
    assert "hypot" in marked["label"]
    assert shown(ex, "select_top") and not shown(ex, "apply_fix") and not shown(ex, "back")


def test_select_it_selects_a_marked_node_and_shows_its_row_with_apply_its_fix(ex) -> None:
    top = ex.partition.blockers().iloc[0]
    ex.selection.buttons["select_top"].click()
    name = ex.selected
    assert name in marked_names(ex, 0, "node")
    assert ex.panels["diagram"].selected == {"kind": "node", "name": name}
    text = blocker_text(ex)
    assert "row 1 of the Blockers tab: what blocks the most" in text
    for cell in (f"{int(top.nodes)} node(s)", f"{int(top.subgraphs_saved)} ({int(top.subgraphs_if_fixed)} in all)",
                 f">{int(top.accelerated_ops_gained)}<", f"<b>{top.verdict}</b>", "add torch.ops.aten.hypot.default"):
        assert cell in text, cell
    assert "what-if" in text
    assert shown(ex, "apply_fix") and not shown(ex, "select_top")
    assert "run this op in PyTorch" == ex.selection.buttons["run_in_pytorch"].description
    assert not ex.selection.buttons["run_in_pytorch"].disabled  # it stays


def test_a_node_of_a_lower_row_shows_that_row(ex) -> None:
    table = ex.partition.blockers()
    demoted = int(table.index[table.kind == "demoted"][0])
    ex.selected = "relu"  # in a block of 2, below min_block_size 3
    assert f"(row {demoted + 1} of the Blockers tab)</div>" in blocker_text(ex)
    text = blocker_text(ex)
    assert f"<b>{table.iloc[demoted].verdict}</b>" in text and "min_block_size=2 (was 3)" in text


def test_a_node_no_row_keeps_out_has_no_row_and_no_fix(ex) -> None:
    accelerated = next(n for n in ex.partition.nodes()["name"] if ex.partition.backend_of(n) == "tensorrt")
    ex.selected = accelerated
    assert blocker_text(ex) == "" and not shown(ex, "apply_fix")
    with pytest.raises(ConfigError, match="not kept out by any row of the Blockers tab"):
        ex.selection.apply_fix()


def test_apply_its_fix_is_the_blockers_tab_s_what_if_and_back_restores(ex, graph) -> None:
    before = ex.config
    row = ex.blockers.iloc[0]
    ex.selection.select_top()
    ex.selection.buttons["apply_fix"].click()
    assert ex.config == row.config  # the row's what-if, exactly
    assert ex.partition.stats["subgraphs"] == hv.partition(graph, row.config).stats["subgraphs"] == \
        row.subgraphs_if_fixed
    assert ex.what_if.what_if is not None and ex.what_if.what_if[0] == before  # the tab's own what-if state
    assert not ex.blockers_tab.back.disabled
    assert "what-if applied" in blocker_text(ex) and shown(ex, "back")
    assert ex.panels["diagram"].marked["what_if"] == f"what-if applied: {row.change} (back restores your setting)"
    ex.tabs.selected_index = ctl.tab_index("blockers_box")
    assert "what-if applied" in ex.blockers_tab.banner.value  # labelled as the tab labels its own
    ex.selection.buttons["back"].click()
    assert ex.config == before and ex.blockers_tab.back.disabled and not shown(ex, "back")
    assert "what-if applied" not in blocker_text(ex) and ex.errors == {}
    assert "what_if" not in ex.panels["diagram"].marked  # the picture is the user's setting again


@pytest.mark.slow  # starts the worker process
def test_the_table_is_made_once_for_the_panel_and_the_blockers_tab(graph, monkeypatch) -> None:
    monkeypatch.setattr(long_work, "IN_WORKER", True)  # the table comes from the worker, as in a notebook
    calls: list[hv.Config] = []
    original = LongWork.blockers

    def counted(self, part):
        calls.append(part.config)
        return original(self, part)

    monkeypatch.setattr(LongWork, "blockers", counted)
    ex = open_explorer(graph)
    try:
        assert ex.what_if.job.wait(WAIT_S)
        assert calls == [ex.config] and "What blocks the most" in blocker_text(ex)
        ex.tabs.selected_index = ctl.tab_index("blockers_box")
        assert len(ex.blockers_tab.picker.options) == len(ex.blockers)
        assert ex.what_if.job.wait(WAIT_S) and calls == [ex.config]
    finally:
        ex.close()


def test_meanwhile_it_says_finding_and_the_kernel_is_not_held(graph, monkeypatch) -> None:
    gate = threading.Event()
    original = LongWork.blockers

    def gated(self, part):
        assert gate.wait(WAIT_S)
        return original(self, part)

    monkeypatch.setattr(LongWork, "blockers", gated)
    ex = open_explorer(graph)  # returns while the table is being made
    try:
        assert "finding what blocks the most ..." in blocker_text(ex)
        assert ex.panels["diagram"].marked == {} and not shown(ex, "select_top")
        gate.set()
        assert ex.what_if.job.wait(WAIT_S)
        assert "What blocks the most" in blocker_text(ex) and shown(ex, "select_top")
    finally:
        gate.set()
        ex.close()


def test_a_failure_says_so(graph, monkeypatch) -> None:
    def failing(self, part):
        raise WorkerError("the worker process died (test)")

    monkeypatch.setattr(LongWork, "blockers", failing)
    ex = open_explorer(graph)
    try:
        assert ex.what_if.job.wait(WAIT_S)
        assert "could not find what blocks the most: the worker process died (test)" in blocker_text(ex)
        assert ex.panels["diagram"].marked == {} and not shown(ex, "select_top")
        assert not ex.internal_errors
    finally:
        ex.close()


def test_the_notebook_names_the_panels_buttons() -> None:
    """01_explore.ipynb tells a new user, beside the explorer, to press the buttons the panel has."""
    import json
    from pathlib import Path

    cells = json.loads((Path(__file__).resolve().parents[2] / "notebooks" / "01_explore.ipynb").read_text())["cells"]
    at = next(k for k, c in enumerate(cells) if "hv.explore(model" in "".join(c["source"]))
    near = "".join("".join(c["source"]) for c in cells[at - 1:at + 2] if c["cell_type"] == "markdown")
    ex = hv.explore(hv.capture(Blocked(), (torch.randn(2, 8),)), debounce=0)
    try:
        for key in ("select_top", "apply_fix"):
            assert f"**{ex.selection.buttons[key].description}**" in near, key
        assert "red" in near
    finally:
        ex.close()


def test_the_collapsed_and_module_views_mark_the_boxes_that_hold_the_nodes() -> None:
    from hierviz.widget.blocker_marks import drawn_groups
    from hierviz.widget.selection import members
    from tests.widget.test_selection import Alternating

    ex = hv.explore(Alternating(), (torch.randn(2, 4),), min_block_size=1, view="collapsed", max_nodes=10,
                    debounce=0)
    try:
        assert ex.what_if.job.wait(WAIT_S)
        top = ex.partition.blockers().iloc[0]  # i0e: no converter, 6 nodes between the TensorRT runs
        i0e = {n for n in ex.partition.nodes()["name"] if "i0e" in n}
        assert "i0e" in top.op and len(i0e) == 6
        groups = [g for g in drawn_groups(ex.svg) if g.kind == "group"]
        holding = sorted(g.name for g in groups if i0e & set(members(ex.partition, g)))
        assert len(holding) == len(i0e)  # each box of two subgraphs holds one
        assert sorted(marked_names(ex, 1, "group")) == holding
        ex.controls["view"].value = "modules"  # i0e is outside any module: the "(top level)" box
        assert marked_names(ex, 2, "top") == ["(top level)"] and marked_names(ex, 2, "module") == []
        ex.controls["view"].value = "full"  # the nodes themselves
        assert sorted(marked_names(ex, 0, "node")) == sorted(i0e)
    finally:
        ex.close()


def test_in_the_collapsed_view_select_it_selects_a_red_box_and_its_fix_applies(graph) -> None:
    ex = hv.explore(graph, min_block_size=3, torch_executed_ops={"aten.tanh.default"}, view="collapsed", debounce=0)
    try:
        assert ex.what_if.job.wait(WAIT_S)
        row = ex.blockers.iloc[0]  # hypot: its two nodes in two PyTorch subgraphs
        first_tag = ex.partition.tag_of("hypot")
        ex.selection.buttons["select_top"].click()
        assert ex.panels["diagram"].selected == {"kind": "subgraph", "name": first_tag}  # a box the view draws
        text = blocker_text(ex)
        assert "(row 1 of the Blockers tab: what blocks the most)" in text and "2 node(s), 1 of them here" in text
        assert shown(ex, "apply_fix")
        ex.selection.buttons["apply_fix"].click()
        assert ex.config == row.config and ex.partition.stats["subgraphs"] == row.subgraphs_if_fixed
    finally:
        ex.close()
