"""Helpers shared by the measure tests (imported by name: tests/measure is on sys.path)."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import hierviz as hv

SDPA = "torch.ops.aten.scaled_dot_product_attention.default"
GELU = "torch.ops.aten.gelu.default"
BN = "torch.ops.aten._native_batch_norm_legit_no_training.default"


class TinyConv(nn.Module):
    """conv-bn-relu twice, as zoo's tiny_conv (used when hierviz.zoo cannot load it)."""

    def __init__(self) -> None:
        super().__init__()
        self.conv1 = nn.Conv2d(3, 16, 3, padding=1)
        self.bn1 = nn.BatchNorm2d(16)
        self.conv2 = nn.Conv2d(16, 32, 3, padding=1)
        self.bn2 = nn.BatchNorm2d(32)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(self.bn2(self.conv2(x)))


def load(name: str) -> torch.nn.Module:
    """A zoo model (random weights); the local TinyConv if the zoo cannot give tiny_conv;
    skips when a model's package is missing."""
    try:
        model, _ = hv.zoo.load(name)
    except (ImportError, hv.ConfigError, AttributeError) as exc:
        if name == "tiny_conv":
            with torch.random.fork_rng():
                torch.manual_seed(0)
                return TinyConv().eval()
        pytest.skip(f"zoo model {name} unavailable: {exc}")
    return model


def inductor_partition(gm, **config):
    """A partition whose accelerated subgraphs all go to TorchInductor."""
    return hv.partition(gm, priority=("inductor",), support={"inductor": hv.support.inductor()}, **config)


def snapshot(partition) -> dict:
    """What must not change when a partition is measured."""
    return {
        "graph_code": partition.graph.code,
        "module_code": partition.module.code,
        "children": {n: (type(m), m.code) for n, m in partition.module.named_children()},
        "state": {k: (v.data_ptr(), v.clone()) for k, v in partition.graph.state_dict().items()},
    }


def same_snapshot(a: dict, b: dict) -> bool:
    if a["graph_code"] != b["graph_code"] or a["module_code"] != b["module_code"]:
        return False
    if a["children"] != b["children"]:
        return False
    for k, (ptr, value) in a["state"].items():
        ptr2, value2 = b["state"][k]
        if ptr != ptr2 or not torch.equal(value, value2):
            return False
    return True



class FakeClock:
    """A stand-in for hierviz.latency.timing.CLOCK: each timed call (a read before it, a read
    after) lasts `duration(k)` ms of virtual time, k counting the calls timed, whatever the call
    really took; so a test injects noise (a burst of load, a drift) without depending on the
    machine."""

    def __init__(self, duration) -> None:
        self.duration, self.now, self.reads = duration, 0, 0

    def __call__(self) -> int:
        if self.reads % 2:
            self.now += round(self.duration(self.reads // 2) * 1e6)
        self.reads += 1
        return self.now
