"""hv.diff by meaning: subgraphs matched by their members, a `change` column (backend, split,
merged), no row for a node whose backend and subgraph members are the same."""

from __future__ import annotations

import dataclasses

import pytest
import torch

import hierviz as hv
from hierviz.partitioner.engine.plan import tags_for
from hierviz.partitioner.partition_result import from_engine_result

GELU = "torch.ops.aten.gelu.default"
SDPA = "torch.ops.aten.scaled_dot_product_attention.default"


class MLP(torch.nn.Module):
    """Linear-GELU-Linear-ReLU-Linear (the issue's example)."""

    def __init__(self) -> None:
        super().__init__()
        self.fc1, self.act, self.fc2 = torch.nn.Linear(8, 16), torch.nn.GELU(), torch.nn.Linear(16, 16)
        self.relu, self.fc3 = torch.nn.ReLU(), torch.nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc3(self.relu(self.fc2(self.act(self.fc1(x)))))


@pytest.fixture(scope="module")
def mlp() -> torch.fx.GraphModule:
    torch.manual_seed(0)
    return hv.capture(MLP(), (torch.randn(2, 8),))


def test_forcing_gelu_out_splits_the_subgraph(mlp):
    a = hv.partition(mlp, min_block_size=1)
    b = hv.partition(mlp, min_block_size=1, torch_executed_ops=[GELU])
    d = hv.diff(a, b).set_index("node")
    assert list(d.columns[:2]) == ["op", "change"]
    assert d.loc["gelu", "change"] == "backend"
    assert (d.loc["gelu", "backend_a"], d.loc["gelu", "backend_b"]) == ("tensorrt", "torch")
    # linear keeps its backend and even its tag, but its subgraph lost gelu and the rest: split
    assert d.loc["linear", "tag_a"] == d.loc["linear", "tag_b"] == "_run_on_acc_tensorrt_0"
    assert d.loc["linear", "change"] == "split"
    assert set(d["change"]) == {"backend", "split"} and len(d) == 5
    # the other way round the pieces are joined again
    back = hv.diff(b, a).set_index("node")
    assert back.loc["gelu", "change"] == "backend"
    assert set(back.drop(index="gelu")["change"]) == {"merged"}


def renumbered(p: hv.Partition) -> hv.Partition:
    """The same partition with its subgraphs numbered in reverse order."""
    res = p._result
    subgraphs = list(reversed(res.subgraphs))
    reversed_result = dataclasses.replace(res, subgraphs=subgraphs, tags=tags_for(subgraphs))
    return from_engine_result(p.graph, p.config, reversed_result)


def test_identical_partitions_numbered_differently_have_no_diff(mlp):
    b = hv.partition(mlp, min_block_size=1, torch_executed_ops=[GELU])
    other = renumbered(b)
    assert (b.tag_of("linear"), other.tag_of("linear")) == ("_run_on_acc_tensorrt_0", "_run_on_acc_tensorrt_2")
    assert hv.diff(b, other).empty and hv.diff(other, b).empty
    src = b.render("full", against=other).source
    assert "diff: no change" in src and "change backend" not in src


def test_unchanged_nodes_have_no_row(mlp):
    a = hv.partition(mlp, min_block_size=1)
    # relu forced out: fc1, gelu and fc2 stay together on tensorrt (the same members), so only
    # the nodes whose group changed are listed
    b = hv.partition(mlp, min_block_size=1, torch_executed_ops=["torch.ops.aten.relu.default"])
    d = hv.diff(a, b)
    assert dict(zip(d["node"], d["change"])) == {"linear": "split", "gelu": "split", "linear_1": "split",
                                                 "relu": "backend", "linear_2": "split"}
    c = hv.partition(mlp, min_block_size=1, torch_executed_ops=["torch.ops.aten.relu.default", GELU])
    d = hv.diff(b, c)
    # linear_2 sits alone after relu in both: no row for it
    assert "linear_2" not in set(d["node"])
    assert dict(zip(d["node"], d["change"])) == {"linear": "split", "gelu": "backend", "linear_1": "split"}


def qwen2(layers: int = 2) -> torch.fx.GraphModule:
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from hierviz.zoo import TensorOutput

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=layers,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64,
                         use_cache=False)
    model = TensorOutput(Qwen2ForCausalLM(config), "logits").eval()
    return hv.capture(model, (torch.randint(0, 256, (1, 8)),))


def test_qwen2_sdpa_to_pytorch_is_a_backend_change_the_rest_regrouping():
    gm = qwen2(2)
    a = hv.partition(gm)
    b = hv.partition(gm, torch_executed_ops=[SDPA])
    d = hv.diff(a, b)
    counts = d["change"].value_counts().to_dict()
    assert counts == {"split": len(d) - 2, "backend": 2}  # one SDPA per layer changes backend
    assert set(d[d["change"] == "backend"]["op"]) == {SDPA}
    assert (d["backend_a"] == d["backend_b"]).sum() == len(d) - 2
    g = a.render("full", against=b)
    # the title counts each kind: 2 backend changes, the one tensorrt subgraph split
    assert "diff: 2 nodes change backend, 1 subgraph split" in g.source
    modules = a.render("modules", against=b).source
    assert "diff: 2 nodes change backend, 1 subgraph split" in modules
