"""Issue 58 item 5: a wide table (Subgraphs, History, Diff, Blockers) scrolls inside its own
box, at the panel's width, instead of widening the panel so that its scroll bar sits at the
page's bottom. The panel's HTML is laid out in headless Chromium the way ipywidgets lays out an
HTML widget (a flex row whose content is a flex item) inside a 1,000 px wide page."""

from __future__ import annotations

import pandas as pd
import pytest

from hierviz.widget import panels

pytestmark = [pytest.mark.browser]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")

CHROMIUM = "/usr/bin/chromium"
PAGE = """<html><body style="margin:0"><div id="page" style="width:1000px;display:flex;flex-direction:column">
<div class="widget-inline-hbox widget-html" style="display:flex;flex-direction:row;align-items:baseline">
<div class="widget-html-content" style="align-self:stretch;flex-grow:1;flex-shrink:1;position:relative">{body}</div>
</div></div></body></html>"""


def wide_frame() -> pd.DataFrame:
    return pd.DataFrame({f"column_{i}_with_a_long_name": [f"value {i}-{r} " * 3 for r in range(60)] for i in range(30)})


@pytest.fixture(scope="module")
def page():
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=["--no-sandbox", "--disable-gpu"])
        try:
            yield browser.new_page(viewport={"width": 1400, "height": 900})
        finally:
            browser.close()


@pytest.mark.parametrize("panel", ["table", "history"])
def test_a_wide_table_scrolls_in_its_own_box(page, panel: str) -> None:
    df = wide_frame()
    body = panels.table_html(df) if panel == "table" else panels.history_html(df)
    page.set_content(PAGE.format(body=body))
    got = page.evaluate("""() => {
        const page = document.getElementById('page');
        const table = page.querySelector('table');
        let box = table.parentElement;
        while (box && getComputedStyle(box).overflowX !== 'auto') box = box.parentElement;
        const r = box.getBoundingClientRect();
        return {page: page.scrollWidth, box: r.width, boxHeight: r.height, inner: box.scrollWidth,
                table: table.getBoundingClientRect().width};
    }""")
    assert got["table"] > 2000  # the table is wide ...
    assert got["page"] <= 1000 and got["box"] <= 1000  # ... but the page is not: its box scrolls
    assert got["inner"] > got["box"] and got["boxHeight"] <= 480

