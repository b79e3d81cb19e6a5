"""Partition.compile: the compiled split model a user deploys (TorchInductor + eager on the
CPU), its outputs equal to the model's, saved to a folder and loaded back without compiling."""

from __future__ import annotations

import pytest
import torch

import hierviz as hv
from hierviz.latency.deploy import CompiledModel, load

RELU = "torch.ops.aten.relu.default"


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.fc = torch.nn.Linear(8, 4)

    def forward(self, x: torch.Tensor) -> dict:
        y = torch.relu(self.conv(x)) * 2
        return {"logits": self.fc(torch.sigmoid(y).mean((2, 3))), "features": y}


@pytest.fixture(scope="module")
def split():
    torch.manual_seed(0)
    model, inputs = Net().eval(), (torch.randn(1, 3, 8, 8),)
    part = hv.partition(model, inputs, priority=("inductor",), support={"inductor": hv.support.inductor()},
                        min_block_size=1, torch_executed_ops={RELU})
    return model, inputs, part


@pytest.mark.slow
def test_compiled_model_gives_the_models_outputs(split) -> None:
    model, inputs, part = split
    compiled = part.compile(example_inputs=inputs)
    assert isinstance(compiled, CompiledModel) and compiled.config == part.config
    ran = {tag: r.ran for tag, r in compiled.records.items()}
    assert sorted(set(ran.values())) == ["inductor", "torch"] and not compiled.fallbacks
    with torch.no_grad():
        want, got = model(*inputs), compiled(*inputs)
    assert set(got) == {"logits", "features"}          # the model's own output structure
    for k in want:
        torch.testing.assert_close(got[k], want[k], rtol=1e-4, atol=1e-5)
    other = torch.randn(1, 3, 8, 8)                    # compiled once, runs on any input of that shape
    with torch.no_grad():
        torch.testing.assert_close(compiled(other)["logits"], model(other)["logits"], rtol=1e-4, atol=1e-5)


@pytest.mark.slow
def test_save_and_load_without_compiling_again(split, tmp_path) -> None:
    model, inputs, part = split
    compiled = part.compile()                          # example inputs made from the graph's shapes
    folder = compiled.save(tmp_path / "net")
    assert {"graph.pkl", "config.pkl", "inputs.pt", "hierviz.json", "artifacts"} <= {p.name for p in folder.iterdir()}
    again = load(folder)
    status = {tag: r.status for tag, r in again.records.items()}
    assert [s for t, s in status.items() if t.startswith("_run_on_acc_inductor")] and \
        all(s == "cached" for t, s in status.items() if t.startswith("_run_on_acc_inductor"))  # from the folder
    assert again.config == part.config
    with torch.no_grad():
        torch.testing.assert_close(again(*inputs)["logits"], model(*inputs)["logits"], rtol=1e-4, atol=1e-5)


def test_load_of_a_wrong_folder_says_what_to_do(tmp_path) -> None:
    with pytest.raises(hv.MeasureError, match="no saved hierviz model"):
        load(tmp_path)
