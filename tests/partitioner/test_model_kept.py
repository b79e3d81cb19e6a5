"""A partition keeps the model it was captured from for as long as it lives (hv.partition(Model(), x) is
the idiomatic one-liner), sharing its weights with the capture, and lets it go when it goes."""

from __future__ import annotations

import gc
import weakref

import torch
from torch import nn

import hierviz as hv


class Small(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.lin(x)) + 1


class Broken(nn.Module):
    """Two graphs on torch.compile's path: a print breaks the graph."""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = nn.Linear(8, 8), nn.Linear(8, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.a(x))
        print("", end="")
        return self.b(h) * 2


class FakeBuilds:
    """What part.build() returns as far as keeping goes: it refers to its partition."""

    def __init__(self, part: object) -> None:
        self.partition = part


X = (torch.randn(2, 8),)


def _model_and_ref(cls: type[nn.Module]) -> tuple[nn.Module, "weakref.ref[nn.Module]"]:
    model = cls().eval()
    return model, weakref.ref(model)


def test_a_partition_keeps_its_model_while_it_lives_and_lets_it_go_after():
    model, held = _model_and_ref(Small)
    part = hv.partition(model, X, min_block_size=1)
    del model
    gc.collect()
    assert held() is not None
    del part
    gc.collect()
    assert held() is None


def test_the_kept_model_shares_its_weights_with_the_graph():
    model, held = _model_and_ref(Small)
    part = hv.partition(model, X, min_block_size=1)
    del model
    gc.collect()
    kept = held()
    assert kept is not None
    theirs = {t.untyped_storage().data_ptr() for t in part.graph.parameters()}
    assert theirs and theirs == {t.untyped_storage().data_ptr() for t in kept.parameters()}


def test_a_built_partition_lets_its_model_go():
    model, held = _model_and_ref(Small)
    part = hv.partition(model, X, min_block_size=1)
    builds = FakeBuilds(part)  # as part.build()'s: the builds refer back to the partition
    del model, part, builds
    gc.collect()
    assert held() is None


def test_a_partition_made_from_a_partition_keeps_the_model_too():
    model, held = _model_and_ref(Small)
    first = hv.partition(model, X, min_block_size=1)
    second = hv.partition(first, min_block_size=2)
    del model, first
    gc.collect()
    assert held() is not None and second.config.min_block_size == 2
    del second
    gc.collect()
    assert held() is None


def test_a_graph_by_graph_partition_keeps_its_model_and_lets_it_go():
    model, held = _model_and_ref(Broken)
    part = hv.partition(model, X, ir="torch_compile", min_block_size=1)
    assert len(part.graphs) == 2
    del model
    gc.collect()
    assert held() is not None
    builds = FakeBuilds(part)
    del part, builds
    gc.collect()
    assert held() is None
