"""Converting a subgraph leaves the partition's graph as it was: Torch-TensorRT 2.14's
get_node_name pops the last entry of each node's meta['nn_module_stack'] as it names the node,
and a partition's subgraphs share their nodes' meta with its graph, so every build cut one
module off every node (the modules view, each record's module_path, the failing node's name)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hierviz as hv
from hierviz import trt

pytestmark = pytest.mark.skipif(not trt.available() or not trt.builds_without_gpu(),
                                reason="needs TensorRT-RTX, which builds engines on the CPU")


class Inner(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lin(x).relu()


class Outer(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.inner = Inner()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.inner(x) * 2


def test_building_twice_leaves_every_nodes_module_as_captured(monkeypatch):
    monkeypatch.setenv("HIERVIZ_CACHE", "0")  # convert each time
    torch.manual_seed(0)
    part = hv.partition(Outer().eval(), (torch.randn(2, 8),), min_block_size=1)
    before = dict(zip(part.records.name, part.records.module_path))
    assert before["linear"] == "inner.lin" and before["relu"] == "inner"
    part.build()
    hv.partition(part, min_block_size=2).build()  # another partition of the same graph
    again = hv.partition(part)
    assert dict(zip(again.records.name, again.records.module_path)) == before
