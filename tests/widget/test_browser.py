"""The explorer the way a user meets it: JupyterLab in headless Chromium.

Starts JupyterLab (this interpreter's, on 127.0.0.1, a free port, a token, throw-away home,
config, settings, runtime and workspace folders) on a copy of notebooks/01_explore.ipynb,
runs all cells from the Run menu, waits for the explorer widget to render, checks the diagram
is visible and has clusters, that every control label reads whole at a 1,000 px wide notebook
(its screenshot is the README's docs/images/explorer.png), moves the min_block_size slider,
changes the priority, and checks that the diagram, the stats and the history table follow.
Screenshots go to
test-artifacts/browser/ (git-ignored), with JupyterLab's log.

Needs Debian's chromium (`make setup` installs it with apt-get) and Playwright's Python
package; the browser Playwright would download is not used.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "notebooks" / "01_explore.ipynb"
ARTIFACTS = ROOT / "test-artifacts" / "browser"
CHROMIUM = os.environ.get("HIERVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync",
                 "--disable-default-apps", "--disable-extensions", "--mute-audio"]
VIEWPORT = {"width": 1440, "height": 900}
SERVER_START_S = 90
RENDER_TIMEOUT_S = 120
RUN_ALL_TIMEOUT_S = 240
UPDATE_TIMEOUT_S = 30
# the small model the one-cell browser tests explore (a conv, a relu, a sigmoid and a mul), as notebook text
NET_CELL = """class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return torch.sigmoid(y) * y

