"""Regenerate the README's diagrams from the project itself.

    .venv/bin/python scripts/make_readme_images.py
    .venv/bin/python scripts/make_readme_images.py model_explorer   # one of them

The tests never write here (they write into temporary folders): this script is the one way
the README's images change. model_explorer.png needs Model Explorer's server and Chromium
(`make setup`), as tests/drawing/test_model_explorer_browser.py does. The 'before' images of
docs/diagrams.md (qwen2-*-before.png) were drawn once by hierviz before issue 24 (commit 9551b55).
"""

import json
import os
import signal
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import hierviz as hv

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"
SDPA = "torch.ops.aten.scaled_dot_product_attention.default"
SIGMOID = "torch.ops.aten.sigmoid.default"


def bert_collapsed() -> None:
    model, inputs = hv.zoo.load("bert")
    config = hv.Config(priority=("inductor", "tensorrt"),
                       support={"inductor": hv.support.ops(["torch.ops.aten.addmm.default", "torch.ops.aten.mm.default",
                                                             "torch.ops.aten.linear.default"])},
                       min_block_size=2)
    part = hv.partition(model, inputs, config)
    print(part)
    print(part.save(OUT / "bert-inductor-linear.png"))


def llama_modules() -> None:
    """The module view of the zoo's Llama with SDPA and SiLU's sigmoid forced to PyTorch: its
    decoder layers rolled up into one `layers.0–1 ×2` cluster."""
    model, inputs = hv.zoo.load("llama")
    part = hv.partition(model, inputs, torch_executed_ops={SDPA, SIGMOID})
    print(part)
    print(part.save(OUT / "llama-modules.png", view="modules"))


def _qwen2() -> tuple:
    """A 12-layer Qwen2 (small sizes, random weights): its default partition and the one with
    SDPA forced to PyTorch (issue 24's example)."""
    sys.path.insert(0, str(OUT.parent.parent / "benchmarks"))
    import picture_quality

    model, inputs = picture_quality.qwen2(12)
    graph = hv.capture(model, inputs)
    return hv.partition(graph), hv.partition(graph, torch_executed_ops={SDPA})


def qwen2_modules() -> None:
    """The module view of a 12-layer Qwen2, along the data flow (docs/diagrams.md, 'after')."""
    default, _ = _qwen2()
    print(default.save(OUT / "qwen2-modules-after.png", view="modules"))


def qwen2_diff() -> None:
    """The diff of SDPA forced to PyTorch against the default on a 12-layer Qwen2 ('after'):
    12 nodes change backend, the one TensorRT subgraph split."""
    default, forced = _qwen2()
    print(default.save(OUT / "qwen2-diff-after.png", view="modules", against=forced))


def model_explorer(port: int = 8093) -> None:
    """Model Explorer (its own server, headless Chromium) showing the zoo's Llama with sigmoid
    forced to PyTorch."""
    from playwright.sync_api import sync_playwright

    model, inputs = hv.zoo.load("llama")
    part = hv.partition(model, inputs, torch_executed_ops={SIGMOID})
    graph = part.save(OUT / "model_explorer.tmp.json", format="model_explorer")
    server = subprocess.Popen([sys.executable, "-m", "model_explorer", "--host", "127.0.0.1", "--port", str(port),
                               "--no_open_in_browser"], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT,
                              start_new_session=True)
    try:
        for _ in range(200):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/check_health", timeout=2):
                    break
            except OSError:
                time.sleep(0.3)
        data = json.dumps({"models": [{"url": str(graph), "adapterId": "builtin_json"}]})
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=os.environ.get("HIERVIZ_CHROMIUM", "/usr/bin/chromium"),
                                         args=["--headless", "--no-sandbox", "--disable-gpu"])
            page = browser.new_page(viewport={"width": 1400, "height": 900})
            page.goto(f"http://127.0.0.1:{port}/?data={urllib.parse.quote(data)}")
            page.get_by_text("op node count").wait_for(timeout=90_000)
            page.wait_for_timeout(2000)  # let the WebGL canvas draw
            page.screenshot(path=str(OUT / "model_explorer.png"))
            browser.close()
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        graph.unlink(missing_ok=True)
    print(OUT / "model_explorer.png")


def numerics_culprit() -> None:
    """hv.numerics on the zoo's BERT with its FFN's GELU on a backend with a deliberate bug (0.05
    added to each GELU output; everything else on an exact backend): the collapsed view
    coloured by each subgraph's isolated error, the culprit marked."""
    import torch

    from hierviz.latency import register_compiler, unregister_compiler
    from hierviz.latency.compiling.backend_compilers import perturbing

    gelu = torch.ops.aten.gelu.default

    register_compiler("buggy", perturbing(gelu, 0.05))
    register_compiler("exact", lambda gm, example_inputs: gm)
    try:
        model, inputs = hv.zoo.load("bert")
        every = hv.support.where(lambda n: n.op == "call_function" and n.target is not gelu, name="all but gelu")
        part = hv.partition(model, inputs, priority=("exact", "buggy"), min_block_size=1,
                            support={"exact": every, "buggy": hv.support.ops(["torch.ops.aten.gelu.default"])})
        result = hv.numerics(part, inputs)
        print(result)
        print(part.save(OUT / "numerics-culprit.png", view="collapsed", numerics=result))
    finally:
        unregister_compiler("buggy")
        unregister_compiler("exact")


IMAGES = {"bert_collapsed": bert_collapsed, "llama_modules": llama_modules, "qwen2_modules": qwen2_modules,
          "qwen2_diff": qwen2_diff, "model_explorer": model_explorer, "numerics_culprit": numerics_culprit}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name in sys.argv[1:] or IMAGES:
        IMAGES[name]()


if __name__ == "__main__":
    main()
