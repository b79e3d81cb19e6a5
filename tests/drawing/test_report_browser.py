"""The standalone HTML report in headless Chromium: it opens offline with no console errors,
shows the diagram, the config and the tables, and the zoom control works. Screenshots go to
test-artifacts/render/ (git-ignored)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = [pytest.mark.browser]

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright")
CHROMIUM = os.environ.get("HIERVIZ_CHROMIUM", "/usr/bin/chromium")
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
        "--no-first-run", "--disable-sync"]


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield browser
        browser.close()


def open_page(browser, path: Path):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    problems: list[str] = []
    page.on("console", lambda msg: problems.append(f"console.{msg.type}: {msg.text}")
            if msg.type in ("error", "warning") else None)
    page.on("pageerror", lambda exc: problems.append(f"pageerror: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"requestfailed: {req.url}"))
    requests: list[str] = []
    page.on("request", lambda req: requests.append(req.url))
    page.goto(path.resolve().as_uri())
    page.wait_for_load_state("load")
    return page, problems, requests


@pytest.mark.parametrize("case", ["transformer-fallback", "conv-split", "names"])
def test_report_opens_without_errors(browser, case, transformer_parts, conv_parts, artifacts, tmp_path, needs_dot,
                                     request):
    if case == "names":
        part = request.getfixturevalue("bad_part")
    else:
        model, config = case.split("-")
        part = (transformer_parts if model == "transformer" else conv_parts)[config]
    path = part.save(tmp_path / f"{case}.html")
    page, problems, requests = open_page(browser, path)
    try:
        assert not problems, problems
        assert all(url.startswith("file://") or url.startswith("data:") for url in requests), requests
        svg = page.locator("#diagram ~ .hv-diagram svg").first
        assert svg.is_visible()
        box = svg.bounding_box()
        assert box["width"] > 200 and box["height"] > 100
        assert page.locator("svg g.cluster").count() == len(part.subgraphs)
        for section in ("config", "subgraphs", "ops", "report"):
            assert page.locator(f"h2#{section}").is_visible()
        assert page.locator("#subgraphs ~ table tbody tr").count() >= len(part.subgraphs)
        page.screenshot(path=str(artifacts / f"report_{case}.png"), full_page=False)
        # zoom: 200% makes the diagram twice as wide as 100%
        page.locator("label", has_text="100%").first.click()
        w100 = svg.bounding_box()["width"]
        page.locator("label", has_text="200%").first.click()
        w200 = svg.bounding_box()["width"]
        assert abs(w200 - 2 * w100) < 3, (w100, w200)
        page.screenshot(path=str(artifacts / f"report_{case}_200.png"), full_page=False)
        assert not problems, problems
    finally:
        page.close()


def test_notebook_display_in_browser(browser, transformer_parts, artifacts, tmp_path, needs_dot):
    """What Jupyter shows for a Partition, in a plain page: the diagram is visible inside a
    scrollable box and the CSS-only zoom works (no script, so untrusted notebooks show it too)."""
    part = transformer_parts["split"]
    body = part._repr_html_()
    path = tmp_path / "notebook.html"
    path.write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>cell</title>'
                    f'<link rel="icon" href="data:,"></head><body>{body}</body></html>', encoding="utf-8")
    page, problems, _ = open_page(browser, path)
    try:
        scroll = page.locator(".hv-scroll").first
        svg = page.locator(".hv-scroll svg").first
        assert svg.is_visible()
        assert scroll.evaluate("e => getComputedStyle(e).overflow") == "auto"
        fit = svg.bounding_box()["width"]
        page.locator("label", has_text="200%").first.click()
        assert svg.bounding_box()["width"] > fit
        assert scroll.evaluate("e => e.scrollWidth > e.clientWidth")  # scrollable when zoomed in
        page.screenshot(path=str(artifacts / "notebook_200.png"))
        assert not problems, problems
    finally:
        page.close()
