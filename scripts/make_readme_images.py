"""Regenerate the README's diagram from the project itself.

    .venv/bin/python scripts/make_readme_images.py
(The explorer screenshot is written by tests/test_browser.py under test-artifacts/browser/.)
"""

from pathlib import Path

import hierviz as hv

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    model, inputs = hv.zoo.load("bert")
    config = hv.Config(priority=("inductor", "tensorrt"),
                       support={"inductor": hv.support.ops(["torch.ops.aten.addmm.default", "torch.ops.aten.mm.default",
                                                             "torch.ops.aten.linear.default"])},
                       min_block_size=2)
    part = hv.partition(model, inputs, config)
    print(part)
    print(part.save(OUT / "bert-inductor-linear.png"))


if __name__ == "__main__":
    main()
