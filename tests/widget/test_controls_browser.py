"""Issue 58 item 2 in a real page: JupyterLab in headless Chromium (tests/widget/test_browser.py's server
and browser) runs a one-cell notebook that opens an explorer on a small model; the test types a
short op name into the op box and presses Enter (the tag appears, qualified, and the partition
changes), types an unknown name and presses Tab (refused, with a message saying what to type), and
moves the min_block_size slider with the keyboard to 3 (the box beside it follows, and so does
the partition). Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

import re
from typing import Any, Iterator

import pytest

from tests.widget.test_browser import (CHROMIUM, CHROMIUM_ARGS, NET_CELL, VIEWPORT, Lab, one_cell_notebook,
                                       run_all_cells, serving, shot, wait_until, wait_until_ready)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")

CELL = """import torch
import hierviz as hv

""" + NET_CELL + """ex = hv.explore(Net(), (torch.randn(1, 3, 16, 16),), min_block_size=1, debounce=0)
ex"""
UPDATE_S = 30


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    yield from serving(tmp_path_factory, lambda root: one_cell_notebook(root / "controls.ipynb", CELL))


def subgraphs(explorer: Any) -> int | None:
    """The stats line's subgraph count."""
    text = explorer.inner_text()
    found = re.search(r"subgraphs\s+(\d+) \(", text)
    return int(found.group(1)) if found else None


def test_op_box_takes_a_short_name_on_enter_and_the_slider_reaches_3(lab: Lab) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(f"{lab.url}/lab/tree/controls.ipynb?reset&token={lab.token}", wait_until="domcontentloaded")
            wait_until_ready(page, 1)
            run_all_cells(page)
            explorer = page.locator(".hierviz-explorer").first
            before = wait_until(lambda: subgraphs(explorer), 180, "the explorer did not show its counts", page)
            assert before == 1  # conv, relu, sigmoid, mul: one TensorRT subgraph

            ops = explorer.locator(".jupyter-widget-tagsinput").nth(1)  # priority's comes first
            assert not ops.locator("input.jupyter-widget-taginput").is_visible()  # typed in the box beside it
            box = explorer.get_by_placeholder("+ op: topk")
            box.click()
            box.fill("sigmoid")
            box.press("Enter")
            wait_until(lambda: ops.locator(".jupyter-widget-tag", has_text="torch.ops.aten.sigmoid").count() == 1,
                       UPDATE_S, "the op typed short did not become a tag", page)
            after = wait_until(lambda: (n := subgraphs(explorer)) != before and n, UPDATE_S,
                               "the partition did not change after the op was forced", page)
            assert after == 3  # TensorRT | PyTorch's sigmoid | TensorRT
            shot(page, "controls-01-op-typed-short", explorer)

            box.click()
            box.fill("sigmiod")
            box.press("Tab")
            message = wait_until(lambda: "unknown op name" in (t := explorer.inner_text()) and t, UPDATE_S,
                                 "a misspelled op was not refused with a message", page)
            assert "sigmoid" in message and "Enter or Tab" in message  # what it meant, and what to type
            assert ops.locator(".jupyter-widget-tag:not(input)").count() == 1  # the refused name left no tag
            assert box.input_value() == "sigmiod"  # it stays to be corrected
            assert subgraphs(explorer) == after
            shot(page, "controls-02-op-refused", explorer)

            number = explorer.locator(".widget-inline-hbox input[type='number']").first
            handle = explorer.locator(".widget-slider .noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")
            handle.press("ArrowRight")
            wait_until(lambda: number.input_value() == "3", UPDATE_S, "the slider's keys did not reach 3", page)
            wait_until(lambda: subgraphs(explorer) == 1, UPDATE_S,
                       "min_block_size 3 did not demote the short subgraphs", page)
            shot(page, "controls-03-slider-3", explorer)
            assert errors == [], errors
        finally:
            browser.close()
