"""The Model Explorer export opened the way a user opens it: Model Explorer's own server
(the `ai-edge-model-explorer` package from set-up, nothing installed at run time) on
127.0.0.1, the exported file loaded by its built-in JSON adapter in headless Chromium.

Checks that the graph loaded (the op node count Model Explorer reports equals the nodes
exported, the collection's label is shown) and saves a screenshot into the test's temporary
folder (the README's docs/images/model_explorer.png is made by scripts/make_readme_images.py;
running the tests changes no tracked file).
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request

import pytest

import hierviz as hv

CHROMIUM = os.environ.get("HIERVIZ_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
START_S = 60
LOAD_S = 90

pytestmark = [pytest.mark.browser, pytest.mark.slow, pytest.mark.timeout(300)]
pytest.importorskip("model_explorer", reason="pip install hierviz[model-explorer]")
playwright_api = pytest.importorskip("playwright.sync_api", reason="pip install playwright (make setup)")


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def server(tmp_path):
    """Model Explorer's server on a free port of 127.0.0.1; stopped (with its process group) after."""
    port = free_port()
    log = open(tmp_path / "model_explorer.log", "w")
    env = {**os.environ, "HOME": str(tmp_path / "home")}
    proc = subprocess.Popen([sys.executable, "-m", "model_explorer", "--host", "127.0.0.1", "--port", str(port),
                             "--no_open_in_browser"], stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_S
        while True:
            assert proc.poll() is None, (tmp_path / "model_explorer.log").read_text()
            try:
                with urllib.request.urlopen(url + "/check_health", timeout=2) as r:
                    if r.read() == b"model_explorer_ok":
                        break
            except OSError:
                pass
            assert time.monotonic() < deadline, "Model Explorer's server did not start: " + \
                (tmp_path / "model_explorer.log").read_text()
            time.sleep(0.3)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def test_exported_partition_opens_in_model_explorer(server, zoo_cache, tmp_path):
    gm = zoo_cache.capture("llama")
    p = hv.partition(gm, torch_executed_ops={"torch.ops.aten.sigmoid.default"})
    path = p.save(tmp_path / "llama_partition.json", format="model_explorer")
    doc = json.loads(path.read_text())
    expected = len(doc["graphs"][0]["nodes"])
    data = json.dumps({"models": [{"url": str(path), "adapterId": "builtin_json"}]})
    screenshot = tmp_path / "model_explorer.png"
    with playwright_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"{server}/?data={urllib.parse.quote(data)}")
            info = page.get_by_text("op node count")
            info.wait_for(timeout=LOAD_S * 1000)
            body = page.inner_text("body")
            count = re.search(r"op node count\s+(\d+)", body)
            assert count is not None, body[:2000]
            assert int(count.group(1)) == expected
            assert "layer count" in body and doc["label"] in body
            page.wait_for_timeout(2000)  # let the WebGL canvas draw before the screenshot
            page.screenshot(path=str(screenshot))
        finally:
            browser.close()
    assert screenshot.stat().st_size > 10_000