"""

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(600)]

playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")


def labextension_dir() -> Path:
    return Path(sys.prefix) / "share" / "jupyter" / "labextensions" / "@jupyter-widgets" / "jupyterlab-manager"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------ JupyterLab
class Lab:
    """A JupyterLab server of this interpreter, isolated in `base`; `stop()` leaves no process."""

    def __init__(self, base: Path, root: Path) -> None:
        self.base, self.root = base, root
        self.port = free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}"
        dirs = {name: base / name for name in ("home", "config", "data", "runtime", "settings", "workspaces",
                                               "ipython")}
        for d in dirs.values():
            d.mkdir(parents=True, exist_ok=True)
        self.runtime = dirs["runtime"]
        # No news, no update checks, no extension manager: nothing that reaches the network
        # or pops up over the notebook.
        (dirs["config"] / "labconfig").mkdir(parents=True, exist_ok=True)
        disabled = {"@jupyterlab/apputils-extension:announcements": True,
                    "@jupyterlab/extensionmanager-extension": True}
        if os.environ.get("HIERVIZ_BROWSER_DISABLE_WIDGETS"):  # to see the test fail as it should
            disabled["@jupyter-widgets/jupyterlab-manager"] = True
        (dirs["config"] / "labconfig" / "page_config.json").write_text(json.dumps({"disabledExtensions": disabled}))
        notification = dirs["settings"] / "@jupyterlab" / "apputils-extension"
        notification.mkdir(parents=True, exist_ok=True)
        (notification / "notification.jupyterlab-settings").write_text(
            json.dumps({"fetchNews": "false", "checkForUpdates": False}))
        # Start the notebook's kernel without asking ("Always start the preferred kernel").
        tracker = dirs["settings"] / "@jupyterlab" / "notebook-extension"
        tracker.mkdir(parents=True, exist_ok=True)
        (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
        share = str(Path(sys.prefix) / "share" / "jupyter")
        self.env = {
            **os.environ,
            "HOME": str(dirs["home"]),
            "JUPYTER_CONFIG_DIR": str(dirs["config"]),
            # The user data dir is empty; sys.prefix/share/jupyter (kernelspec, ipywidgets'
            # labextension) stays on the data path, and goes first.
            "JUPYTER_DATA_DIR": str(dirs["data"]),
            "JUPYTER_PATH": share,
            "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
            "JUPYTERLAB_SETTINGS_DIR": str(dirs["settings"]),
            "JUPYTERLAB_WORKSPACES_DIR": str(dirs["workspaces"]),
            "IPYTHONDIR": str(dirs["ipython"]),
            "MPLCONFIGDIR": str(base / "mpl"),
            "PYTHONWARNINGS": "ignore",
            "JUPYTER_PLATFORM_DIRS": "1",
        }
        self.env.pop("JUPYTER_PREFER_ENV_PATH", None)
        self.log_path = ARTIFACTS / "jupyterlab.log"
        self.proc: subprocess.Popen | None = None

    def start(self) -> None:
        cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--ip=127.0.0.1", f"--port={self.port}",
               "--port-retries=0", f"--IdentityProvider.token={self.token}", f"--ServerApp.root_dir={self.root}",
               "--ServerApp.open_browser=False", "--LabApp.news_url=None", "--ServerApp.terminals_enabled=False",
               "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
               "--LabApp.extension_manager=readonly", "--ServerApp.shutdown_no_activity_timeout=900"]
        if os.geteuid() == 0:
            cmd.append("--allow-root")  # containers and CI runners often run as root
        self.log = open(self.log_path, "w")
        self.proc = subprocess.Popen(cmd, cwd=self.root, env=self.env, stdout=self.log, stderr=subprocess.STDOUT,
                                     stdin=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + SERVER_START_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"JupyterLab exited with {self.proc.returncode} while starting:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/api/status?token={self.token}", timeout=2) as r:
                    if r.status == 200:
                        return
            except OSError:
                pass
            time.sleep(0.5)
        raise RuntimeError(f"JupyterLab did not answer within {SERVER_START_S} s:\n{self.log_tail()}")

    def log_tail(self, n: int = 40) -> str:
        try:
            self.log.flush()
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-n:])
        except (OSError, ValueError):  # the log gone, or already closed
            return "(no log)"

    def kernel_pids(self) -> list[int]:
        """Processes started by this server's kernels: their command line names a connection
        file in this server's (unique, temporary) runtime folder."""
        pids = []
        marker = str(self.runtime).encode()
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if marker in (entry / "cmdline").read_bytes():
                    pids.append(int(entry.name))
            except OSError:
                continue
        return pids

    def stop(self) -> list[int]:
        """Shut down cleanly (the server stops its kernels), then escalate; returns the pids
        that had to be killed."""
        killed: list[int] = []
        proc = self.proc
        if proc is None:
            return killed
        if proc.poll() is None:
            try:
                req = urllib.request.Request(f"{self.url}/api/shutdown", method="POST",
                                             headers={"Authorization": f"token {self.token}"})
                urllib.request.urlopen(req, timeout=5).close()
            except OSError:
                pass
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self._signal_group(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    self._signal_group(proc.pid, signal.SIGKILL)
                    proc.wait(timeout=10)
                    killed.append(proc.pid)
        # A kernel outlives a killed server for a moment (it polls its parent); wait, then kill.
        deadline = time.monotonic() + 10
        while self.kernel_pids() and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in self.kernel_pids():
            try:
                os.kill(pid, signal.SIGKILL)
                killed.append(pid)
            except ProcessLookupError:
                pass
        self.log.close()
        return killed

    @staticmethod
    def _signal_group(pid: int, sig: int) -> None:
        try:
            os.killpg(pid, sig)
        except ProcessLookupError:
            pass


def serving(tmp_path_factory: pytest.TempPathFactory, put: Callable[[Path], None]) -> Iterator[Lab]:
    """JupyterLab on a new folder that `put` fills with notebooks, stopped after with no process
    left behind; fails at once, saying what to install, without Chromium or graphviz's `dot`."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: run `make setup` (it installs Debian's chromium), "
                    "or set HIERVIZ_CHROMIUM")
    if shutil.which("dot") is None:
        pytest.fail("graphviz `dot` not found: run `make setup` (apt-get install graphviz)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    base = tmp_path_factory.mktemp("lab")
    root = base / "work"
    root.mkdir()
    put(root)
    server = Lab(base, root)
    try:
        server.start()
        yield server
    finally:
        killed = server.stop()
        left = server.kernel_pids()
        assert not left, f"processes left behind by JupyterLab: {left}"
        if killed:
            print(f"JupyterLab did not stop cleanly; killed {killed}")


def one_cell_notebook(path: Path, cell: str) -> None:
    """A notebook at `path` holding one code cell."""
    path.write_text(json.dumps({
        "cells": [{"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": cell}],
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": "python", "name": "python3"}},
        "nbformat": 4, "nbformat_minor": 5}))


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    for old in ARTIFACTS.glob("*.png"):
        old.unlink()
    # the repository's notebook is copied, never modified
    yield from serving(tmp_path_factory, lambda root: shutil.copy(NOTEBOOK, root / NOTEBOOK.name))


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        try:
            yield b
        finally:
            b.close()


# ------------------------------------------------------------------ page helpers
def shot(page: Any, name: str, widget: Any = None) -> Path:
    """A screenshot of the window, or of the whole `widget`: the notebook scrolls inside
    JupyterLab, not the page, so the window is made tall enough to hold the widget for a moment."""
    path = ARTIFACTS / f"{name}.png"
    if widget is None:
        page.screenshot(path=str(path))
        return path
    size = dict(page.viewport_size)
    try:
        height = widget.bounding_box()["height"]
        page.set_viewport_size({"width": size["width"], "height": int(min(max(height + 200, size["height"]), 4000))})
        scroll_to(widget)
        box = widget.bounding_box()
        tall = page.viewport_size["height"]
        page.screenshot(path=str(path), clip={"x": box["x"], "y": max(box["y"], 0), "width": box["width"],
                                              "height": min(box["height"], tall - max(box["y"], 0))})
    finally:
        page.set_viewport_size(size)
        scroll_to(widget)
    return path


def scroll_to(locator: Any) -> None:
    """Bring the top of `locator` to the top of the notebook's scroll area."""
    locator.evaluate("e => e.scrollIntoView({block: 'start'})")
    time.sleep(0.3)


def wait_until(predicate: Any, timeout: float, what: str, page: Any = None, interval: float = 0.25) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    if page is not None:
        shot(page, f"failed-{re.sub(r'[^a-z0-9]+', '-', what.lower())[:40]}")
    raise AssertionError(f"{what} within {timeout:.0f} s (last: {last!r})")


def run_all_cells(page: Any) -> None:
    page.locator(".lm-MenuBar-item", has_text="Run").first.click()
    page.locator(".lm-Menu-item:visible", has_text=re.compile(r"^Run All Cells$")).first.click()


def wait_until_ready(page: Any, cells: int, timeout: float = 90) -> None:
    """Wait until the notebook shows all its cells and its kernel is idle. If JupyterLab asks
    which kernel to start, press "Select" (the notebook's own kernelspec is preselected)."""
    status = page.locator(".jp-StatusBar-Widget, #jp-main-statusbar")
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")

    def ready() -> bool:
        if dialog.count() and dialog.first.is_visible():
            dialog.first.locator("button.jp-mod-accept").click()
            return False
        text = " ".join(status.all_inner_texts())
        shown = re.search(r"Cell \d+/(\d+)", text)
        return bool(re.search(r"\| Idle", text) and shown and int(shown.group(1)) == cells)

    wait_until(ready, timeout, "the notebook did not open with an idle kernel", page, interval=0.5)


def cells_not_done(page: Any) -> int:
    """Code cells still queued or running (prompt "[*]") or not run yet ("[ ]")."""
    # textContent, not innerText: JupyterLab skips rendering cells out of view (content-visibility)
    prompts = page.locator(".jp-NotebookPanel:visible .jp-CodeCell .jp-InputPrompt").evaluate_all(
        "els => els.map(e => e.textContent)")
    return sum(1 for p in prompts if not re.search(r"\[\d+\]", p))


def wait_for_widget(page: Any, explorer: Any) -> float | None:
    """None once the explorer is visible; else the seconds waited: RENDER_TIMEOUT_S, or less
    when every cell has run for 15 s without it appearing (a missing widget frontend)."""
    start = time.monotonic()
    done_since = None
    while time.monotonic() - start < RENDER_TIMEOUT_S:
        if explorer.count() and explorer.is_visible():
            return None
        if cells_not_done(page) == 0:
            done_since = done_since or time.monotonic()
            if time.monotonic() - done_since > 15:
                break
        else:
            done_since = None
        time.sleep(0.5)
    return time.monotonic() - start


def diagram_state(explorer: Any) -> dict[str, Any]:
    """What the diagram panel shows: cluster count, classes by backend, size and position."""
    return explorer.evaluate("""(root) => {
        const svg = root.querySelector('.hv-diagram svg');
        if (!svg) return null;
        const scroller = svg.closest('.hv-scroll') || svg.parentElement;
        const r = svg.getBoundingClientRect(), s = scroller.getBoundingClientRect();
        const clusters = [...svg.querySelectorAll('g.cluster')];
        const backends = {};
        for (const g of clusters) {
            for (const c of g.classList) if (c.startsWith('hv-') && c !== 'hv-subgraph')
                backends[c.slice(3)] = (backends[c.slice(3)] || 0) + 1;
        }
        const texts = [...svg.querySelectorAll('text')].slice(0, 400);
        const sizes = texts.map(t => t.getBoundingClientRect().height).filter(h => h > 0).sort((a, b) => a - b);
        return {clusters: clusters.length, backends,
                svg: {x: r.x, y: r.y, width: r.width, height: r.height},
                box: {x: s.x, y: s.y, width: s.width, height: s.height,
                      scrollWidth: scroller.scrollWidth, clientWidth: scroller.clientWidth,
                      scrollHeight: scroller.scrollHeight, clientHeight: scroller.clientHeight,
                      overflowX: getComputedStyle(scroller).overflowX,
                      overflowY: getComputedStyle(scroller).overflowY},
                textHeight: sizes.length ? sizes[Math.floor(sizes.length / 2)] : 0,
                fingerprint: svg.innerHTML.length + ':' + clusters.map(g => g.getAttribute('class')).join('|')};
    }""")


def history_rows(explorer: Any) -> list[dict[str, str]]:
    """The rows of the history table (newest first), as dicts keyed by column header."""
    return explorer.evaluate("""(root) => {
        const tables = [...root.querySelectorAll('table.hierviz-table')].filter(
            t => [...t.querySelectorAll('th')].some(th => th.textContent.trim() === 'run'));
        if (!tables.length) return [];
        const t = tables[0];
        const heads = [...t.querySelectorAll('thead th')].map(th => th.textContent.trim());
        return [...t.querySelectorAll('tbody tr')].map(tr => {
            const cells = [...tr.querySelectorAll('td')].map(td => td.textContent.trim());
            return Object.fromEntries(heads.map((h, i) => [h, cells[i]]));
        });
    }""")


CONTROLS_JS = """(root) => {
  const box = root.querySelector('.widget-vbox');
  const shown = (e) => e.offsetParent !== null && e.getClientRects().length > 0;
  const texts = Array.from(box.querySelectorAll(
      '.widget-label, .widget-toggle-button, .widget-button, button, .jupyter-widget-tag, label')).filter(shown);
  const overflowing = texts.filter(e => e.textContent.trim() && e.scrollWidth > e.clientWidth + 1)
      .map(e => e.textContent.trim());
  const dropped = Array.from(box.querySelectorAll('.widget-toggle-buttons')).filter(shown).map(t => {
      const label = t.querySelector('.widget-label');
      const first = t.querySelector('.widget-toggle-button');
      if (!label || !first || !label.textContent.trim()) return null;
      const a = label.getBoundingClientRect(), b = first.getBoundingClientRect();
      const cs = getComputedStyle(t);
      return Math.abs((a.top + a.bottom) / 2 - (b.top + b.bottom) / 2) > 8 ?
          label.textContent.trim() +
          ` [${cs.display} ${cs.flexDirection} ${cs.flexWrap} w=${t.getBoundingClientRect().width} ` +
          `label ${a.left},${a.top},${a.width} button ${b.left},${b.top}; ${t.outerHTML.slice(0, 300)}]` : null;
  }).filter(x => x);
  return {labels: texts.length, overflowing, dropped};
}"""


def controls_layout(explorer: Any) -> dict[str, Any] | None:
    """The explorer's controls: how many texts, which overflow their box (cut off with an
    ellipsis), and which choice's buttons sit below its label instead of beside it."""
    try:
        return explorer.evaluate(CONTROLS_JS)
    except playwright_api.Error:  # not rendered yet: Playwright's timeout, or the script's error
        return None


def open_tab(explorer: Any, title: str) -> None:
    explorer.locator(".lm-TabBar-tab", has_text=re.compile(rf"^{title}$")).first.click()


# ------------------------------------------------------------------ the test
def test_explorer_in_jupyterlab(lab: Lab, browser: Any) -> None:
    import hierviz as hv

    context = browser.new_context(viewport=VIEWPORT, device_scale_factor=1)
    page = context.new_page()
    console_errors: list[str] = []
    page.on("console", lambda m: console_errors.append(m.text) if m.type == "error" else None)
    try:
        page.goto(f"{lab.url}/lab/tree/{NOTEBOOK.name}?reset&token={lab.token}", wait_until="domcontentloaded")
        wait_until_ready(page, len(json.loads(NOTEBOOK.read_text())["cells"]))
        shot(page, "01-notebook-opened")

        run_all_cells(page)
        explorer = page.locator(".hierviz-explorer").first
        waited = wait_for_widget(page, explorer)
        if waited is not None:
            shot(page, "failed-explorer-did-not-render")
            pytest.fail(
                f"explorer widget did not render within {waited:.0f} s"
                f"{' (every cell had run)' if waited < RENDER_TIMEOUT_S else ''}: "
                f"is the @jupyter-widgets/jupyterlab-manager labextension installed and enabled in "
                f"{labextension_dir()} (`jupyter labextension list`)? (present: {labextension_dir().is_dir()}; "
                f"browser console errors: {console_errors[-3:]}; screenshot in {ARTIFACTS})")
        wait_until(lambda: cells_not_done(page) == 0 and
                   page.locator(".jp-Notebook-ExecutionIndicator[data-status='idle']").count() > 0,
                   RUN_ALL_TIMEOUT_S, "all cells did not finish", page, interval=1)
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']",
                              has_text="Traceback")
        assert errors.count() == 0, f"a cell raised: {errors.first.inner_text()[:1000]}"

        # ---- the diagram is visible and has clusters
        scroll_to(explorer)
        state = wait_until(lambda: diagram_state(explorer), 30, "the explorer shows no diagram", page)
        shot(page, "02-explorer-viewport")
        print(f"diagram as first shown: {state}")
        shot(page, "03-explorer-widget", explorer)
        assert state["svg"]["width"] > 0 and state["svg"]["height"] > 0, f"the diagram has no size: {state}"
        box = state["box"]
        assert box["x"] >= 0 and box["x"] + box["width"] <= VIEWPORT["width"] + 1, \
            f"the diagram's box is cut off by the window: {box}"
        scrolls = ("auto", "scroll")
        assert state["svg"]["width"] <= box["width"] + 1 or box["overflowX"] in scrolls, \
            f"the diagram is wider than its box and cannot be scrolled: {state}"
        assert state["svg"]["height"] <= box["height"] + 1 or box["overflowY"] in scrolls, \
            f"the diagram is taller than its box and cannot be scrolled: {state}"
        assert state["clusters"] > 0, "the diagram has no subgraph clusters"
        assert state["textHeight"] >= 7, f"diagram labels are unreadably small at the default zoom: {state}"

        # ---- at a 1,000 px wide notebook every control label reads whole (issue 31)
        wide = explorer.bounding_box()["width"]  # the notebook's width beside JupyterLab's side bar
        page.set_viewport_size({"width": int(VIEWPORT["width"] + 1000 - wide), "height": VIEWPORT["height"]})
        scroll_to(explorer)
        assert abs(explorer.bounding_box()["width"] - 1000) <= 40, explorer.bounding_box()
        cut = wait_until(lambda: (c := controls_layout(explorer)) and c, 30, "no controls found", page)
        shot(page, "02b-explorer-controls-1000px", explorer.locator(".widget-vbox").first)
        assert cut["labels"] > 10, cut
        assert cut["overflowing"] == [], f"control labels cut off at 1,000 px: {cut['overflowing']}"
        assert cut["dropped"] == [], f"a choice's buttons dropped below its label at 1,000 px: {cut['dropped']}"
        shot(page, "explorer", explorer)  # docs/images/explorer.png is this picture
        page.set_viewport_size(VIEWPORT)
        scroll_to(explorer)

        model, inputs = hv.zoo.load("resnet50")
        config = hv.Config(priority=("tensorrt", "inductor"), support={"inductor": hv.support.inductor()},
                           torch_executed_ops={"torch.ops.aten.add.Tensor"}, min_block_size=5)
        graph = hv.capture(model, inputs)
        expected = {mbs: hv.partition(graph, config, min_block_size=mbs) for mbs in (5, 15, 16)}
        assert state["clusters"] == expected[5].stats["subgraphs"], (state, expected[5])
        runs_before = len(history_rows(explorer))

        # ---- min_block_size: type into the linked box, then one step with the slider's keyboard
        mbs_box = explorer.locator(".widget-inline-hbox input[type='number']").first
        mbs_box.fill("15")
        mbs_box.press("Enter")
        after = wait_until(lambda: (s := diagram_state(explorer)) and s["fingerprint"] != state["fingerprint"] and s,
                           UPDATE_TIMEOUT_S, "the diagram did not change after min_block_size=15", page)
        assert after["clusters"] == expected[15].stats["subgraphs"], (after, expected[15])
        shot(page, "04-min-block-size-15", explorer)

        handle = explorer.locator(".widget-slider .noUi-handle, .widget-slider .ui-slider-handle").first
        handle.focus()
        handle.press("ArrowRight")
        wait_until(lambda: mbs_box.input_value() == "16", UPDATE_TIMEOUT_S,
                   "the slider's keyboard step did not reach the int box", page)

        open_tab(explorer, "History")
        rows = wait_until(lambda: (r := history_rows(explorer)) and r[0].get("min_block_size") == "16" and r,
                          UPDATE_TIMEOUT_S, "the history table has no row for min_block_size=16", page)
        assert len(rows) == runs_before + 2, f"expected two new runs in the history: {rows[:3]}"
        assert rows[1]["min_block_size"] == "15"
        assert rows[1]["subgraphs"] == str(expected[15].stats["subgraphs"])
        assert rows[0]["subgraphs"] == str(expected[16].stats["subgraphs"])
        shot(page, "05-history", explorer)
        open_tab(explorer, "Diagram")

        # ---- priority: switch TensorRT off (its tag's close button)
        before = diagram_state(explorer)
        priority = explorer.locator(".jupyter-widget-tagsinput").first
        trt_tag = priority.locator(".jupyter-widget-tag", has_text="tensorrt").first
        trt_tag.locator(".jupyter-widget-tag-close").click()
        changed = wait_until(lambda: (s := diagram_state(explorer)) and s["fingerprint"] != before["fingerprint"] and s,
                             UPDATE_TIMEOUT_S, "the diagram did not change after switching tensorrt off", page)
        want = hv.partition(graph, config, min_block_size=16, priority=("inductor",))
        assert changed["clusters"] == want.stats["subgraphs"], (changed, want)
        assert "tensorrt" not in changed["backends"], f"tensorrt clusters remain: {changed['backends']}"
        if want.stats["subgraphs_by_backend"].get("inductor"):
            assert changed["backends"].get("inductor"), changed["backends"]
        shot(page, "06-priority-inductor-only", explorer)
        open_tab(explorer, "History")
        rows = wait_until(lambda: (r := history_rows(explorer)) and r[0].get("priority") == "inductor" and r,
                          UPDATE_TIMEOUT_S, "the history table has no row for priority=inductor", page)
        assert rows[0]["subgraphs"] == str(want.stats["subgraphs"])
        assert rows[0]["min_block_size"] == "16"
        shot(page, "07-history-after-priority", explorer)
        open_tab(explorer, "Diagram")
        scroll_to(explorer.locator(".hv-diagram").first)
        shot(page, "08-diagram-viewport")

        # ---- the second explorer (BERT) rendered too
        bert = page.locator(".hierviz-explorer").nth(1)
        assert bert.count(), "the BERT explorer did not render"
        bert_state = diagram_state(bert)
        assert bert_state and bert_state["clusters"] > 0, f"the BERT diagram has no clusters: {bert_state}"
        shot(page, "09-bert-explorer", bert)
    finally:
        context.close()
