"""The acceptance flow of issue 58, in a real page: JupyterLab in headless Chromium
(tests/widget/test_browser.py's server and browser) runs 01_explore.ipynb's explorer (its own
cells: resnet50, the residual adds in torch_executed_ops, TorchInductor second); the selection
panel says what blocks the most and the diagram outlines its nodes in red; "select it" brings one
into view; a click on a red node shows its row; "apply its fix" re-partitions to the row's
what-if (the diagram's subgraph count is hv.partition(graph, row.config)'s), labelled as a
what-if; "back" restores the setting; the collapsed view outlines the red nodes' subgraphs.
Screenshots go to test-artifacts/browser/ (explorer-click.png is docs/images/explorer-click.png)."""

from __future__ import annotations

import json
from typing import Any, Iterator

import pytest

from tests.widget.test_browser import (CHROMIUM, CHROMIUM_ARGS, NOTEBOOK, VIEWPORT, Lab, diagram_state,
                                       one_cell_notebook, run_all_cells, scroll_to, serving, shot, wait_until,
                                       wait_until_ready)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(900)]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")

FOUND_S = 240  # the explorer drawn and the worker's first table made, on a busy 2-core machine
UPDATE_S = 60
ROW_1 = "row 1 of the Blockers tab: what blocks the most"  # the panel's head of a red node's row


def explorer_cell() -> str:
    """01_explore.ipynb's own cells, as one: its setup, the resnet50 model and the explorer."""
    cells = ["".join(c["source"]) for c in json.loads(NOTEBOOK.read_text())["cells"] if c["cell_type"] == "code"]
    wanted = [next(c for c in cells if "import hierviz as hv" in c),
              next(c for c in cells if 'hv.zoo.load("resnet50")' in c),
              next(c for c in cells if "hv.explore(model" in c)]
    return "\n\n".join(wanted)


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from serving(tmp_path_factory, lambda root: one_cell_notebook(root / "blockers.ipynb", explorer_cell()))


def marks(explorer: Any) -> dict[str, Any] | None:
    """The diagram's red-outlined (the widget's data-marked) and outlined (selected) elements,
    whether each is inside the diagram's box and drawn red, and the selection panel's text."""
    return explorer.evaluate("""(root) => {
        const widget = root.querySelector('.hv-diagram-widget');
        const svg = widget && widget.querySelector('svg');
        if (!svg) return null;
        const box = root.querySelector('.hv-dw-box').getBoundingClientRect();
        const seen = (g) => { const r = g.getBoundingClientRect();
            return r.width > 0 && r.left >= box.left && r.right <= box.right && r.top >= box.top &&
                   r.bottom <= box.bottom; };
        const red = (g) => { const shape = g.querySelector('polygon, path, ellipse');
            return shape ? getComputedStyle(shape).stroke : ''; };
        const about = (g) => ({id: g.id, seen: seen(g), cls: g.getAttribute('class'), stroke: red(g)});
        const byId = new Map([...svg.querySelectorAll('g[id]')].map(g => [g.id, g]));
        const marked = JSON.parse(widget.dataset.marked || '[]').map(id => byId.get(id)).filter(g => g);
        const key = root.querySelector('.hv-dw-key');
        return {marked: marked.map(about), selected: [...svg.querySelectorAll('g.hv-dw-selected')].map(about),
                key: key ? key.textContent : '', panel: root.querySelector('.hv-selection').innerText};
    }""")


def test_a_new_user_fixes_what_blocks_the_most_in_two_clicks(lab: Lab) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            acceptance_flow(lab, browser)
        finally:
            browser.close()


