"""target_device reaches every entry a user has, as ir= does: hv.explore, hv.sweep, hv.tune, hv.compare_engines
and the CLI's --target-device. With the default ("cuda") a small attention model's attention is the GPU's and
runs in TensorRT; with "cpu" it is the CPU's `_for_cpu` op, which no backend takes; anything else is refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn as nn
import torch.nn.functional as F

import hierviz as hv
from tests.compare.test_tune import own_tune
from tests.cli.test_cli import run_cli

CPU_ATTENTION = "aten._scaled_dot_product_flash_attention_for_cpu.default"
GPU_ATTENTION = {"aten._scaled_dot_product_efficient_attention.default",
                 "aten._scaled_dot_product_flash_attention.default",
                 "aten._scaled_dot_product_cudnn_attention.default"}

SOURCE = '''
import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    """One causal self-attention."""

    def __init__(self, dim=16, heads=2):
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


def build():
    torch.manual_seed(0)
    return Attention().eval(), (torch.randn(2, 8, 16),)
'''


class Attention(nn.Module):
    """One causal self-attention: torch.compile's path decomposes it by the device's kernel."""

    def __init__(self, dim: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads, self.head = heads, dim // heads
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(x).view(b, s, 3, self.heads, self.head).permute(2, 0, 3, 1, 4)
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.out(o.transpose(1, 2).reshape(b, s, d))


@pytest.fixture(scope="module")
def attention() -> tuple[nn.Module, tuple]:
    torch.manual_seed(0)
    return Attention().eval(), (torch.randn(2, 8, 16),)


def attention_ops(graph: torch.fx.GraphModule) -> list[str]:
    return [str(n.target) for n in graph.graph.nodes if n.op == "call_function" and "dot_product" in str(n.target)]


def graphs_of(part: hv.MultiGraphPartition) -> list[torch.fx.GraphModule]:
    return [g.graph for g in part.graphs]


def test_sweep_partitions_the_graph_lowered_for_the_target(attention) -> None:
    model, x = attention
    for target, torch_subgraphs in (("cuda", 0), ("cpu", 1)):
        df = hv.sweep(model, x, {"min_block_size": [1]}, ir="torch_compile", target_device=target, progress=False)
        expected = hv.partition(model, x, min_block_size=1, ir="torch_compile", target_device=target)
        (row,) = df.itertuples()
        assert row.subgraphs_torch == torch_subgraphs == expected.stats["subgraphs_by_backend"]["torch"]
        assert row.accelerated_coverage == expected.stats["accelerated_coverage"]
    with pytest.raises(hv.ConfigError, match="target_device='cuda' or target_device='cpu'"):
        hv.sweep(model, x, {"min_block_size": [1]}, target_device="gpu", progress=False)


def test_compare_engines_partitions_the_graph_lowered_for_the_target(attention) -> None:
    model, x = attention
    for target, torch_subgraphs in (("cuda", 0), ("cpu", 1)):
        df = hv.compare_engines(model, x, ir="torch_compile", target_device=target, min_block_size=1)
        hier = df[df["engine"] == "hierviz"].iloc[0]
        assert hier["subgraphs_torch"] == torch_subgraphs
    with pytest.raises(hv.ConfigError, match="target_device="):
        hv.compare_engines(model, x, target_device="cuda:0")


def test_tune_searches_the_graph_lowered_for_the_target(attention) -> None:
    model, x = attention
    gpu = own_tune(model, x, {"min_block_size": [1]}, budget=1, pruning=False, ir="torch_compile")
    assert set(attention_ops(graphs_of(gpu.partition())[0])) <= GPU_ATTENTION
    assert attention_ops(graphs_of(gpu.partition())[0])
    cpu = own_tune(model, x, {"min_block_size": [1]}, budget=1, pruning=False, ir="torch_compile",
                   target_device="cpu")
    assert attention_ops(graphs_of(cpu.partition())[0]) == [CPU_ATTENTION]
    with pytest.raises(hv.ConfigError, match="target_device="):
        own_tune(model, x, {"min_block_size": [1]}, budget=1, target_device="tpu")


def test_explore_shows_the_graph_lowered_for_the_target(attention) -> None:
    pytest.importorskip("ipywidgets")
    model, x = attention
    gpu = hv.explore(model, x, ir="torch_compile", min_block_size=1)
    (graph,) = graphs_of(gpu.multi)
    assert set(attention_ops(graph)) <= GPU_ATTENTION and attention_ops(graph)
    assert gpu.multi.stats["subgraphs_by_backend"]["torch"] == 0
    cpu = hv.explore(model, x, ir="torch_compile", target_device="cpu", min_block_size=1)
    assert attention_ops(graphs_of(cpu.multi)[0]) == [CPU_ATTENTION]
    assert cpu.multi.target_device == "cpu"
    one = hv.explore(model, x, target_device="cpu")  # one graph (ir="dynamo"): torch.export keeps the op
    assert one.graph.meta["hierviz_target_device"][0] == "cpu" and one.name == "Attention"
    with pytest.raises(hv.ConfigError, match="target_device="):
        hv.explore(model, x, target_device="gpu")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory) -> str:
    path = tmp_path_factory.mktemp("cli_target") / "attention.py"
    path.write_text(SOURCE)
    return f"{path}:build"


def test_cli_takes_target_device(capsys, model_file, tmp_path) -> None:
    code, out, err = run_cli(capsys, "report", model_file, "--ir", "torch_compile", "--min-block-size", "1")
    assert code == 0, err
    assert "Traced for cuda" in out and "_for_cpu" not in out
    code, out, err = run_cli(capsys, "report", model_file, "--ir", "torch_compile", "--target-device", "cpu",
                             "--min-block-size", "1")
    assert code == 0, err
    assert "Traced for cpu" in out and "_scaled_dot_product_flash_attention_for_cpu" in out
    csv = tmp_path / "sweep.csv"
    code, out, err = run_cli(capsys, "sweep", model_file, "--ir", "torch_compile", "--target-device", "cpu",
                             "--grid", "min_block_size=1", "--csv", str(csv), "--quiet")
    assert code == 0, err
    import pandas as pd

    assert list(pd.read_csv(csv).subgraphs_torch) == [1]
    code, out, err = run_cli(capsys, "report", model_file, "--target-device", "gpu")
    assert code == 2 and "--target-device" in err
    saved = hv.partition(Attention().eval(), (torch.randn(2, 8, 16),)).save(tmp_path / "saved.json")
    code, out, err = run_cli(capsys, "report", str(saved), "--target-device", "cpu")
    assert code == 2 and "--target-device" in err and "saved partition" in err
