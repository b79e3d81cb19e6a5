"""Issue 58 item 4 in a real page: a measurement's states as a user sees them in JupyterLab in
headless Chromium (tests/widget/test_browser.py's server). A one-cell notebook opens an explorer
on a small model, with the measurement held by the test: hv.measure is replaced in the kernel by
tests/small_net.py's FakeMeasure behind a gate (a file the test writes), and jobs run in the
kernel, so nothing depends on how fast this CPU compiles or times.

With "measure latency" off the stats line says "not asked"; toggled on, the stats line and the
History tab's row say "measuring ... (stage)"; once the gate opens, both show the measured
figure; a failing measurement of another setting says "failed: <its error>" in both (and its
progress bar and stage go: a red bar kept saying "measuring (stage)" after it); with the
toggle off it is "not asked" again; and another setting clears the old failure from every
panel. Screenshots go to test-artifacts/browser/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Iterator

import pytest

from tests.widget.test_browser import (CHROMIUM, CHROMIUM_ARGS, NET_CELL, ROOT, VIEWPORT, Lab, history_rows,
                                       one_cell_notebook, run_all_cells, serving, shot, wait_until,
                                       wait_until_ready)

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")

STAGE = "compiling 1 subgraph"
ERROR = "stand-in failure: TensorRT needs an NVIDIA GPU"
CELL = """import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})  # tests/small_net.py's FakeMeasure
import torch
import hierviz as hv
import hierviz.latency
from hierviz.widget import long_work
from tests.small_net import FakeMeasure

long_work.IN_WORKER = False  # the stand-in measures here, in the kernel
GATE, fake = Path({gate!r}), FakeMeasure()

def held(partition, example_inputs, *, progress=None, **options):
    progress({stage!r}, 1, 3)
    while not (GATE / "open").exists() and not (GATE / "fail").exists():
        time.sleep(0.05)
    if (GATE / "fail").exists():
        error = (GATE / "fail").read_text()
        (GATE / "fail").unlink()
        raise hv.MeasureError(error)
    (GATE / "open").unlink()
    return fake(partition, example_inputs, **options)

hierviz.latency.measure = held

""" + NET_CELL + """ex = hv.explore(Net(), (torch.randn(1, 3, 16, 16),), min_block_size=1, debounce=0)
ex"""
UPDATE_S = 30


@pytest.fixture(scope="module")
def gate(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("gate")


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory, gate: Path) -> Iterator[Lab]:
    cell = CELL.format(root=str(ROOT), gate=str(gate), stage=STAGE)
    yield from serving(tmp_path_factory, lambda root: one_cell_notebook(root / "measure.ipynb", cell))


def latency(explorer: Any) -> str:
    """The stats line's latency row, as the page shows it."""
    return explorer.evaluate("""(root) => {
        const row = [...root.querySelectorAll('tr')].find(
            tr => tr.cells.length === 2 && tr.cells[0].textContent.trim() === 'latency');
        return row ? row.cells[1].innerText.trim() : '';
    }""")


def history_latency(explorer: Any) -> tuple[str, str]:
    """The newest History row's (latency, median_ms) cells ('' for a column not shown)."""
    rows = history_rows(explorer)
    return (rows[0].get("latency", ""), rows[0].get("median_ms", "")) if rows else ("", "")


def in_view(explorer: Any, text: str) -> bool:
    """Whether a History cell reading `text` is shown, inside its table's scroll box (not
    scrolled out of it to the right)."""
    return explorer.evaluate("""(root, text) => {
        const cell = [...root.querySelectorAll('table.hierviz-table td')].find(td => td.textContent.trim() === text);
        if (!cell || cell.offsetParent === null) return false;
        const box = cell.closest('.hv-scroll-table') || cell.closest('table').parentElement;
        const c = cell.getBoundingClientRect(), b = box.getBoundingClientRect();
        return c.width > 0 && c.left >= b.left && c.right <= b.right;
    }""", text)


def test_a_measurement_says_measuring_measured_failed_and_not_asked(lab: Lab, gate: Path) -> None:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_context(viewport=VIEWPORT, device_scale_factor=1).new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        try:
            page.goto(f"{lab.url}/lab/tree/measure.ipynb?reset&token={lab.token}", wait_until="domcontentloaded")
            wait_until_ready(page, 1)
            run_all_cells(page)
            explorer = page.locator(".hierviz-explorer").first
            first = wait_until(lambda: latency(explorer), 180, "the explorer did not show its stats line", page)
            assert first.startswith("not asked"), first

            history_tab = explorer.locator(".lm-TabBar-tab", has_text=re.compile(r"^History$")).first
            history_tab.click()
            explorer.get_by_role("button", name="measure latency").click()
            measuring = f"measuring ... ({STAGE})"
            wait_until(lambda: latency(explorer) == measuring, UPDATE_S,
                       "the stats line did not say it is measuring, with the stage", page)
            wait_until(lambda: history_latency(explorer)[0] == measuring, UPDATE_S,
                       "the History row did not say it is measuring, with the stage", page)
            assert in_view(explorer, measuring)
            shot(page, "measure-01-measuring", explorer)

            (gate / "open").write_text("")
            measured = wait_until(lambda: (t := latency(explorer)).startswith("1 ms median") and t, UPDATE_S,
                                  "the measured figure did not replace 'measuring'", page)
            assert "2× vs eager PyTorch" in measured, measured  # the stand-in's figures: 1 subgraph, 1 ms, 2 ms eager
            wait_until(lambda: history_latency(explorer) == ("", "1"), UPDATE_S,
                       "the History row did not show the measured figure", page)
            assert "measuring" not in explorer.inner_text()
            shot(page, "measure-02-measured", explorer)

            number = explorer.locator(".widget-inline-hbox input[type='number']").first
            handle = explorer.locator(".widget-slider .noUi-handle").first
            handle.focus()
            handle.press("ArrowRight")  # min_block_size 2: another setting, measured while shown
            wait_until(lambda: number.input_value() == "2", UPDATE_S, "the slider did not move to 2", page)
            wait_until(lambda: latency(explorer) == measuring, UPDATE_S,
                       "the new setting's stats line did not say it is measuring", page)
            (gate / "fail").write_text(ERROR)
            failed = f"failed: {ERROR}"
            wait_until(lambda: latency(explorer) == failed, UPDATE_S,
                       "the stats line did not say the measurement failed, with its error", page)
            wait_until(lambda: history_latency(explorer)[0] == failed, UPDATE_S,
                       "the History row did not say the measurement failed, with its error", page)
            assert in_view(explorer, failed)
            shown = explorer.inner_text()  # the progress bar and its stage went with the measurement
            assert STAGE not in shown and "measuring" not in shown, shown
            shot(page, "measure-03-failed", explorer)

            explorer.get_by_role("button", name="measure latency").click()
            wait_until(lambda: latency(explorer).startswith("not asked"), UPDATE_S,
                       "the toggle off did not say 'not asked'", page)
            handle.focus()
            handle.press("ArrowRight")  # min_block_size 3: the old setting's failure goes
            wait_until(lambda: number.input_value() == "3", UPDATE_S, "the slider did not move to 3", page)
            wait_until(lambda: ERROR not in explorer.inner_text(), UPDATE_S,
                       "the old setting's failure stayed after another setting was shown", page)
            assert latency(explorer).startswith("not asked"), latency(explorer)
            assert history_latency(explorer)[0] == ""
            shot(page, "measure-04-failure-cleared", explorer)
            assert errors == [], errors
        finally:
            for name in ("open", "fail"):  # a measurement still held lets go
                (gate / name).write_text(ERROR)
            browser.close()