def acceptance_flow(lab: Lab, browser: Any) -> None:
    import hierviz as hv
    from hierviz.widget.blocker_rows import BlockerRows

    page = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    try:
        page.goto(f"{lab.url}/lab/tree/blockers.ipynb?reset&token={lab.token}", wait_until="domcontentloaded")
        wait_until_ready(page, 1)
        run_all_cells(page)
        explorer = page.locator(".hierviz-explorer").first

        # what the test expects, from the library: the notebook's setting, its blockers' first row
        model, inputs = hv.zoo.load("resnet50")
        config = hv.Config(priority=("tensorrt", "inductor"), support={"inductor": hv.support.inductor()},
                           torch_executed_ops={"torch.ops.aten.add.Tensor"}, min_block_size=5)
        graph = hv.capture(model, inputs)
        part = hv.partition(graph, config)
        rows = BlockerRows.of(part, part.blockers())
        top = rows.top()
        assert top is not None
        row, nodes = rows.row(top), rows.members[top]

        found = wait_until(lambda: (m := marks(explorer)) and "What blocks the most" in m["panel"] and m["marked"]
                           and m, FOUND_S, "the panel did not say what blocks the most", page)
        assert sorted(m["id"] for m in found["marked"]) == sorted(f"hv:node:{n}" for n in nodes), found["marked"]
        assert {m["stroke"] for m in found["marked"]} == {"rgb(198, 40, 40)"}  # drawn red (#C62828)
        assert f"keeps {len(nodes)} node(s) out of TensorRT and TorchInductor" in found["panel"]
        assert f"{int(row.subgraphs_saved)} subgraph(s) fewer ({int(row.subgraphs_if_fixed)} in all)" in found["panel"]
        assert row.verdict in found["panel"] and "what blocks the most" in found["key"]
        assert diagram_state(explorer)["clusters"] == part.stats["subgraphs"]
        scroll_to(explorer)
        shot(page, "blockers-01-what-blocks-the-most", explorer)

        # "select it": a red node outlined and brought into the diagram's view; "clear" keeps the view
        explorer.locator("button", has_text="select it").click()
        picked = wait_until(lambda: (m := marks(explorer)) and m["selected"] and ROW_1 in m["panel"] and m,
                            UPDATE_S, "select it did not select a red node", page)
        assert picked["selected"][0]["id"] in {m["id"] for m in picked["marked"]} and picked["selected"][0]["seen"]
        explorer.locator("button", has_text="clear").click()
        wait_until(lambda: not marks(explorer)["selected"], UPDATE_S, "clear did not clear the selection", page)

        # a click on a red node in view: its row and "apply its fix"
        visible = next(m["id"] for m in marks(explorer)["marked"] if m["seen"])
        name = visible.split(":", 2)[2]
        page.locator(f".hv-diagram-widget g[id='{visible}']").first.click()
        clicked = wait_until(lambda: (m := marks(explorer)) and f"node {name}" in m["panel"] and
                             ROW_1 in m["panel"] and m, UPDATE_S, "clicking a red node showed no row", page)
        assert explorer.locator("button", has_text="apply its fix").is_visible()
        assert str(row.change) in clicked["panel"] and "what-if" in clicked["panel"]
        assert "hv-torch" in clicked["selected"][0]["cls"]
        shot(page, "explorer-click", explorer)  # docs/images/explorer-click.png is this picture

        # "apply its fix": the row's what-if, drawn, labelled as a what-if
        want = hv.partition(graph, row.config).stats["subgraphs"]
        explorer.locator("button", has_text="apply its fix").click()
        applied = wait_until(lambda: (s := diagram_state(explorer)) and s["clusters"] == want and s, UPDATE_S,
                             f"the diagram did not show the fix's {want} subgraph(s)", page)
        assert applied["clusters"] == want == int(row.subgraphs_if_fixed)
        after = wait_until(lambda: (m := marks(explorer)) and "what-if applied" in m["panel"] and m["selected"] and
                           "hv-tensorrt" in m["selected"][0]["cls"] and m, UPDATE_S,
                           "the panel did not label the what-if or the node did not move to TensorRT", page)
        assert f"subgraphs {part.stats['subgraphs']} \u2192 {want}" in after["panel"]
        assert explorer.locator(".hv-dw-whatif").inner_text() == \
            f"what-if applied: {row.change} (back restores your setting)"  # above the picture too
        shot(page, "blockers-02-fix-applied", explorer)

        explorer.locator("button", has_text="back").first.click()
        wait_until(lambda: (s := diagram_state(explorer)) and s["clusters"] == part.stats["subgraphs"], UPDATE_S,
                   "back did not restore the notebook's setting", page)
        wait_until(lambda: not explorer.locator(".hv-dw-whatif").is_visible(), UPDATE_S,
                   "the what-if label stayed above the picture after back", page)

        # the collapsed view draws no nodes: the boxes of their subgraphs are outlined instead
        tags = sorted({part.tag_of(n) for n in nodes})
        explorer.locator(".widget-toggle-button", has_text="collapsed").first.click()
        wait_until(lambda: (m := marks(explorer)) and sorted(g["id"] for g in m["marked"]) ==
                   [f"hv:subgraph:{t}" for t in tags], UPDATE_S,
                   "the collapsed view did not outline the subgraphs of the red nodes", page)
        assert errors == [], errors
    finally:
        page.context.close()

