"""Click to act, in a real page: JupyterLab in headless Chromium (tests/widget/test_browser.py's
server and browser) runs a one-cell notebook that opens an explorer on a small model; the
test clicks a node in the diagram, reads the selection panel, presses "run this op in
PyTorch" and sees the new partition: the node's backend class in the SVG and the panel both
say PyTorch; then zooms with the wheel, pans by a drag (which selects nothing) and fits back,
clicks a subgraph's box in the collapsed view and a module's box in the module view, focuses on
that module and shows its rows in the Ops tab. A second notebook draws a graph of 12 subgraphs
collapsed two a box: the test clicks a box of two subgraphs, then the module view's "(top level)"
box, and reads each in the panel.
Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

from typing import Any, Iterator

import pytest

from tests.widget.test_browser import (CHROMIUM, CHROMIUM_ARGS, NET_CELL, VIEWPORT, Lab, one_cell_notebook,
                                       run_all_cells, serving, shot, wait_until, wait_until_ready)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")

CELL = """import torch
import hierviz as hv

""" + NET_CELL + """ex = hv.explore(Net(), (torch.randn(1, 3, 16, 16),), min_block_size=1, view="full", debounce=0)
ex"""
GROUPS_CELL = """import torch
import hierviz as hv

class Alternating(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.block = torch.nn.Sequential(torch.nn.Linear(4, 4), torch.nn.ReLU())

    def forward(self, x):
        x = self.block(x)
        for _ in range(6):
            x = torch.special.i0e(torch.relu(x) + 1)
        return x

ex = hv.explore(Alternating(), (torch.randn(2, 4),), min_block_size=1, view="collapsed", max_nodes=10, debounce=0)
ex"""
UPDATE_S = 30


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    def put(root: Any) -> None:
        one_cell_notebook(root / "click.ipynb", CELL)
        one_cell_notebook(root / "groups.ipynb", GROUPS_CELL)

    yield from serving(tmp_path_factory, put)


def node_state(explorer: Any, name: str) -> dict[str, Any] | None:
    """The node's classes in the SVG, the selection panel's text and the picture's viewBox."""
    return explorer.evaluate("""(root, name) => {
        const svg = root.querySelector('.hv-diagram-widget svg');
        if (!svg) return null;
        const g = [...svg.querySelectorAll('g[id]')].find(e => e.id === 'hv:node:' + encodeURIComponent(name));
        const panel = root.querySelector('.hv-selection');
        return {classes: g ? g.getAttribute('class') : null,
                outlined: g ? g.classList.contains('hv-dw-selected') : null,
                panel: panel ? panel.innerText : '', viewBox: svg.getAttribute('viewBox')};
    }""", name)


def test_click_a_node_force_it_to_pytorch_and_see_the_new_partition(lab: Lab) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(f"{lab.url}/lab/tree/click.ipynb?reset&token={lab.token}", wait_until="domcontentloaded")
            wait_until_ready(page, 1)
            run_all_cells(page)
            explorer = page.locator(".hierviz-explorer").first
            first = wait_until(lambda: (s := node_state(explorer, "sigmoid")) and s["classes"] and s, 180,
                               "the explorer's diagram did not show node sigmoid", page)
            assert "hv-tensorrt" in first["classes"] and not first["outlined"], first
            assert "Click a node" in first["panel"]

            page.locator(".hv-diagram-widget g[id='hv:node:sigmoid']").first.click()
            picked = wait_until(lambda: (s := node_state(explorer, "sigmoid")) and "node sigmoid" in s["panel"] and s,
                                UPDATE_S, "the selection panel did not show the clicked node", page)
            assert picked["outlined"], picked
            assert "torch.ops.aten.sigmoid.default" in picked["panel"] and "TensorRT (tensorrt)" in picked["panel"]
            assert "return torch.sigmoid(y) * y" in picked["panel"]  # the user's source line
            shot(page, "click-01-node-selected", explorer)

            explorer.locator("button", has_text="run this op in PyTorch").click()
            forced = wait_until(lambda: (s := node_state(explorer, "sigmoid")) and s["classes"]
                                and "hv-torch" in s["classes"] and "PyTorch (torch)" in s["panel"] and s,
                                UPDATE_S, "the forced node did not move to PyTorch in the picture and the panel", page)
            assert forced["outlined"], "the selection is kept across the redraw"
            assert "in torch_executed_ops" in forced["panel"]
            assert explorer.locator(".jupyter-widget-tag", has_text="sigmoid").count() >= 1  # the op box shows it
            shot(page, "click-02-forced-to-pytorch", explorer)

            explorer.locator("button", has_text="undo").click()
            wait_until(lambda: (s := node_state(explorer, "sigmoid")) and "hv-tensorrt" in (s["classes"] or ""),
                       UPDATE_S, "undo did not bring the node back to TensorRT", page)

            box = explorer.locator(".hv-dw-box").first
            box.scroll_into_view_if_needed()
            before = node_state(explorer, "sigmoid")["viewBox"]
            b = box.bounding_box()
            cx, cy = b["x"] + b["width"] / 2, b["y"] + min(b["height"] / 2, 150)
            page.mouse.move(cx, cy)
            page.mouse.wheel(0, -400)
            zoomed = wait_until(lambda: (v := node_state(explorer, "sigmoid")["viewBox"]) != before and v, 10,
                                "the wheel did not zoom", page)
            assert float(zoomed.split()[2]) < float(before.split()[2]), (before, zoomed)  # fewer units across
            page.mouse.move(cx, cy)
            page.mouse.down()
            page.mouse.move(cx + 100, cy + 60, steps=5)
            page.mouse.up()
            panned = node_state(explorer, "sigmoid")
            assert panned["viewBox"] != zoomed and "node sigmoid" in panned["panel"], panned  # a drag selects nothing
            explorer.locator("button", has_text="fit").click()
            assert node_state(explorer, "sigmoid")["viewBox"] == before

            # the collapsed view: a subgraph's box; the module view: a module's box
            for view, element, says in (("collapsed", "hv:subgraph:_run_on_acc_tensorrt_0", "compute op(s)"),
                                        ("modules", "hv:module:conv", "Conv2d")):
                explorer.locator(".widget-toggle-button", has_text=view).first.click()
                target = explorer.locator(f".hv-diagram-widget g.node[id='{element}']").first
                target.wait_for(timeout=UPDATE_S * 1000)
                target.click()
                name = element.split(":", 2)[2]
                wait_until(lambda: (t := explorer.locator(".hv-selection").inner_text()) and name in t and says in t,
                           UPDATE_S, f"clicking a box in the {view} view did not select {name}", page)
            shot(page, "click-03-module-selected", explorer)

            explorer.locator("button", has_text="focus here").click()  # module conv: the module view inside it
            focus_box = explorer.locator("input[placeholder='node or subgraph to focus on']").first
            wait_until(lambda: focus_box.input_value() == "conv" and explorer.locator(
                ".widget-toggle-button.mod-active", has_text="focus").count() > 0,
                UPDATE_S, "focus here did not set the focus control and the focus view", page)
            explorer.locator("button", has_text="show its rows in Ops").click()
            rows = wait_until(lambda: (f := explorer.locator(".hv-ops-filter")).count() and f.first.is_visible() and
                              explorer.locator(".hv-ops-filter + div table").first.inner_text(),
                              UPDATE_S, "show its rows did not open the Ops tab with the module's rows", page)
            assert "convolution" in rows and "sigmoid" not in rows, rows
            assert errors == [], errors
        finally:
            browser.close()


def element_state(explorer: Any, element: str) -> dict[str, Any] | None:
    """Whether the diagram has the element of id `element` (as the page decodes it) and it is
    outlined, and the selection panel's text."""
    return explorer.evaluate("""(root, element) => {
        const svg = root.querySelector('.hv-diagram-widget svg');
        if (!svg) return null;
        const g = [...svg.querySelectorAll('g[id]')].find(e => e.id === element);
        const panel = root.querySelector('.hv-selection');
        return {found: !!g, outlined: g ? g.classList.contains('hv-dw-selected') : null,
                panel: panel ? panel.innerText : ''};
    }""", element)


def test_click_a_box_of_several_subgraphs_and_the_top_level_box(lab: Lab) -> None:
    group = "hv:group:subgraphs%202-3"
    top = "hv:top:(top%20level)"
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(f"{lab.url}/lab/tree/groups.ipynb?reset&token={lab.token}", wait_until="domcontentloaded")
            wait_until_ready(page, 1)
            run_all_cells(page)
            explorer = page.locator(".hierviz-explorer").first
            first = wait_until(lambda: (s := element_state(explorer, group)) and s["found"] and s, 180,
                               "the collapsed view did not draw the box of subgraphs 2-3", page)
            assert not first["outlined"] and "Click a node" in first["panel"], first

            explorer.locator(f".hv-diagram-widget g.node[id='{group}']").first.click()
            picked = wait_until(lambda: (s := element_state(explorer, group)) and "group subgraphs 2-3" in s["panel"]
                                and s, UPDATE_S, "clicking the box of subgraphs 2-3 did not select its group", page)
            assert picked["outlined"], picked
            assert "_run_on_acc_tensorrt_2, _run_on_gpu_3" in picked["panel"], picked["panel"]
            assert "_run_on_gpu_1" not in picked["panel"] and "PyTorch (torch)" in picked["panel"]
            shot(page, "click-04-group-selected", explorer)

            explorer.locator(".widget-toggle-button", has_text="modules").first.click()
            target = explorer.locator(f".hv-diagram-widget g.node[id='{top}']").first
            target.wait_for(timeout=UPDATE_S * 1000)
            target.click()
            chosen = wait_until(lambda: (s := element_state(explorer, top)) and "(top level)" in s["panel"] and s,
                                UPDATE_S, "clicking the (top level) box did not select it", page)
            assert chosen["outlined"] and "ops outside any module" in chosen["panel"], chosen
            assert "18: relu_1, add, special_i0e" in chosen["panel"], chosen["panel"]
            assert explorer.locator("button", has_text="focus here").first.is_disabled()
            explorer.locator("button", has_text="show its rows in Ops").click()
            rows = wait_until(lambda: (f := explorer.locator(".hv-ops-filter")).count() and f.first.is_visible() and
                              explorer.locator(".hv-ops-filter + div table").first.inner_text(),
                              UPDATE_S, "show its rows did not open the Ops tab with the top level's rows", page)
            assert "special_i0e" in rows and "linear" not in rows, rows
            assert errors == [], errors
        finally:
            browser.close()
