"""Regenerate the README's diagrams from the project itself.

    .venv/bin/python scripts/make_readme_images.py
(The explorer screenshot is written by tests/test_browser.py under test-artifacts/browser/;
docs/images/model_explorer.png by tests/drawing/test_model_explorer_browser.py.)
"""

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


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    bert_collapsed()
    llama_modules()


if __name__ == "__main__":
    main()
