"""Regenerate docs/blockers.md's pictures and tables from the project itself, on two models
outside the zoo (random weights, nothing downloaded): torchvision's GoogLeNet and a small
Qwen2 from a transformers config.

    .venv/bin/python scripts/make_blockers_docs.py

Prints the tables pasted into docs/blockers.md and writes docs/images/googlenet-blockers.png
(render(highlight="blockers")) and docs/images/googlenet-edit-diff.png (a model edit, shown with
saved partitions: before.json drawn against after.json).
"""

import tempfile
import warnings
from pathlib import Path

import torch

import hierviz as hv

OUT = Path(__file__).resolve().parent.parent / "docs" / "images"
COLUMNS = ["op", "kind", "nodes", "subgraphs_if_fixed", "subgraphs_saved", "accelerated_ops_gained", "verdict",
           "change"]


def googlenet(ceil_mode: bool = True) -> tuple:
    import torchvision

    torch.manual_seed(0)
    model = torchvision.models.googlenet(weights=None, aux_logits=False, init_weights=False).eval()
    if not ceil_mode:  # the model edit: every max pool rounds down (TensorRT's converter takes it)
        for m in model.modules():
            if isinstance(m, torch.nn.MaxPool2d):
                m.ceil_mode = False
    return model, (torch.randn(1, 3, 224, 224),)


def qwen2() -> tuple:
    import transformers

    torch.manual_seed(0)
    cfg = transformers.Qwen2Config(vocab_size=1000, hidden_size=128, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2)
    model = hv.zoo.TensorOutput(transformers.AutoModelForCausalLM.from_config(cfg).eval(), "logits")
    return model, (torch.randint(0, 1000, (1, 16)),)


def markdown(table) -> str:
    """A Markdown table (no tabulate needed)."""
    rows = [COLUMNS, ["---"] * len(COLUMNS)]
    rows += [[str(v).replace("|", "\\|") for v in r] for r in table[COLUMNS].itertuples(index=False)]
    return "\n".join("| " + " | ".join(r) + " |" for r in rows)


def main() -> None:
    model, inputs = googlenet()
    part = hv.partition(model, inputs)
    print(part)
    print(markdown(part.blockers()))
    print(part.save(OUT / "googlenet-blockers.png", view="modules", highlight="blockers"))
    with tempfile.TemporaryDirectory() as tmp:
        before = hv.load_partition(part.save(Path(tmp) / "before.json"))
        after = hv.partition(*googlenet(ceil_mode=False))
        print(after)
        d = hv.diff(before, after)
        print(d["change"].value_counts().to_dict())
        print(before.save(OUT / "googlenet-edit-diff.png", view="modules", against=after))
    model, inputs = qwen2()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        part = hv.partition(model, inputs, torch_executed_ops={"aten.mul.Tensor"}, min_block_size=8)
    print(part)
    print(markdown(part.blockers()))


if __name__ == "__main__":
    main()
