"""hv.measure's baselines: your nn.Module run eagerly (`baseline_ms`, `speedup`), the captured
graph run eagerly (`graph_eager_ms`), and on request the whole model through torch.compile;
the model is never changed, even in train mode."""

from __future__ import annotations

import copy
import gc

import pytest
import torch

import hierviz as hv
from hierviz.latency.baselines import time_model

EXACT = hv.support.where(lambda node: node.op == "call_function", name="every op")


def exact(gm, example_inputs):
    return gm


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.bn(self.conv(x)))


@pytest.mark.slow
def test_speedup_is_against_the_nn_module_and_the_graph_time_is_kept() -> None:
    torch.manual_seed(0)
    model, inputs = Net().eval(), (torch.randn(1, 3, 8, 8),)
    part = hv.partition(model, inputs, priority=("exact",), support={"exact": EXACT}, min_block_size=1)
    m = hv.measure(part, inputs, device="cpu", warmup=1, iters=5, compilers={"exact": exact})
    assert m.baseline_ms > 0 and m.graph_eager_ms > 0 and m.torch_compile_ms is None
    assert m.speedup == pytest.approx(m.baseline_ms / m.median_ms)
    assert m.against == "eager PyTorch (your nn.Module)" and "; eager PyTorch (the captured graph) " in repr(m)
    row = m.to_dict()
    assert row["baseline_ms"] == m.baseline_ms and row["graph_eager_ms"] == m.graph_eager_ms
    # a bare aten graph has no nn.Module: the graph itself is the baseline
    graph = hv.capture(model, inputs)
    copy_of_graph = copy.deepcopy(graph)
    m2 = hv.measure(hv.partition(copy_of_graph, config=part.config), inputs, device="cpu", warmup=1, iters=5,
                    compilers={"exact": exact})
    assert m2.baseline_ms == m2.graph_eager_ms and m2.against == "eager PyTorch (the captured graph)"


def test_train_mode_model_is_timed_on_a_copy() -> None:
    torch.manual_seed(0)
    model, inputs = Net().train(), (torch.randn(2, 3, 8, 8),)
    before = copy.deepcopy(model.state_dict())
    out = time_model(model, inputs, torch.device("cpu"), warmup=1, iters=3)
    assert out["eager"].median_ms > 0 and out["eager"].error is None
    assert model.training
    for k, v in model.state_dict().items():
        assert torch.equal(v, before[k]), k            # running stats and num_batches_tracked unchanged


@pytest.mark.slow
def test_torch_compile_baseline() -> None:
    torch.manual_seed(0)
    model, inputs = Net().eval(), (torch.randn(1, 3, 8, 8),)
    out = time_model(model, inputs, torch.device("cpu"), warmup=1, iters=3, torch_compile=True)
    tc = out["torch_compile"]
    assert tc.error is None and tc.median_ms > 0 and tc.compile_s > 0
    with torch.no_grad():
        torch.testing.assert_close(tc.outputs, model(*inputs))


CALLS: list[int] = []


class Counted(torch.nn.Module):
    """Net, counting its forward calls (the eager baseline's, once captured); `graphs=2` breaks its graph."""

    def __init__(self, graphs: int = 1) -> None:
        super().__init__()
        self.net, self.graphs = Net(), graphs

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        CALLS.append(1)
        y = self.net(x)
        if self.graphs == 2:
            torch._dynamo.graph_break()
        return y * 2


def test_the_eager_baseline_of_a_one_liner_partition_is_the_model() -> None:
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 8),)
    part = hv.partition(Counted().eval(), inputs, priority=("exact",), support={"exact": EXACT}, min_block_size=1)
    gc.collect()
    CALLS.clear()
    m = hv.measure(part, inputs, device="cpu", warmup=1, iters=5, compilers={"exact": exact})
    assert len(CALLS) >= 6  # the model itself ran: its warmup and timed calls
    assert m.eager_timing is not m.baseline_timing and m.speedup is not None


@pytest.mark.slow
def test_the_eager_baseline_of_a_one_liner_graph_by_graph_partition_is_the_model() -> None:
    torch.manual_seed(0)
    inputs = (torch.randn(1, 3, 8, 8),)
    part = hv.partition(Counted(graphs=2).eval(), inputs, ir="torch_compile", priority=("inductor",),
                        support={"inductor": hv.support.inductor()}, min_block_size=1)
    assert len(part.graphs) == 2
    gc.collect()
    m = hv.measure(part, inputs, device="cpu", warmup=1, iters=3, per_subgraph=False)
    assert m.baseline_ms is not None and m.speedup is not None and m.outputs_match is True
