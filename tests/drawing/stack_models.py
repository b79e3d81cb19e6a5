"""A stack of identical residual blocks for the module-view, overlay, diff and Model Explorer
tests: five `Block`s in an `nn.ModuleList`, so the module view rolls them up, and a support
rule that sends one block's relu to PyTorch, so that block is the odd one out."""

from __future__ import annotations

import torch
from torch import nn

import hierviz as hv

RELU = "torch.ops.aten.relu.default"


class Block(nn.Module):
    def __init__(self, dim: int = 16) -> None:
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 2 * dim)
        self.fc2 = nn.Linear(2 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.fc2(torch.relu(self.fc1(self.norm(x))))


class Stack(nn.Module):
    def __init__(self, blocks: int = 5) -> None:
        super().__init__()
        self.inp = nn.Linear(8, 16)
        self.blocks = nn.ModuleList([Block() for _ in range(blocks)])
        self.head = nn.Linear(16, 4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.inp(x)
        for block in self.blocks:
            x = block(x)
        return self.head(x)


def stack() -> tuple[nn.Module, tuple]:
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        return Stack().eval(), (torch.randn(2, 8),)


def _inner_module(node: torch.fx.Node) -> str:
    stack_ = node.meta.get("nn_module_stack") or {}
    return list(stack_.values())[-1][0] if stack_ else ""


def _not_block2_relu(node: torch.fx.Node) -> bool:
    """TensorRT takes everything but the relu of blocks.2."""
    return not (_inner_module(node) == "blocks.2" and node.target is torch.ops.aten.relu.default)


def odd_partition(gm: torch.fx.GraphModule) -> hv.Partition:
    """blocks.2's relu in PyTorch, the rest in TensorRT: blocks 0-1 and 3-4 roll up, 2 stands apart."""
    return hv.partition(gm, support={"tensorrt": hv.support.where(_not_block2_relu, name="all but blocks.2 relu")},
                        min_block_size=1)


def _not_block2_relu_or_fc2(node: torch.fx.Node) -> bool:
    return _not_block2_relu(node) and _inner_module(node) != "blocks.2.fc2"


def odd_fc2_partition(gm: torch.fx.GraphModule) -> hv.Partition:
    """As odd_partition, and blocks.2.fc2 in PyTorch too: the first subgraph stays as it was."""
    return hv.partition(gm, support={"tensorrt": hv.support.where(_not_block2_relu_or_fc2,
                                                                  name="all but blocks.2 relu and fc2")},
                        min_block_size=1)


def even_partition(gm: torch.fx.GraphModule) -> hv.Partition:
    """Every op in TensorRT: all five blocks roll up into one."""
    return hv.partition(gm, support={"tensorrt": hv.support.where(lambda n: True, name="everything")},
                        min_block_size=1)


def relu_in_torch(gm: torch.fx.GraphModule) -> hv.Partition:
    """Every relu forced to PyTorch (torch_executed_ops): each block changes against odd_partition."""
    return hv.partition(gm, support={"tensorrt": hv.support.where(lambda n: True, name="everything")},
                        torch_executed_ops={RELU}, min_block_size=1)


_CAPTURED: dict[str, torch.fx.GraphModule] = {}


def captured() -> torch.fx.GraphModule:
    """The captured Stack, once per test session."""
    if "stack" not in _CAPTURED:
        model, inputs = stack()
        _CAPTURED["stack"] = hv.capture(model, inputs)
    return _CAPTURED["stack"]
